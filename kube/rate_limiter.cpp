#include "kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace koord {

RateLimiter::RateLimiter(double qps, int burst, Clock::Monotonic now)
    : qps_(qps), burst_(std::max(burst, 1)), tokens_(burst_), last_(now) {}

void RateLimiter::refill(Clock::Monotonic now) {
  if (now <= last_) return;  // a clock that stood still (or a caller's older time)
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
  last_ = now;
}

std::chrono::nanoseconds RateLimiter::reserve(Clock::Monotonic now) {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  refill(now);
  tokens_ -= 1;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  // The debt is repaid at qps tokens a second; rounded up, so the request never
  // leaves before its token exists.
  return std::chrono::nanoseconds(static_cast<int64_t>(std::ceil(-tokens_ / qps_ * 1e9)));
}

}  // namespace koord
