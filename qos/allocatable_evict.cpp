// The allocatable evictions (see the header). Facts from koordlet's
// qosmanager/plugins/cpuevict/cpu_evict.go and memoryevict/memory_evict.go (v1.8.0,
// HEAD) and qosmanager/plugins/util/evict.go.
#include "qos/allocatable_evict.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <span>
#include <utility>

namespace koord {
namespace {

// One resource a feature compares, with where its amounts are.
struct AllocEntry {
  const char* resource;  // "kubernetes.io/batch-cpu"
  PriorityClass cls;
  ReleaseKind kind;
  std::optional<int64_t> ResourceList::*request;
  std::optional<int64_t> NodeFacts::*allocatable;
};

constexpr AllocEntry kCpuEntries[] = {
    {kBatchCpuResource, PriorityClass::kBatch, ReleaseKind::kBatchCpuRequest,
     &ResourceList::batchCpuMilli, &NodeFacts::batchCpuAllocatableMilli},
    {kMidCpuResource, PriorityClass::kMid, ReleaseKind::kMidCpuRequest, &ResourceList::midCpuMilli,
     &NodeFacts::midCpuAllocatableMilli},
};
constexpr AllocEntry kMemoryEntries[] = {
    {kBatchMemoryResource, PriorityClass::kBatch, ReleaseKind::kBatchMemoryRequest,
     &ResourceList::batchMemoryBytes, &NodeFacts::batchMemoryAllocatableBytes},
    {kMidMemoryResource, PriorityClass::kMid, ReleaseKind::kMidMemoryRequest,
     &ResourceList::midMemoryBytes, &NodeFacts::midMemoryAllocatableBytes},
};

// Requests summed over every pod and multiplied by percents: wider than int64.
__extension__ using Wide = __int128;

constexpr int64_t kPriorityMidMax = 7999;  // koordinator's PriorityMidValueMax

std::string thresholdField(const char* name) { return std::string(kThresholdsField) + name; }

// The thresholds, or why the config is invalid ("" when valid).
std::string checkAllocatableConfig(AllocatableResource which, const ResourceThresholdStrategy& c,
                                   int64_t& threshold, int64_t& lower, int64_t& priority) {
  const bool cpu = which == AllocatableResource::kCpu;
  const char* tName =
      cpu ? "cpuAllocatableEvictThresholdPercent" : "memoryAllocatableEvictThresholdPercent";
  const char* lName =
      cpu ? "cpuAllocatableEvictLowerPercent" : "memoryAllocatableEvictLowerPercent";
  const auto& t =
      cpu ? c.cpuAllocatableEvictThresholdPercent : c.memoryAllocatableEvictThresholdPercent;
  const auto& l = cpu ? c.cpuAllocatableEvictLowerPercent : c.memoryAllocatableEvictLowerPercent;
  if (!t) return thresholdField(tName) + ": not set (koordlet applies no default)";
  if (*t < 0) return thresholdField(tName) + ": " + std::to_string(*t) + " must be >= 0";
  if (!l) return thresholdField(lName) + ": not set (koordlet applies no default)";
  if (*l < 0) return thresholdField(lName) + ": " + std::to_string(*l) + " must be >= 0";
  if (*l >= *t) {
    return thresholdField(lName) + ": " + std::to_string(*l) + " must be below " + tName + " " +
           std::to_string(*t);
  }
  const auto& p = c.allocatableEvictPriorityThreshold;
  if (!p) return thresholdField("allocatableEvictPriorityThreshold") + ": not set";
  if (*p < 0 || *p > kPriorityMidMax) {
    return thresholdField("allocatableEvictPriorityThreshold") + ": " + std::to_string(*p) +
           " must be in [0, 7999] (below koord-prod)";
  }
  threshold = *t;
  lower = *l;
  priority = *p;
  return "";
}

int64_t saturate(Wide v) {
  if (v > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

std::vector<EvictVictim> allocatableVictims(const QosSnapshot& snap, std::string_view feature,
                                            const AllocEntry& e, bool cpu, int64_t priority,
                                            std::chrono::nanoseconds maxAge,
                                            std::vector<std::string>& errors) {
  std::vector<EvictVictim> out;
  for (const PodView& view : snap.pods) {
    if (view.pod == nullptr || !mayBeVictim(*view.pod)) continue;
    const Pod& pod = *view.pod;
    if (pod.priorityWithDefault() != e.cls) continue;
    PolicyVerdict verdict = evictionPolicyAllows(pod, feature);
    if (!verdict.error.empty()) addErrorOnce(errors, verdict.error);
    if (!verdict.allowed) continue;
    const int32_t value = priorityWithDefault(pod);
    if (value > priority) continue;
    auto enabled = pod.labels.find(kEvictionEnabledLabel);
    if (enabled == pod.labels.end() || enabled->second != "true") continue;
    std::optional<double> used =
        freshValue(cpu ? view.cpuCores : view.memoryBytes, snap.at, maxAge);
    if (!used) continue;
    EvictVictim v;
    v.pod = &pod;
    fillRequests(v, pod);
    if (releaseAmount(v, e.kind) <= 0) continue;  // releases nothing of this resource
    v.used = static_cast<int64_t>(*used * (cpu ? 1000.0 : 1.0));
    v.hasSample = true;
    v.evictionPriority = evictionPriority(pod);
    v.priority = value;
    v.labelPriority = labelPriority(pod, value);
    out.push_back(v);
  }
  std::stable_sort(out.begin(), out.end(), [&](const EvictVictim& a, const EvictVictim& b) {
    if (a.evictionPriority != b.evictionPriority) return a.evictionPriority < b.evictionPriority;
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.labelPriority != b.labelPriority) return a.labelPriority < b.labelPriority;
    const int64_t ra = releaseAmount(a, e.kind), rb = releaseAmount(b, e.kind);
    if (ra != rb) return ra > rb;
    return a.pod->name < b.pod->name;  // koordlet leaves full ties unordered
  });
  return out;
}

}  // namespace

size_t allocatableEvictTasks(AllocatableResource which, const QosSnapshot& snap,
                             const ResourceThresholdStrategy& cfg, const NodeFacts& node,
                             std::chrono::nanoseconds maxAge, EvictFeatureReport& rep,
                             std::vector<EvictTask>& tasks, std::vector<std::string>& errors) {
  int64_t threshold = 0, lower = 0, priority = 0;
  if (std::string bad = checkAllocatableConfig(which, cfg, threshold, lower, priority);
      !bad.empty()) {
    rep.decision = "invalid config: " + bad;
    addErrorOnce(errors, bad + " (" + rep.feature + " skipped)");
    return 0;
  }
  const bool cpu = which == AllocatableResource::kCpu;
  const char* unit = cpu ? " milli-cores" : " bytes";
  std::string decision;
  size_t added = 0;
  for (const AllocEntry& e : cpu ? std::span<const AllocEntry>(kCpuEntries)
                                 : std::span<const AllocEntry>(kMemoryEntries)) {
    Wide requested = 0;
    for (const PodView& view : snap.pods) {
      if (view.pod == nullptr || !view.pod->active()) continue;
      if (view.pod->priorityWithDefault() != e.cls) continue;
      if (priorityWithDefault(*view.pod) > priority) continue;
      requested += std::max<int64_t>(view.pod->runningRequest(e.request), 0);
    }
    if (requested == 0) continue;
    const std::optional<int64_t>& alloc = node.*e.allocatable;
    std::string line =
        std::string(e.resource) + ": requested " + std::to_string(saturate(requested));
    int64_t release = 0;
    if (!alloc || *alloc <= 0) {
      release = saturate(requested);
      line += ", none allocatable on the Node: release all of it";
    } else {
      const Wide a = *alloc;
      const int64_t percent = saturate(requested * 100 / a);
      line += " of " + std::to_string(*alloc) + " allocatable (" + std::to_string(percent) + "%)";
      if (!rep.usagePercent) rep.usagePercent = percent;
      if (requested * 100 <= static_cast<Wide>(threshold) * a) {
        line += " <= " + std::to_string(threshold) + "%";
      } else {
        release = saturate((requested * 100 - static_cast<Wide>(lower) * a) / 100);
        line += " > " + std::to_string(threshold) + "%: release " + std::to_string(release) + unit +
                " (lower " + std::to_string(lower) + "%)";
      }
    }
    decision += (decision.empty() ? "" : "; ") + line;
    if (release <= 0) continue;
    EvictTask task;
    task.feature = rep.feature;
    task.kind = e.kind;
    task.toRelease = release;
    task.victims = allocatableVictims(snap, rep.feature, e, cpu, priority, maxAge, errors);
    rep.triggered = true;
    rep.toRelease += release;
    rep.candidates += task.victims.size();
    tasks.push_back(std::move(task));
    ++added;
  }
  rep.decision = decision.empty()
                     ? "no batch or mid request at or under priority " + std::to_string(priority)
                     : decision;
  return added;
}

}  // namespace koord
