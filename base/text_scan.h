// Allocation-free scanning of kernel text files, shared by the /proc and cgroup
// parsers: lines (telling a terminated line from a read cut short), blank-separated
// fields, and message building.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace koord::text {

// `s` without leading and trailing characters from `blanks`.
inline std::string_view trim(std::string_view s, std::string_view blanks = " \t\r\n") {
  while (!s.empty() && blanks.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
  while (!s.empty() && blanks.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
  return s;
}

// Splits text at every `sep` ("a,,b," gives "a", "", "b", ""), for flag values and
// message lines; callers skip the empty items they allow.
class Split {
 public:
  Split(std::string_view text, char sep) : rest_(text), sep_(sep) {}

  bool next(std::string_view& item) {
    if (done_) return false;
    const size_t at = rest_.find(sep_);
    item = rest_.substr(0, at);
    if (at == std::string_view::npos) {
      done_ = true;
    } else {
      rest_.remove_prefix(at + 1);
    }
    return true;
  }

 private:
  std::string_view rest_;
  char sep_;
  bool done_ = false;
};

// Splits text into lines; the last one may lack its '\n' (terminated = false),
// which for a kernel file means the read was cut short.
class Lines {
 public:
  explicit Lines(std::string_view text) : rest_(text) {}

  bool next(std::string_view& line, bool& terminated) {
    if (rest_.empty()) return false;
    const size_t nl = rest_.find('\n');
    terminated = nl != std::string_view::npos;
    line = rest_.substr(0, nl);
    rest_.remove_prefix(terminated ? nl + 1 : rest_.size());
    return true;
  }

 private:
  std::string_view rest_;
};

// Yields the fields of a text separated by runs of `separators` (spaces and tabs by
// default), left to right, without copying.
class Fields {
 public:
  explicit Fields(std::string_view text, std::string_view separators = " \t")
      : rest_(text), separators_(separators) {}

  // The next field, or an empty view when none is left.
  std::string_view next() {
    size_t i = 0;
    while (i < rest_.size() && isSeparator(rest_[i])) ++i;
    rest_.remove_prefix(i);
    size_t j = 0;
    while (j < rest_.size() && !isSeparator(rest_[j])) ++j;
    const std::string_view field = rest_.substr(0, j);
    rest_.remove_prefix(j);
    return field;
  }

  // True when the field last returned ran to the end of the text, i.e. nothing
  // proves it complete.
  bool atEnd() const { return rest_.empty(); }

 private:
  // A loop over the few separators: string_view::find calls memchr once per
  // character, which was half the flat-keyed parsers' cost (callgrind, 110 pods).
  bool isSeparator(char c) const {
    for (char s : separators_) {
      if (s == c) return true;
    }
    return false;
  }

  std::string_view rest_;
  std::string_view separators_;
};

// Concatenates message parts. (Also sidesteps g++ 12's false -Wrestrict on
// "literal" + std::string&&.)
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

// Parses a whole field as a decimal uint64. Returns nullptr on success, else why
// it failed, phrased to follow the quoted field in a message. Digits only: no sign
// (so no "-1" wrapping to 2^64-1), no space, not empty; overflow is an error.
inline const char* toU64(std::string_view s, uint64_t& out) {
  constexpr const char* kNotUnsigned = "is not an unsigned integer";
  if (s.empty() || s[0] < '0' || s[0] > '9') return kNotUnsigned;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  if (ptr != end) return kNotUnsigned;
  if (ec == std::errc::result_out_of_range) return "is out of range for uint64";
  if (ec != std::errc()) return kNotUnsigned;
  return nullptr;
}

}  // namespace koord::text
