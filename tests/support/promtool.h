// promtool: lints an exposition with the real `promtool check metrics` (Debian's
// prometheus package). koordlet's own metric names win where they clash with the
// naming lint (reference koordlet.md §6): those names are listed once here, and a
// problem promtool reports about one of them is not a problem.
#pragma once

#include <string>
#include <vector>

namespace koord::test {

// koordlet names the lint flags: *_milliseconds, *_us, counters without _total.
const std::vector<std::string>& koordletLintExceptions();

struct PromtoolResult {
  bool ran = false;                   // false: promtool is not installed
  std::vector<std::string> problems;  // promtool's lines, koordlet's exceptions removed
  std::string output;                 // everything promtool said
};

PromtoolResult promtoolCheck(const std::string& exposition);

}  // namespace koord::test
