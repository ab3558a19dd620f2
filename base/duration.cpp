#include "base/duration.h"

#include "base/quote.h"

#include <cstdint>
#include <cstdio>

namespace koord {
namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;  // |INT64_MIN|, the largest magnitude

struct Unit {
  std::string_view name;
  uint64_t nanos;
};

// Go's unit table; both spellings of micro are accepted, as Go does.
constexpr Unit kUnits[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000},  // U+00B5 MICRO SIGN
    {"\xce\xbcs", 1000},  // U+03BC GREEK SMALL LETTER MU
    {"ms", 1000 * 1000},
    {"s", 1000 * 1000 * 1000},
    {"m", 60ull * 1000 * 1000 * 1000},
    {"h", 3600ull * 1000 * 1000 * 1000},
};

bool isDigit(char c) { return c >= '0' && c <= '9'; }

std::string quote(std::string_view s) { return quoteText(s); }

Error invalid(std::string_view orig, std::string_view why) {
  std::string msg = "invalid duration " + quote(orig);
  if (!why.empty()) {
    msg += ": ";
    msg += why;
  }
  return makeError(std::move(msg));
}

}  // namespace

Result<std::chrono::nanoseconds> parseGoDuration(std::string_view text) {
  const std::string_view orig = text;
  std::string_view s = text;
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  if (s.empty()) return invalid(orig, orig.empty() ? "empty" : "no number");

  // Magnitudes are accumulated unsigned up to 2^63 so that INT64_MIN parses.
  uint64_t total = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || isDigit(s[0]))) return invalid(orig, "expected a number");

    // Integer part; overflow here is an error.
    uint64_t whole = 0;
    size_t i = 0;
    for (; i < s.size() && isDigit(s[i]); ++i) {
      if (whole > kSignBit / 10) return invalid(orig, "out of range");
      whole = whole * 10 + static_cast<uint64_t>(s[i] - '0');
      if (whole > kSignBit) return invalid(orig, "out of range");
    }
    const bool sawWhole = i > 0;
    s.remove_prefix(i);

    // Fraction; digits past what fits are ignored (they cannot matter at 1ns).
    uint64_t frac = 0;
    double scale = 1;
    bool sawFrac = false;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      bool saturated = false;
      size_t j = 0;
      for (; j < s.size() && isDigit(s[j]); ++j) {
        if (saturated) continue;
        if (frac > (kSignBit - 1) / 10) {
          saturated = true;
          continue;
        }
        uint64_t next = frac * 10 + static_cast<uint64_t>(s[j] - '0');
        if (next > kSignBit) {
          saturated = true;
          continue;
        }
        frac = next;
        scale *= 10;
      }
      sawFrac = j > 0;
      s.remove_prefix(j);
    }
    if (!sawWhole && !sawFrac) return invalid(orig, "expected digits around '.'");

    // The unit runs to the next digit or '.'.
    size_t u = 0;
    while (u < s.size() && !(s[u] == '.' || isDigit(s[u]))) ++u;
    if (u == 0) return invalid(orig, "missing unit");
    const std::string_view unitName = s.substr(0, u);
    s.remove_prefix(u);
    uint64_t unit = 0;
    for (const Unit& known : kUnits) {
      if (known.name == unitName) unit = known.nanos;
    }
    if (unit == 0) return invalid(orig, "unknown unit " + quote(unitName));

    if (whole > kSignBit / unit) return invalid(orig, "out of range");
    uint64_t term = whole * unit;
    if (frac > 0) {
      // double keeps fractions of an hour exact to the nanosecond (< 3.6e12).
      term +=
          static_cast<uint64_t>(static_cast<double>(frac) * (static_cast<double>(unit) / scale));
      if (term > kSignBit) return invalid(orig, "out of range");
    }
    total += term;
    if (total > kSignBit) return invalid(orig, "out of range");
  }
  if (neg) {
    // -2^63 is representable; negate in unsigned space to avoid signed overflow.
    return std::chrono::nanoseconds(static_cast<int64_t>(0 - total));
  }
  if (total > kSignBit - 1) return invalid(orig, "out of range");
  return std::chrono::nanoseconds(static_cast<int64_t>(total));
}

namespace {

// Appends v / 10^prec with the fraction's trailing zeros (and a bare '.') removed.
void appendScaled(std::string& out, uint64_t v, int prec) {
  uint64_t pow = 1;
  for (int i = 0; i < prec; ++i) pow *= 10;
  out += std::to_string(v / pow);
  uint64_t frac = v % pow;
  if (frac == 0) return;
  std::string digits(static_cast<size_t>(prec), '0');
  for (int i = prec - 1; i >= 0; --i) {
    digits[static_cast<size_t>(i)] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  out.push_back('.');
  out += digits;
}

}  // namespace

std::string formatGoDuration(std::chrono::nanoseconds d) {
  const int64_t n = d.count();
  if (n == 0) return "0s";
  // Magnitude in unsigned space so INT64_MIN formats too.
  const uint64_t u = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  std::string out = n < 0 ? "-" : "";
  constexpr uint64_t kSecond = 1000ull * 1000 * 1000;
  if (u < kSecond) {
    // Below a second Go switches to the largest sub-second unit that fits.
    if (u < 1000) {
      out += std::to_string(u) + "ns";
    } else if (u < 1000 * 1000) {
      appendScaled(out, u, 3);
      out += "\xc2\xb5s";  // Go prints U+00B5
    } else {
      appendScaled(out, u, 6);
      out += "ms";
    }
    return out;
  }
  const uint64_t minutes = u / (60 * kSecond);
  const uint64_t hours = minutes / 60;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (minutes > 0) out += std::to_string(minutes % 60) + "m";
  appendScaled(out, u % (60 * kSecond), 9);
  out += "s";
  return out;
}

}  // namespace koord
