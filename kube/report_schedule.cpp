#include "kube/report_schedule.h"

#include <algorithm>

namespace koord {

bool ReportSchedule::observe(const std::optional<std::string>& uid, Clock::Monotonic now) {
  if (!uid) {
    uid_.reset();
    due_.reset();
    return false;
  }
  if (uid_ == uid) return false;
  uid_ = uid;
  due_ = now;
  return true;
}

void ReportSchedule::ticked(Tick tick, std::chrono::nanoseconds interval, Clock::Monotonic now) {
  if (!due_) return;  // gone meanwhile
  if (tick == Tick::kNoUsage) {
    due_ = now + std::min<std::chrono::nanoseconds>(interval, kNoUsageRetry);
    return;
  }
  // From this tick, not from the report's answer (whenever that comes); a tick handled
  // late moves the next one with it, so no two reports come closer than the interval.
  due_ = now + interval;
}

}  // namespace koord
