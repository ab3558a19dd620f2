// promtool: lints an exposition with the real `promtool check metrics` (Debian's
// prometheus package). koordlet's own metric names win where they clash with the
// naming lint (reference koordlet.md §6): a problem promtool reports about one of
// the names in metrics/metric_origin.h (the one list of them) is not a problem.
#pragma once

#include <string>
#include <vector>

namespace koord::test {

// koordlet's names (kKoordletMetricNames), which the lint may flag: *_milliseconds,
// *_us, counters without _total.
const std::vector<std::string>& koordletLintExceptions();

struct PromtoolResult {
  bool ran = false;                   // false: promtool is not installed
  std::vector<std::string> problems;  // promtool's lines, koordlet's exceptions removed
  std::string output;                 // everything promtool said
};

PromtoolResult promtoolCheck(const std::string& exposition);

}  // namespace koord::test
