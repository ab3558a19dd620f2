#include "metrics/quantity_format.h"

#include <cmath>
#include <limits>

namespace koord {

namespace {

// Divides |value| by base while it is at least base and divisible; returns the
// magnitude left and how many times it divided. Works on the magnitude so that
// INT64_MIN needs no special case.
struct Stripped {
  uint64_t magnitude;
  int times;
};
Stripped stripFactors(uint64_t magnitude, uint64_t base) {
  int times = 0;
  while (magnitude >= base && magnitude % base == 0) {
    magnitude /= base;
    ++times;
  }
  return {magnitude, times};
}

uint64_t magnitudeOf(int64_t v) {
  return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

std::string withSign(bool negative, uint64_t magnitude, const char* suffix) {
  std::string out = negative ? "-" : "";
  out += std::to_string(magnitude);
  out += suffix;
  return out;
}

const char* decimalSuffix(int exponent) {
  switch (exponent) {
    case -9:
      return "n";
    case -6:
      return "u";
    case -3:
      return "m";
    case 0:
      return "";
    case 3:
      return "k";
    case 6:
      return "M";
    case 9:
      return "G";
    case 12:
      return "T";
    case 15:
      return "P";
    case 18:
      return "E";
    default:
      return nullptr;
  }
}

// value × 10^scale in DecimalSI canonical form. The exponent is lowered to a
// multiple of three by multiplying back at most the factors of ten just removed, so
// the magnitude never exceeds the input's.
std::string formatDecimal(int64_t value, int scale) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  auto [magnitude, times] = stripFactors(magnitudeOf(value), 10);
  int exponent = scale + times;
  int rem = ((exponent % 3) + 3) % 3;  // 0, 1 or 2, also for negative exponents
  for (; rem > 0; --rem) {
    magnitude *= 10;
    --exponent;
  }
  if (const char* suffix = decimalSuffix(exponent)) return withSign(negative, magnitude, suffix);
  // Outside the suffix table (cannot happen for int64 inputs with scale 0 or -3,
  // whose exponents stay in -3..18): an exponent form, as Go's DecimalExponent.
  std::string out = withSign(negative, magnitude, "e");
  out += std::to_string(exponent);
  return out;
}

}  // namespace

std::string formatMilliQuantityDecimalSI(int64_t milli) { return formatDecimal(milli, -3); }

std::string formatQuantityBinarySI(int64_t value) {
  if (value > -1024 && value < 1024) return formatDecimal(value, 0);
  static constexpr const char* kBinarySuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  auto [magnitude, times] = stripFactors(magnitudeOf(value), 1024);
  return withSign(value < 0, magnitude, kBinarySuffixes[times]);  // times <= 6 for 64 bits
}

int64_t truncateToInt64(double value) {
  if (std::isnan(value)) return 0;
  // 2^63 is exactly representable; every double below it converts without overflow.
  constexpr double kLimit = 9223372036854775808.0;
  if (value >= kLimit) return std::numeric_limits<int64_t>::max();
  if (value < -kLimit) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);  // truncates toward zero, as Go's int64(x)
}

int64_t milliFromCores(double cores) { return truncateToInt64(cores * 1000.0); }

}  // namespace koord
