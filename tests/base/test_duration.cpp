#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "base/duration.h"

namespace test_base_duration {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono;
using namespace std::chrono_literals;

namespace {

nanoseconds parsed(const std::string& text) {
  auto d = parseGoDuration(text);
  INFO(text << ": " << (d ? std::string("ok") : d.error().message));
  REQUIRE(d.ok());
  return *d;
}

std::string errorOf(const std::string& text) {
  auto d = parseGoDuration(text);
  INFO(text);
  REQUIRE_FALSE(d.ok());
  return d.error().message;
}

}  // namespace

TEST_CASE("every Go duration unit parses", "[duration]") {
  CHECK(parsed("7ns") == 7ns);
  CHECK(parsed("7us") == 7us);
  CHECK(parsed("7\xc2\xb5s") == 7us);  // U+00B5 micro sign
  CHECK(parsed("7\xce\xbcs") == 7us);  // U+03BC greek mu
  CHECK(parsed("500ms") == 500ms);
  CHECK(parsed("1s") == 1s);
  CHECK(parsed("3m") == 3min);
  CHECK(parsed("2h") == 2h);
}

TEST_CASE("Go durations combine terms, fractions and signs", "[duration]") {
  CHECK(parsed("1m30s") == 90s);
  CHECK(parsed("1h2m3s4ms5us6ns") == 1h + 2min + 3s + 4ms + 5us + 6ns);
  CHECK(parsed("1.5h") == 90min);
  CHECK(parsed(".5s") == 500ms);
  CHECK(parsed("1.s") == 1s);
  CHECK(parsed("1.000000001s") == 1s + 1ns);
  // Fraction digits beyond what 64 bits hold are dropped, not an overflow.
  CHECK(abs(parsed("0.99999999999999999999999s") - 1s) <= 1ns);
  CHECK(parsed("1.00000000000000000001s") == 1s);
  CHECK(parsed("-2us") == -2us);
  CHECK(parsed("+5s") == 5s);
  CHECK(parsed("-1m30s") == -90s);
  CHECK(parsed("1s1s") == 2s);  // Go allows repeated units
  CHECK(parsed("010s") == 10s);
}

TEST_CASE("zero needs no unit but any other number does", "[duration]") {
  CHECK(parsed("0") == 0ns);
  CHECK(parsed("-0") == 0ns);
  CHECK(parsed("+0") == 0ns);
  CHECK(parsed("0s") == 0ns);
  CHECK(errorOf("1") == "invalid duration \"1\": missing unit");
  CHECK(errorOf("00") == "invalid duration \"00\": missing unit");
  CHECK(errorOf("1s5") == "invalid duration \"1s5\": missing unit");
}

TEST_CASE("malformed durations are errors that quote the input", "[duration]") {
  CHECK(errorOf("") == "invalid duration \"\": empty");
  CHECK(errorOf("1x") == "invalid duration \"1x\": unknown unit \"x\"");
  CHECK(errorOf("1 s") == "invalid duration \"1 s\": unknown unit \" s\"");
  CHECK(errorOf("1S") == "invalid duration \"1S\": unknown unit \"S\"");
  CHECK(errorOf("-") == "invalid duration \"-\": no number");
  CHECK(errorOf("s") == "invalid duration \"s\": expected a number");
  CHECK(errorOf(".s").find("invalid duration \".s\"") == 0);
  CHECK(errorOf("1.2.3s").find("invalid duration") == 0);
  CHECK(errorOf("--1s").find("invalid duration") == 0);
  CHECK(errorOf(" 1s").find("invalid duration") == 0);
}

TEST_CASE("durations beyond int64 nanoseconds are errors, the extremes are not", "[duration]") {
  CHECK(parsed("9223372036854775807ns").count() == std::numeric_limits<int64_t>::max());
  CHECK(parsed("-9223372036854775808ns").count() == std::numeric_limits<int64_t>::min());
  CHECK(parsed("2562047h47m16.854775807s").count() == std::numeric_limits<int64_t>::max());
  CHECK(errorOf("9223372036854775808ns") ==
        "invalid duration \"9223372036854775808ns\": out of range");
  CHECK(errorOf("2562048h") == "invalid duration \"2562048h\": out of range");
  CHECK(errorOf("99999999999999999999s") ==
        "invalid duration \"99999999999999999999s\": out of range");
  CHECK(errorOf("2562047h47m17s") == "invalid duration \"2562047h47m17s\": out of range");
}

TEST_CASE("durations format like Go's Duration.String", "[duration]") {
  CHECK(formatGoDuration(0ns) == "0s");
  CHECK(formatGoDuration(1ns) == "1ns");
  CHECK(formatGoDuration(1100ns) == "1.1\xc2\xb5s");
  CHECK(formatGoDuration(2200us) == "2.2ms");
  CHECK(formatGoDuration(500ms) == "500ms");
  CHECK(formatGoDuration(1s) == "1s");
  CHECK(formatGoDuration(10s) == "10s");
  CHECK(formatGoDuration(1500ms) == "1.5s");
  CHECK(formatGoDuration(90s) == "1m30s");
  CHECK(formatGoDuration(1min) == "1m0s");
  CHECK(formatGoDuration(1h) == "1h0m0s");
  CHECK(formatGoDuration(12h) == "12h0m0s");
  CHECK(formatGoDuration(2h + 45min + 500ms) == "2h45m0.5s");
  CHECK(formatGoDuration(-90s) == "-1m30s");
  CHECK(formatGoDuration(-1ns) == "-1ns");
  CHECK(formatGoDuration(nanoseconds(std::numeric_limits<int64_t>::max())) ==
        "2562047h47m16.854775807s");
  CHECK(formatGoDuration(nanoseconds(std::numeric_limits<int64_t>::min())) ==
        "-2562047h47m16.854775808s");
  CHECK(formatGoDuration(nanoseconds((int64_t{1} << 62) - 1)) == "1281023h53m38.427387903s");
}

TEST_CASE("a formatted duration parses back to the same value", "[duration]") {
  for (nanoseconds d : {nanoseconds(0), nanoseconds(1), nanoseconds(999), nanoseconds(1234567),
                        nanoseconds(90s), nanoseconds(36h + 1ns), nanoseconds(-7200ms)}) {
    INFO(d.count());
    CHECK(parsed(formatGoDuration(d)) == d);
  }
}

}  // namespace test_base_duration
