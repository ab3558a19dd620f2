// time_format: wall times as the Kubernetes API and our logs write them (RFC 3339,
// UTC). One place, so /config, NodeMetric's updateTime and the audit log agree.
#pragma once

#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"

namespace koord {

// "2026-11-24T11:50:00Z": whole seconds, as metav1.Time marshals.
std::string rfc3339(Clock::Wall t);
// "2026-11-24T11:50:00.123Z": with milliseconds (the audit log).
std::string rfc3339Millis(Clock::Wall t);
// Go's time.RFC3339Nano in UTC: nanoseconds with trailing zeros dropped, none when
// whole ("2026-11-24T11:50:00.5Z", "2026-11-24T11:50:00Z"), as Go's encoding/json
// writes a time.Time.
std::string rfc3339Nano(Clock::Wall t);

// Parses RFC 3339 as the API server and Go write it: "YYYY-MM-DDTHH:MM:SS", an
// optional fraction of up to 9 digits, then "Z" or "+HH:MM"/"-HH:MM" ("t" and "z"
// accepted as Go does). A time outside what a nanosecond count from 1970 holds
// (1678..2261), Go's zero time "0001-01-01T00:00:00Z" included, is an error; the
// caller decides what the zero time means. The message quotes the text.
Result<Clock::Wall> parseRfc3339(std::string_view text);

}  // namespace koord
