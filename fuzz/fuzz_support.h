// What every fuzz target shares: the input as text, and the process logger silenced
// (a parser that logs would otherwise spend the run writing stderr).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <streambuf>
#include <string_view>

#include "base/clock.h"
#include "base/log.h"

namespace koord::fuzz {

inline std::string_view text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Once per process: every log line goes nowhere.
inline void quietLogs() {
  struct Null : std::streambuf {
    int overflow(int c) override { return c; }
  };
  static Null buf;
  static std::ostream out(&buf);
  static SystemClock clock;
  static const bool done = (Logger::setGlobal(out, clock, 0), true);
  (void)done;
}

// Splits data at the first 0 byte: two inputs for parsers that take two files.
inline std::pair<std::string_view, std::string_view> splitAtNul(std::string_view in) {
  const size_t at = in.find('\0');
  if (at == std::string_view::npos) return {in, {}};
  return {in.substr(0, at), in.substr(at + 1)};
}

}  // namespace koord::fuzz
