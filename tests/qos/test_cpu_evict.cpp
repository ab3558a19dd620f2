// Tests for qos/cpu_evict: the BE CPU figures and node CPU usage come from a metric
// cache filled at chosen times; pods and the Node's facts are built by hand.
#include <catch2/catch.hpp>

#include "qos/cpu_evict.h"
#include "tests/qos/evict_test_helpers.h"

namespace test_qos_cpu_evict {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::evict_test;

namespace {

struct CpuNode : EvictNode {
  CpuNode() {
    facts.capacityCpuMilli = 10'000;
    ResourceThresholdStrategy& t = spec.threshold;
    t.cpuEvictBESatisfactionLowerPercent = 60;
    t.cpuEvictBESatisfactionUpperPercent = 80;
    t.cpuEvictTimeWindowSeconds = 10;
  }
  // One sample a second of a node-level series, the newest at now.
  void fill(MetricKind kind, const std::vector<double>& oldestFirst) {
    const auto n = static_cast<int64_t>(oldestFirst.size());
    for (int64_t i = 0; i < n; ++i) {
      cache.append(SeriesKey{kind, "", ""}, kNow - std::chrono::seconds(n - 1 - i),
                   oldestFirst[static_cast<size_t>(i)]);
    }
  }
  // The BE usage, request and real limit, the same value in each of n samples.
  void be(int n, double usage, double request, double limit) {
    fill(MetricKind::kBeCpuUsageMilli, std::vector<double>(static_cast<size_t>(n), usage));
    fill(MetricKind::kBeCpuRequestMilli, std::vector<double>(static_cast<size_t>(n), request));
    fill(MetricKind::kBeCpuRealLimitMilli, std::vector<double>(static_cast<size_t>(n), limit));
  }
  // A BE pod with a batch-cpu request and a CPU sample (cores).
  Pod& bePod(const std::string& name, int64_t batchCpuMilli, std::optional<double> cores) {
    Pod& p = pod(name, KoordQos::kBE, KubeQos::kBestEffort);
    Container c;
    c.name = "main";
    c.requests.batchCpuMilli = batchCpuMilli;
    p.containers.push_back(c);
    view(p, std::nullopt, cores);
    return p;
  }
};

CpuEvictStrategy beOnly(Clock::Monotonic startedAt = kNow - 1h) {
  return CpuEvictStrategy(1s, CpuEvictGates{true, false}, 20s, startedAt);
}
CpuEvictStrategy usedOnly() {
  return CpuEvictStrategy(1s, CpuEvictGates{false, true}, 20s, kNow - 1h);
}

const EvictFeatureReport& report(const StrategyOutcome& out, const char* name) {
  return feature<CpuEvictResult>(out, name);
}
const BeCpuFigures& figures(const StrategyOutcome& out) {
  const auto* r = std::any_cast<CpuEvictResult>(&out.result);
  REQUIRE(r != nullptr);
  REQUIRE(r->be.has_value());
  return *r->be;
}

}  // namespace

TEST_CASE("cpu evict is enabled by either gate and a positive interval", "[cpu_evict]") {
  NodeSloSpec spec;
  CHECK(CpuEvictStrategy(1s, {true, false}, 20s, kNow).enabled(spec));
  CHECK(CpuEvictStrategy(1s, {false, true}, 20s, kNow).enabled(spec));
  CHECK_FALSE(CpuEvictStrategy(1s, {false, false}, 20s, kNow).enabled(spec));
  CHECK_FALSE(CpuEvictStrategy(0s, {true, true}, 20s, kNow).enabled(spec));
  CHECK(CpuEvictStrategy(1s, {true, true}, 20s, kNow).name() == "cpu_evict");
  CHECK(CpuEvictStrategy(1s, {true, true}, 20s, kNow).owner() == "cpu-evict");
}

TEST_CASE("BE cpu evict releases request × (upper − satisfaction), most used per request first",
          "[cpu_evict]") {
  // BE asked 4000m and gets 2000m (satisfaction 0.5 <= 0.6), using 1900m (95% >= 90%):
  // release int(4000 × (0.8 − 0.5)) = 1200m of BE request.
  CpuNode n;
  n.be(10, 1900, 4000, 2000);
  n.bePod("be-a", 1000, 0.9);  // 0.9 of its request
  n.bePod("be-b", 500, 0.5);   // 1.0
  n.bePod("be-c", 2000, 0.2);  // 0.1
  Pod& ls = n.pod("ls-huge", KoordQos::kLS);
  n.view(ls, std::nullopt, 30.0);
  auto s = beOnly();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(out.writes.empty());
  CHECK(out.errors.empty());
  const EvictFeatureReport& f = report(out, kFeatureBeCpuEvict);
  CHECK(f.triggered);
  CHECK(f.toRelease == 1200);
  CHECK(contains(f.decision, "release 1200 milli-cores of BE request"));
  CHECK(figures(out).samples == 10);
  CHECK(f.candidates == 3);
  // be-b's 500m, then be-a's 1000m: 1500 >= 1200.
  CHECK(names(out) == std::vector<std::string>{"be-b", "be-a"});
  CHECK(f.outcome.released == 1500);
  CHECK(out.evictions[0].feature == "BECPUEvict");
  CHECK(out.evictions[0].message == "trigger by koordlet feature BECPUEvict, kill pod: be-b");
}

TEST_CASE("BE cpu victims go by spec priority only when both have one and they differ",
          "[cpu_evict]") {
  CpuNode n;
  n.be(10, 1900, 40'000, 2000);  // satisfaction 0.05: release 30,000, more than all
  Pod& hot = n.bePod("hot", 1000, 0.9);
  Pod& cold = n.bePod("cold", 1000, 0.1);
  SECTION("both set and different: the lower priority first, however idle") {
    hot.priority = 200;
    cold.priority = 100;
    auto s = beOnly();
    CHECK(names(s.run(n.ctx())) == std::vector<std::string>{"cold", "hot"});
  }
  SECTION("equal: by usage per request") {
    hot.priority = 100;
    cold.priority = 100;
    auto s = beOnly();
    CHECK(names(s.run(n.ctx())) == std::vector<std::string>{"hot", "cold"});
  }
  SECTION("one unset: by usage per request") {
    hot.priority = 200;
    auto s = beOnly();
    CHECK(names(s.run(n.ctx())) == std::vector<std::string>{"hot", "cold"});
  }
}

TEST_CASE("BE cpu evict needs BE usage high against the limit", "[cpu_evict]") {
  CpuNode n;
  n.bePod("be-1", 1000, 1.0);
  SECTION("85% of the limit is below the default 90%") {
    n.be(10, 1700, 4000, 2000);
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(contains(report(out, kFeatureBeCpuEvict).decision, "BE CPU usage not high enough"));
    CHECK(out.evictions.empty());
  }
  SECTION("cpuEvictBEUsageThresholdPercent 80 lets 85% through") {
    n.be(10, 1700, 4000, 2000);
    n.spec.threshold.cpuEvictBEUsageThresholdPercent = 80;
    auto s = beOnly();
    CHECK(report(s.run(n.ctx()), kFeatureBeCpuEvict).toRelease == 1200);
  }
  SECTION("a limit under one core counts as high whatever the usage") {
    n.be(10, 0, 4000, 800);  // satisfaction 0.2: int(4000 × 0.6)
    auto s = beOnly();
    CHECK(report(s.run(n.ctx()), kFeatureBeCpuEvict).toRelease == 2400);
  }
  SECTION("satisfaction above the lower percent releases nothing") {
    n.be(10, 2500, 4000, 2500);  // 0.625 > 0.6
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(contains(report(out, kFeatureBeCpuEvict).decision, "satisfaction high enough"));
    CHECK(out.evictions.empty());
  }
}

TEST_CASE("BE cpu evict needs a third of the window in samples", "[cpu_evict]") {
  CpuNode n;
  n.spec.threshold.cpuEvictTimeWindowSeconds = 30;  // needs 10 samples of 1 s
  n.bePod("be-1", 2000, 1.0);
  SECTION("9 samples") {
    n.be(9, 1900, 4000, 2000);
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeCpuEvict).decision ==
          "too few BE CPU samples: 9 in the 30 s window");
    CHECK(out.evictions.empty());
  }
  SECTION("10 samples") {
    n.be(10, 1900, 4000, 2000);
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeCpuEvict).toRelease == 1200);
    CHECK(names(out) == std::vector<std::string>{"be-1"});
  }
  SECTION("one series short counts as short") {
    CpuNode m;
    m.spec.threshold.cpuEvictTimeWindowSeconds = 30;
    m.fill(MetricKind::kBeCpuUsageMilli, std::vector<double>(10, 1900));
    m.fill(MetricKind::kBeCpuRequestMilli, std::vector<double>(10, 4000));
    m.fill(MetricKind::kBeCpuRealLimitMilli, std::vector<double>(5, 2000));
    auto s = beOnly();
    CHECK(report(s.run(m.ctx()), kFeatureBeCpuEvict).decision ==
          "too few BE CPU samples: 5 in the 30 s window");
  }
}

TEST_CASE("BE cpu evict by allocatable takes the Node's batch-cpu, 0 counting as 1",
          "[cpu_evict]") {
  CpuNode n;
  n.spec.threshold.cpuEvictPolicy = CpuEvictPolicy::kEvictByAllocatable;
  n.be(10, 0, 5000, 3000);  // the real limit is not used
  n.bePod("be-1", 5000, 1.0);
  SECTION("allocatable 0: limit 1m, satisfaction 0.0002, int(5000 × 0.7998)") {
    n.facts.batchCpuAllocatableMilli = 0;
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeCpuEvict).toRelease == 3999);
    CHECK(figures(out).avgLimit == 1);
  }
  SECTION("no batch-cpu allocatable on the Node") {
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(contains(report(out, kFeatureBeCpuEvict).decision, "no batch-cpu allocatable"));
    CHECK(out.evictions.empty());
  }
}

TEST_CASE("BE cpu evict takes the smaller of the window's and the newest samples' release",
          "[cpu_evict]") {
  CpuNode n;
  n.bePod("be-1", 500, 1.0);
  n.bePod("be-2", 500, 0.9);
  n.fill(MetricKind::kBeCpuUsageMilli, std::vector<double>(5, 1900));
  n.fill(MetricKind::kBeCpuRealLimitMilli, std::vector<double>(5, 2000));
  SECTION("newest request 3600 (window average 4000): min(1200, int(3600 × 0.8 − 2000))") {
    n.fill(MetricKind::kBeCpuRequestMilli, {4100, 4100, 4100, 4100, 3600});
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(figures(out).avgRelease == 1200);
    CHECK(figures(out).curRelease == 880);
    CHECK(report(out, kFeatureBeCpuEvict).toRelease == 880);
    CHECK(names(out) == std::vector<std::string>{"be-1", "be-2"});
  }
  SECTION("newest request 5000 would release 2000: the window's 1200 stands") {
    n.fill(MetricKind::kBeCpuRequestMilli, {3750, 3750, 3750, 3750, 5000});
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(figures(out).curRelease == 2000);
    CHECK(report(out, kFeatureBeCpuEvict).toRelease == 1200);
  }
  SECTION("newest satisfaction above the lower percent: nothing") {
    n.fill(MetricKind::kBeCpuRequestMilli, {4250, 4250, 4250, 4250, 3000});
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(contains(report(out, kFeatureBeCpuEvict).decision, "satisfaction high enough now"));
    CHECK(out.evictions.empty());
  }
}

TEST_CASE("BE cpu evict rejects each invalid satisfaction setting by field", "[cpu_evict]") {
  struct Case {
    std::optional<int64_t> lower, upper;
    const char* field;
  };
  const Case cases[] = {
      {std::nullopt, 80, "cpuEvictBESatisfactionLowerPercent"},
      {60, std::nullopt, "cpuEvictBESatisfactionUpperPercent"},
      {0, 80, "cpuEvictBESatisfactionLowerPercent"},
      {61, 80, "cpuEvictBESatisfactionLowerPercent"},
      {60, 100, "cpuEvictBESatisfactionUpperPercent"},
      {60, 0, "cpuEvictBESatisfactionUpperPercent"},
      {50, 40, "cpuEvictBESatisfactionUpperPercent"},
  };
  for (const Case& c : cases) {
    CpuNode n;
    n.spec.threshold.cpuEvictBESatisfactionLowerPercent = c.lower;
    n.spec.threshold.cpuEvictBESatisfactionUpperPercent = c.upper;
    n.be(10, 1900, 4000, 2000);
    n.bePod("be-1", 1000, 1.0);
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    INFO(c.field);
    CHECK(out.evictions.empty());
    CHECK(contains(report(out, kFeatureBeCpuEvict).decision, "invalid config: "));
    REQUIRE(out.errors.size() == 1);
    CHECK(contains(out.errors[0], std::string("resourceUsedThresholdWithBE.") + c.field));
  }
  SECTION("the edges lower 60 = upper 60 are valid") {
    CpuNode n;
    n.spec.threshold.cpuEvictBESatisfactionUpperPercent = 60;
    n.be(10, 1900, 4000, 2000);
    auto s = beOnly();
    // int(4000 × (0.6 − 0.5)): 399.99999999999994 in doubles, as in koordlet.
    CHECK(report(s.run(n.ctx()), kFeatureBeCpuEvict).toRelease == 399);
  }
}

TEST_CASE("cpu evict releases capacity × (usage − lower) by priority among eviction-enabled pods",
          "[cpu_evict]") {
  CpuNode n;
  n.spec.threshold.cpuEvictThresholdPercent = 75;
  n.spec.threshold.evictEnabledPriorityThreshold = 6000;
  n.fill(MetricKind::kNodeCpuCores, std::vector<double>(10, 8.05));  // 80% of 10 cores
  n.view(n.evictable("ls-a", 1000), std::nullopt, 0.5);
  n.view(n.evictable("ls-b", 1000), std::nullopt, 0.3);
  n.view(n.evictable("ls-c", 500), std::nullopt, 0.1);
  n.view(n.evictable("ls-d", 1000), std::nullopt, 0.05);
  n.view(n.evictable("prod", 9000), std::nullopt, 5.0);
  auto s = usedOnly();
  StrategyOutcome out = s.run(n.ctx());
  const EvictFeatureReport& f = report(out, kFeatureCpuEvict);
  CHECK(f.usagePercent == 80);
  CHECK(f.toRelease == 700);  // 10,000 × (80 − 73) / 100
  CHECK(f.decision == "release 700 milli-cores: usage 80% >= 75%, lower 73%");
  CHECK(f.candidates == 4);
  // ls-c (priority 500) 100m, ls-a 500m, ls-b 300m: 900 >= 700; ls-d stays.
  CHECK(names(out) == std::vector<std::string>{"ls-c", "ls-a", "ls-b"});
  CHECK(out.evictions[0].feature == "CPUEvict");
}

TEST_CASE("cpu evict triggers at usage equal to the threshold", "[cpu_evict]") {
  CpuNode n;
  n.spec.threshold.cpuEvictThresholdPercent = 75;
  n.spec.threshold.evictEnabledPriorityThreshold = 6000;
  n.view(n.evictable("ls-a", 1000), std::nullopt, 0.5);
  SECTION("7.5 cores of 10: 75%") {
    n.fill(MetricKind::kNodeCpuCores, std::vector<double>(10, 7.5));
    auto s = usedOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureCpuEvict).toRelease == 200);
    CHECK(names(out) == std::vector<std::string>{"ls-a"});
  }
  SECTION("7.49 cores: 74%") {
    n.fill(MetricKind::kNodeCpuCores, std::vector<double>(10, 7.49));
    auto s = usedOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureCpuEvict).decision == "below threshold: usage 74% < 75%");
    CHECK(out.evictions.empty());
  }
}

TEST_CASE("cpu evict rejects each invalid used-threshold setting by field", "[cpu_evict]") {
  CpuNode n;
  n.fill(MetricKind::kNodeCpuCores, std::vector<double>(10, 9.0));
  n.view(n.evictable("ls-a", 1000), std::nullopt, 0.5);
  n.spec.threshold.cpuEvictThresholdPercent = 75;
  n.spec.threshold.evictEnabledPriorityThreshold = 6000;
  const char* field = "";
  SECTION("threshold unset") {
    n.spec.threshold.cpuEvictThresholdPercent.reset();
    field = "cpuEvictThresholdPercent";
  }
  SECTION("lower not below threshold") {
    n.spec.threshold.cpuEvictLowerPercent = 75;
    field = "cpuEvictLowerPercent";
  }
  SECTION("no priority threshold") {
    n.spec.threshold.evictEnabledPriorityThreshold.reset();
    field = "evictEnabledPriorityThreshold";
  }
  auto s = usedOnly();
  StrategyOutcome out = s.run(n.ctx());
  CHECK(out.evictions.empty());
  CHECK(contains(report(out, kFeatureCpuEvict).decision, field));
  REQUIRE(out.errors.size() == 1);
  CHECK(contains(out.errors[0], std::string("resourceUsedThresholdWithBE.") + field));
}

TEST_CASE("cpu evict evicts nothing in the first 20 s, nor within 20 s of a pick", "[cpu_evict]") {
  CpuNode n;
  n.be(10, 1900, 4000, 2000);
  n.bePod("be-1", 2000, 1.0);
  n.bePod("be-2", 2000, 0.5);
  SECTION("started 19 s ago") {
    auto s = beOnly(kNow - 19s);
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeCpuEvict).decision == "in cool-down");
    CHECK(out.evictions.empty());
  }
  SECTION("started 20 s ago, then 20 s after the pick") {
    auto s = beOnly(kNow - 20s);
    CHECK(names(s.run(n.ctx())) == std::vector<std::string>{"be-1"});
    n.at(kNow + 19s);
    CHECK(report(s.run(n.ctx()), kFeatureBeCpuEvict).decision == "in cool-down");
    n.at(kNow + 20s);
    CHECK(report(s.run(n.ctx()), kFeatureBeCpuEvict).decision != "in cool-down");
  }
  SECTION("a round whose victim is already being evicted starts no cool-down") {
    n.ledger.requested("uid-be-1", kNow - 1s);
    auto s = beOnly(kNow - 20s);
    StrategyOutcome out = s.run(n.ctx());
    CHECK(out.evictions.empty());
    CHECK(report(out, kFeatureBeCpuEvict).outcome.pending == std::vector<std::string>{"be-1"});
    n.at(kNow + 1s);
    CHECK(report(s.run(n.ctx()), kFeatureBeCpuEvict).decision != "in cool-down");
  }
}

TEST_CASE("cpu evict skips without Node capacity or when NodeSLO disables it", "[cpu_evict]") {
  CpuNode n;
  n.be(10, 1900, 4000, 2000);
  n.bePod("be-1", 2000, 1.0);
  SECTION("no Node") {
    n.facts.capacityCpuMilli.reset();
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeCpuEvict).decision == "no Node capacity");
    CHECK(out.evictions.empty());
  }
  SECTION("enable false") {
    n.spec.threshold.enable = false;
    auto s = beOnly();
    StrategyOutcome out = s.run(n.ctx());
    CHECK(report(out, kFeatureBeCpuEvict).decision ==
          "NodeSLO resourceUsedThresholdWithBE.enable is false");
    CHECK(out.evictions.empty());
  }
}

TEST_CASE("a BE pod picked by BE cpu evict counts its usage toward cpu evict", "[cpu_evict]") {
  CpuNode n;
  n.be(10, 1900, 4000, 2000);  // BE: 1200m of request
  n.spec.threshold.cpuEvictThresholdPercent = 75;
  n.spec.threshold.evictEnabledPriorityThreshold = 6000;
  n.fill(MetricKind::kNodeCpuCores, std::vector<double>(10, 8.05));  // CPUEvict: 700m of usage
  Pod& be = n.bePod("be-1", 1500, 0.6);                              // 600m used
  be.labels[kEvictionEnabledLabel] = "true";
  n.view(n.evictable("ls-a", 1000), std::nullopt, 0.05);
  n.view(n.evictable("ls-b", 1000), std::nullopt, 0.2);
  auto s = CpuEvictStrategy(1s, {true, true}, 20s, kNow - 1h);
  StrategyOutcome out = s.run(n.ctx());
  // CPUEvict starts at be-1's 600m; ls-b's 200m makes 800 >= 700. be-1 is not asked twice.
  CHECK(names(out) == std::vector<std::string>{"be-1", "ls-b"});
  CHECK(report(out, kFeatureCpuEvict).outcome.released == 800);
}

}  // namespace test_qos_cpu_evict
