// Allocation-free scanning of kernel text files, shared by the /proc and cgroup
// parsers: lines (telling a terminated line from a read cut short), blank-separated
// fields, and message building.
#pragma once

#include <string>
#include <string_view>

namespace koord::text {

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
  bool isSeparator(char c) const { return separators_.find(c) != std::string_view::npos; }

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

}  // namespace koord::text
