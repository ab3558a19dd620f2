// Logging: one line per event in klog's layout (operators of koordlet grep for it),
//   I1122 03:14:32.123456   4242 node_collector.cpp:57] message
// with --v verbosity for detail. The process has one Logger (logging is the one
// process-wide service; main() configures it, tests point it at a string stream).
// FailureLog keeps a repeating failure to one line and then a count.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace koord {

enum class Severity { kInfo = 0, kWarning = 1, kError = 2, kFatal = 3 };

class Logger {
 public:
  Logger(std::ostream& out, const Clock& clock, int verbosity)
      : out_(&out), clock_(&clock), verbosity_(verbosity) {}

  int verbosity() const { return verbosity_; }
  void setVerbosity(int v) { verbosity_ = v; }
  // Writes one line; newlines inside msg are escaped so an event never spans lines.
  void write(Severity sev, std::string_view file, int line, std::string_view msg);

  static Logger& global();
  // Replaces the process logger (main, tests). Not thread-safe against concurrent
  // logging: call before the loop starts.
  static void setGlobal(std::ostream& out, const Clock& clock, int verbosity);

 private:
  std::ostream* out_;
  const Clock* clock_;
  int verbosity_;
  std::mutex mu_;
};

// Builds one message and hands it to the logger when it goes out of scope.
class LogLine {
 public:
  LogLine(Severity sev, const char* file, int line) : sev_(sev), file_(file), line_(line) {}
  ~LogLine() { Logger::global().write(sev_, file_, line_, os_.str()); }
  template <typename T>
  LogLine& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  Severity sev_;
  const char* file_;
  int line_;
  std::ostringstream os_;
};

#define KLOG_INFO ::koord::LogLine(::koord::Severity::kInfo, __FILE__, __LINE__)
#define KLOG_WARNING ::koord::LogLine(::koord::Severity::kWarning, __FILE__, __LINE__)
#define KLOG_ERROR ::koord::LogLine(::koord::Severity::kError, __FILE__, __LINE__)
// Verbose info, only built when --v is at least n.
#define KLOG_V(n)                                    \
  if (::koord::Logger::global().verbosity() < (n)) { \
  } else                                             \
    KLOG_INFO

// A message that lists several problems one per line (a config file's errors) as
// one event per non-empty line, each after `prefix`: every problem gets a line of
// its own in klog's layout instead of one line with escaped newlines.
void logEachLine(Severity sev, std::string_view prefix, std::string_view lines,
                 const char* file = __builtin_FILE(), int line = __builtin_LINE());

// `prefix` before every line of `lines` ("--config: " before each of a file's
// problems); lines stay separated by '\n'.
std::string prefixEachLine(std::string_view prefix, std::string_view lines);

// FailureLog: "a repeating failure logs once and then a count".
// The first failure of a key logs in full; repeats are counted silently and a
// reminder line with the count is written at most once per reminder interval;
// the first success after a streak logs one recovery line with the total.
// Keys are bounded: a streak with no failure for two reminder intervals is dropped
// (a path of a pod that went away never succeeds again, it just stops failing), so
// the map follows what is failing now; and past maxKeys of live streaks, new keys
// share one overflow streak so a flood of distinct paths cannot grow memory.
class FailureLog {
 public:
  explicit FailureLog(const Clock& clock,
                      std::chrono::seconds reminderEvery = std::chrono::minutes(10),
                      size_t maxKeys = 4096)
      : clock_(&clock), reminderEvery_(reminderEvery), maxKeys_(maxKeys) {}

  // Returns true when a line was written.
  bool failure(std::string_view key, Severity sev, std::string_view message,
               const char* file = __builtin_FILE(), int line = __builtin_LINE());
  // Returns true when a recovery line was written.
  bool success(std::string_view key, const char* file = __builtin_FILE(),
               int line = __builtin_LINE());

  size_t activeStreaks() const { return streaks_.size(); }
  uint64_t suppressed() const { return suppressed_; }

 private:
  struct Streak {
    uint64_t count = 0;
    uint64_t sinceReminder = 0;
    Clock::Monotonic lastLine{};
    Clock::Monotonic lastFailure{};
  };
  // Drops streaks idle for two reminder intervals; sweeps ten times an interval.
  void expireIdle(Clock::Monotonic now);
  Clock::Monotonic lastExpiry_{};
  const Clock* clock_;
  std::chrono::seconds reminderEvery_;
  size_t maxKeys_;
  std::map<std::string, Streak, std::less<>> streaks_;
  uint64_t suppressed_ = 0;
};

}  // namespace koord
