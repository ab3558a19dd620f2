#include <catch2/catch.hpp>
#include <iostream>
#include <regex>
#include <sstream>

#include "base/log.h"

namespace test_base_log {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

// Routes the process logger to a string for one test, and back afterwards.
struct CapturedLog {
  explicit CapturedLog(const Clock& clock, int v = 0) { Logger::setGlobal(out, clock, v); }
  ~CapturedLog() {
    static SystemClock system;  // must outlive this object: the logger keeps it
    Logger::setGlobal(std::cerr, system, 0);
  }
  size_t lines() const {
    auto s = out.str();
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  }
  std::ostringstream out;
};

}  // namespace

TEST_CASE("a log line has klog's header, the source file and one line per event", "[log]") {
  ManualClock clock;
  CapturedLog log(clock);
  KLOG_WARNING << "first\nsecond";
  std::string line = log.out.str();
  REQUIRE(log.lines() == 1);
  CHECK(std::regex_search(
      line,
      std::regex(R"(^W\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ test_log\.cpp:\d+\] first\\nsecond\n$)")));
}

TEST_CASE("a message listing several problems is logged one line per problem", "[log]") {
  ManualClock clock;
  CapturedLog log(clock);
  logEachLine(Severity::kError, "cannot start: ", "a.yaml: x: bad\na.yaml: y: worse\n");
  REQUIRE(log.lines() == 2);
  CHECK(std::regex_search(
      log.out.str(),
      std::regex(R"(^E\d{4} [^\]]+\] cannot start: a\.yaml: x: bad\nE\d{4} [^\]]+\] cannot )"
                 R"(start: a\.yaml: y: worse\n$)")));
  CHECK(prefixEachLine("--config: ", "a\nb") == "--config: a\n--config: b");
  CHECK(prefixEachLine("--config: ", "one") == "--config: one");
}

TEST_CASE("verbose lines are written only at or above their --v level", "[log]") {
  ManualClock clock;
  CapturedLog log(clock, 2);
  KLOG_V(2) << "shown";
  KLOG_V(3) << "hidden";
  CHECK(log.out.str().find("shown") != std::string::npos);
  CHECK(log.out.str().find("hidden") == std::string::npos);
}

TEST_CASE("a repeating failure logs once, then a count at most once per reminder interval",
          "[log]") {
  ManualClock clock;
  CapturedLog log(clock);
  FailureLog failures(clock, std::chrono::minutes(10));

  CHECK(failures.failure("/proc/stat", Severity::kError, "bad /proc/stat"));
  for (int i = 0; i < 599; ++i) {
    clock.advance(1s);
    CHECK_FALSE(failures.failure("/proc/stat", Severity::kError, "bad /proc/stat"));
  }
  CHECK(log.lines() == 1);
  clock.advance(1s);
  CHECK(failures.failure("/proc/stat", Severity::kError, "bad /proc/stat"));
  CHECK(log.lines() == 2);
  CHECK(log.out.str().find("failing for 601 attempts, 600 since last report") != std::string::npos);
  CHECK(failures.suppressed() == 599);
}

TEST_CASE("the first success after a failure streak logs one recovery line", "[log]") {
  ManualClock clock;
  CapturedLog log(clock);
  FailureLog failures(clock);
  CHECK_FALSE(failures.success("kubelet"));  // no streak: nothing to say
  failures.failure("kubelet", Severity::kWarning, "kubelet unreachable");
  failures.failure("kubelet", Severity::kWarning, "kubelet unreachable");
  CHECK(failures.success("kubelet"));
  CHECK_FALSE(failures.success("kubelet"));
  CHECK(log.lines() == 2);
  CHECK(log.out.str().find("kubelet: recovered after 2 failed attempts") != std::string::npos);
  CHECK(failures.activeStreaks() == 0);
}

TEST_CASE("failure streaks for distinct keys are bounded by one overflow streak", "[log]") {
  ManualClock clock;
  CapturedLog log(clock);
  FailureLog failures(clock, std::chrono::minutes(10), 4);
  for (int i = 0; i < 100; ++i) {
    failures.failure("/cgroup/pod" + std::to_string(i), Severity::kError, "gone");
  }
  CHECK(failures.activeStreaks() == 5);  // four keys plus the shared overflow streak
  CHECK(log.lines() == 5);
}

TEST_CASE("streaks of paths that stopped failing are dropped, so a new key is not folded",
          "[log]") {
  ManualClock clock;
  CapturedLog log(clock);
  FailureLog failures(clock, std::chrono::minutes(10), 4);
  // Four pods' paths fail once each, then their pods go: they never succeed again.
  for (int i = 0; i < 4; ++i) {
    failures.failure("/cgroup/pod" + std::to_string(i), Severity::kWarning, "gone");
  }
  CHECK(failures.activeStreaks() == 4);
  // Still failing somewhere: a key that keeps failing is kept.
  for (int m = 0; m < 21; ++m) {
    clock.advance(1min);
    failures.failure("/cgroup/pod0", Severity::kWarning, "gone");
  }
  // Twenty minutes later the idle three are gone; the kubelet's failure is its own
  // streak, logged in full, not folded into "(other keys)".
  CHECK(failures.activeStreaks() == 1);
  CHECK(failures.failure("kubelet", Severity::kWarning, "kubelet unreachable"));
  CHECK(failures.activeStreaks() == 2);
  CHECK(log.out.str().find("(other keys)") == std::string::npos);
  CHECK(failures.success("kubelet"));
}

}  // namespace test_base_log
