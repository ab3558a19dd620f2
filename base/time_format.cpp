#include "base/time_format.h"

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <limits>

namespace koord {
namespace {

// Seconds part and the broken-down UTC time of t.
std::string secondsText(std::chrono::seconds secs) {
  const std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::string rfc3339(Clock::Wall t) {
  return secondsText(std::chrono::floor<std::chrono::seconds>(t.time_since_epoch())) + "Z";
}

std::string rfc3339Millis(Clock::Wall t) {
  const auto since = t.time_since_epoch();
  const auto secs = std::chrono::floor<std::chrono::seconds>(since);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since - secs).count();
  char out[16];
  std::snprintf(out, sizeof out, ".%03dZ", static_cast<int>(millis));
  return secondsText(secs) + out;
}

std::string rfc3339Nano(Clock::Wall t) {
  const auto since = t.time_since_epoch();
  const auto secs = std::chrono::floor<std::chrono::seconds>(since);
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since - secs).count();
  std::string out = secondsText(secs);
  if (nanos != 0) {
    char frac[16];
    std::snprintf(frac, sizeof frac, ".%09lld", static_cast<long long>(nanos));
    std::string f = frac;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out + "Z";
}

namespace {

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar.
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

struct Cursor {
  std::string_view s;
  size_t i = 0;
  bool digits(size_t n, int64_t& out) {
    if (i + n > s.size()) return false;
    out = 0;
    for (size_t k = 0; k < n; ++k) {
      const char c = s[i + k];
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
    }
    i += n;
    return true;
  }
  bool lit(char c) {
    if (i >= s.size() || s[i] != c) return false;
    ++i;
    return true;
  }
  bool litEither(char a, char b) { return lit(a) || lit(b); }
};

}  // namespace

Result<Clock::Wall> parseRfc3339(std::string_view text) {
  auto bad = [&](const char* why) {
    return makeError("time \"" + std::string(text.substr(0, 64)) + "\": " + why);
  };
  Cursor c{text};
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!c.digits(4, y) || !c.lit('-') || !c.digits(2, mo) || !c.lit('-') || !c.digits(2, d) ||
      !c.litEither('T', 't') || !c.digits(2, h) || !c.lit(':') || !c.digits(2, mi) || !c.lit(':') ||
      !c.digits(2, s)) {
    return bad("not RFC 3339 (YYYY-MM-DDTHH:MM:SSZ)");
  }
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12) return bad("month out of range");
  const int dim = kDays[mo - 1] + (mo == 2 && leap(y) ? 1 : 0);
  if (d < 1 || d > dim) return bad("day out of range");
  if (h > 23 || mi > 59 || s > 59) return bad("time of day out of range");
  int64_t nanos = 0;
  if (c.lit('.')) {
    size_t n = 0;
    while (c.i < text.size() && text[c.i] >= '0' && text[c.i] <= '9') {
      if (n == 9) return bad("more than 9 fraction digits");
      nanos = nanos * 10 + (text[c.i] - '0');
      ++c.i;
      ++n;
    }
    if (n == 0) return bad("empty fraction");
    for (; n < 9; ++n) nanos *= 10;
  }
  int64_t offset = 0;
  if (!c.litEither('Z', 'z')) {
    const bool minus = c.i < text.size() && text[c.i] == '-';
    int64_t oh = 0, om = 0;
    if (!c.litEither('+', '-') || !c.digits(2, oh) || !c.lit(':') || !c.digits(2, om) || oh > 23 ||
        om > 59) {
      return bad("no zone (Z or +HH:MM)");
    }
    offset = (oh * 3600 + om * 60) * (minus ? -1 : 1);
  }
  if (c.i != text.size()) return bad("trailing text");
  const int64_t secs =
      daysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 +
      mi * 60 + s - offset;
  // int64 nanoseconds from 1970 hold about ±292 years.
  constexpr int64_t kMaxSecs = std::numeric_limits<int64_t>::max() / 1'000'000'000 - 1;
  if (secs > kMaxSecs || secs < -kMaxSecs) return bad("outside 1678..2261");
  return Clock::Wall(std::chrono::duration_cast<Clock::Wall::duration>(
      std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos)));
}

}  // namespace koord
