// Parsers for /proc/stat, /proc/meminfo, /proc/loadavg, PSI files and
// /proc/<pid>/stat. Shared rules, so every parser fails the same way:
//  * Fields are separated by runs of spaces and tabs (and newlines, within the
//    one record of /proc/<pid>/stat); anything else (NUL, CR, binary) belongs
//    to a field and makes it invalid if we need that field.
//  * Lines and fields we do not need are skipped without being checked, so a
//    newer kernel's extra lines, keys or trailing fields are tolerated.
//  * A line we take values from must end in '\n', which the kernel always writes:
//    without it the last number may have been cut short ("123" of "12345") and
//    nothing else could tell. /proc/<pid>/stat only needs whitespace after rss,
//    since the kernel writes ~52 fields and we read 24.
//  * Numbers go through std::from_chars: no locale, no sign, no wrap-around.
//  * Error messages quote at most kQuoteMax bytes of input, escaped, so garbage
//    input cannot make a huge or unprintable message.
#include "metrics/proc_parsers.h"

#include "base/quote.h"
#include "base/text_scan.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>

namespace koord {
namespace {

using text::cat;
using text::Lines;
using text::toU64;

// Fields are separated by spaces and tabs, and newlines within one value's text.
class Fields : public text::Fields {
 public:
  explicit Fields(std::string_view t) : text::Fields(t, " \t\n") {}
};

constexpr size_t kQuoteMax = 40;
constexpr size_t kMaxDecimalChars = 64;

// Linux's NR_CPUS is at most 8192 on every architecture; larger ids are garbage.
// The bound also caps the duplicate-id bitmap.
constexpr uint64_t kMaxCpuId = 65535;

constexpr std::string_view kTruncated = ": no newline at end of input (truncated?)";

std::string quote(std::string_view s) { return quoteText(s, kQuoteMax); }

// Parses a whole field as a finite, non-negative decimal (load averages, PSI
// percentages). Same contract as toU64.
const char* toNonNegativeDouble(std::string_view s, double& out) {
  constexpr const char* kNotNumber = "is not a non-negative decimal number";
  // A leading digit rules out signs, "inf", "nan" and hex, none of which the
  // kernel writes.
  if (s.empty() || s[0] < '0' || s[0] > '9') return kNotNumber;
  // The kernel writes "%lu.%02lu". The cap keeps from_chars off megabytes of
  // digits, which some libstdc++ versions copy before converting.
  if (s.size() > kMaxDecimalChars) return "is too long for a decimal number";
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out, std::chars_format::fixed);
  if (ptr != end) return kNotNumber;
  if (ec == std::errc::result_out_of_range || !std::isfinite(out)) return "is out of range";
  if (ec != std::errc()) return kNotNumber;
  return nullptr;
}

// ---- /proc/stat ----

constexpr std::array<uint64_t CpuTimes::*, 10> kCpuMembers = {
    &CpuTimes::user, &CpuTimes::nice,    &CpuTimes::system, &CpuTimes::idle,  &CpuTimes::iowait,
    &CpuTimes::irq,  &CpuTimes::softirq, &CpuTimes::steal,  &CpuTimes::guest, &CpuTimes::guestNice};
constexpr std::array<const char*, 10> kCpuFieldNames = {
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice"};
// user..softirq: what every kernel since 2.6 writes and what busy() needs.
constexpr size_t kCpuRequiredFields = 7;

Result<CpuTimes> parseCpuLine(std::string_view key, Fields& fields) {
  CpuTimes times;
  for (size_t i = 0; i < kCpuMembers.size(); ++i) {
    const std::string_view field = fields.next();
    if (field.empty()) {
      if (i < kCpuRequiredFields) {
        return makeError(cat("line ", quote(key), ": field ", std::to_string(i + 1), " (",
                             kCpuFieldNames[i], ") missing (need user..softirq)"));
      }
      break;  // steal, guest, guest_nice: absent on old kernels.
    }
    if (const char* why = toU64(field, times.*kCpuMembers[i])) {
      return makeError(cat("line ", quote(key), ": field ", std::to_string(i + 1), " (",
                           kCpuFieldNames[i], ") ", quote(field), " ", why));
    }
  }
  return times;
}

// The single-number lines of /proc/stat.
struct StatScalar {
  std::string_view key;
  uint64_t ProcStat::*member;
};
constexpr std::array<StatScalar, 5> kStatScalars = {{
    {"btime", &ProcStat::bootTimeSeconds},
    {"ctxt", &ProcStat::contextSwitches},
    {"processes", &ProcStat::processesCreated},
    {"procs_running", &ProcStat::procsRunning},
    {"procs_blocked", &ProcStat::procsBlocked},
}};

// ---- /proc/meminfo ----

struct MemField {
  std::string_view key;
  uint64_t MemInfo::*member;
  bool required;
};
constexpr std::array<MemField, 7> kMemFields = {{
    {"MemTotal", &MemInfo::memTotalBytes, true},
    {"MemFree", &MemInfo::memFreeBytes, false},
    {"MemAvailable", &MemInfo::memAvailableBytes, true},
    {"Buffers", &MemInfo::buffersBytes, false},
    {"Cached", &MemInfo::cachedBytes, false},
    {"SwapTotal", &MemInfo::swapTotalBytes, false},
    {"SwapFree", &MemInfo::swapFreeBytes, false},
}};

// ---- PSI ----

// Parses the key=value pairs after "some"/"full". Keys other than the four we
// need are skipped: newer kernels may add some.
Result<PressureLine> parsePressureLine(std::string_view kind, Fields fields) {
  struct Want {
    std::string_view key;
    bool seen = false;
  };
  std::array<Want, 4> want = {{{"avg10"}, {"avg60"}, {"avg300"}, {"total"}}};
  PressureLine out;
  const std::string where = cat("\"", kind, "\" line: ");
  for (std::string_view field = fields.next(); !field.empty(); field = fields.next()) {
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) {
      return makeError(cat(where, quote(field), " is not key=value"));
    }
    const std::string_view key = field.substr(0, eq);
    const std::string_view value = field.substr(eq + 1);
    for (size_t i = 0; i < want.size(); ++i) {
      if (key != want[i].key) continue;
      if (want[i].seen) return makeError(cat(where, key, " appears twice"));
      want[i].seen = true;
      const char* why = nullptr;
      switch (i) {
        case 0:
          why = toNonNegativeDouble(value, out.avg10);
          break;
        case 1:
          why = toNonNegativeDouble(value, out.avg60);
          break;
        case 2:
          why = toNonNegativeDouble(value, out.avg300);
          break;
        default:
          why = toU64(value, out.totalMicros);
          break;
      }
      if (why) return makeError(cat(where, key, " ", quote(value), " ", why));
      break;
    }
  }
  for (const Want& w : want) {
    if (!w.seen) return makeError(cat(where, w.key, " missing"));
  }
  return out;
}

// ---- /proc/<pid>/stat ----

// proc(5) names of fields 3..24 (1-based); 1 is pid and 2 is comm.
constexpr std::array<const char*, 22> kPidStatNames = {
    "state",   "ppid",        "pgrp",        "session",   "tty_nr", "tpgid",  "flags",  "minflt",
    "cminflt", "majflt",      "cmajflt",     "utime",     "stime",  "cutime", "cstime", "priority",
    "nice",    "num_threads", "itrealvalue", "starttime", "vsize",  "rss"};
constexpr size_t kPidStatFirst = 3;
constexpr size_t kPidStatLast = 24;

uint64_t PidStat::*pidStatMember(size_t field) {
  switch (field) {
    case 14:
      return &PidStat::utimeTicks;
    case 15:
      return &PidStat::stimeTicks;
    case 20:
      return &PidStat::numThreads;
    case 22:
      return &PidStat::startTimeTicks;
    case 23:
      return &PidStat::vsizeBytes;
    case 24:
      return &PidStat::rssPages;
    default:
      return nullptr;
  }
}

}  // namespace

Result<ProcStat> parseProcStat(std::string_view text) {
  ProcStat stat;
  bool haveTotal = false;
  std::array<bool, kStatScalars.size()> scalarSeen{};
  std::vector<bool> cpuSeen;  // indexed by cpu id, grown on demand up to kMaxCpuId
  Lines lines(text);
  std::string_view line;
  bool terminated = false;
  while (lines.next(line, terminated)) {
    Fields fields(line);
    const std::string_view key = fields.next();
    if (key.size() >= 3 && key.substr(0, 3) == "cpu") {
      const std::string_view digits = key.substr(3);
      uint64_t id = 0;
      const bool isTotal = digits.empty();
      if (!isTotal) {
        if (digits[0] < '0' || digits[0] > '9') continue;  // not a cpu line
        if (toU64(digits, id) || id > kMaxCpuId) {
          return makeError(cat("line ", quote(key), ": cpu id is not an integer in 0..",
                               std::to_string(kMaxCpuId)));
        }
        if (id < cpuSeen.size() && cpuSeen[id]) {
          return makeError(cat("line ", quote(key), ": appears twice"));
        }
      } else if (haveTotal) {
        return makeError("line \"cpu\": appears twice");
      }
      if (!terminated) return makeError(cat("line ", quote(key), kTruncated));
      auto times = parseCpuLine(key, fields);
      if (!times) return times.error();
      if (isTotal) {
        stat.total = *times;
        haveTotal = true;
      } else {
        if (id >= cpuSeen.size()) cpuSeen.resize(id + 1);
        cpuSeen[id] = true;
        stat.cpuIds.push_back(static_cast<int>(id));
        stat.perCpu.push_back(*times);
      }
      continue;
    }
    for (size_t i = 0; i < kStatScalars.size(); ++i) {
      if (key != kStatScalars[i].key) continue;
      const std::string where = cat("line ", quote(key), ": ");
      if (scalarSeen[i]) return makeError(cat(where, "appears twice"));
      if (!terminated) return makeError(cat("line ", quote(key), kTruncated));
      const std::string_view value = fields.next();
      if (value.empty()) return makeError(cat(where, "value missing"));
      if (const char* why = toU64(value, stat.*kStatScalars[i].member)) {
        return makeError(cat(where, quote(value), " ", why));
      }
      scalarSeen[i] = true;
      break;
    }
  }
  if (!haveTotal) return makeError("line \"cpu\" missing");
  return stat;
}

Result<MemInfo> parseMeminfo(std::string_view text) {
  MemInfo info;
  std::array<bool, kMemFields.size()> seen{};
  Lines lines(text);
  std::string_view line;
  bool terminated = false;
  while (lines.next(line, terminated)) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    for (size_t i = 0; i < kMemFields.size(); ++i) {
      if (key != kMemFields[i].key) continue;
      const std::string where = cat("field \"", key, "\": ");
      if (seen[i]) return makeError(cat(where, "appears twice"));
      if (!terminated) return makeError(cat("field \"", key, "\"", kTruncated));
      Fields fields(line.substr(colon + 1));
      const std::string_view value = fields.next();
      const std::string_view unit = fields.next();
      uint64_t kb = 0;
      if (value.empty()) return makeError(cat(where, "value missing"));
      if (const char* why = toU64(value, kb)) return makeError(cat(where, quote(value), " ", why));
      // Every byte-sized meminfo line says kB; a line without it is a count
      // (HugePages_Total) and would be wrong here.
      if (unit.empty()) return makeError(cat(where, "unit missing (expected \"kB\")"));
      if (unit != "kB") return makeError(cat(where, "unit ", quote(unit), " is not \"kB\""));
      if (kb > std::numeric_limits<uint64_t>::max() / 1024) {
        return makeError(cat(where, value, " kB is out of range for uint64 bytes"));
      }
      info.*kMemFields[i].member = kb * 1024;
      seen[i] = true;
      break;
    }
  }
  for (size_t i = 0; i < kMemFields.size(); ++i) {
    if (kMemFields[i].required && !seen[i]) {
      return makeError(cat("field \"", kMemFields[i].key, "\": missing"));
    }
  }
  return info;
}

Result<LoadAvg> parseLoadavg(std::string_view text) {
  Lines lines(text);
  std::string_view line;
  bool terminated = false;
  if (!lines.next(line, terminated)) return makeError("empty input: field 1 (load1) missing");
  LoadAvg out;
  Fields fields(line);

  static constexpr std::array<const char*, 3> kLoadNames = {"load1", "load5", "load15"};
  double* const loads[] = {&out.load1, &out.load5, &out.load15};
  for (size_t i = 0; i < kLoadNames.size(); ++i) {
    const std::string where = cat("field ", std::to_string(i + 1), " (", kLoadNames[i], ")");
    const std::string_view field = fields.next();
    if (field.empty()) return makeError(cat(where, " missing"));
    if (const char* why = toNonNegativeDouble(field, *loads[i])) {
      return makeError(cat(where, " ", quote(field), " ", why));
    }
  }

  const std::string_view tasks = fields.next();
  if (tasks.empty()) return makeError("field 4 (runnable/threads) missing");
  const size_t slash = tasks.find('/');
  if (slash == std::string_view::npos) {
    return makeError(cat("field 4 (runnable/threads) ", quote(tasks), " is not runnable/threads"));
  }
  const std::string_view runnable = tasks.substr(0, slash);
  const std::string_view threads = tasks.substr(slash + 1);
  if (const char* why = toU64(runnable, out.runnable)) {
    return makeError(cat("field 4 (runnable/threads): runnable ", quote(runnable), " ", why));
  }
  if (const char* why = toU64(threads, out.threads)) {
    return makeError(cat("field 4 (runnable/threads): threads ", quote(threads), " ", why));
  }

  const std::string_view lastPid = fields.next();
  if (lastPid.empty()) return makeError("field 5 (last_pid) missing");
  if (const char* why = toU64(lastPid, out.lastPid)) {
    return makeError(cat("field 5 (last_pid) ", quote(lastPid), " ", why));
  }
  // Checked last so that a short line names its missing field first.
  if (!terminated) return makeError(cat("field 5 (last_pid) ", quote(lastPid), kTruncated));
  return out;
}

Result<Pressure> parsePressure(std::string_view text) {
  // Find both lines first, so a file without "some" (irq.pressure, or garbage)
  // says so rather than failing on another line.
  std::string_view some, full;
  bool haveSome = false, haveFull = false, someTerminated = false, fullTerminated = false;
  Lines lines(text);
  std::string_view line;
  bool terminated = false;
  while (lines.next(line, terminated)) {
    Fields fields(line);
    const std::string_view kind = fields.next();
    if (kind == "some" || kind == "full") {
      const bool isSome = kind == "some";
      bool& have = isSome ? haveSome : haveFull;
      if (have) return makeError(cat("\"", kind, "\" line appears twice"));
      have = true;
      (isSome ? some : full) = line;
      (isSome ? someTerminated : fullTerminated) = terminated;
    }
  }
  if (!haveSome) return makeError("\"some\" line missing");

  Pressure out;
  auto parseOne = [](std::string_view kind, std::string_view l,
                     bool lineTerminated) -> Result<PressureLine> {
    if (!lineTerminated) return makeError(cat("\"", kind, "\" line", kTruncated));
    Fields fields(l);
    fields.next();  // the kind
    return parsePressureLine(kind, fields);
  };
  auto someLine = parseOne("some", some, someTerminated);
  if (!someLine) return someLine.error();
  out.some = *someLine;
  if (haveFull) {
    auto fullLine = parseOne("full", full, fullTerminated);
    if (!fullLine) return fullLine.error();
    out.full = *fullLine;
  }
  return out;
}

Result<PidStat> parsePidStat(std::string_view text) {
  // comm is whatever the task named itself (up to 15 bytes, any of them ')' or
  // a space), so the fields start after the last ')' in the text.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return makeError("comm: no closing \")\"");
  if (text.substr(0, close).find('(') == std::string_view::npos) {
    return makeError("comm: no \"(\" before the last \")\"");
  }
  PidStat out;
  Fields fields(text.substr(close + 1));
  auto where = [](size_t n) {
    return cat("field ", std::to_string(n), " (", kPidStatNames[n - kPidStatFirst], ")");
  };
  for (size_t n = kPidStatFirst; n <= kPidStatLast; ++n) {
    const std::string_view field = fields.next();
    if (field.empty()) return makeError(cat(where(n), " missing"));
    uint64_t PidStat::*member = pidStatMember(n);
    if (member == nullptr) continue;
    if (const char* why = toU64(field, out.*member)) {
      return makeError(cat(where(n), " ", quote(field), " ", why));
    }
    if (n == kPidStatLast && fields.atEnd()) {
      return makeError(cat(where(n), " ", quote(field),
                           ": nothing follows it (truncated? the kernel writes ~52 fields)"));
    }
  }
  return out;
}

}  // namespace koord
