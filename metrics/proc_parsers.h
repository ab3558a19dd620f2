// Pure parsers for the /proc files the node and self collectors read. Each takes
// the file's text and returns a value or an Error naming the field at fault; the
// caller reads the file and prefixes the path (inFile()). None of them allocate in
// proportion to garbage input beyond what they return, and none can crash on any
// input: truncated, empty, binary or huge.
//
// Truncation: the kernel ends every line with '\n', and that is the only way to
// tell "12345" from a read cut short at "123". So a line a parser takes values
// from must end in '\n' (test strings too: "cpu  1 2 3 4 5 6 7\n"), except in
// parsePidStat, which only needs whitespace after field 24 (rss).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord {

// One "cpu" / "cpuN" line of /proc/stat, in clock ticks (USER_HZ).
struct CpuTimes {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0,
           guest = 0, guestNice = 0;
  // koordlet's busy time: user + nice + system + irq + softirq.
  uint64_t busy() const { return user + nice + system + irq + softirq; }
};

struct ProcStat {
  CpuTimes total;                 // the aggregate "cpu" line
  std::vector<int> cpuIds;        // N of each "cpuN" line, in file order
  std::vector<CpuTimes> perCpu;   // parallel to cpuIds
  uint64_t bootTimeSeconds = 0;   // btime
  uint64_t contextSwitches = 0;   // ctxt
  uint64_t processesCreated = 0;  // processes
  uint64_t procsRunning = 0;
  uint64_t procsBlocked = 0;
};
// Requires the "cpu" line with at least user..softirq (7 fields, as on every 2.6+
// kernel); other fields default to 0 when absent.
Result<ProcStat> parseProcStat(std::string_view text);

struct MemInfo {
  uint64_t memTotalBytes = 0;
  uint64_t memFreeBytes = 0;
  uint64_t memAvailableBytes = 0;
  uint64_t buffersBytes = 0;
  uint64_t cachedBytes = 0;
  uint64_t swapTotalBytes = 0;
  uint64_t swapFreeBytes = 0;
  // koordlet's node memory usage: MemTotal - MemAvailable (without page cache).
  uint64_t usedBytes() const {
    return memTotalBytes > memAvailableBytes ? memTotalBytes - memAvailableBytes : 0;
  }
  // koordlet's node_memory_usage_with_page_cache: MemTotal - MemFree (its page-cache
  // collector's figure). MemFree is optional in the parser; a meminfo without it
  // reads as 0 free, so this is then MemTotal: an over- not an under-statement.
  uint64_t usedWithPageCacheBytes() const {
    return memTotalBytes > memFreeBytes ? memTotalBytes - memFreeBytes : 0;
  }
};
// Requires MemTotal and MemAvailable (every kernel since 3.14).
Result<MemInfo> parseMeminfo(std::string_view text);

struct LoadAvg {
  double load1 = 0, load5 = 0, load15 = 0;
  uint64_t runnable = 0, threads = 0, lastPid = 0;
};
Result<LoadAvg> parseLoadavg(std::string_view text);

struct PressureLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;  // percent
  uint64_t totalMicros = 0;                 // cumulative stall time
};
struct Pressure {
  PressureLine some;
  std::optional<PressureLine> full;  // absent from cpu.pressure before kernel 5.13
};
// Parses /proc/pressure/{cpu,memory,io} and cgroup *.pressure files.
Result<Pressure> parsePressure(std::string_view text);

// /proc/<pid>/stat, the fields the self collector needs. comm may hold spaces and
// parentheses, so fields are counted from the last ')'.
struct PidStat {
  uint64_t utimeTicks = 0, stimeTicks = 0;
  uint64_t startTimeTicks = 0;  // since boot
  uint64_t numThreads = 0;
  uint64_t vsizeBytes = 0;
  uint64_t rssPages = 0;
};
Result<PidStat> parsePidStat(std::string_view text);

}  // namespace koord
