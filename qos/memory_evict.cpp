// Memory eviction (see the header). Facts from koordlet's
// qosmanager/plugins/memoryevict/memory_evict.go.
#include "qos/memory_evict.h"

#include "qos/allocatable_evict.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace koord {
namespace {

// The lower percent, or why the config is invalid ("" when valid).
std::string checkConfig(const ResourceThresholdStrategy& c, bool needsPriority, int64_t& lower) {
  int64_t threshold = c.memoryEvictThresholdPercent;
  if (threshold < 0) {
    return std::string(kThresholdsField) +
           "memoryEvictThresholdPercent: " + std::to_string(threshold) + " must be >= 0";
  }
  lower =
      c.memoryEvictLowerPercent.value_or(threshold - MemoryEvictStrategy::kReleaseBufferPercent);
  if (lower >= threshold) {
    return std::string(kThresholdsField) + "memoryEvictLowerPercent: " + std::to_string(lower) +
           " must be below memoryEvictThresholdPercent " + std::to_string(threshold);
  }
  if (needsPriority && !c.evictEnabledPriorityThreshold) {
    return std::string(kThresholdsField) +
           "evictEnabledPriorityThreshold: not set (MemoryEvict needs it)";
  }
  return "";
}

std::vector<EvictVictim> beMemoryVictims(const QosSnapshot& snap, std::chrono::nanoseconds maxAge,
                                         std::vector<std::string>& errors) {
  std::vector<EvictVictim> out;
  for (const PodView& view : snap.pods) {
    // The raw label only: a pod defaulted to BE by its kube class is not one.
    if (view.pod == nullptr || view.pod->koordQos != KoordQos::kBE) continue;
    if (!mayBeVictim(*view.pod)) continue;
    PolicyVerdict verdict = evictionPolicyAllows(*view.pod, kFeatureBeMemoryEvict);
    if (!verdict.error.empty()) addErrorOnce(errors, verdict.error);
    if (!verdict.allowed) continue;
    EvictVictim v;
    v.pod = view.pod;
    fillRequests(v, *view.pod);
    if (auto used = freshValue(view.memoryBytes, snap.at, maxAge)) {
      v.used = static_cast<int64_t>(*used);
      v.hasSample = true;
    }
    out.push_back(v);
  }
  sortBeByMemory(out);
  return out;
}

}  // namespace

StrategyOutcome MemoryEvictStrategy::run(const StrategyContext& ctx) {
  const QosSnapshot& snap = ctx.snapshot;
  const ResourceThresholdStrategy& cfg = ctx.spec.threshold;
  const Clock::Monotonic now = snap.at;
  const std::chrono::nanoseconds maxAge = 2 * ctx.node.collectInterval;
  StrategyOutcome outcome;
  MemoryEvictResult result;

  std::vector<const char*> features;
  if (gates_.beMemoryEvict) features.push_back(kFeatureBeMemoryEvict);
  if (gates_.memoryAllocatableEvict) features.push_back(kFeatureMemoryAllocatableEvict);
  if (gates_.memoryEvict) features.push_back(kFeatureMemoryEvict);

  // Round-level reasons, in koordlet's order.
  std::string roundSkip;
  const int64_t capacity = ctx.node.capacityMemoryBytes.value_or(0);
  if (lastEvict_ && now < *lastEvict_ + coolDown_) {
    roundSkip = "in cool-down";
  } else if (capacity <= 0) {
    roundSkip = "no Node capacity";
  }

  std::optional<double> nodeUsed = freshValue(snap.nodeMemoryBytes, now, maxAge);
  std::vector<EvictTask> tasks;
  std::vector<size_t> taskReport;  // tasks[i] reports into result.features[taskReport[i]]
  for (const char* feature : features) {
    EvictFeatureReport& rep = result.features.emplace_back();
    rep.feature = feature;
    if (!roundSkip.empty()) {
      rep.decision = roundSkip;
      continue;
    }
    if (!cfg.enable) {
      rep.decision = "NodeSLO resourceUsedThresholdWithBE.enable is false";
      continue;
    }
    if (rep.feature == kFeatureMemoryAllocatableEvict) {
      const size_t n = allocatableEvictTasks(AllocatableResource::kMemory, snap, cfg, ctx.node,
                                             maxAge, rep, tasks, outcome.errors);
      taskReport.insert(taskReport.end(), n, result.features.size() - 1);
      continue;
    }
    const bool byPriority = rep.feature == kFeatureMemoryEvict;
    int64_t lower = 0;
    if (std::string bad = checkConfig(cfg, byPriority, lower); !bad.empty()) {
      rep.decision = "invalid config: " + bad;
      addErrorOnce(outcome.errors, bad + " (" + rep.feature + " skipped)");
      continue;
    }
    if (!nodeUsed) {
      rep.decision = "node memory sample stale";
      continue;
    }
    const int64_t usage = static_cast<int64_t>(*nodeUsed) * 100 / capacity;
    const int64_t threshold = cfg.memoryEvictThresholdPercent;
    rep.usagePercent = usage;
    const std::string usageText = "usage " + std::to_string(usage) + "%";
    if (usage < threshold) {
      rep.decision = "below threshold: " + usageText + " < " + std::to_string(threshold) + "%";
      continue;
    }
    const int64_t release = percentOfSat(capacity, usage - lower);
    if (release <= 0) {
      rep.decision = "nothing to release: " + usageText;
      continue;
    }
    rep.triggered = true;
    rep.toRelease = release;
    rep.decision = "release " + std::to_string(release) + " bytes: " + usageText +
                   " >= " + std::to_string(threshold) + "%, lower " + std::to_string(lower) + "%";
    EvictTask task;
    task.feature = rep.feature;
    task.kind = ReleaseKind::kUsed;
    task.toRelease = release;
    // Real bytes for MemoryEvict too (scale 1): see the header's deliberate difference.
    task.victims =
        byPriority ? priorityVictims(snap, kFeatureMemoryEvict, *cfg.evictEnabledPriorityThreshold,
                                     &PodView::memoryBytes, 1.0, maxAge, outcome.errors)
                   : beMemoryVictims(snap, maxAge, outcome.errors);
    rep.candidates = task.victims.size();
    tasks.push_back(std::move(task));
    taskReport.push_back(result.features.size() - 1);
  }

  if (walkIntoReport(tasks, taskReport, ctx.evictions, now, result, outcome.evictions)) {
    lastEvict_ = now;
  }
  outcome.result = std::move(result);
  return outcome;
}

}  // namespace koord
