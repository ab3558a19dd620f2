// Tests for qos/memory_evict: nodes built by hand (evict_test_helpers.h), assertions
// on the exact release, the requested pods in order and the decision words.
#include <catch2/catch.hpp>

#include <limits>

#include "qos/memory_evict.h"
#include "tests/qos/evict_test_helpers.h"

namespace test_qos_memory_evict {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::evict_test;

namespace {

constexpr int64_t kCapacity = 200'000;  // bytes: small numbers make the arithmetic visible

struct MemNode : EvictNode {
  explicit MemNode(std::optional<double> nodeUsed) {
    facts.capacityMemoryBytes = kCapacity;
    if (nodeUsed) snap.nodeMemoryBytes = Sample{*nodeUsed, kNow - 1s};
    spec.threshold.memoryEvictThresholdPercent = 70;
  }
  void be(const std::string& name, std::optional<double> used) {
    view(pod(name, KoordQos::kBE, KubeQos::kBestEffort), used, std::nullopt);
  }
};

MemoryEvictStrategy beOnly() { return MemoryEvictStrategy(1s, MemoryEvictGates{true, false}); }
MemoryEvictStrategy both() { return MemoryEvictStrategy(1s, MemoryEvictGates{true, true}); }

const EvictFeatureReport& report(const StrategyOutcome& out, const char* name) {
  return feature<MemoryEvictResult>(out, name);
}

}  // namespace

TEST_CASE("memory evict is enabled by either gate and a positive interval", "[memory_evict]") {
  NodeSloSpec spec;
  CHECK(MemoryEvictStrategy(1s, {true, false}).enabled(spec));
  CHECK(MemoryEvictStrategy(1s, {false, true}).enabled(spec));
  CHECK_FALSE(MemoryEvictStrategy(1s, {false, false}).enabled(spec));
  CHECK_FALSE(MemoryEvictStrategy(0s, {true, true}).enabled(spec));
  CHECK(MemoryEvictStrategy(1s, {true, true}).name() == "memory_evict");
  CHECK(MemoryEvictStrategy(1s, {true, true}).owner() == "memory-evict");
}

TEST_CASE("BE memory evict releases capacity times usage above the lower percent, biggest BE first",
          "[memory_evict]") {
  // 159,999 of 200,000 bytes: 79.9995% is 79% in integer division; lower 70 − 2 = 68;
  // release 200,000 × 11 / 100 = 22,000 bytes.
  MemNode n(159'999);
  n.be("be-small", 5'000);
  n.be("be-big", 20'000);
  n.be("be-mid", 9'000);
  n.view(n.pod("ls-huge", KoordQos::kLS), 150'000, std::nullopt);
  auto s = beOnly();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(out.writes.empty());
  CHECK(out.errors.empty());
  const EvictFeatureReport& f = report(out, kFeatureBeMemoryEvict);
  CHECK(f.triggered);
  CHECK(f.usagePercent == 79);
  CHECK(f.toRelease == 22'000);
  CHECK(f.decision == "release 22000 bytes: usage 79% >= 70%, lower 68%");
  CHECK(f.candidates == 3);  // never the LS pod
  // 20,000 < 22,000, then + 9,000 meets it: be-small stays.
  CHECK(names(out) == std::vector<std::string>{"be-big", "be-mid"});
  CHECK(f.outcome.released == 29'000);
  CHECK(f.outcome.met);
  REQUIRE(out.evictions.size() == 2);
  CHECK(out.evictions[0].feature == "BEMemoryEvict");
  CHECK(out.evictions[0].uid == "uid-be-big");
  CHECK(out.evictions[0].ns == "default");
  CHECK(out.evictions[0].message == "trigger by koordlet feature BEMemoryEvict, kill pod: be-big");
}

TEST_CASE("BE memory evict triggers at usage equal to the threshold, not one percent below",
          "[memory_evict]") {
  SECTION("70% triggers: release 200,000 × 2 / 100") {
    MemNode n(140'000);
    n.be("be-1", 1'000);
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeMemoryEvict).toRelease == 4'000);
    CHECK(names(out) == std::vector<std::string>{"be-1"});
  }
  SECTION("69.9995% is 69%: below") {
    MemNode n(139'999);
    n.be("be-1", 1'000);
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeMemoryEvict).decision == "below threshold: usage 69% < 70%");
    CHECK_FALSE(report(out, kFeatureBeMemoryEvict).triggered);
    CHECK(out.evictions.empty());
  }
}

TEST_CASE("BE memory evict uses memoryEvictLowerPercent when set", "[memory_evict]") {
  MemNode n(160'000);  // 80%
  n.spec.threshold.memoryEvictLowerPercent = 50;
  n.be("be-1", 1'000);
  auto s = beOnly();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(report(out, kFeatureBeMemoryEvict).toRelease == 60'000);  // 200,000 × 30 / 100
  CHECK(report(out, kFeatureBeMemoryEvict).decision ==
        "release 60000 bytes: usage 80% >= 70%, lower 50%");
}

TEST_CASE(
    "BE memory victims go by spec priority, then usage, pods without usage last by name "
    "descending",
    "[memory_evict]") {
  MemNode n(200'000);  // 100%: release 64,000, more than all of them
  n.be("a-none", std::nullopt);
  n.be("c-none", std::nullopt);
  n.be("b-small", 1'000);
  n.be("d-big", 3'000);
  n.be("e-zero", 0);  // a sample of 0 sorts with the ones without usage
  SECTION("same (unset) priority: usage, then the unsampled by name descending") {
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(names(out) == std::vector<std::string>{"d-big", "b-small", "e-zero", "c-none", "a-none"});
  }
  SECTION("a lower spec.priority goes first whatever its usage") {
    for (Pod& p : n.pods) p.priority = 5000;
    n.pods[0].priority = 10;  // a-none
    n.pods[2].priority = 20;  // b-small
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(names(out) == std::vector<std::string>{"a-none", "b-small", "d-big", "e-zero", "c-none"});
  }
}

TEST_CASE("BE memory evict never takes a pod whose raw label is not BE", "[memory_evict]") {
  MemNode n(190'000);
  // Kube BestEffort without the label: BE by default, but not by the raw label.
  n.view(n.pod("besteffort-unlabelled", KoordQos::kNone, KubeQos::kBestEffort), 150'000,
         std::nullopt);
  n.view(n.pod("ls", KoordQos::kLS), 150'000, std::nullopt);
  auto s = beOnly();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(report(out, kFeatureBeMemoryEvict).triggered);
  CHECK(report(out, kFeatureBeMemoryEvict).candidates == 0);
  CHECK(out.evictions.empty());
  CHECK_FALSE(report(out, kFeatureBeMemoryEvict).outcome.met);
}

TEST_CASE("BE memory evict never takes a BE pod that has ended", "[memory_evict]") {
  MemNode n(190'000);
  Pod& done = n.pod("be-done", KoordQos::kBE, KubeQos::kBestEffort);
  done.phase = "Succeeded";
  n.view(done, 150'000, std::nullopt);
  n.be("be-running", 10'000);
  auto s = beOnly();
  StrategyOutcome out = s.run(n.ctx());
  REQUIRE(out.evictions.size() == 1);
  CHECK(out.evictions[0].name == "be-running");
  CHECK(report(out, kFeatureBeMemoryEvict).candidates == 1);
}

TEST_CASE("BE memory evict counts a BE pod being deleted as released and never asks for it",
          "[memory_evict]") {
  // After a 201 the kubelet lists the pod, holding its memory, for its grace period:
  // it will release it; another pod must not go for the same pressure.
  MemNode n(190'000);  // 95%: release 200,000 × 27 / 100 = 54,000 bytes
  Pod& leaving = n.pod("be-leaving", KoordQos::kBE, KubeQos::kBestEffort);
  leaving.terminating = true;
  n.view(leaving, 150'000, std::nullopt);
  n.be("be-running", 10'000);
  auto s = beOnly();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(out.evictions.empty());
  const EvictFeatureReport& f = report(out, kFeatureBeMemoryEvict);
  CHECK(f.outcome.pending == std::vector<std::string>{"be-leaving"});
  CHECK(f.outcome.met);
  // Not enough on its own: the next pod is asked for.
  leaving.terminating = true;
  n.snap.pods.front().memoryBytes = Sample{20'000, kNow - 1s};
  StrategyOutcome more = beOnly().run(n.ctx());
  REQUIRE(more.evictions.size() == 1);
  CHECK(more.evictions[0].name == "be-running");
}

TEST_CASE("the eviction-policy annotation allows, excludes, or (unparsable) excludes and reports",
          "[memory_evict]") {
  MemNode n(190'000);
  n.be("allowed", 1'000);
  n.pods.back().annotations[kEvictionPolicyAnnotation] = R"(["CPUEvict","BEMemoryEvict"])";
  n.be("not-listed", 50'000);
  n.pods.back().annotations[kEvictionPolicyAnnotation] = R"(["MemoryEvict"])";
  n.be("broken", 40'000);
  n.pods.back().annotations[kEvictionPolicyAnnotation] = "BEMemoryEvict";
  n.spec.threshold.evictEnabledPriorityThreshold = 6000;  // MemoryEvict runs too
  n.pods.back().labels[kEvictionEnabledLabel] = "true";
  auto s = both();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(names(out) == std::vector<std::string>{"allowed"});
  REQUIRE(out.errors.size() == 1);  // once, though both features looked at it
  CHECK(contains(out.errors[0], "default/broken"));
  CHECK(contains(out.errors[0], "koordinator.sh/eviction-policy"));
}

TEST_CASE("memory evict is skipped when NodeSLO disables resourceUsedThresholdWithBE",
          "[memory_evict]") {
  MemNode n(190'000);
  n.spec.threshold.enable = false;
  n.be("be-1", 1'000);
  auto s = both();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(out.evictions.empty());
  for (const char* f : {kFeatureBeMemoryEvict, kFeatureMemoryEvict}) {
    CHECK(report(out, f).decision == "NodeSLO resourceUsedThresholdWithBE.enable is false");
  }
}

TEST_CASE("memory evict reports invalid NodeSLO values by field and evicts nothing",
          "[memory_evict]") {
  MemNode n(190'000);
  n.be("be-1", 1'000);
  SECTION("lower not below the threshold") {
    n.spec.threshold.memoryEvictLowerPercent = 70;
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(out.evictions.empty());
    const EvictFeatureReport& f = report(out, kFeatureBeMemoryEvict);
    CHECK(contains(f.decision, "invalid config: "));
    CHECK(contains(f.decision, "memoryEvictLowerPercent"));
    REQUIRE(out.errors.size() == 1);
    CHECK(contains(out.errors[0], "NodeSLO resourceUsedThresholdWithBE.memoryEvictLowerPercent"));
  }
  SECTION("MemoryEvict without evictEnabledPriorityThreshold; BEMemoryEvict still runs") {
    auto s = both();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(names(out) == std::vector<std::string>{"be-1"});
    CHECK(contains(report(out, kFeatureMemoryEvict).decision, "evictEnabledPriorityThreshold"));
    REQUIRE(out.errors.size() == 1);
    CHECK(contains(out.errors[0], "evictEnabledPriorityThreshold"));
  }
  SECTION("threshold 0 with the default lower (−2) is valid and triggers") {
    n.spec.threshold.memoryEvictThresholdPercent = 0;
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeMemoryEvict).toRelease == 200'000 * 97 / 100);
  }
}

TEST_CASE("memory evict skips without Node capacity or a fresh node sample", "[memory_evict]") {
  SECTION("no Node") {
    MemNode n(190'000);
    n.facts.capacityMemoryBytes.reset();
    n.be("be-1", 1'000);
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeMemoryEvict).decision == "no Node capacity");
    CHECK(out.evictions.empty());
  }
  SECTION("node sample older than two collect intervals") {
    MemNode n(190'000);
    n.snap.nodeMemoryBytes->at = kNow - 3s;
    n.be("be-1", 1'000);
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeMemoryEvict).decision == "node memory sample stale");
    CHECK(out.evictions.empty());
  }
}

TEST_CASE("memory evict cools down 4 s after a round that picked a pod", "[memory_evict]") {
  MemNode n(190'000);
  n.be("be-1", 100'000);
  n.be("be-2", 90'000);
  auto s = beOnly();
  CHECK(names(s.run(n.ctx())) == std::vector<std::string>{"be-1"});
  n.ledger.requested("uid-be-1", kNow);
  n.at(kNow + 3s);
  StrategyOutcome cooling = s.run(n.ctx());
  CHECK(cooling.evictions.empty());
  CHECK(report(cooling, kFeatureBeMemoryEvict).decision == "in cool-down");
  n.at(kNow + 4s);
  // be-1's eviction is still in flight: it counts as released, nothing new is asked.
  StrategyOutcome after = s.run(n.ctx());
  CHECK(report(after, kFeatureBeMemoryEvict).outcome.pending == std::vector<std::string>{"be-1"});
  CHECK(after.evictions.empty());
  // ... and a round that picked nothing new starts no cool-down.
  n.at(kNow + 5s);
  CHECK(report(s.run(n.ctx()), kFeatureBeMemoryEvict).decision != "in cool-down");
}

TEST_CASE("memory evict skips a refused pod and picks the next", "[memory_evict]") {
  MemNode n(190'000);  // release 22,000 bytes
  n.be("be-1", 100'000);
  n.be("be-2", 90'000);
  n.ledger.refused("uid-be-1", kNow - 1s);
  auto s = beOnly();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(names(out) == std::vector<std::string>{"be-2"});
  CHECK(report(out, kFeatureBeMemoryEvict).outcome.blocked == std::vector<std::string>{"be-1"});
}

TEST_CASE("memory evict picks by priority among eviction-enabled pods, real bytes",
          "[memory_evict]") {
  MemNode n(190'000);  // 95%: release 200,000 × 27 / 100 = 54,000 bytes
  n.spec.threshold.evictEnabledPriorityThreshold = 6000;
  n.view(n.evictable("low-big", 1000), 30'000, std::nullopt);
  n.view(n.evictable("low-small", 1000), 10'000, std::nullopt);
  n.view(n.evictable("mid", 2000), 40'000, std::nullopt);
  Pod& first = n.evictable("annotated-first", 5000);
  first.annotations[kEvictionPriorityAnnotation] = "-1";
  n.view(first, 5'000, std::nullopt);
  Pod& label = n.evictable("label-low", 1000);
  label.labels[kPriorityLabel] = "10";  // below the default (its priority, 1000)
  n.view(label, 5'000, std::nullopt);
  n.view(n.evictable("above-threshold", 7000), 90'000, std::nullopt);
  Pod& off = n.pod("not-enabled", KoordQos::kLS);
  off.priority = 1000;
  n.view(off, 90'000, std::nullopt);
  n.view(n.evictable("no-sample", 1000), std::nullopt, std::nullopt);
  Pod& done = n.evictable("succeeded", 1000);
  done.phase = "Succeeded";
  n.view(done, 90'000, std::nullopt);
  auto s = MemoryEvictStrategy(1s, {false, true});
  StrategyOutcome out = s.run(n.ctx());
  const EvictFeatureReport& f = report(out, kFeatureMemoryEvict);
  CHECK(f.toRelease == 54'000);
  CHECK(f.candidates == 5);
  // 5,000 + 5,000 + 30,000 + 10,000 = 50,000 < 54,000: mid goes too (koordlet, counting
  // usage × 1000, would have stopped at the first).
  CHECK(names(out) ==
        std::vector<std::string>{"annotated-first", "label-low", "low-big", "low-small", "mid"});
  CHECK(f.outcome.released == 90'000);
}

TEST_CASE(
    "a pod picked by BE memory evict is not picked again by memory evict, and its release "
    "counts for both",
    "[memory_evict]") {
  MemNode n(190'000);  // release 54,000 for each feature
  n.spec.threshold.evictEnabledPriorityThreshold = 6000;
  Pod& be = n.pod("be-1", KoordQos::kBE, KubeQos::kBestEffort);
  be.labels[kEvictionEnabledLabel] = "true";  // priority with default: batch, 5500
  n.view(be, 30'000, std::nullopt);
  n.view(n.evictable("ls-1", 5000), 20'000, std::nullopt);
  n.view(n.evictable("ls-2", 5000), 10'000, std::nullopt);
  n.view(n.evictable("ls-3", 5000), 1'000, std::nullopt);
  auto s = both();
  StrategyOutcome out = s.run(n.ctx());
  // BE: be-1 (30,000). MemoryEvict starts at 30,000: ls-1 makes 50,000, ls-2 60,000.
  CHECK(names(out) == std::vector<std::string>{"be-1", "ls-1", "ls-2"});
  REQUIRE(out.evictions.size() == 3);
  CHECK(out.evictions[0].feature == "BEMemoryEvict");
  CHECK(out.evictions[1].feature == "MemoryEvict");
  CHECK(report(out, kFeatureMemoryEvict).outcome.released == 60'000);
}

TEST_CASE("a hostile Node capacity saturates the release instead of overflowing",
          "[memory_evict]") {
  MemNode n(1'000);
  n.facts.capacityMemoryBytes = std::numeric_limits<int64_t>::max();
  n.spec.threshold.memoryEvictThresholdPercent = 0;  // valid; lower 0 − 2
  n.be("be-1", 1'000);
  auto s = beOnly();
  StrategyOutcome out = s.run(n.ctx());
  const EvictFeatureReport& f = report(out, kFeatureBeMemoryEvict);
  CHECK(f.toRelease == std::numeric_limits<int64_t>::max());
  CHECK(names(out) == std::vector<std::string>{"be-1"});
}

}  // namespace test_qos_memory_evict
