// Tests for metrics/proc_parsers: real captures from node_exporter and procfs
// (tests/fixtures/proc/, see tests/fixtures/SOURCES.md), this machine's live
// /proc, and hostile inputs (truncated, empty, binary, NUL, overflow, huge).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "metrics/proc_parsers.h"
#include "tests/support/skip.h"

namespace test_metrics_proc_parsers {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::string_literals;

namespace {

// Concatenates text (g++ 12 warns falsely on "literal" + std::string&&).
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

std::string readWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO("reading " << path);
  REQUIRE(in.good());
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// A file under $KOORDLET_FIXTURES (tests/meson.build sets it to tests/fixtures).
std::string fixture(const std::string& relative) {
  const char* dir = std::getenv("KOORDLET_FIXTURES");
  if (dir == nullptr || *dir == '\0') {
    FAIL(
        "KOORDLET_FIXTURES is not set: run through `meson test`, or set it to "
        "<source>/tests/fixtures");
  }
  return readWhole(std::string(dir) + "/" + relative);
}

template <typename T>
std::string errorOf(const Result<T>& r) {
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

// The error message, or "" for a value.
template <typename T>
std::string messageOf(const Result<T>& r) {
  return r.ok() ? std::string() : r.error().message;
}

template <typename T>
const T& valueOf(const Result<T>& r) {
  INFO((r.ok() ? std::string() : r.error().message));
  REQUIRE(r.ok());
  return r.value();
}

// Deterministic binary noise, every byte value included.
std::string noise(size_t size, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::string out(size, '\0');
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t word = gen();
    std::memcpy(out.data() + i, &word, std::min<size_t>(8, size - i));
  }
  return out;
}

// Where to cut a text for the every-prefix tests: all points of small files; the
// head, tail and a stride of big ones (every cut is a full parse).
std::vector<size_t> cutPoints(size_t size) {
  std::vector<size_t> cuts;
  if (size <= 4096) {
    for (size_t i = 0; i < size; ++i) cuts.push_back(i);
    return cuts;
  }
  for (size_t i = 0; i < 2048; ++i) cuts.push_back(i);
  for (size_t i = 2048; i < size - 2048; i += 509) cuts.push_back(i);
  for (size_t i = size - 2048; i < size; ++i) cuts.push_back(i);
  return cuts;
}

bool sameTimes(const CpuTimes& a, const CpuTimes& b) {
  return a.user == b.user && a.nice == b.nice && a.system == b.system && a.idle == b.idle &&
         a.iowait == b.iowait && a.irq == b.irq && a.softirq == b.softirq && a.steal == b.steal &&
         a.guest == b.guest && a.guestNice == b.guestNice;
}

bool samePressureLine(const PressureLine& a, const PressureLine& b) {
  return a.avg10 == b.avg10 && a.avg60 == b.avg60 && a.avg300 == b.avg300 &&
         a.totalMicros == b.totalMicros;
}

// A value read from a prefix is either the whole file's or absent (0).
bool sameOrAbsent(uint64_t got, uint64_t whole) { return got == whole || got == 0; }

// "42 (comm) S 4 5 ... 52\n": field n holds n, so utime is 14 and rss is 24.
std::string pidStatWith(const std::string& comm, size_t fieldCount = 52) {
  std::string out = "42 (" + comm + ") S";
  for (size_t n = 4; n <= fieldCount; ++n) {
    out += ' ';
    out += std::to_string(n);
  }
  return out + "\n";
}

constexpr const char* kUint64Max = "18446744073709551615";
constexpr const char* kUint64MaxPlusOne = "18446744073709551616";

}  // namespace

// ---------------------------------------------------------------- /proc/stat

TEST_CASE("proc stat reads every cpu line of node_exporter's capture", "[proc_parsers]") {
  const ProcStat s = valueOf(parseProcStat(fixture("proc/node_exporter/stat")));
  // cpu  301854 612 111922 8979004 3552 2 3944 0 44 36
  CHECK(s.total.user == 301854);
  CHECK(s.total.nice == 612);
  CHECK(s.total.system == 111922);
  CHECK(s.total.idle == 8979004);
  CHECK(s.total.iowait == 3552);
  CHECK(s.total.irq == 2);
  CHECK(s.total.softirq == 3944);
  CHECK(s.total.steal == 0);
  CHECK(s.total.guest == 44);
  CHECK(s.total.guestNice == 36);
  CHECK(s.total.busy() == 301854 + 612 + 111922 + 2 + 3944);

  const std::vector<CpuTimes> expected = {
      {44490, 19, 21045, 1087069, 220, 1, 3410, 0, 2, 1},
      {47869, 23, 16474, 1110787, 591, 0, 46, 0, 3, 2},
      {46504, 36, 15916, 1112321, 441, 0, 326, 0, 4, 3},
      {47054, 102, 15683, 1113230, 533, 0, 60, 0, 5, 4},
      {28413, 25, 10776, 1140321, 217, 0, 8, 0, 6, 5},
      {29271, 101, 11586, 1136270, 672, 0, 30, 0, 7, 6},
      {29152, 36, 10276, 1139721, 319, 0, 29, 0, 8, 7},
      {29098, 268, 10164, 1139282, 555, 0, 31, 0, 9, 8},
  };
  REQUIRE(s.cpuIds == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  REQUIRE(s.perCpu.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("cpu" << i);
    CHECK(sameTimes(s.perCpu[i], expected[i]));
  }
  CHECK(s.contextSwitches == 38014093);
  CHECK(s.bootTimeSeconds == 1418183276);
  CHECK(s.processesCreated == 26442);
  CHECK(s.procsRunning == 2);
  CHECK(s.procsBlocked == 0);
}

TEST_CASE("proc stat reads procfs's capture with its 130 kB intr line", "[proc_parsers]") {
  const ProcStat s = valueOf(parseProcStat(fixture("proc/procfs/stat")));
  CHECK(sameTimes(s.total, {301854, 612, 111922, 8979004, 3552, 2, 3944, 0, 0, 0}));
  REQUIRE(s.perCpu.size() == 8);
  CHECK(sameTimes(s.perCpu[0], {44490, 19, 21045, 1087069, 220, 1, 3410, 0, 0, 0}));
  CHECK(sameTimes(s.perCpu[7], {29098, 268, 10164, 1139282, 555, 0, 31, 0, 0, 0}));
  CHECK(s.cpuIds.back() == 7);
  CHECK(s.contextSwitches == 38014093);
  CHECK(s.bootTimeSeconds == 1418183276);
  CHECK(s.processesCreated == 26442);
  CHECK(s.procsRunning == 2);
  CHECK(s.procsBlocked == 1);
}

TEST_CASE("proc stat accepts the seven cpu fields of old kernels and ignores newer extras",
          "[proc_parsers]") {
  const ProcStat old = valueOf(parseProcStat("cpu  1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\n"));
  CHECK(sameTimes(old.total, {1, 2, 3, 4, 5, 6, 7, 0, 0, 0}));
  CHECK(old.bootTimeSeconds == 0);  // absent lines leave 0

  const ProcStat future =
      valueOf(parseProcStat("cpu  1 2 3 4 5 6 7 8 9 10 11 12\n"
                            "cpu3\t1\t2 3 4 5 6 7 8 9 10 11\n"
                            "cpufreq unknown line\nnew_line x y z\n\nbtime 5 extra\n"));
  CHECK(sameTimes(future.total, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  CHECK(future.cpuIds == std::vector<int>{3});
  CHECK(future.bootTimeSeconds == 5);

  const ProcStat max = valueOf(parseProcStat("cpu  "s + kUint64Max + " 0 0 0 0 0 0\n"));
  CHECK(max.total.user == UINT64_MAX);
}

TEST_CASE("proc stat names the cpu field that is not an unsigned integer", "[proc_parsers]") {
  CHECK(errorOf(parseProcStat("cpu  1 2 3 12x 5 6 7\n")) ==
        R"(line "cpu": field 4 (idle) "12x" is not an unsigned integer)");
  CHECK(errorOf(parseProcStat("cpu  -5 2 3 4 5 6 7\n")) ==
        R"(line "cpu": field 1 (user) "-5" is not an unsigned integer)");
  CHECK(errorOf(parseProcStat("cpu  +5 2 3 4 5 6 7\n")) ==
        R"(line "cpu": field 1 (user) "+5" is not an unsigned integer)");
  CHECK(errorOf(parseProcStat("cpu  1 2 "s + kUint64MaxPlusOne + " 4 5 6 7\n")) ==
        R"(line "cpu": field 3 (system) "18446744073709551616" is out of range for uint64)");
  CHECK(errorOf(parseProcStat("cpu  1 2 3 4 5 6 7\ncpu1 1 2 3 4 5 6 7 1.5\n")) ==
        R"(line "cpu1": field 8 (steal) "1.5" is not an unsigned integer)");
  CHECK(errorOf(parseProcStat("cpu  1 2 3 4 5 6 7\r\n")) ==
        R"(line "cpu": field 7 (softirq) "7\x0d" is not an unsigned integer)");
  CHECK(errorOf(parseProcStat("cpu  1 2\0 3 4 5 6 7\n"s)) ==
        R"(line "cpu": field 2 (nice) "2\x00" is not an unsigned integer)");
}

TEST_CASE("proc stat names a missing cpu field, line or truncated line", "[proc_parsers]") {
  CHECK(errorOf(parseProcStat("")) == R"(line "cpu" missing)");
  CHECK(errorOf(parseProcStat("\n\n\n")) == R"(line "cpu" missing)");
  CHECK(errorOf(parseProcStat("cpu0 1 2 3 4 5 6 7\nbtime 1\n")) == R"(line "cpu" missing)");
  CHECK(errorOf(parseProcStat("cpu  1 2 3\n")) ==
        R"(line "cpu": field 4 (idle) missing (need user..softirq))");
  CHECK(errorOf(parseProcStat("cpu\n")) ==
        R"(line "cpu": field 1 (user) missing (need user..softirq))");
  CHECK(errorOf(parseProcStat("cpu  1 2 3 4 5 6 7 8 9 10")) ==
        R"(line "cpu": no newline at end of input (truncated?))");
  CHECK(errorOf(parseProcStat("cpu  1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7 8 9 1")) ==
        R"(line "cpu0": no newline at end of input (truncated?))");
  CHECK(errorOf(parseProcStat("cpu  1 2 3 4 5 6 7\nbtime 14181")) ==
        R"(line "btime": no newline at end of input (truncated?))");
}

TEST_CASE("proc stat rejects repeated lines and impossible cpu ids", "[proc_parsers]") {
  const std::string seven = " 1 2 3 4 5 6 7\n";
  CHECK(errorOf(parseProcStat("cpu" + seven + "cpu" + seven)) == R"(line "cpu": appears twice)");
  CHECK(errorOf(parseProcStat("cpu" + seven + "cpu0" + seven + "cpu0" + seven)) ==
        R"(line "cpu0": appears twice)");
  CHECK(errorOf(parseProcStat("cpu" + seven + "btime 1\nbtime 2\n")) ==
        R"(line "btime": appears twice)");
  CHECK(errorOf(parseProcStat("cpu" + seven + "cpu65536" + seven)) ==
        R"(line "cpu65536": cpu id is not an integer in 0..65535)");
  CHECK(errorOf(parseProcStat("cpu" + seven + "cpu" + kUint64MaxPlusOne + seven)) ==
        R"(line "cpu18446744073709551616": cpu id is not an integer in 0..65535)");
  CHECK(errorOf(parseProcStat("cpu" + seven + "cpu1x" + seven)) ==
        R"(line "cpu1x": cpu id is not an integer in 0..65535)");
  const ProcStat highest = valueOf(parseProcStat("cpu" + seven + "cpu65535" + seven));
  CHECK(highest.cpuIds == std::vector<int>{65535});
}

TEST_CASE("proc stat names the bad value of a counter line", "[proc_parsers]") {
  const std::string cpu = "cpu  1 2 3 4 5 6 7\n";
  CHECK(errorOf(parseProcStat(cpu + "btime abc\n")) ==
        R"(line "btime": "abc" is not an unsigned integer)");
  CHECK(errorOf(parseProcStat(cpu + "ctxt\n")) == R"(line "ctxt": value missing)");
  CHECK(errorOf(parseProcStat(cpu + "processes " + kUint64MaxPlusOne + "\n")) ==
        R"(line "processes": "18446744073709551616" is out of range for uint64)");
  CHECK(errorOf(parseProcStat(cpu + "procs_blocked -1\n")) ==
        R"(line "procs_blocked": "-1" is not an unsigned integer)");
}

TEST_CASE("every prefix of a real /proc/stat fails or agrees with the whole file",
          "[proc_parsers]") {
  for (const char* path : {"proc/node_exporter/stat", "proc/procfs/stat"}) {
    const std::string text = fixture(path);
    const ProcStat whole = valueOf(parseProcStat(text));
    for (size_t cut : cutPoints(text.size())) {
      auto r = parseProcStat(std::string_view(text).substr(0, cut));
      if (!r.ok()) continue;
      INFO(path << " cut at " << cut);
      CHECK(sameTimes(r->total, whole.total));
      REQUIRE(r->perCpu.size() <= whole.perCpu.size());
      for (size_t i = 0; i < r->perCpu.size(); ++i) {
        CHECK(r->cpuIds[i] == whole.cpuIds[i]);
        CHECK(sameTimes(r->perCpu[i], whole.perCpu[i]));
      }
      CHECK(sameOrAbsent(r->bootTimeSeconds, whole.bootTimeSeconds));
      CHECK(sameOrAbsent(r->contextSwitches, whole.contextSwitches));
      CHECK(sameOrAbsent(r->processesCreated, whole.processesCreated));
      CHECK(sameOrAbsent(r->procsRunning, whole.procsRunning));
      CHECK(sameOrAbsent(r->procsBlocked, whole.procsBlocked));
    }
  }
}

TEST_CASE("proc stat copes with a 50 MB file and a million-field line", "[proc_parsers]") {
  std::string text = "cpu  1 2 3 4 5 6 7 8 9 10";
  for (int i = 0; i < 1000000; ++i) text += " 1";  // a cpu line far longer than any kernel's
  text += "\n";
  for (int id = 0; id <= 65535; ++id) text += cat("cpu", std::to_string(id), " 1 2 3 4 5 6 7\n");
  text += "intr 1";
  while (text.size() < 50u << 20) text += " 0 0 0 0 0 0 0 0";
  text += "\nbtime 77\n";
  const ProcStat s = valueOf(parseProcStat(text));
  CHECK(sameTimes(s.total, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  CHECK(s.perCpu.size() == 65536);
  CHECK(s.cpuIds.back() == 65535);
  CHECK(s.bootTimeSeconds == 77);
}

// ------------------------------------------------------------- /proc/meminfo

namespace {

// Both meminfo captures predate Linux 3.14's MemAvailable line. This puts one
// where the kernel writes it, after MemFree, so the rest of a real capture can
// be checked.
std::string withMemAvailable(const std::string& text, const std::string& kb) {
  const size_t memFree = text.find("MemFree:");
  REQUIRE(memFree != std::string::npos);
  const size_t after = text.find('\n', memFree) + 1;
  return text.substr(0, after) + "MemAvailable:   " + kb + " kB\n" + text.substr(after);
}

}  // namespace

TEST_CASE("meminfo captures from before kernel 3.14 are rejected for lacking MemAvailable",
          "[proc_parsers]") {
  CHECK(errorOf(parseMeminfo(fixture("proc/node_exporter/meminfo"))) ==
        R"(field "MemAvailable": missing)");
  CHECK(errorOf(parseMeminfo(fixture("proc/procfs/meminfo"))) ==
        R"(field "MemAvailable": missing)");
}

TEST_CASE("meminfo reads node_exporter's capture in bytes", "[proc_parsers]") {
  const MemInfo m =
      valueOf(parseMeminfo(withMemAvailable(fixture("proc/node_exporter/meminfo"), "1000000")));
  CHECK(m.memTotalBytes == 3831959552ull);  // 3742148 kB
  CHECK(m.memFreeBytes == 225472ull * 1024);
  CHECK(m.memAvailableBytes == 1000000ull * 1024);
  CHECK(m.buffersBytes == 22040ull * 1024);
  CHECK(m.cachedBytes == 930888ull * 1024);  // not SwapCached's 192504
  CHECK(m.swapTotalBytes == 4194300ull * 1024);
  CHECK(m.swapFreeBytes == 3155360ull * 1024);
  CHECK(m.usedBytes() == (3742148ull - 1000000) * 1024);
  // koordlet's node_memory_usage_with_page_cache: MemTotal - MemFree.
  CHECK(m.usedWithPageCacheBytes() == (3742148ull - 225472) * 1024);
}

TEST_CASE("meminfo reads procfs's capture, which has no swap", "[proc_parsers]") {
  const MemInfo m =
      valueOf(parseMeminfo(withMemAvailable(fixture("proc/procfs/meminfo"), "13000000")));
  CHECK(m.memTotalBytes == 15666184ull * 1024);
  CHECK(m.memFreeBytes == 440324ull * 1024);
  CHECK(m.memAvailableBytes == 13000000ull * 1024);
  CHECK(m.buffersBytes == 1020128ull * 1024);
  CHECK(m.cachedBytes == 12007640ull * 1024);
  CHECK(m.swapTotalBytes == 0);
  CHECK(m.swapFreeBytes == 0);
}

TEST_CASE("meminfo skips lines it does not need, with or without a unit", "[proc_parsers]") {
  const MemInfo m = valueOf(
      parseMeminfo("HugePages_Total:       0\nMemTotal: 100 kB\nnot a meminfo line\nWeird: x y z\n"
                   "MemAvailable: 40 kB\nAnonHugePages:  junk\n"));
  CHECK(m.memTotalBytes == 102400);
  CHECK(m.memAvailableBytes == 40960);
  CHECK(m.usedBytes() == 61440);
  CHECK(m.memFreeBytes == 0);

  const MemInfo over = valueOf(parseMeminfo("MemTotal: 10 kB\nMemAvailable: 20 kB\n"));
  CHECK(over.usedBytes() == 0);  // never wraps
  // No MemFree line reads as 0 free: with page cache is then all of MemTotal.
  CHECK(m.usedWithPageCacheBytes() == 102400);
}

TEST_CASE("meminfo names the field whose value or unit is wrong", "[proc_parsers]") {
  const std::string avail = "MemAvailable: 1 kB\n";
  CHECK(errorOf(parseMeminfo("MemTotal: abc kB\n" + avail)) ==
        R"(field "MemTotal": "abc" is not an unsigned integer)");
  CHECK(errorOf(parseMeminfo("MemTotal: -1 kB\n" + avail)) ==
        R"(field "MemTotal": "-1" is not an unsigned integer)");
  CHECK(errorOf(parseMeminfo("MemTotal: "s + kUint64MaxPlusOne + " kB\n" + avail)) ==
        R"(field "MemTotal": "18446744073709551616" is out of range for uint64)");
  // 2^54 kB is 2^64 bytes: one more than uint64 holds.
  CHECK(errorOf(parseMeminfo("MemTotal: 18014398509481984 kB\n" + avail)) ==
        R"(field "MemTotal": 18014398509481984 kB is out of range for uint64 bytes)");
  CHECK(valueOf(parseMeminfo("MemTotal: 18014398509481983 kB\n" + avail)).memTotalBytes ==
        18014398509481983ull * 1024);
  CHECK(errorOf(parseMeminfo("MemTotal: 1 kB\nMemFree: 1 MB\n" + avail)) ==
        R"(field "MemFree": unit "MB" is not "kB")");
  CHECK(errorOf(parseMeminfo("MemTotal: 1\n" + avail)) ==
        R"(field "MemTotal": unit missing (expected "kB"))");
  CHECK(errorOf(parseMeminfo("MemTotal:\n" + avail)) == R"(field "MemTotal": value missing)");
  CHECK(errorOf(parseMeminfo("MemTotal: 1 kB\nMemTotal: 2 kB\n" + avail)) ==
        R"(field "MemTotal": appears twice)");
  CHECK(errorOf(parseMeminfo("MemTotal: 1\0 kB\n"s + avail)) ==
        R"(field "MemTotal": "1\x00" is not an unsigned integer)");
}

TEST_CASE("meminfo names the missing or truncated field", "[proc_parsers]") {
  CHECK(errorOf(parseMeminfo("")) == R"(field "MemTotal": missing)");
  CHECK(errorOf(parseMeminfo("MemAvailable: 1 kB\n")) == R"(field "MemTotal": missing)");
  CHECK(errorOf(parseMeminfo("MemTotal: 100 kB\n")) == R"(field "MemAvailable": missing)");
  CHECK(errorOf(parseMeminfo("MemTotal: 100 kB\nMemAvailable: 12")) ==
        R"(field "MemAvailable": no newline at end of input (truncated?))");
}

TEST_CASE("every prefix of a real meminfo fails or agrees with the whole file", "[proc_parsers]") {
  for (const char* path : {"proc/node_exporter/meminfo", "proc/procfs/meminfo"}) {
    const std::string text = withMemAvailable(fixture(path), "123456");
    const MemInfo whole = valueOf(parseMeminfo(text));
    for (size_t cut : cutPoints(text.size())) {
      auto r = parseMeminfo(std::string_view(text).substr(0, cut));
      if (!r.ok()) continue;
      INFO(path << " cut at " << cut);
      CHECK(r->memTotalBytes == whole.memTotalBytes);
      CHECK(r->memAvailableBytes == whole.memAvailableBytes);
      CHECK(sameOrAbsent(r->memFreeBytes, whole.memFreeBytes));
      CHECK(sameOrAbsent(r->buffersBytes, whole.buffersBytes));
      CHECK(sameOrAbsent(r->cachedBytes, whole.cachedBytes));
      CHECK(sameOrAbsent(r->swapTotalBytes, whole.swapTotalBytes));
      CHECK(sameOrAbsent(r->swapFreeBytes, whole.swapFreeBytes));
    }
  }
}

// ------------------------------------------------------------- /proc/loadavg

TEST_CASE("loadavg reads both captures", "[proc_parsers]") {
  const LoadAvg a = valueOf(parseLoadavg(fixture("proc/node_exporter/loadavg")));
  CHECK(a.load1 == 0.21);  // from_chars rounds exactly like the literal
  CHECK(a.load5 == 0.37);
  CHECK(a.load15 == 0.39);
  CHECK(a.runnable == 1);
  CHECK(a.threads == 719);
  CHECK(a.lastPid == 19737);

  const LoadAvg b = valueOf(parseLoadavg(fixture("proc/procfs/loadavg")));
  CHECK(b.load1 == 0.02);
  CHECK(b.load5 == 0.04);
  CHECK(b.load15 == 0.05);
  CHECK(b.runnable == 1);
  CHECK(b.threads == 497);
  CHECK(b.lastPid == 11947);
}

TEST_CASE("loadavg names the missing or malformed field", "[proc_parsers]") {
  CHECK(errorOf(parseLoadavg("")) == "empty input: field 1 (load1) missing");
  CHECK(errorOf(parseLoadavg("\n")) == "field 1 (load1) missing");
  CHECK(errorOf(parseLoadavg("0.00 0.01\n")) == "field 3 (load15) missing");
  CHECK(errorOf(parseLoadavg("0.00 0.01 0.05\n")) == "field 4 (runnable/threads) missing");
  CHECK(errorOf(parseLoadavg("0.00 0.01 0.05 1/123\n")) == "field 5 (last_pid) missing");
  CHECK(errorOf(parseLoadavg("0.00 abc 0.05 1/1 1\n")) ==
        R"(field 2 (load5) "abc" is not a non-negative decimal number)");
  CHECK(errorOf(parseLoadavg("-0.50 0.01 0.05 1/1 1\n")) ==
        R"(field 1 (load1) "-0.50" is not a non-negative decimal number)");
  CHECK(errorOf(parseLoadavg("inf 0.01 0.05 1/1 1\n")) ==
        R"(field 1 (load1) "inf" is not a non-negative decimal number)");
  CHECK(errorOf(parseLoadavg("0.1 nan 0.05 1/1 1\n")) ==
        R"(field 2 (load5) "nan" is not a non-negative decimal number)");
  CHECK(errorOf(parseLoadavg("0.1 0.2 0.3x 1/1 1\n")) ==
        R"(field 3 (load15) "0.3x" is not a non-negative decimal number)");
  CHECK(errorOf(parseLoadavg("0.1 0.2 0.3 1719 5\n")) ==
        R"(field 4 (runnable/threads) "1719" is not runnable/threads)");
  CHECK(errorOf(parseLoadavg("0.1 0.2 0.3 1/x 5\n")) ==
        R"(field 4 (runnable/threads): threads "x" is not an unsigned integer)");
  CHECK(errorOf(parseLoadavg("0.1 0.2 0.3 /7 5\n")) ==
        R"(field 4 (runnable/threads): runnable "" is not an unsigned integer)");
  CHECK(errorOf(parseLoadavg("0.1 0.2 0.3 1/7 "s + kUint64MaxPlusOne + "\n")) ==
        R"(field 5 (last_pid) "18446744073709551616" is out of range for uint64)");
  CHECK(errorOf(parseLoadavg("0.1 0.2 0.3 1/7 -5\n")) ==
        R"(field 5 (last_pid) "-5" is not an unsigned integer)");
  CHECK(errorOf(parseLoadavg("0.21 0.37 0.39 1/719 197")) ==
        R"(field 5 (last_pid) "197": no newline at end of input (truncated?))");

  // Decimals are capped at 64 characters; 1e400 would not fit a double anyway.
  const std::string e60 = cat("1", std::string(60, '0'));
  CHECK(valueOf(parseLoadavg(e60 + ".00 0 0 1/1 1\n")).load1 == 1e60);
  CHECK(
      errorOf(parseLoadavg(e60 + ".000 0 0 1/1 1\n")) ==
      R"(field 1 (load1) "1000000000000000000000000000000000000000..." (65 bytes) is too long for a decimal number)");
  CHECK(
      errorOf(parseLoadavg(cat("1", std::string(400, '0'), " 0 0 1/1 1\n"))) ==
      R"(field 1 (load1) "1000000000000000000000000000000000000000..." (401 bytes) is too long for a decimal number)");
}

TEST_CASE("every proper prefix of a real loadavg is an error", "[proc_parsers]") {
  for (const char* path : {"proc/node_exporter/loadavg", "proc/procfs/loadavg"}) {
    const std::string text = fixture(path);
    for (size_t cut = 0; cut < text.size(); ++cut) {
      INFO(path << " cut at " << cut);
      CHECK_FALSE(parseLoadavg(std::string_view(text).substr(0, cut)).ok());
    }
  }
}

// ------------------------------------------------------------ PSI (pressure)

TEST_CASE("pressure reads node_exporter's cpu, io and memory captures", "[proc_parsers]") {
  const Pressure cpu = valueOf(parsePressure(fixture("proc/node_exporter/pressure/cpu")));
  CHECK(samePressureLine(cpu.some, {0.0, 0.0, 0.0, 14036781}));
  REQUIRE(cpu.full.has_value());
  CHECK(samePressureLine(*cpu.full, {0.0, 0.0, 0.0, 0}));

  const Pressure io = valueOf(parsePressure(fixture("proc/node_exporter/pressure/io")));
  CHECK(samePressureLine(io.some, {0.18, 0.34, 0.10, 159886802}));
  REQUIRE(io.full.has_value());
  CHECK(samePressureLine(*io.full, {0.18, 0.34, 0.10, 159229614}));

  const Pressure mem = valueOf(parsePressure(fixture("proc/node_exporter/pressure/memory")));
  CHECK(samePressureLine(mem.some, {0.0, 0.0, 0.0, 0}));
  REQUIRE(mem.full.has_value());
  CHECK(samePressureLine(*mem.full, {0.0, 0.0, 0.0, 0}));
}

TEST_CASE("pressure rejects irq pressure, which has only a full line", "[proc_parsers]") {
  // /proc/pressure/irq (Linux 6.1+) reports "full" only; parsePressure's
  // contract is the cpu, memory and io files, where "some" is always present.
  CHECK(errorOf(parsePressure(fixture("proc/node_exporter/pressure/irq"))) ==
        R"("some" line missing)");
}

TEST_CASE("pressure reads procfs's maintainer-made files, cpu without full", "[proc_parsers]") {
  const Pressure cpu = valueOf(parsePressure(fixture("proc/procfs/pressure/cpu")));
  CHECK(samePressureLine(cpu.some, {0.10, 2.00, 3.85, 15}));
  CHECK_FALSE(cpu.full.has_value());  // cpu.pressure before kernel 5.13

  for (const char* path : {"proc/procfs/pressure/io", "proc/procfs/pressure/memory"}) {
    INFO(path);
    const Pressure p = valueOf(parsePressure(fixture(path)));
    CHECK(samePressureLine(p.some, {0.10, 2.00, 3.85, 15}));
    REQUIRE(p.full.has_value());
    CHECK(samePressureLine(*p.full, {0.20, 3.00, 4.95, 25}));
  }
}

TEST_CASE("pressure tolerates keys and lines a newer kernel may add", "[proc_parsers]") {
  const Pressure p = valueOf(
      parsePressure("some avg10=1.50 avg60=0.75 future=x avg300=0.25 total=123 avg1200=9.9\n"
                    "later metric=1\n"
                    "full total=4 avg300=3 avg60=2 avg10=1\n"));
  CHECK(samePressureLine(p.some, {1.5, 0.75, 0.25, 123}));
  REQUIRE(p.full.has_value());
  CHECK(samePressureLine(*p.full, {1, 2, 3, 4}));
}

TEST_CASE("pressure names the line and key at fault", "[proc_parsers]") {
  const std::string full = "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
  CHECK(errorOf(parsePressure("")) == R"("some" line missing)");
  CHECK(errorOf(parsePressure(full)) == R"("some" line missing)");
  CHECK(errorOf(parsePressure("some avg10=abc avg60=0.00 avg300=0.00 total=0\n")) ==
        R"("some" line: avg10 "abc" is not a non-negative decimal number)");
  CHECK(errorOf(parsePressure("some avg10=0.00 avg60=0.00 avg300=0.00\n")) ==
        R"("some" line: total missing)");
  CHECK(errorOf(parsePressure("some\n")) == R"("some" line: avg10 missing)");
  CHECK(errorOf(parsePressure("some avg10=0.00 garbage avg60=0 avg300=0 total=0\n")) ==
        R"("some" line: "garbage" is not key=value)");
  CHECK(errorOf(parsePressure("some avg10=0 avg60=0 avg60=1 avg300=0 total=0\n")) ==
        R"("some" line: avg60 appears twice)");
  CHECK(errorOf(parsePressure("some avg10=0 avg60=0 avg300=0 total=0\n"
                              "some avg10=0 avg60=0 avg300=0 total=0\n")) ==
        R"("some" line appears twice)");
  CHECK(
      errorOf(parsePressure("some avg10=0 avg60=0 avg300=0 total="s + kUint64MaxPlusOne + "\n")) ==
      R"("some" line: total "18446744073709551616" is out of range for uint64)");
  CHECK(errorOf(parsePressure("some avg10=0 avg60=0 avg300=0 total=-1\n")) ==
        R"("some" line: total "-1" is not an unsigned integer)");
  CHECK(errorOf(parsePressure("some avg10=0 avg60=0 avg300=0 total=0\n"
                              "full avg10=0 avg60=0 avg300=-1.00 total=0\n")) ==
        R"("full" line: avg300 "-1.00" is not a non-negative decimal number)");
  CHECK(errorOf(parsePressure("some avg10=0 avg60=0 avg300=0 total=0\nfull avg10=0.1")) ==
        R"("full" line: no newline at end of input (truncated?))");
  CHECK(errorOf(parsePressure("some avg10=0 avg60=0 avg300=0 total=15")) ==
        R"("some" line: no newline at end of input (truncated?))");
  CHECK(errorOf(parsePressure("some avg10=0\0 avg60=0 avg300=0 total=0\n"s)) ==
        R"("some" line: avg10 "0\x00" is not a non-negative decimal number)");
}

TEST_CASE("every prefix of a real pressure file fails or agrees with the whole file",
          "[proc_parsers]") {
  for (const char* path : {"proc/node_exporter/pressure/io", "proc/node_exporter/pressure/cpu",
                           "proc/procfs/pressure/memory"}) {
    const std::string text = fixture(path);
    const Pressure whole = valueOf(parsePressure(text));
    for (size_t cut = 0; cut < text.size(); ++cut) {
      auto r = parsePressure(std::string_view(text).substr(0, cut));
      if (!r.ok()) continue;
      INFO(path << " cut at " << cut);
      CHECK(samePressureLine(r->some, whole.some));
      if (r->full) CHECK(samePressureLine(*r->full, *whole.full));
    }
  }
}

// ----------------------------------------------------------- /proc/<pid>/stat

TEST_CASE("pid stat reads the captured kernel threads and processes", "[proc_parsers]") {
  struct Case {
    const char* path;
    PidStat want;  // utime, stime, starttime, num_threads, vsize, rss
  };
  const std::vector<Case> cases = {
      {"proc/node_exporter/1/stat", {36, 98, 29, 1, 109604864, 2507}},
      // No final newline in this capture; 52 fields, so rss is still complete.
      {"proc/node_exporter/10/stat", {14, 0, 24, 1, 0, 0}},
      {"proc/node_exporter/11/stat", {0, 346, 32, 1, 0, 0}},
      {"proc/procfs/26231/stat", {1677, 44, 82375, 1, 56274944, 1981}},
      // cutime/cstime are INT64_MIN/MAX here: fields we do not read go unchecked.
      {"proc/procfs/26232/stat", {0, 0, 5, 1, 0, 0}},
      {"proc/procfs/27079/stat", {58125, 15, 4289574, 5, 36282368, 138}},
      // comm "(a b ) ( c d) )", and a second line after the stat line.
      {"proc/procfs/584/stat", {0, 0, 10839175, 1, 10395648, 155}},
  };
  for (const Case& c : cases) {
    INFO(c.path);
    const PidStat s = valueOf(parsePidStat(fixture(c.path)));
    CHECK(s.utimeTicks == c.want.utimeTicks);
    CHECK(s.stimeTicks == c.want.stimeTicks);
    CHECK(s.startTimeTicks == c.want.startTimeTicks);
    CHECK(s.numThreads == c.want.numThreads);
    CHECK(s.vsizeBytes == c.want.vsizeBytes);
    CHECK(s.rssPages == c.want.rssPages);
  }
}

TEST_CASE("pid stat counts fields from the last parenthesis of comm", "[proc_parsers]") {
  const std::vector<std::string> comms = {"x", "a) 1 2 3 (b", ") ) )",      "with\nnewline)",
                                          "",  "((",          "nul\0byte"s, "\xff\xfe binary"};
  for (const std::string& comm : comms) {
    INFO(comm);
    const PidStat s = valueOf(parsePidStat(pidStatWith(comm)));
    CHECK(s.utimeTicks == 14);
    CHECK(s.stimeTicks == 15);
    CHECK(s.numThreads == 20);
    CHECK(s.startTimeTicks == 22);
    CHECK(s.vsizeBytes == 23);
    CHECK(s.rssPages == 24);
  }
  // Only 24 fields, but whitespace after rss shows it is whole.
  CHECK(valueOf(parsePidStat(pidStatWith("short", 24))).rssPages == 24);
}

TEST_CASE("pid stat names the missing, malformed or truncated field", "[proc_parsers]") {
  CHECK(errorOf(parsePidStat("")) == R"m(comm: no closing ")")m");
  CHECK(errorOf(parsePidStat("42 (sleep")) == R"m(comm: no closing ")")m");
  CHECK(errorOf(parsePidStat("42 sleep) S 1\n")) == R"m(comm: no "(" before the last ")")m");
  CHECK(errorOf(parsePidStat("42 (sleep)\n")) == "field 3 (state) missing");
  CHECK(errorOf(parsePidStat("42 (sleep) S 1 2 3 4 5 6 7 8 9 10 11\n")) ==
        "field 15 (stime) missing");

  std::string text = pidStatWith("x");
  CHECK(errorOf(parsePidStat(text.replace(text.find(" 14 "), 4, " abc "))) ==
        R"(field 14 (utime) "abc" is not an unsigned integer)");
  text = pidStatWith("x");
  CHECK(errorOf(parsePidStat(text.replace(text.find(" 20 "), 4, " -1 "))) ==
        R"(field 20 (num_threads) "-1" is not an unsigned integer)");
  text = pidStatWith("x");
  CHECK(errorOf(parsePidStat(text.replace(text.find(" 24 "), 4, " "s + kUint64MaxPlusOne + " "))) ==
        R"(field 24 (rss) "18446744073709551616" is out of range for uint64)");
  text = pidStatWith("x");
  CHECK(errorOf(parsePidStat(text.replace(text.find(" 23 "), 4, " 2\0003 "s))) ==
        R"(field 23 (vsize) "2\x003" is not an unsigned integer)");

  text = pidStatWith("x", 24);
  text.pop_back();  // the '\n' after rss
  CHECK(errorOf(parsePidStat(text)) ==
        R"(field 24 (rss) "24": nothing follows it (truncated? the kernel writes ~52 fields))");
}

TEST_CASE("every prefix of a real pid stat fails or agrees with the whole file", "[proc_parsers]") {
  for (const char* path : {"proc/procfs/26231/stat", "proc/procfs/584/stat"}) {
    const std::string text = fixture(path);
    const PidStat whole = valueOf(parsePidStat(text));
    for (size_t cut = 0; cut < text.size(); ++cut) {
      auto r = parsePidStat(std::string_view(text).substr(0, cut));
      if (!r.ok()) continue;
      INFO(path << " cut at " << cut);
      CHECK(r->utimeTicks == whole.utimeTicks);
      CHECK(r->stimeTicks == whole.stimeTicks);
      CHECK(r->startTimeTicks == whole.startTimeTicks);
      CHECK(r->numThreads == whole.numThreads);
      CHECK(r->vsizeBytes == whole.vsizeBytes);
      CHECK(r->rssPages == whole.rssPages);
    }
  }
}

TEST_CASE("pid stat copes with a huge comm region and a million fields", "[proc_parsers]") {
  std::string many = pidStatWith("x");
  many.pop_back();
  for (int i = 0; i < 1000000; ++i) many += " 7";
  many += "\n";
  CHECK(valueOf(parsePidStat(many)).rssPages == 24);

  const std::string hugeComm = cat("1 (", std::string(50u << 20, ')'), " S 1\n");
  CHECK(errorOf(parsePidStat(hugeComm)) == "field 5 (pgrp) missing");
}

// ------------------------------------------------------------- all parsers

TEST_CASE("no parser crashes on empty, binary, NUL-filled or 50 MB inputs", "[proc_parsers]") {
  std::string millionFields;  // one line of a million fields, for each format
  millionFields.reserve(6u << 20);
  for (int i = 0; i < 1000000; ++i) millionFields += " 12345";

  // Built one at a time: several 50 MB strings at once are heavy under ASan.
  const std::vector<std::function<std::string()>> inputs = {
      [] { return ""s; },
      [] { return "\n"s; },
      [] { return std::string(1, '\0'); },
      [] { return std::string(4096, '\0'); },
      [] { return noise(64u << 10, 1); },
      [] { return noise(50u << 20, 2); },
      [] { return std::string(50u << 20, ' '); },
      [] { return std::string(8u << 20, '\n'); },  // 8 M empty lines: slow under ASan
      [] { return std::string(50u << 20, '9'); },
      [] { return cat(std::string(1u << 20, '('), std::string(1u << 20, ')')); },
      [] { return cat("cpu", std::string(1u << 20, '1'), "\n"); },
      [] { return cat("some ", std::string(1u << 20, '='), "\n"); },
      [] { return cat("MemTotal:", std::string(1u << 20, ':'), "\n"); },
      [&] { return cat("cpu ", millionFields, "\n"); },
      [&] { return cat("MemTotal: ", millionFields, "\n"); },
      [&] { return cat("some", millionFields, "\n"); },
      [&] { return cat("1.0", millionFields, "\n"); },
      [&] { return cat("1 (x)", millionFields, "\n"); },
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string in = inputs[i]();
    INFO("input " << i << ", " << in.size() << " bytes");
    // Each may be a value or an error; an error stays short whatever the input.
    for (const std::string& message :
         {messageOf(parseProcStat(in)), messageOf(parseMeminfo(in)), messageOf(parseLoadavg(in)),
          messageOf(parsePressure(in)), messageOf(parsePidStat(in))}) {
      INFO(message);
      CHECK(message.size() < 300);  // 40 bytes quoted, 4 per byte when escaped
    }
    if (i == 5) {  // 50 MB of noise
      CHECK(errorOf(parseProcStat(in)) == R"(line "cpu" missing)");
      CHECK(errorOf(parseMeminfo(in)) == R"(field "MemTotal": missing)");
      CHECK(errorOf(parsePressure(in)) == R"("some" line missing)");
    }
    if (i == 8) {  // 50 MB of '9'
      CHECK(
          errorOf(parseLoadavg(in)) ==
          R"(field 1 (load1) "9999999999999999999999999999999999999999..." (52428800 bytes) is too long for a decimal number)");
      CHECK(errorOf(parseProcStat(in)) == R"(line "cpu" missing)");
    }
    if (i == 3) {  // NULs
      CHECK(
          errorOf(parseLoadavg(in)) ==
          R"(field 1 (load1) "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00..." (4096 bytes) is not a non-negative decimal number)");
    }
  }
}

// ------------------------------------------------------------ this machine

TEST_CASE("this machine's /proc stat, meminfo, loadavg and self stat parse", "[proc_parsers]") {
  const ProcStat stat = valueOf(parseProcStat(readWhole("/proc/stat")));
  CHECK_FALSE(stat.perCpu.empty());
  CHECK(stat.perCpu.size() == stat.cpuIds.size());
  CHECK(stat.total.user + stat.total.system + stat.total.idle > 0);
  CHECK(stat.bootTimeSeconds > 1'000'000'000);

  const MemInfo mem = valueOf(parseMeminfo(readWhole("/proc/meminfo")));
  CHECK(mem.memTotalBytes > 0);
  CHECK(mem.memAvailableBytes <= mem.memTotalBytes);
  CHECK(mem.usedBytes() <= mem.memTotalBytes);

  const LoadAvg load = valueOf(parseLoadavg(readWhole("/proc/loadavg")));
  CHECK(load.threads >= 1);
  CHECK(load.runnable >= 1);  // this test is running

  const PidStat self = valueOf(parsePidStat(readWhole("/proc/self/stat")));
  CHECK(self.numThreads >= 1);
  CHECK(self.vsizeBytes > 0);
  CHECK(self.rssPages > 0);
  CHECK(self.startTimeTicks > 0);
}

TEST_CASE("this machine's /proc/pressure files parse", "[proc_parsers][live]") {
  // PSI is compiled out on some kernels and disabled by psi=0 on others.
  for (const char* path : {"/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io"}) {
    std::ifstream probe(path);
    if (!probe.good()) {
      KOORDLET_SKIP(path << " unreadable: kernel without PSI (before 4.20, or psi=0)");
    }
    INFO(path);
    CHECK(parsePressure(readWhole(path)).ok());
  }
}

}  // namespace test_metrics_proc_parsers
