#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "base/time_format.h"

namespace test_base_time_format {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono;

namespace {

Clock::Wall at(int64_t unixSeconds, int64_t nanos = 0) {
  return Clock::Wall(
      duration_cast<Clock::Wall::duration>(seconds(unixSeconds) + nanoseconds(nanos)));
}

}  // namespace

TEST_CASE("rfc3339 text parses back to the same instant, zones and fractions included") {
  // 2026-11-27T18:04:47Z = 1795802687 (date -d @1795802687 -u)
  CHECK(parseRfc3339("2026-11-27T18:04:47Z").value() == at(1795802687));
  CHECK(parseRfc3339("2026-11-27T20:04:47+02:00").value() == at(1795802687));
  CHECK(parseRfc3339("2026-11-27T17:34:47-00:30").value() == at(1795802687));
  CHECK(parseRfc3339("2026-11-27t18:04:47.5z").value() == at(1795802687, 500'000'000));
  CHECK(parseRfc3339("1970-01-01T00:00:00Z").value() == at(0));
  CHECK(parseRfc3339("2024-02-29T00:00:00Z").value() == at(1709164800));
  CHECK(parseRfc3339("1969-12-31T23:59:59.000000001Z").value() == at(-1, 1));
}

TEST_CASE("rfc3339 parsing names what is wrong and refuses go's zero time") {
  const auto err = [](const char* t) {
    auto r = parseRfc3339(t);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(err("0001-01-01T00:00:00Z").find("outside") != std::string::npos);
  CHECK(err("2023-02-29T00:00:00Z").find("day out of range") != std::string::npos);
  CHECK(err("2026-13-01T00:00:00Z").find("month") != std::string::npos);
  CHECK(err("2026-11-27 18:04:47Z").find("not RFC 3339") != std::string::npos);
  CHECK(err("2026-11-27T18:04:47").find("no zone") != std::string::npos);
  CHECK(err("2026-11-27T18:04:47Zjunk").find("trailing") != std::string::npos);
  CHECK(err("2026-11-27T18:04:47.Z").find("empty fraction") != std::string::npos);
  CHECK(err("2026-11-27T18:04:47.1234567890Z").find("9 fraction") != std::string::npos);
  CHECK(err("2026-11-27T24:00:00Z").find("time of day") != std::string::npos);
}

TEST_CASE("rfc3339Nano drops trailing zeros as go's RFC3339Nano does") {
  CHECK(rfc3339Nano(at(1795802687)) == "2026-11-27T18:04:47Z");
  CHECK(rfc3339Nano(at(1795802687, 500'000'000)) == "2026-11-27T18:04:47.5Z");
  CHECK(rfc3339Nano(at(1795802687, 120)) == "2026-11-27T18:04:47.00000012Z");
  CHECK(rfc3339(at(1795802687, 999'000'000)) == "2026-11-27T18:04:47Z");
}

}  // namespace test_base_time_format
