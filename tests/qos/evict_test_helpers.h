// A node for the eviction strategy tests (test_memory_evict.cpp, test_cpu_evict.cpp):
// pods owned by a deque (views point into it), a hand-built snapshot, a NodeSLO with
// resourceUsedThresholdWithBE enabled, the Node's facts, a metric cache filled at
// chosen times and an eviction ledger. No filesystem.
#pragma once

#include <catch2/catch.hpp>

#include <any>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "kube/eviction_ledger.h"
#include "metrics/metric_cache.h"
#include "qos/evict_victims.h"
#include "qos/slo_config.h"
#include "qos/snapshot.h"
#include "qos/strategy.h"

namespace koord::evict_test {

using namespace std::chrono_literals;

inline const Clock::Monotonic kNow{std::chrono::seconds(1000)};

struct EvictNode {
  std::deque<Pod> pods;
  QosSnapshot snap;
  NodeSloSpec spec = defaultNodeSlo();
  MapValues current;  // the eviction strategies never read it
  NodeFacts facts;
  MetricCache cache{MetricCache::Config{}, Clock::Monotonic{}};
  EvictionLedger ledger;

  EvictNode() {
    snap.at = kNow;
    spec.threshold.enable = true;
    facts.collectInterval = 1s;
  }

  // A running pod; label: the raw koordinator.sh/qosClass label.
  Pod& pod(const std::string& name, KoordQos label, KubeQos kube = KubeQos::kBurstable) {
    Pod& p = pods.emplace_back();
    p.uid = "uid-" + name;
    p.ns = "default";
    p.name = name;
    p.phase = "Running";
    p.koordQos = label;
    p.kubeQos = kube;
    return p;
  }
  // Its view, with the usage samples taken 1 s before now (nullopt: none).
  PodView& view(const Pod& p, std::optional<double> memoryBytes, std::optional<double> cpuCores) {
    PodView v;
    v.pod = &p;
    v.qos = p.qosWithDefault();
    if (memoryBytes) v.memoryBytes = Sample{*memoryBytes, kNow - 1s};
    if (cpuCores) v.cpuCores = Sample{*cpuCores, kNow - 1s};
    snap.pods.push_back(v);
    return snap.pods.back();
  }
  // A non-BE pod MemoryEvict/CPUEvict may take: eviction-enabled, spec.priority.
  Pod& evictable(const std::string& name, int32_t priority) {
    Pod& p = pod(name, KoordQos::kLS);
    p.priority = priority;
    p.labels[kEvictionEnabledLabel] = "true";
    return p;
  }

  // Moves the node on to `now`, its samples with it (taken 1 s before).
  void at(Clock::Monotonic now) {
    snap.at = now;
    auto restamp = [&](std::optional<Sample>& s) {
      if (s) s->at = now - 1s;
    };
    restamp(snap.nodeMemoryBytes);
    restamp(snap.nodeCpuCores);
    for (PodView& v : snap.pods) {
      restamp(v.memoryBytes);
      restamp(v.cpuCores);
    }
  }

  StrategyContext ctx() const {
    return StrategyContext{snap, spec, current, facts, cache, &ledger};
  }
};

// The names of the requested pods, in order; each request must be well formed.
inline std::vector<std::string> names(const StrategyOutcome& out) {
  std::vector<std::string> v;
  for (const EvictionRequest& r : out.evictions) {
    CHECK(r.message == evictMessage(r.feature, r.name));
    v.push_back(r.name);
  }
  return v;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

template <typename R>
const EvictFeatureReport& feature(const StrategyOutcome& out, const char* name) {
  const auto* r = std::any_cast<R>(&out.result);
  REQUIRE(r != nullptr);
  const EvictFeatureReport* f = r->feature(name);
  REQUIRE(f != nullptr);
  return *f;
}

}  // namespace koord::evict_test
