// Tests for kube/rate_limiter: koordlet's 20 QPS / 30 burst on a ManualClock.
#include <catch2/catch.hpp>

#include <chrono>

#include "kube/rate_limiter.h"

namespace test_kube_rate_limiter {  // this file's own names: tests build as unity chunks

using namespace koord;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST_CASE("a burst of requests goes at once, then one every 1/qps seconds") {
  ManualClock clock;
  RateLimiter limiter(20, 30, clock.now());
  for (int i = 0; i < 30; ++i) CHECK(limiter.reserve(clock.now()) == nanoseconds(0));
  // The 31st waits 50 ms, the 32nd 100 ms: queued requests keep their order.
  CHECK(limiter.reserve(clock.now()) == milliseconds(50));
  CHECK(limiter.reserve(clock.now()) == milliseconds(100));
  // After those waits have passed, the debt is paid and a token is 50 ms away again.
  clock.advance(milliseconds(100));
  CHECK(limiter.reserve(clock.now()) == milliseconds(50));
}

TEST_CASE("an idle client earns back its burst, and no more") {
  ManualClock clock;
  RateLimiter limiter(20, 30, clock.now());
  for (int i = 0; i < 30; ++i) limiter.reserve(clock.now());
  clock.advance(std::chrono::hours(1));
  for (int i = 0; i < 30; ++i) CHECK(limiter.reserve(clock.now()) == nanoseconds(0));
  CHECK(limiter.reserve(clock.now()) > nanoseconds(0));
}

TEST_CASE("a rate of zero or less means no limit, and a burst under one is one") {
  ManualClock clock;
  RateLimiter off(0, 30, clock.now());
  for (int i = 0; i < 1000; ++i) REQUIRE(off.reserve(clock.now()) == nanoseconds(0));
  RateLimiter one(2, 0, clock.now());
  CHECK(one.burst() == 1);
  CHECK(one.reserve(clock.now()) == nanoseconds(0));
  CHECK(one.reserve(clock.now()) == milliseconds(500));
}

}  // namespace test_kube_rate_limiter
