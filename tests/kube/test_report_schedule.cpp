// ReportSchedule on the injected clock: a node agent's NodeMetric reporting loop
// simulated step by step. The schedule decides; a simulated API server answers a
// report after its latency (a 409 costs a re-read and a second PUT), or, while down,
// lets it fail at the client's deadline. What the tests read is when reports were
// sent and when one was stored.
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "kube/report_schedule.h"

namespace test_kube_report_schedule {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using Tick = ReportSchedule::Tick;

namespace {

struct Sim {
  ManualClock clock;
  const Clock::Monotonic t0 = clock.now();
  ReportSchedule schedule;
  std::chrono::nanoseconds interval = 60s;
  bool usage = true;  // the cache holds a node sample
  bool apiUp = true;
  int conflicts = 0;  // 409s the next report meets
  std::chrono::milliseconds latency = 20ms;
  std::chrono::seconds deadline = 30s;  // a request to a server that is down fails then
  std::optional<Clock::Monotonic> answerAt;
  bool answerOk = false;
  std::vector<double> sent, stored;  // seconds since t0

  double at() const { return std::chrono::duration<double>(clock.now() - t0).count(); }

  void observe(std::optional<std::string> uid) { schedule.observe(uid, clock.now()); }

  void step() {
    const auto now = clock.now();
    if (answerAt && now >= *answerAt) {
      if (answerOk) stored.push_back(at());
      answerAt.reset();
    }
    if (!schedule.isDue(now)) return;
    Tick tick = Tick::kSent;
    if (answerAt) {
      tick = Tick::kInFlight;
    } else if (!usage) {
      tick = Tick::kNoUsage;
    } else {
      sent.push_back(at());
      answerOk = apiUp;
      answerAt = now + (apiUp ? latency * (1 + 2 * conflicts) : deadline);
      conflicts = 0;
    }
    schedule.ticked(tick, interval, now);
  }

  // Runs until `until` seconds after t0, in steps of 10 ms.
  void runTo(double until) {
    while (at() < until) {
      step();
      clock.advance(10ms);
    }
  }
};

// Gaps between consecutive reports, seconds, to 10 ms.
std::vector<double> gaps(const std::vector<double>& times) {
  std::vector<double> g;
  for (size_t i = 1; i < times.size(); ++i) {
    g.push_back(static_cast<double>(std::lround((times[i] - times[i - 1]) * 100)) / 100);
  }
  return g;
}

}  // namespace

TEST_CASE(
    "A NodeMetric is reported when it appears, then once every reportIntervalSeconds, "
    "on through three aggregate windows",
    "[report-schedule]") {
  Sim sim;
  sim.observe("uid-1");
  sim.runTo(30 * 60 + 1);  // three 10-minute windows (koordlet's aggregate durations: 5, 10, 30)
  REQUIRE(sim.sent.size() == 31);
  CHECK(sim.sent.front() == Approx(0));
  CHECK(gaps(sim.sent) == std::vector<double>(30, 60.0));
  CHECK(sim.stored.size() == 31);
}

TEST_CASE("Before anything is sampled the report is tried every 5 s, then keeps its interval",
          "[report-schedule]") {
  Sim sim;
  sim.usage = false;
  sim.observe("uid-1");
  sim.runTo(12);
  CHECK(sim.sent.empty());
  sim.usage = true;
  sim.runTo(200);
  CHECK(sim.sent == std::vector<double>{15, 75, 135, 195});
}

TEST_CASE("A report that meets 409s is retried inside it and the next one keeps its time",
          "[report-schedule]") {
  Sim sim;
  sim.observe("uid-1");
  sim.runTo(50);
  sim.conflicts = 2;  // the 60 s report: two re-reads and PUTs
  sim.runTo(250);
  CHECK(sim.sent == std::vector<double>{0, 60, 120, 180, 240});
  REQUIRE(sim.stored.size() == 5);
  CHECK(sim.stored[1] == Approx(60.1).margin(0.011));
}

TEST_CASE(
    "While the API server is down each tick tries once; when it is back the next tick "
    "reports, with no catch-up burst",
    "[report-schedule]") {
  Sim sim;
  sim.observe("uid-1");
  sim.runTo(90);
  sim.apiUp = false;
  sim.runTo(400);
  sim.apiUp = true;
  sim.observe("uid-1");  // the watch lists again: the same object, nothing due
  sim.runTo(500);
  CHECK(sim.sent == std::vector<double>{0, 60, 120, 180, 240, 300, 360, 420, 480});
  CHECK(sim.stored == std::vector<double>{0.02, 60.02, 420.02, 480.02});
}

TEST_CASE("A report still in flight at its tick spends the tick", "[report-schedule]") {
  Sim sim;
  sim.latency = 70s;  // a server slower than the interval
  sim.observe("uid-1");
  sim.runTo(300);
  CHECK(sim.sent == std::vector<double>{0, 120, 240});
}

TEST_CASE("A NodeMetric deleted is not reported; created again (a new uid) it is reported at once",
          "[report-schedule]") {
  Sim sim;
  sim.observe("uid-1");
  sim.runTo(100);
  sim.observe(std::nullopt);
  sim.runTo(250);
  CHECK(sim.sent == std::vector<double>{0, 60});
  CHECK_FALSE(sim.schedule.due());
  sim.observe("uid-2");
  sim.runTo(320);
  CHECK(sim.sent == std::vector<double>{0, 60, 250, 310});
}

TEST_CASE(
    "Changes to the object other than its uid make nothing due; a new interval applies "
    "from the next report",
    "[report-schedule]") {
  Sim sim;
  sim.observe("uid-1");
  sim.runTo(90);
  sim.observe("uid-1");  // our own status update, or a spec edit
  sim.interval = 120s;
  sim.runTo(400);
  CHECK(sim.sent == std::vector<double>{0, 60, 120, 240, 360});
}

TEST_CASE("A tick handled late never brings two reports closer than the interval",
          "[report-schedule]") {
  Sim sim;
  sim.observe("uid-1");
  sim.runTo(61);
  sim.clock.advance(89s);  // the agent's loop held for 89 s (a stopped process)
  sim.runTo(300);
  REQUIRE(sim.sent.size() >= 3);
  CHECK(sim.sent[1] == Approx(60));
  CHECK(sim.sent[2] == Approx(150));
  for (double g : gaps(sim.sent)) CHECK(g >= 60);
}

}  // namespace test_kube_report_schedule
