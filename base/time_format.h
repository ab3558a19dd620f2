// time_format: wall times as the Kubernetes API and our logs write them (RFC 3339,
// UTC). One place, so /config, NodeMetric's updateTime and the audit log agree.
#pragma once

#include <string>

#include "base/clock.h"

namespace koord {

// "2026-11-24T11:50:00Z": whole seconds, as metav1.Time marshals.
std::string rfc3339(Clock::Wall t);
// "2026-11-24T11:50:00.123Z": with milliseconds (the audit log).
std::string rfc3339Millis(Clock::Wall t);

}  // namespace koord
