// Go durations: koordlet's interval flags are Go time.Duration values, so an
// operator's "1m30s" or "1.5h" must mean here what it means to koordlet. This
// module parses Go's time.ParseDuration syntax and prints Duration.String().
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/result.h"

namespace koord {

// Parses a Go duration: an optional sign, then one or more <number><unit> terms
// where number is decimal with an optional fraction ("1.5", ".5", "1.") and unit is
// one of ns, us, µs (U+00B5 or U+03BC), ms, s, m, h. "0" (signed or not) needs no
// unit. Errors, e.g. `invalid duration "1x": unknown unit "x"`, for "", a missing or
// unknown unit, a stray character, and a value outside int64 nanoseconds.
Result<std::chrono::nanoseconds> parseGoDuration(std::string_view text);

// Formats as Go's Duration.String(): "0s", "1.5µs", "500ms", "10s", "1m30s",
// "1h0m0s"; negative values get a leading '-'.
std::string formatGoDuration(std::chrono::nanoseconds d);

}  // namespace koord
