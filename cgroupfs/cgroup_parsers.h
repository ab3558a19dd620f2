// Pure parsers for the cgroup files the collectors read, v1 and v2. Each takes the
// file's text; errors name the field; the caller prefixes the path. The kernel
// ends every one of these files with '\n', so text without it is a truncated read
// and an error. No input makes them crash or overflow, and time is linear in the
// input (n log n in the number of keys of a flat-keyed file).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord {

// A file holding one unsigned integer: cpuacct.usage (ns), memory.usage_in_bytes,
// cpu.cfs_period_us, memory.current.
Result<uint64_t> parseSingleUint(std::string_view text);
// A file holding one signed integer: cpu.cfs_quota_us (-1 = unlimited).
Result<int64_t> parseSingleInt(std::string_view text);

// "key value" lines: memory.stat (v1 and v2), cpu.stat (v1: nr_periods,
// nr_throttled, throttled_time ns; v2: usage_usec, user_usec, system_usec,
// nr_periods, nr_throttled, throttled_usec, ...). Unknown keys are kept.
Result<std::map<std::string, uint64_t, std::less<>>> parseFlatKeyed(std::string_view text);

// The same format, for the hot path: keeps only `keys`, writing values[i] for
// keys[i] without allocating. The lines of wanted keys are validated as
// parseFlatKeyed does; other lines are skipped unread, except that a blank line and
// a last line without '\n' (a truncated read) are errors whatever the key. A wanted
// key that appears twice is an error naming it; so is one missing among the first
// `required` keys (all of them by default); a later one missing stays nullopt.
Status pickFlatKeyed(std::string_view text, std::span<const std::string_view> keys,
                     std::span<std::optional<uint64_t>> values, size_t required = SIZE_MAX);

// v2 cpu.max: "max 100000" or "50000 100000". quota nullopt = unlimited.
// A lone quota ("50000") keeps the default period. A zero period is an error:
// the kernel refuses periods under 1 ms, and quota/period would divide by zero.
struct CpuMax {
  std::optional<int64_t> quotaUs;
  uint64_t periodUs = 100000;
};
Result<CpuMax> parseCpuMax(std::string_view text);
// The same from v1 cpu.cfs_quota_us (-1 = unlimited) and cpu.cfs_period_us, so
// callers handle one type on both versions. Same zero-period rule; a negative
// quota other than -1 is an error (the kernel reads any negative back as -1).
Result<CpuMax> parseCfsQuotaPeriod(std::string_view quotaText, std::string_view periodText);

// cpuset.cpus / cpuset.cpus.effective: "0-3,8,10-11\n", possibly empty ("\n" or "":
// no CPUs). Elements must ascend without overlaps, as the kernel prints them, and
// ids are at most 65535, so the result never exceeds 65536 entries.
Result<std::vector<int>> parseCpuList(std::string_view text);

}  // namespace koord
