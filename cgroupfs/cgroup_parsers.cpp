// Parsers for the cgroup v1/v2 files the collectors read. Shared rules, so every
// parser fails the same way:
//  * The kernel ends each of these files with '\n'. Text without it is a
//    truncated read (the last number may have been cut short, "123" of "12345")
//    and an error; the one exception is the empty text of an empty cpuset.
//  * Fields are separated by runs of spaces and tabs; any other byte (NUL, CR,
//    binary) belongs to a field and makes it invalid.
//  * Numbers go through std::from_chars: no locale, no whitespace, a sign only
//    where the format has one, overflow is an error rather than a wrap-around.
//  * Errors name the key or field at fault and quote at most kQuoteMax bytes of
//    input, escaped, so garbage cannot make a huge or unprintable message.
//  * One pass over the input; nothing is allocated in proportion to a number
//    read from it (a hostile "0-4000000000" cpu list is rejected, not expanded).
#include "cgroupfs/cgroup_parsers.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <system_error>

#include "base/quote.h"
#include "base/text_scan.h"

namespace koord {
namespace {

using text::cat;
using text::Fields;
using text::Lines;
using text::toU64;

constexpr size_t kQuoteMax = 40;
constexpr std::string_view kTruncated = "no newline at end of input (truncated?)";
constexpr const char* kEmptyFlatKeyed = "empty input (expected \"key value\" lines)";

// Linux's NR_CPUS is at most 8192 on every architecture; larger ids are garbage.
// The bound also caps a cpu list's output at 65536 entries.
constexpr uint64_t kMaxCpuId = 65535;

std::string quote(std::string_view s) { return quoteText(s, kQuoteMax); }

// Same contract as toU64 for a decimal int64 with an optional leading '-'.
const char* toI64(std::string_view s, int64_t& out) {
  constexpr const char* kNotInteger = "is not an integer";
  if (s.empty() || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))) return kNotInteger;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  if (ec == std::errc::result_out_of_range) return "is out of range for int64";
  if (ec != std::errc() || ptr != end) return kNotInteger;
  return nullptr;
}

// The one line of a single-line file, without its '\n'. `expected` describes the
// content for the empty-input message.
Result<std::string_view> singleLine(std::string_view text, std::string_view expected) {
  if (text.empty()) return makeError(cat("empty input (expected ", expected, ")"));
  const size_t nl = text.find('\n');
  if (nl == std::string_view::npos) return makeError(cat(quote(text), ": ", kTruncated));
  if (nl + 1 != text.size()) {
    return makeError(cat("more than one line (expected ", expected, "): ", quote(text)));
  }
  return text.substr(0, nl);
}

// Keys of flat-keyed files are kernel identifiers: printable ASCII, no blanks.
bool isPrintableKey(std::string_view key) {
  for (const char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return false;
  }
  return true;
}

}  // namespace

Result<uint64_t> parseSingleUint(std::string_view text) {
  auto line = singleLine(text, "one unsigned integer");
  if (!line) return makeError(cat("value: ", line.error().message));
  uint64_t value = 0;
  if (const char* why = toU64(*line, value))
    return makeError(cat("value ", quote(*line), " ", why));
  return value;
}

Result<int64_t> parseSingleInt(std::string_view text) {
  auto line = singleLine(text, "one integer");
  if (!line) return makeError(cat("value: ", line.error().message));
  int64_t value = 0;
  if (const char* why = toI64(*line, value))
    return makeError(cat("value ", quote(*line), " ", why));
  return value;
}

namespace {

// Validates one "key value" line (`terminated`: it ended with '\n') and yields its
// key and number. Messages are built only on failure: this runs for thousands of
// files a second.
std::optional<Error> parseFlatLine(std::string_view line, bool terminated, size_t lineNo,
                                   std::string_view& key, uint64_t& number) {
  Fields fields(line);
  key = fields.next();
  if (key.empty()) return makeError(cat("line ", std::to_string(lineNo), ": no key (blank line)"));
  if (!isPrintableKey(key)) {
    return makeError(
        cat("line ", std::to_string(lineNo), ": key ", quote(key), " is not printable ASCII"));
  }
  auto where = [&] { return cat("key ", quote(key), ": "); };
  if (!terminated) return makeError(cat(where(), kTruncated));
  const std::string_view value = fields.next();
  if (value.empty()) return makeError(cat(where(), "value missing"));
  const std::string_view extra = fields.next();
  if (!extra.empty()) {
    return makeError(cat(where(), "unexpected field ", quote(extra), " after the value"));
  }
  if (const char* why = toU64(value, number)) {
    return makeError(cat(where(), "value ", quote(value), " ", why));
  }
  return std::nullopt;
}

// Walks "key value" lines, validating every line, and hands each pair to `visit`
// (which may return an Error to stop).
template <typename Visit>
Status forEachFlatKeyed(std::string_view text, Visit visit) {
  if (text.empty()) return makeError(kEmptyFlatKeyed);
  Lines lines(text);
  std::string_view line;
  bool terminated = false;
  size_t lineNo = 0;
  while (lines.next(line, terminated)) {
    std::string_view key;
    uint64_t number = 0;
    if (auto e = parseFlatLine(line, terminated, ++lineNo, key, number)) return *e;
    if (std::optional<Error> e = visit(key, number)) return *e;
  }
  return Ok{};
}

}  // namespace

// std::map insertion is O(log n) per key, so a file of n keys costs O(size log n):
// no input can make this quadratic.
Result<std::map<std::string, uint64_t, std::less<>>> parseFlatKeyed(std::string_view text) {
  std::map<std::string, uint64_t, std::less<>> out;
  Status st = forEachFlatKeyed(text, [&](std::string_view key, uint64_t v) -> std::optional<Error> {
    if (!out.emplace(std::string(key), v).second)
      return makeError(cat("key ", quote(key), ": appears twice"));
    return std::nullopt;
  });
  if (!st) return st.error();
  return out;
}

Status pickFlatKeyed(std::string_view text, std::span<const std::string_view> keys,
                     std::span<std::optional<uint64_t>> values, size_t required) {
  const size_t wanted = std::min(keys.size(), values.size());
  for (auto& v : values) v.reset();
  if (text.empty()) return makeError(kEmptyFlatKeyed);
  // A v2 memory.stat has ~50 lines and the collector wants a few: a line is read
  // whole only when its key is wanted. Every other line is only checked to hold a
  // key (a blank line is still an error) and, if last, to end with '\n' (a
  // truncated read is an error whatever its key).
  Lines lines(text);
  std::string_view line;
  bool terminated = false;
  size_t lineNo = 0;
  while (lines.next(line, terminated)) {
    ++lineNo;
    const std::string_view head = Fields(line).next();
    size_t i = 0;
    while (i < wanted && keys[i] != head) ++i;
    if (i == wanted && !head.empty() && terminated) continue;
    std::string_view key;
    uint64_t number = 0;
    if (auto e = parseFlatLine(line, terminated, lineNo, key, number)) return *e;
    if (i == wanted) continue;  // not reached: an unwanted line that gets here fails
    if (values[i]) return makeError(cat("key ", quote(key), ": appears twice"));
    values[i] = number;
  }
  for (size_t i = 0; i < std::min(wanted, required); ++i) {
    if (!values[i]) return makeError(cat("key ", quote(keys[i]), ": missing"));
  }
  return Ok{};
}

Result<CpuMax> parseCpuMax(std::string_view text) {
  auto line = singleLine(text, "\"<quota|max> <period>\"");
  if (!line) return makeError(cat("cpu.max: ", line.error().message));
  Fields fields(*line);
  const std::string_view quota = fields.next();
  const std::string_view period = fields.next();
  const std::string_view extra = fields.next();
  if (quota.empty()) return makeError("cpu.max: quota missing (expected \"<quota|max> <period>\")");
  if (!extra.empty()) {
    return makeError(cat("cpu.max: unexpected third field ", quote(extra),
                         " (expected \"<quota|max> <period>\")"));
  }
  CpuMax out;
  if (quota != "max") {
    uint64_t q = 0;
    if (const char* why = toU64(quota, q)) {
      return makeError(cat("cpu.max: quota ", quote(quota), " ", why, " or \"max\""));
    }
    if (q > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return makeError(cat("cpu.max: quota ", quote(quota), " is out of range for int64"));
    }
    out.quotaUs = static_cast<int64_t>(q);
  }
  // The kernel always writes both fields; its write syntax lets the period be
  // left out ("$MAX" alone), and a lone quota is read the same way here, with
  // the kernel's default period (as automaxprocs does).
  if (!period.empty()) {
    if (const char* why = toU64(period, out.periodUs)) {
      return makeError(cat("cpu.max: period ", quote(period), " ", why));
    }
    // The kernel refuses periods under 1 ms, so 0 never comes from it; and a
    // quota/period ratio with a zero period is a division by zero downstream.
    if (out.periodUs == 0) return makeError("cpu.max: period 0 is invalid (kernel minimum 1000)");
  }
  return out;
}

Result<CpuMax> parseCfsQuotaPeriod(std::string_view quotaText, std::string_view periodText) {
  auto quota = parseSingleInt(quotaText);
  if (!quota) return makeError(cat("cpu.cfs_quota_us: ", quota.error().message));
  auto period = parseSingleUint(periodText);
  if (!period) return makeError(cat("cpu.cfs_period_us: ", period.error().message));
  // Same rule as cpu.max: the kernel never reports a zero period.
  if (*period == 0) {
    return makeError("cpu.cfs_period_us: period 0 is invalid (kernel minimum 1000)");
  }
  CpuMax out;
  out.periodUs = *period;
  // The kernel stores any negative quota written as "unlimited" and reads it
  // back as -1, so other negative values are not kernel output.
  if (*quota < -1) {
    return makeError(cat("cpu.cfs_quota_us: value ", std::to_string(*quota),
                         " is negative and not -1 (unlimited)"));
  }
  if (*quota >= 0) out.quotaUs = *quota;
  return out;
}

Result<std::vector<int>> parseCpuList(std::string_view text) {
  std::vector<int> cpus;
  // An empty cpuset reads as "\n"; "" is accepted too (the same, written by hand).
  if (text.empty() || text == "\n") return cpus;
  auto line = singleLine(text, "a cpu list such as \"0-3,8\"");
  if (!line) return makeError(cat("cpu list: ", line.error().message));
  // The kernel prints cpu lists (%*pbl) in ascending order without overlaps;
  // requiring that keeps the output at most kMaxCpuId + 1 entries whatever the
  // input, and rejects lists that are not the kernel's.
  uint64_t nextAllowed = 0;
  size_t elementNo = 0;
  std::string_view rest = *line;
  while (true) {
    ++elementNo;
    const size_t comma = rest.find(',');
    const std::string_view element = rest.substr(0, comma);
    const std::string where = cat("cpu list element ", std::to_string(elementNo), " ");
    if (element.empty()) return makeError(cat(where, "is empty in ", quote(*line)));
    const size_t dash = element.find('-');
    const std::string_view loText = element.substr(0, dash);
    const std::string_view hiText =
        dash == std::string_view::npos ? loText : element.substr(dash + 1);
    uint64_t lo = 0;
    uint64_t hi = 0;
    for (const auto& [digits, value] : {std::pair{loText, &lo}, std::pair{hiText, &hi}}) {
      if (const char* why = toU64(digits, *value)) {
        return makeError(cat(where, quote(element), ": cpu id ", quote(digits), " ", why));
      }
      if (*value > kMaxCpuId) {
        return makeError(cat(where, quote(element), ": cpu id ", quote(digits), " exceeds ",
                             std::to_string(kMaxCpuId)));
      }
    }
    if (lo > hi) return makeError(cat(where, quote(element), ": range is reversed"));
    if (lo < nextAllowed) {
      return makeError(
          cat(where, quote(element), ": not after the previous element (unsorted or overlapping)"));
    }
    for (uint64_t id = lo; id <= hi; ++id) cpus.push_back(static_cast<int>(id));
    nextAllowed = hi + 1;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return cpus;
}

}  // namespace koord
