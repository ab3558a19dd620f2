// The reconnect back-off (nri_client.h): initial x factor^(failures-1), capped.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>

#include "nri/nri_client.h"

namespace test_nri_backoff {  // this file's own names: tests build as unity chunks

using koord::nri::BackoffConfig;
using koord::nri::backoffDelay;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("the back-off doubles from the initial delay up to the cap", "[backoff]") {
  BackoffConfig cfg;  // 1 s x 2, cap 30 s
  CHECK(backoffDelay(cfg, 1) == seconds(1));
  CHECK(backoffDelay(cfg, 2) == seconds(2));
  CHECK(backoffDelay(cfg, 3) == seconds(4));
  CHECK(backoffDelay(cfg, 5) == seconds(16));
  CHECK(backoffDelay(cfg, 6) == seconds(30));
  CHECK(backoffDelay(cfg, 7) == seconds(30));
}

TEST_CASE("zero failures waits the initial delay", "[backoff]") {
  BackoffConfig cfg;
  CHECK(backoffDelay(cfg, 0) == seconds(1));
}

TEST_CASE("a fractional factor grows the delay in fractions", "[backoff]") {
  BackoffConfig cfg{milliseconds(100), 1.5, seconds(10)};
  CHECK(backoffDelay(cfg, 2) == milliseconds(150));
  CHECK(backoffDelay(cfg, 3) == milliseconds(225));
}

TEST_CASE("factor 1 keeps the initial delay forever", "[backoff]") {
  BackoffConfig cfg{milliseconds(500), 1.0, seconds(30)};
  for (uint32_t n : {1u, 2u, 10u, 1000u, UINT32_MAX})
    CHECK(backoffDelay(cfg, n) == milliseconds(500));
}

TEST_CASE("a factor below 1 is treated as 1 and never shrinks the delay", "[backoff]") {
  BackoffConfig cfg{seconds(2), 0.5, seconds(30)};
  CHECK(backoffDelay(cfg, 5) == seconds(2));
}

TEST_CASE("huge failure counts give the cap without overflow", "[backoff]") {
  BackoffConfig cfg;
  for (uint32_t n : {64u, 65u, 1025u, 100000u, UINT32_MAX})
    CHECK(backoffDelay(cfg, n) == seconds(30));
  BackoffConfig wide{seconds(1), 10.0, std::chrono::hours(24 * 365 * 100)};
  CHECK(backoffDelay(wide, UINT32_MAX) == wide.cap);
  BackoffConfig maxCap{seconds(1), 2.0, std::chrono::nanoseconds::max()};
  CHECK(backoffDelay(maxCap, UINT32_MAX) == std::chrono::nanoseconds::max());
  CHECK(backoffDelay(maxCap, 31) == std::chrono::nanoseconds(seconds(1)) * (int64_t{1} << 30));
}

TEST_CASE("an initial delay above the cap is cut to the cap", "[backoff]") {
  BackoffConfig cfg{seconds(60), 2.0, seconds(30)};
  CHECK(backoffDelay(cfg, 1) == seconds(30));
}

}  // namespace test_nri_backoff
