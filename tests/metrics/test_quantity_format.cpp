// Quantity text as Go's resource.Quantity.String() prints NewMilliQuantity(x,
// DecimalSI) and NewQuantity(x, BinarySI). Expected strings are what
// k8s.io/apimachinery prints for these values (its canonical-form rules: factors of
// ten stripped and the exponent lowered to a multiple of three; factors of 1024
// stripped; BinarySI under 1024 in magnitude printed as DecimalSI).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "metrics/quantity_format.h"

namespace test_metrics_quantity_format {  // this file's own names: tests build as unity chunks

using namespace koord;

TEST_CASE("milli-cores print as m below a whole core and bare when whole", "[quantity]") {
  CHECK(formatMilliQuantityDecimalSI(1250) == "1250m");
  CHECK(formatMilliQuantityDecimalSI(250) == "250m");
  CHECK(formatMilliQuantityDecimalSI(1) == "1m");
  CHECK(formatMilliQuantityDecimalSI(10) == "10m");
  CHECK(formatMilliQuantityDecimalSI(100) == "100m");
  CHECK(formatMilliQuantityDecimalSI(1500) == "1500m");
  CHECK(formatMilliQuantityDecimalSI(12500) == "12500m");
  CHECK(formatMilliQuantityDecimalSI(1000) == "1");
  CHECK(formatMilliQuantityDecimalSI(2000) == "2");
  CHECK(formatMilliQuantityDecimalSI(64000) == "64");
  CHECK(formatMilliQuantityDecimalSI(0) == "0");
}

TEST_CASE("whole thousands of cores take the k suffix as Go's DecimalSI does", "[quantity]") {
  CHECK(formatMilliQuantityDecimalSI(1'500'000) == "1500");  // 15 × 10^2: exponent lowered to 0
  CHECK(formatMilliQuantityDecimalSI(2'000'000) == "2k");
  CHECK(formatMilliQuantityDecimalSI(3'000'000'000) == "3M");
  CHECK(formatMilliQuantityDecimalSI(-250) == "-250m");
  CHECK(formatMilliQuantityDecimalSI(-2000) == "-2");
  CHECK(formatMilliQuantityDecimalSI(std::numeric_limits<int64_t>::max()) ==
        "9223372036854775807m");
}

TEST_CASE("bytes take the largest binary suffix that divides them exactly", "[quantity]") {
  CHECK(formatQuantityBinarySI(3LL << 30) == "3Gi");
  CHECK(formatQuantityBinarySI(200LL << 20) == "200Mi");
  CHECK(formatQuantityBinarySI(1024) == "1Ki");
  CHECK(formatQuantityBinarySI(1025LL << 10) == "1025Ki");
  CHECK(formatQuantityBinarySI(5LL << 40) == "5Ti");
  CHECK(formatQuantityBinarySI(7LL << 50) == "7Pi");
  CHECK(formatQuantityBinarySI(-1024) == "-1Ki");
  CHECK(formatQuantityBinarySI(std::numeric_limits<int64_t>::min()) == "-8Ei");
}

TEST_CASE("odd byte counts print as plain integers", "[quantity]") {
  CHECK(formatQuantityBinarySI((3LL << 30) + 1) == "3221225473");
  CHECK(formatQuantityBinarySI(1536) == "1536");  // 1.5 Ki: not a whole multiple of 1024
  CHECK(formatQuantityBinarySI(2000) == "2000");
  CHECK(formatQuantityBinarySI(1023) == "1023");
  CHECK(formatQuantityBinarySI(std::numeric_limits<int64_t>::max()) == "9223372036854775807");
}

TEST_CASE("bytes under 1024 print as DecimalSI, so 1000 is 1k", "[quantity]") {
  CHECK(formatQuantityBinarySI(1000) == "1k");
  CHECK(formatQuantityBinarySI(512) == "512");
  CHECK(formatQuantityBinarySI(100) == "100");
  CHECK(formatQuantityBinarySI(0) == "0");
  CHECK(formatQuantityBinarySI(-1000) == "-1k");
}

TEST_CASE("cores become milli-cores truncated toward zero, as Go's int64()", "[quantity]") {
  CHECK(milliFromCores(1.25) == 1250);
  CHECK(milliFromCores(1.2499) == 1249);
  CHECK(milliFromCores(6.3125) == 6312);
  CHECK(milliFromCores(0.0004) == 0);
  CHECK(milliFromCores(-0.0015) == -1);
  CHECK(truncateToInt64(3221225472.9) == 3221225472);
}

TEST_CASE("values no int64 holds clamp instead of overflowing", "[quantity]") {
  CHECK(milliFromCores(std::nan("")) == 0);
  CHECK(milliFromCores(1e300) == std::numeric_limits<int64_t>::max());
  CHECK(truncateToInt64(-1e300) == std::numeric_limits<int64_t>::min());
  CHECK(truncateToInt64(9223372036854775808.0) == std::numeric_limits<int64_t>::max());
}

}  // namespace test_metrics_quantity_format
