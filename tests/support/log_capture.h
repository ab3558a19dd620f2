// LogCapture: routes the agent's global logger into a string under a ManualClock
// for one test, and restores stderr after it; with a FailureLog on the same clock,
// so "logged once per path" is countable.
#pragma once

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>

#include "base/clock.h"
#include "base/log.h"

namespace koord::test {

struct LogCapture {
  LogCapture() { Logger::setGlobal(log, clock, 0); }
  ~LogCapture() {
    static SystemClock system;
    Logger::setGlobal(std::cerr, system, 0);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  size_t logLines() const {
    const std::string s = log.str();
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  }
  // Lines logged at one severity ('I', 'W', 'E': a line's first character).
  size_t lines(char severity) const {
    size_t n = 0;
    std::istringstream in(log.str());
    for (std::string line; std::getline(in, line);) n += (!line.empty() && line[0] == severity);
    return n;
  }
  ManualClock clock;
  std::ostringstream log;
  FailureLog failures{clock};
};

}  // namespace koord::test
