#include "base/time_format.h"

#include <cstdio>
#include <ctime>

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

}  // namespace koord
