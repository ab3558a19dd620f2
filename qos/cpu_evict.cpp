// CPU eviction (see the header). Facts from koordlet's
// qosmanager/plugins/cpuevict/cpu_evict.go.
#include "qos/cpu_evict.h"

#include "qos/allocatable_evict.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace koord {
namespace {

std::string field(const char* name) { return std::string(kThresholdsField) + name; }

std::string fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string checkSatisfaction(const ResourceThresholdStrategy& c) {
  const auto& lower = c.cpuEvictBESatisfactionLowerPercent;
  const auto& upper = c.cpuEvictBESatisfactionUpperPercent;
  if (!lower) return field("cpuEvictBESatisfactionLowerPercent") + ": not set";
  if (!upper) return field("cpuEvictBESatisfactionUpperPercent") + ": not set";
  if (*lower <= 0 || *lower > CpuEvictStrategy::kSatisfactionLowerMax) {
    return field("cpuEvictBESatisfactionLowerPercent") + ": " + std::to_string(*lower) +
           " must be in (0, 60]";
  }
  if (*upper <= 0 || *upper >= CpuEvictStrategy::kSatisfactionUpperMax) {
    return field("cpuEvictBESatisfactionUpperPercent") + ": " + std::to_string(*upper) +
           " must be in (0, 100)";
  }
  if (*upper < *lower) {
    return field("cpuEvictBESatisfactionUpperPercent") + ": " + std::to_string(*upper) +
           " must not be below cpuEvictBESatisfactionLowerPercent " + std::to_string(*lower);
  }
  return "";
}

std::string checkUsedThreshold(const ResourceThresholdStrategy& c, int64_t& lower) {
  if (!c.cpuEvictThresholdPercent) return field("cpuEvictThresholdPercent") + ": not set";
  const int64_t threshold = *c.cpuEvictThresholdPercent;
  if (threshold < 0) {
    return field("cpuEvictThresholdPercent") + ": " + std::to_string(threshold) + " must be >= 0";
  }
  lower = c.cpuEvictLowerPercent.value_or(threshold - CpuEvictStrategy::kReleaseBufferPercent);
  if (lower >= threshold) {
    return field("cpuEvictLowerPercent") + ": " + std::to_string(lower) +
           " must be below cpuEvictThresholdPercent " + std::to_string(threshold);
  }
  if (!c.evictEnabledPriorityThreshold) {
    return field("evictEnabledPriorityThreshold") + ": not set (CPUEvict needs it)";
  }
  return "";
}

bool usageHighEnough(double usage, double limit, const ResourceThresholdStrategy& c) {
  if (limit <= 0) return false;
  if (limit < 1000) return true;
  const int64_t threshold =
      c.cpuEvictBEUsageThresholdPercent.value_or(CpuEvictStrategy::kBeUsageThresholdPercent);
  return usage / limit >= static_cast<double>(threshold) / 100;
}

int64_t releaseBySatisfaction(double request, double limit, const ResourceThresholdStrategy& c) {
  if (request <= 0) return 0;
  const double satisfaction = limit / request;
  if (satisfaction > static_cast<double>(*c.cpuEvictBESatisfactionLowerPercent) / 100) return 0;
  const double gap =
      static_cast<double>(*c.cpuEvictBESatisfactionUpperPercent) / 100 - satisfaction;
  if (gap <= 0) return 0;
  return static_cast<int64_t>(request * gap);
}

struct Agg {
  double value = 0;
  int64_t count = 0;
};

Agg query(const MetricCache& cache, MetricKind kind, Aggregation agg, Clock::Monotonic from,
          Clock::Monotonic to) {
  SeriesKey key{kind, "", ""};
  Agg out;
  if (auto v = cache.query(key, agg, from, to)) out.value = *v;
  if (auto n = cache.query(key, Aggregation::kCount, from, to))
    out.count = static_cast<int64_t>(*n);
  return out;
}

// The window in whole seconds, as koordlet: the collect interval, or the NodeSLO's
// when longer.
// Held to one day: the metric cache keeps far less, so a longer window sees the same
// samples (and fails the same W / 3 test), while its nanoseconds would overflow.
constexpr int64_t kMaxWindowSeconds = 86400;

int64_t windowSeconds(const ResourceThresholdStrategy& c, int64_t intervalSeconds) {
  int64_t w = intervalSeconds;
  if (c.cpuEvictTimeWindowSeconds && *c.cpuEvictTimeWindowSeconds > w) {
    w = *c.cpuEvictTimeWindowSeconds;
  }
  return std::min(w, kMaxWindowSeconds);
}

std::vector<EvictVictim> beCpuVictims(const QosSnapshot& snap, std::chrono::nanoseconds maxAge,
                                      std::vector<std::string>& errors) {
  std::vector<EvictVictim> out;
  for (const PodView& view : snap.pods) {
    if (view.pod == nullptr || view.pod->koordQos != KoordQos::kBE) continue;
    if (!mayBeVictim(*view.pod)) continue;
    PolicyVerdict verdict = evictionPolicyAllows(*view.pod, kFeatureBeCpuEvict);
    if (!verdict.error.empty()) addErrorOnce(errors, verdict.error);
    if (!verdict.allowed) continue;
    EvictVictim v;
    v.pod = view.pod;
    fillRequests(v, *view.pod);
    if (auto used = freshValue(view.cpuCores, snap.at, maxAge)) {
      v.used = static_cast<int64_t>(*used * 1000);
      v.hasSample = true;
    }
    out.push_back(v);
  }
  sortBeByCpu(out);
  return out;
}

}  // namespace

StrategyOutcome CpuEvictStrategy::run(const StrategyContext& ctx) {
  const QosSnapshot& snap = ctx.snapshot;
  const ResourceThresholdStrategy& cfg = ctx.spec.threshold;
  const Clock::Monotonic now = snap.at;
  const std::chrono::nanoseconds interval = ctx.node.collectInterval;
  const std::chrono::nanoseconds maxAge = 2 * interval;
  const int64_t intervalSeconds =
      std::chrono::duration_cast<std::chrono::seconds>(interval).count();
  const int64_t window = windowSeconds(cfg, intervalSeconds);
  const Clock::Monotonic windowStart = now - std::chrono::seconds(window);
  StrategyOutcome outcome;
  CpuEvictResult result;

  std::vector<const char*> features;
  if (gates_.beCpuEvict) features.push_back(kFeatureBeCpuEvict);
  if (gates_.cpuAllocatableEvict) features.push_back(kFeatureCpuAllocatableEvict);
  if (gates_.cpuEvict) features.push_back(kFeatureCpuEvict);

  std::string roundSkip;
  const int64_t capacity = ctx.node.capacityCpuMilli.value_or(0);
  if (now - lastEvict_ < coolDown_) {
    roundSkip = "in cool-down";
  } else if (capacity <= 0) {
    roundSkip = "no Node capacity";
  }

  std::vector<EvictTask> tasks;
  std::vector<size_t> taskReport;
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
    if (rep.feature == kFeatureCpuAllocatableEvict) {
      const size_t n = allocatableEvictTasks(AllocatableResource::kCpu, snap, cfg, ctx.node, maxAge,
                                             rep, tasks, outcome.errors);
      taskReport.insert(taskReport.end(), n, result.features.size() - 1);
      continue;
    }
    const bool be = rep.feature == kFeatureBeCpuEvict;
    int64_t lower = 0;
    std::string bad = be ? checkSatisfaction(cfg) : checkUsedThreshold(cfg, lower);
    if (!bad.empty()) {
      rep.decision = "invalid config: " + bad;
      addErrorOnce(outcome.errors, bad + " (" + rep.feature + " skipped)");
      continue;
    }

    EvictTask task;
    task.feature = rep.feature;
    if (be) {
      BeCpuFigures& f = result.be.emplace();
      f.windowSeconds = window;
      Agg u = query(ctx.cache, MetricKind::kBeCpuUsageMilli, Aggregation::kAvg, windowStart, now);
      Agg r = query(ctx.cache, MetricKind::kBeCpuRequestMilli, Aggregation::kAvg, windowStart, now);
      Agg l =
          query(ctx.cache, MetricKind::kBeCpuRealLimitMilli, Aggregation::kAvg, windowStart, now);
      f.samples = std::min({u.count, r.count, l.count});
      f.avgUsage = u.value;
      f.avgRequest = r.value;
      std::optional<double> allocatable;
      if (cfg.cpuEvictPolicy == CpuEvictPolicy::kEvictByAllocatable) {
        const auto& a = ctx.node.batchCpuAllocatableMilli;
        if (!a || *a < 0) {
          rep.decision = "no batch-cpu allocatable on the Node (cpuEvictPolicy evictByAllocatable)";
          continue;
        }
        allocatable = *a == 0 ? 1.0 : static_cast<double>(*a);
      }
      f.avgLimit = allocatable.value_or(l.value);
      if (f.samples * intervalSeconds < window / 3) {
        rep.decision = "too few BE CPU samples: " + std::to_string(f.samples) + " in the " +
                       std::to_string(window) + " s window";
        continue;
      }
      const std::string avgText = "usage " + fixed2(f.avgUsage) + "m, request " +
                                  fixed2(f.avgRequest) + "m, limit " + fixed2(f.avgLimit) + "m";
      if (!usageHighEnough(f.avgUsage, f.avgLimit, cfg)) {
        rep.decision = "BE CPU usage not high enough (window average " + avgText + ")";
        continue;
      }
      f.avgRelease = releaseBySatisfaction(f.avgRequest, f.avgLimit, cfg);
      if (f.avgRelease <= 0) {
        rep.decision = "BE CPU satisfaction high enough (window average " + avgText + ")";
        continue;
      }
      const Clock::Monotonic lastStart = now - 2 * interval;
      f.curUsage =
          query(ctx.cache, MetricKind::kBeCpuUsageMilli, Aggregation::kLast, lastStart, now).value;
      f.curRequest =
          query(ctx.cache, MetricKind::kBeCpuRequestMilli, Aggregation::kLast, lastStart, now)
              .value;
      f.curLimit = allocatable.value_or(
          query(ctx.cache, MetricKind::kBeCpuRealLimitMilli, Aggregation::kLast, lastStart, now)
              .value);
      const std::string curText = "usage " + fixed2(f.curUsage) + "m, request " +
                                  fixed2(f.curRequest) + "m, limit " + fixed2(f.curLimit) + "m";
      if (!usageHighEnough(f.curUsage, f.curLimit, cfg)) {
        rep.decision = "BE CPU usage not high enough now (" + curText + ")";
        continue;
      }
      int64_t release = f.avgRelease;
      if (f.curRequest != f.avgRequest || f.curLimit != f.avgLimit) {
        f.curRelease = releaseBySatisfaction(f.curRequest, f.curLimit, cfg);
        if (f.curRelease <= 0) {
          rep.decision = "BE CPU satisfaction high enough now (" + curText + ")";
          continue;
        }
        release = std::min(release, f.curRelease);
      }
      task.kind = ReleaseKind::kBatchCpuRequest;
      task.toRelease = release;
      rep.decision = "release " + std::to_string(release) +
                     " milli-cores of BE request: satisfaction " +
                     fixed2(f.avgRequest > 0 ? f.avgLimit / f.avgRequest : 0) + " <= lower " +
                     fixed2(static_cast<double>(*cfg.cpuEvictBESatisfactionLowerPercent) / 100) +
                     " (window average " + avgText + ")";
      task.victims = beCpuVictims(snap, maxAge, outcome.errors);
    } else {
      auto used = ctx.cache.query(SeriesKey{MetricKind::kNodeCpuCores, "", ""}, Aggregation::kAvg,
                                  windowStart, now);
      if (!used) {
        rep.decision = "no node CPU sample in the " + std::to_string(window) + " s window";
        continue;
      }
      const int64_t usage = static_cast<int64_t>(*used * 1000) * 100 / capacity;
      const int64_t threshold = *cfg.cpuEvictThresholdPercent;
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
      task.kind = ReleaseKind::kUsed;
      task.toRelease = release;
      rep.decision = "release " + std::to_string(release) + " milli-cores: " + usageText +
                     " >= " + std::to_string(threshold) + "%, lower " + std::to_string(lower) + "%";
      task.victims = priorityVictims(snap, kFeatureCpuEvict, *cfg.evictEnabledPriorityThreshold,
                                     &PodView::cpuCores, 1000.0, maxAge, outcome.errors);
    }
    rep.triggered = true;
    rep.toRelease = task.toRelease;
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
