// Tests for qos/allocatable_evict (CPUAllocatableEvict, MemoryAllocatableEvict) through
// the CPU and memory eviction strategies: nodes built by hand (evict_test_helpers.h),
// every release worked by hand from koordlet's formulas:
//   trigger R × 100 > T × A; release (R × 100 − L × A) / 100, truncated.
#include <catch2/catch.hpp>

#include "qos/cpu_evict.h"
#include "qos/memory_evict.h"
#include "tests/qos/evict_test_helpers.h"

namespace test_qos_allocatable_evict {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::evict_test;

namespace {

struct AllocNode : EvictNode {
  AllocNode() {
    facts.capacityCpuMilli = 32'000;
    facts.capacityMemoryBytes = 64'000'000;
    facts.batchCpuAllocatableMilli = 8'000;
    facts.midCpuAllocatableMilli = 2'000;
    facts.batchMemoryAllocatableBytes = 900'000;
    facts.midMemoryAllocatableBytes = 500'000;
    auto& t = spec.threshold;
    t.cpuAllocatableEvictThresholdPercent = 110;
    t.cpuAllocatableEvictLowerPercent = 100;
    t.memoryAllocatableEvictThresholdPercent = 105;
    t.memoryAllocatableEvictLowerPercent = 100;
    t.allocatableEvictPriorityThreshold = 7999;
  }
  // A running pod of `cls` (priority `priority`), one container requesting batch or mid
  // resources by its class, eviction-enabled unless told otherwise, with usage samples.
  Pod& alloc(const std::string& name, PriorityClass cls, int32_t priority, int64_t cpuMilli,
             int64_t memoryBytes, bool enabled = true, bool sample = true) {
    Pod& p = pod(name, cls == PriorityClass::kBatch ? KoordQos::kBE : KoordQos::kLS,
                 cls == PriorityClass::kBatch ? KubeQos::kBestEffort : KubeQos::kBurstable);
    p.priorityClass = cls;
    p.priority = priority;
    if (enabled) p.labels[kEvictionEnabledLabel] = "true";
    Container c;
    c.name = "app";
    if (cls == PriorityClass::kBatch) {
      c.requests.batchCpuMilli = cpuMilli;
      c.requests.batchMemoryBytes = memoryBytes;
    } else if (cls == PriorityClass::kMid) {
      c.requests.midCpuMilli = cpuMilli;
      c.requests.midMemoryBytes = memoryBytes;
    } else {
      c.requests.cpuMilli = cpuMilli;
      c.requests.memoryBytes = memoryBytes;
    }
    p.containers.push_back(c);
    if (sample) {
      view(p, 1000.0, 0.5);
    } else {
      view(p, std::nullopt, std::nullopt);
    }
    return p;
  }
};

CpuEvictStrategy cpuAlloc() {
  return CpuEvictStrategy(1s, CpuEvictGates{false, false, true}, 20s, kNow - 1h);
}
MemoryEvictStrategy memAlloc() {
  return MemoryEvictStrategy(1s, MemoryEvictGates{false, false, true});
}

const EvictFeatureReport& cpuReport(const StrategyOutcome& out) {
  return feature<CpuEvictResult>(out, kFeatureCpuAllocatableEvict);
}
const EvictFeatureReport& memReport(const StrategyOutcome& out) {
  return feature<MemoryEvictResult>(out, kFeatureMemoryAllocatableEvict);
}

}  // namespace

TEST_CASE("the allocatable gates turn the eviction strategies on alone", "[allocatable_evict]") {
  NodeSloSpec spec;
  CHECK(CpuEvictStrategy(1s, {false, false, true}, 20s, kNow).enabled(spec));
  CHECK(MemoryEvictStrategy(1s, {false, false, true}).enabled(spec));
  CHECK_FALSE(CpuEvictStrategy(0s, {false, false, true}, 20s, kNow).enabled(spec));
}

TEST_CASE(
    "CPU allocatable evict releases the batch-cpu requested above the lower percent of the "
    "allocatable, largest request first",
    "[allocatable_evict]") {
  // R = 4,000 + 3,000 + 3,000 = 10,000 of A = 8,000: 125% > 110%;
  // release (1,000,000 − 100 × 8,000) / 100 = 2,000 milli-cores.
  AllocNode n;
  n.alloc("batch-small", PriorityClass::kBatch, 5500, 3'000, 0);
  n.alloc("batch-big", PriorityClass::kBatch, 5500, 4'000, 0);
  n.alloc("batch-other", PriorityClass::kBatch, 5500, 3'000, 0);
  auto s = cpuAlloc();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(out.errors.empty());
  const EvictFeatureReport& f = cpuReport(out);
  CHECK(f.triggered);
  CHECK(f.toRelease == 2'000);
  CHECK(f.usagePercent == 125);
  CHECK(f.decision ==
        "kubernetes.io/batch-cpu: requested 10000 of 8000 allocatable (125%) > 110%: release "
        "2000 milli-cores (lower 100%)");
  CHECK(f.candidates == 3);
  CHECK(names(out) == std::vector<std::string>{"batch-big"});  // 4,000 >= 2,000
  CHECK(f.outcome.released == 4'000);
  CHECK(f.outcome.met);
  REQUIRE(out.evictions.size() == 1);
  CHECK(out.evictions[0].feature == "CPUAllocatableEvict");
  CHECK(out.evictions[0].message ==
        "trigger by koordlet feature CPUAllocatableEvict, kill pod: batch-big");
}

TEST_CASE("CPU allocatable evict triggers above the threshold, not at it", "[allocatable_evict]") {
  AllocNode n;
  n.alloc("batch-1", PriorityClass::kBatch, 5500, 8'800, 0);  // exactly 110%
  auto s = cpuAlloc();
  StrategyOutcome out = s.run(n.ctx());
  CHECK_FALSE(cpuReport(out).triggered);
  CHECK(cpuReport(out).decision ==
        "kubernetes.io/batch-cpu: requested 8800 of 8000 allocatable (110%) <= 110%");
  CHECK(out.evictions.empty());
  n.pods.back().containers[0].requests.batchCpuMilli = 8'801;  // 110.0125%
  StrategyOutcome more = s.run(n.ctx());
  CHECK(cpuReport(more).toRelease == 801);  // (880,100 − 800,000) / 100 = 801
  CHECK(names(more) == std::vector<std::string>{"batch-1"});
}

TEST_CASE("the allocatable thresholds have no default: unset, the feature says so and waits",
          "[allocatable_evict]") {
  AllocNode n;
  n.alloc("batch-1", PriorityClass::kBatch, 5500, 20'000, 0);
  SECTION("no threshold") {
    n.spec.threshold.cpuAllocatableEvictThresholdPercent.reset();
    StrategyOutcome out = cpuAlloc().run(n.ctx());
    CHECK(
        cpuReport(out).decision ==
        "invalid config: NodeSLO resourceUsedThresholdWithBE.cpuAllocatableEvictThresholdPercent: "
        "not set (koordlet applies no default)");
    REQUIRE(out.errors.size() == 1);
    CHECK(contains(out.errors[0], "(CPUAllocatableEvict skipped)"));
    CHECK(out.evictions.empty());
  }
  SECTION("no lower percent: no threshold − 2 fallback, unlike CPUEvict") {
    n.spec.threshold.cpuAllocatableEvictLowerPercent.reset();
    StrategyOutcome out = cpuAlloc().run(n.ctx());
    CHECK(contains(cpuReport(out).decision, "cpuAllocatableEvictLowerPercent: not set"));
    CHECK(out.evictions.empty());
  }
  SECTION("lower not below the threshold") {
    n.spec.threshold.cpuAllocatableEvictLowerPercent = 110;
    StrategyOutcome out = cpuAlloc().run(n.ctx());
    CHECK(contains(cpuReport(out).decision,
                   "cpuAllocatableEvictLowerPercent: 110 must be below "
                   "cpuAllocatableEvictThresholdPercent 110"));
  }
  SECTION("no priority threshold") {
    n.spec.threshold.allocatableEvictPriorityThreshold.reset();
    StrategyOutcome out = cpuAlloc().run(n.ctx());
    CHECK(contains(cpuReport(out).decision, "allocatableEvictPriorityThreshold: not set"));
  }
  SECTION("the NodeSLO's enable off") {
    n.spec.threshold.enable = false;
    StrategyOutcome out = cpuAlloc().run(n.ctx());
    CHECK(cpuReport(out).decision == "NodeSLO resourceUsedThresholdWithBE.enable is false");
    CHECK(out.evictions.empty());
  }
}

TEST_CASE(
    "only pods at or under the priority threshold count and may go, and only those labelled "
    "eviction-enabled with a fresh sample",
    "[allocatable_evict]") {
  AllocNode n;
  n.spec.threshold.allocatableEvictPriorityThreshold = 5999;  // batch and free, not mid
  n.alloc("batch-unlabelled", PriorityClass::kBatch, 5500, 6'000, 0, false);
  n.alloc("batch-no-sample", PriorityClass::kBatch, 5500, 5'000, 0, true, false);
  n.alloc("batch-ok", PriorityClass::kBatch, 5500, 1'000, 0);
  n.alloc("batch-high", PriorityClass::kBatch, 6500, 9'000, 0);  // spec.priority over 5999
  n.alloc("mid-1", PriorityClass::kMid, 7500, 9'000, 0);         // mid: over the threshold
  n.alloc("free-1", PriorityClass::kFree, 3500, 1'000, 0);       // releases no batch-cpu
  auto s = cpuAlloc();
  StrategyOutcome out = s.run(n.ctx());
  const EvictFeatureReport& f = cpuReport(out);
  // R = 6,000 + 5,000 + 1,000 = 12,000 of 8,000 (150%): release 4,000. Mid's 9,000 of
  // 2,000 is not counted (priority 7500 > 5999), nor batch-high's.
  CHECK(f.decision ==
        "kubernetes.io/batch-cpu: requested 12000 of 8000 allocatable (150%) > 110%: release "
        "4000 milli-cores (lower 100%)");
  CHECK(f.candidates == 1);
  CHECK(names(out) == std::vector<std::string>{"batch-ok"});
  CHECK_FALSE(f.outcome.met);  // 1,000 of 4,000: no one else may go
}

TEST_CASE(
    "victims go by eviction priority, priority, label priority, then the request, then the "
    "name",
    "[allocatable_evict]") {
  AllocNode n;
  n.facts.batchCpuAllocatableMilli = 100;  // everything goes
  Pod& first = n.alloc("z-annotated", PriorityClass::kBatch, 5500, 1'000, 0);
  first.annotations[kEvictionPriorityAnnotation] = "-5";
  n.alloc("b-low-priority", PriorityClass::kBatch, 5100, 1'000, 0);
  Pod& labelled = n.alloc("c-label", PriorityClass::kBatch, 5500, 1'000, 0);
  labelled.labels[kPriorityLabel] = "10";
  n.alloc("d-big", PriorityClass::kBatch, 5500, 3'000, 0);
  n.alloc("e-tie", PriorityClass::kBatch, 5500, 2'000, 0);
  n.alloc("a-tie", PriorityClass::kBatch, 5500, 2'000, 0);
  auto s = cpuAlloc();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(names(out) == std::vector<std::string>{"z-annotated", "b-low-priority", "c-label", "d-big",
                                               "a-tie", "e-tie"});
}

TEST_CASE(
    "batch and mid overflow apart, each against its own allocatable, in one report; a "
    "resource the Node has none of releases all that is requested",
    "[allocatable_evict]") {
  AllocNode n;
  n.alloc("batch-1", PriorityClass::kBatch, 5500, 9'000, 0);  // 9,000 of 8,000: 112%
  n.alloc("mid-1", PriorityClass::kMid, 7500, 1'500, 0);
  n.alloc("mid-2", PriorityClass::kMid, 7500, 1'000, 0);  // 2,500 of 2,000: 125%
  SECTION("both over") {
    StrategyOutcome out = cpuAlloc().run(n.ctx());
    const EvictFeatureReport& f = cpuReport(out);
    CHECK(f.toRelease == 1'000 + 500);
    CHECK(f.candidates == 3);
    CHECK(
        contains(f.decision, "; kubernetes.io/mid-cpu: requested 2500 of 2000 allocatable (125%)"));
    CHECK(names(out) == std::vector<std::string>{"batch-1", "mid-1"});
    CHECK(f.outcome.picked == std::vector<std::string>{"batch-1", "mid-1"});
    CHECK(f.outcome.released == 9'000 + 1'500);
    CHECK(f.outcome.met);
  }
  SECTION("no mid-cpu on the Node") {
    n.facts.midCpuAllocatableMilli.reset();
    n.facts.batchCpuAllocatableMilli = 10'000;
    StrategyOutcome out = cpuAlloc().run(n.ctx());
    CHECK(cpuReport(out).decision ==
          "kubernetes.io/batch-cpu: requested 9000 of 10000 allocatable (90%) <= 110%; "
          "kubernetes.io/mid-cpu: requested 2500, none allocatable on the Node: release all of "
          "it");
    CHECK(names(out) == std::vector<std::string>{"mid-1", "mid-2"});
  }
}

TEST_CASE("memory allocatable evict works in bytes with its own thresholds",
          "[allocatable_evict]") {
  // R = 600,000 + 400,000 = 1,000,000 of A = 900,000: 111% > 105%;
  // release (100,000,000 − 100 × 900,000) / 100 = 100,000 bytes.
  AllocNode n;
  n.alloc("batch-a", PriorityClass::kBatch, 5500, 0, 400'000);
  n.alloc("batch-b", PriorityClass::kBatch, 5500, 0, 600'000);
  StrategyOutcome out = memAlloc().run(n.ctx());
  const EvictFeatureReport& f = memReport(out);
  CHECK(f.decision ==
        "kubernetes.io/batch-memory: requested 1000000 of 900000 allocatable (111%) > 105%: "
        "release 100000 bytes (lower 100%)");
  CHECK(names(out) == std::vector<std::string>{"batch-b"});
  CHECK(out.evictions[0].feature == "MemoryAllocatableEvict");
}

TEST_CASE(
    "in the memory strategy the allocatable task runs between BEMemoryEvict and MemoryEvict, "
    "and what it frees counts for MemoryEvict's target",
    "[allocatable_evict]") {
  AllocNode n;
  n.facts.capacityMemoryBytes = 200'000;
  n.snap.nodeMemoryBytes = Sample{150'000, kNow - 1s};  // 75%: release 200,000 × 7 / 100
  n.spec.threshold.evictEnabledPriorityThreshold = 7999;
  Pod& big = n.alloc("batch-big", PriorityClass::kBatch, 5500, 0, 1'000'000);
  n.snap.pods.back().memoryBytes = Sample{30'000, kNow - 1s};
  (void)big;
  n.alloc("batch-other", PriorityClass::kBatch, 5500, 0, 10);
  n.snap.pods.back().memoryBytes = Sample{50'000, kNow - 1s};  // MemoryEvict's first by usage
  MemoryEvictStrategy s(1s, MemoryEvictGates{false, true, true});
  StrategyOutcome out = s.run(n.ctx());
  const auto* r = std::any_cast<MemoryEvictResult>(&out.result);
  REQUIRE(r != nullptr);
  REQUIRE(r->features.size() == 2);
  CHECK(r->features[0].feature == "MemoryAllocatableEvict");
  CHECK(r->features[1].feature == "MemoryEvict");
  // The allocatable task takes batch-big (1,000,010 of 900,000); its 30,000 bytes of
  // usage count for MemoryEvict's 14,000, so batch-other stays.
  CHECK(names(out) == std::vector<std::string>{"batch-big"});
  CHECK(r->features[1].outcome.met);
  CHECK(r->features[1].outcome.picked.empty());
}

TEST_CASE("with its gate off the allocatable task neither reports nor evicts",
          "[allocatable_evict]") {
  AllocNode n;
  n.alloc("batch-1", PriorityClass::kBatch, 5500, 20'000, 2'000'000);
  StrategyOutcome cpu = CpuEvictStrategy(1s, {true, false, false}, 20s, kNow - 1h).run(n.ctx());
  const auto* c = std::any_cast<CpuEvictResult>(&cpu.result);
  REQUIRE(c != nullptr);
  CHECK(c->feature(kFeatureCpuAllocatableEvict) == nullptr);
  StrategyOutcome mem = MemoryEvictStrategy(1s, {true, false, false}).run(n.ctx());
  const auto* m = std::any_cast<MemoryEvictResult>(&mem.result);
  REQUIRE(m != nullptr);
  CHECK(m->feature(kFeatureMemoryAllocatableEvict) == nullptr);
  for (const EvictionRequest& e : cpu.evictions) CHECK(e.feature != "CPUAllocatableEvict");
  for (const EvictionRequest& e : mem.evictions) CHECK(e.feature != "MemoryAllocatableEvict");
}

}  // namespace test_qos_allocatable_evict
