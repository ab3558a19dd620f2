// The manager's loop over registered strategies (strategy.h, qos_manager.h), with a
// fake strategy on a temp cgroup v1 tree: when a strategy runs, that a disabled one
// costs nothing, that its writes carry its owner tag, and what of its run reaches
// the round. The real strategies through the same loop: test_qos_manager.cpp.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "qos/qos_manager.h"
#include "qos/strategy.h"
#include "tests/support/temp_tree.h"

namespace test_qos_strategy_loop {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

const CgroupLayout kLayout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
const std::string kPodDir = kLayout.podDir(KubeQos::kBurstable, "p1");

// Writes cpu.shares of kPodDir; counts its runs; its result is the run count.
class FakeStrategy final : public QosStrategy {
 public:
  FakeStrategy(std::string name, std::string owner, std::chrono::nanoseconds interval)
      : name_(std::move(name)), owner_(std::move(owner)), interval_(interval) {}

  std::string_view name() const override { return name_; }
  std::string_view owner() const override { return owner_; }
  std::chrono::nanoseconds interval() const override { return interval_; }
  bool enabled(const NodeSloSpec&) const override { return on; }
  bool runsOnPodsChange() const override { return onPodsChange; }
  StrategyOutcome run(const StrategyContext& ctx) override {
    ++runs;
    podsSeen = ctx.snapshot.pods.size();
    if (clock != nullptr) clock->advance(takes);
    StrategyOutcome out;
    out.writes.push_back(CgroupWrite{kPodDir, Knob::kCpuShares, KnobValue::of(shares), claims});
    out.errors = errors;
    out.result = runs;
    return out;
  }

  bool on = true;
  bool onPodsChange = false;
  int64_t shares = 512;
  std::string claims;  // the owner its writes name themselves (the manager's tag wins)
  std::vector<std::string> errors;
  ManualClock* clock = nullptr;  // advanced by `takes` during a run
  std::chrono::nanoseconds takes{0};
  int runs = 0;
  size_t podsSeen = 0;

 private:
  std::string name_;
  std::string owner_;
  std::chrono::nanoseconds interval_;
};

struct Fixture {
  test::TempTree tree;
  ManualClock clock;
  FailureLog failures{clock, std::chrono::minutes(10)};
  Executor exec{execConfig(), kLayout, KnobSupport::all(), clock, failures};
  QosManager manager{{}, kLayout, CpuTopology{}, exec, clock};
  MetricCache cache{{}, clock.now()};
  std::vector<Pod> pods;
  NodeSloSpec spec = defaultNodeSlo();

  Fixture() { tree.write("cpu/" + kPodDir + "/cpu.shares", "1024\n"); }
  ExecutorConfig execConfig() const {
    ExecutorConfig c;
    c.cgroupRoot = tree.path();
    return c;
  }
  FakeStrategy& add(std::string name, std::string owner, std::chrono::nanoseconds interval) {
    return manager.add(std::make_unique<FakeStrategy>(std::move(name), std::move(owner), interval));
  }
  QosRound run() { return manager.runDue(pods, cache, spec); }
  std::string shares() const {
    auto text = readFile(tree.path("cpu/" + kPodDir + "/cpu.shares"));
    REQUIRE(text.ok());
    return *text;
  }
};

}  // namespace

TEST_CASE("the manager runs a registered strategy only when its interval is due",
          "[qos_manager][strategy]") {
  Fixture f;
  FakeStrategy& fake = f.add("fake", "fake-owner", 10s);
  CHECK(f.run().report("fake") != nullptr);  // the first call runs it
  f.clock.advance(5s);
  CHECK(f.run().report("fake") == nullptr);
  // A quarter interval of slack: 7.5 s after the last run is due for 10 s, 7.4 s not.
  f.clock.advance(2400ms);
  CHECK(f.run().report("fake") == nullptr);
  f.clock.advance(100ms);
  CHECK(f.run().report("fake") != nullptr);
  CHECK(fake.runs == 2);
}

TEST_CASE(
    "a strategy that runs on pod changes runs in the round after them, and its interval "
    "restarts there",
    "[qos_manager][strategy]") {
  Fixture f;
  FakeStrategy& hooks = f.add("hooks", "hooks-owner", 10s);
  hooks.onPodsChange = true;
  FakeStrategy& other = f.add("other", "other-owner", 10s);
  f.run();  // both run first
  f.clock.advance(3s);
  f.manager.podsChanged();
  QosRound changed = f.run();
  CHECK(changed.report("hooks") != nullptr);
  CHECK(changed.report("other") == nullptr);  // not due, and not run on changes
  f.clock.advance(3s);
  CHECK(f.run().report("hooks") == nullptr);  // the change is used up
  // 10 s after the first run: "other" is due, "hooks" ran 7 s ago and is not.
  f.clock.advance(4s);
  QosRound later = f.run();
  CHECK(later.report("other") != nullptr);
  CHECK(later.report("hooks") == nullptr);
  f.clock.advance(3s);
  CHECK(f.run().report("hooks") != nullptr);  // 10 s after its run on the change
  CHECK(hooks.runs == 3);
  CHECK(other.runs == 2);

  // A change while the strategy is disabled is not kept for later.
  hooks.on = false;
  f.manager.podsChanged();
  f.clock.advance(1s);
  CHECK(f.run().report("hooks") == nullptr);
  hooks.on = true;
  f.clock.advance(1s);
  CHECK(f.run().report("hooks") == nullptr);
  CHECK(hooks.runs == 3);
}

TEST_CASE("a strategy with a non-positive interval never runs", "[qos_manager][strategy]") {
  Fixture f;
  FakeStrategy& fake = f.add("fake", "fake-owner", 0s);
  for (int i = 0; i < 3; ++i, f.clock.advance(1min)) CHECK(f.run().ran.empty());
  CHECK(fake.runs == 0);
  CHECK(f.shares() == "1024\n");
}

TEST_CASE("a disabled strategy neither runs nor writes, and runs as soon as it is enabled",
          "[qos_manager][strategy]") {
  Fixture f;
  FakeStrategy& fake = f.add("fake", "fake-owner", 10s);
  fake.on = false;
  for (int i = 0; i < 3; ++i) {
    const QosRound round = f.run();
    CHECK(round.ran.empty());
    CHECK(round.writes.written == 0);
    f.clock.advance(1s);
  }
  CHECK(fake.runs == 0);
  CHECK(f.shares() == "1024\n");
  CHECK(f.exec.stats().written == 0);
  // Its interval did not start while it was off.
  fake.on = true;
  CHECK(f.run().report("fake") != nullptr);
  CHECK(f.shares() == "512\n");
}

TEST_CASE("writes carry the strategy's owner tag, whatever owner they name themselves",
          "[qos_manager][strategy]") {
  Fixture f;
  FakeStrategy& first = f.add("first", "owner-a", 1s);
  first.claims = "owner-b";  // names the second strategy's owner: the tag wins
  FakeStrategy& second = f.add("second", "owner-b", 1s);
  second.shares = 256;
  const QosRound round = f.run();
  REQUIRE(round.report("first") != nullptr);
  REQUIRE(round.report("second") != nullptr);
  CHECK(round.report("first")->writes.written == 1);
  // The knob is owner-a's: the executor refuses owner-b's write to it.
  CHECK(round.report("second")->writes.refused == 1);
  CHECK(round.writes.written == 1);
  CHECK(round.writes.refused == 1);
  CHECK(f.shares() == "512\n");
}

TEST_CASE("a strategy's result, errors and duration reach the round under its name",
          "[qos_manager][strategy]") {
  Fixture f;
  f.pods.push_back(Pod{});
  f.pods.back().uid = "p1";
  FakeStrategy& fake = f.add("fake", "fake-owner", 1s);
  fake.errors = {"pod default/p1: bad annotation"};
  fake.clock = &f.clock;
  fake.takes = 30ms;
  const QosRound round = f.run();
  CHECK(fake.podsSeen == 1);  // the snapshot carries the pod list
  const StrategyReport* report = round.report("fake");
  REQUIRE(report != nullptr);
  CHECK(report->seconds == Approx(0.030));
  CHECK(report->errors == std::vector<std::string>{"pod default/p1: bad annotation"});
  REQUIRE(round.result<int>("fake") != nullptr);
  CHECK(*round.result<int>("fake") == 1);
  CHECK(round.result<double>("fake") == nullptr);  // its result is not a double
  CHECK(round.result<int>("other") == nullptr);    // no such strategy ran
}

TEST_CASE("strategies run in the order registered, and a name registers once",
          "[qos_manager][strategy]") {
  Fixture f;
  f.add("b", "owner-b", 1s);
  f.add("a", "owner-a", 1s);
  const QosRound round = f.run();
  REQUIRE(round.ran.size() == 2);
  CHECK(round.ran[0].name == "b");
  CHECK(round.ran[1].name == "a");
  CHECK_THROWS_WITH(f.add("a", "owner-c", 1s), Catch::Contains("registered twice: a"));
}

}  // namespace test_qos_strategy_loop
