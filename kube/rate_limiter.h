// rate_limiter: the API client's request budget, --kube-api-qps / --kube-api-burst
// (koordlet's 20 / 30), as client-go's token bucket: `burst` tokens to start with,
// refilled at `qps` a second up to `burst`. A request takes a token; when none is
// there it is given the wait until its token will be (a reservation: the bucket
// goes into debt, so requests queued behind it wait their turn, none jumps it).
// Time comes from the caller (the injected clock), so tests never sleep.
#pragma once

#include <chrono>

#include "base/clock.h"

namespace koord {

class RateLimiter {
 public:
  // qps <= 0: no limit (every reserve() is 0). burst < 1 is taken as 1.
  RateLimiter(double qps, int burst, Clock::Monotonic now);

  // Takes a token: 0 to go now, else how long to wait before sending.
  std::chrono::nanoseconds reserve(Clock::Monotonic now);

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void refill(Clock::Monotonic now);
  double qps_;
  int burst_;
  double tokens_;  // may go below 0: reservations not yet covered
  Clock::Monotonic last_;
};

}  // namespace koord
