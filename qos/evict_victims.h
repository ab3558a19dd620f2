// What the eviction strategies (qos/memory_evict.h, qos/cpu_evict.h) share: which
// pods a feature may evict and in what order, and the one walk that turns a
// round's eviction tasks into EvictionRequests (reference koordlet.md §4.4, §4.5).
//
// A task is one triggered feature: a release target (bytes or milli-cores), the
// kind of amount it counts (a pod's usage, or its batch-cpu request) and its
// victims, sorted. The walk follows koordlet's KillAndEvictPods:
//   - the tasks run in order; what any task releases counts for every task that
//     counts the same kind, so a later task starts with what earlier ones freed;
//   - a pod already picked this round is skipped;
//   - a pod the ledger has as pending (asked, or evicted within 2 min) counts as
//     released without a new request, so pressure already being relieved picks
//     no extra victim;
//   - a pod the ledger has as blocked (refused, back-off running) is skipped, and
//     the next one is picked;
//   - a task stops when its target is met.
// Evicting a pod releases, for each kind some task of the round counts, that
// kind's amount of the pod (koordlet's aggregate over the tasks' resources).
//
// Pod attributes follow koordinator's apis/extension rules: the eviction-policy
// annotation, the priority with its class default, the eviction-priority
// annotation and the priority label. Pure: no clock but the `now` passed in.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "kube/eviction_ledger.h"
#include "kube/pod.h"
#include "qos/snapshot.h"

namespace koord {

// A JSON list of feature gate names the pod may be evicted by; absent: any.
inline constexpr const char* kEvictionPolicyAnnotation = "koordinator.sh/eviction-policy";
// "true": the pod may be evicted by MemoryEvict and CPUEvict (non-BE pods).
inline constexpr const char* kEvictionEnabledLabel = "koordinator.sh/eviction-enabled";
// int32, lower goes first; absent or unparsable: 0.
inline constexpr const char* kEvictionPriorityAnnotation = "koordinator.sh/eviction-priority";
// integer sub-priority; absent or unparsable: the pod's priority.
inline constexpr const char* kPriorityLabel = "koordinator.sh/priority";

// The feature gates, as the eviction-policy annotation and the requests name them.
inline constexpr const char* kFeatureBeMemoryEvict = "BEMemoryEvict";
inline constexpr const char* kFeatureMemoryEvict = "MemoryEvict";
inline constexpr const char* kFeatureBeCpuEvict = "BECPUEvict";
inline constexpr const char* kFeatureCpuEvict = "CPUEvict";
inline constexpr const char* kFeatureCpuAllocatableEvict = "CPUAllocatableEvict";
inline constexpr const char* kFeatureMemoryAllocatableEvict = "MemoryAllocatableEvict";

// The eviction-policy annotation's verdict for `feature`. An unparsable annotation
// allows nothing (koordlet) and carries an error naming the pod and annotation.
struct PolicyVerdict {
  bool allowed = true;
  std::string error;  // "" unless the annotation is unparsable
};
PolicyVerdict evictionPolicyAllows(const Pod& pod, std::string_view feature);

// Whether a pod may be a candidate: Pending or Running. A deliberate difference from
// koordlet, which also picks a pod that has ended (Succeeded, Failed): it holds
// nothing, and evicting it deletes a finished Job's record. A candidate being deleted
// (metadata.deletionTimestamp) is counted as releasing what it holds and is never
// asked for (walkEvictTasks): after a 201 the kubelet lists it, still holding its
// memory, for its grace period.
bool mayBeVictim(const Pod& pod);

// Where the eviction strategies' config errors point: the NodeSLO's threshold block.
inline constexpr const char* kThresholdsField = "NodeSLO resourceUsedThresholdWithBE.";
// Appends `line` to a round's errors unless it is there already (one line per cause).
void addErrorOnce(std::vector<std::string>& errors, std::string line);

// koordinator's GetPodPriorityValueWithDefault: spec.priority when set and not 0,
// else the default of the pod's priority class (prod 9500, mid 7500, batch 5500,
// free 3500, none 0); a pod without a class takes it from its QoS with default
// (LSE/LSR/LS/SYSTEM: prod, BE: batch).
int32_t priorityWithDefault(const Pod& pod);
// The eviction-priority annotation (int32; absent or unparsable: 0).
int32_t evictionPriority(const Pod& pod);
// The koordinator.sh/priority label as an integer; absent or unparsable: fallback.
int64_t labelPriority(const Pod& pod, int64_t fallback);

// One candidate of a task. used: usage in the task's unit (bytes, milli-cores), 0
// without a fresh sample; request: batch-cpu request in milli-cores (BECPUEvict,
// and CPUAllocatableEvict's batch-cpu). The pod's other requests (fillRequests):
// what it releases for the allocatable features' kinds, whichever task picked it.
struct EvictVictim {
  const Pod* pod = nullptr;
  int64_t used = 0;
  int64_t request = 0;
  int64_t batchMemoryRequest = 0;  // bytes, a koord-batch pod's
  int64_t midCpuRequest = 0;       // milli-cores, a koord-mid pod's
  int64_t midMemoryRequest = 0;    // bytes, a koord-mid pod's
  bool hasSample = false;
  // Sort keys of the priority-based features (MemoryEvict, CPUEvict).
  int32_t evictionPriority = 0;
  int32_t priority = 0;
  int64_t labelPriority = 0;
};

// BE features' order by spec.priority: ascending when both pods have one and they
// differ. Memory then: usage descending, pods without usage last (name descending
// among them). CPU then: used/request descending (0 when request is 0).
void sortBeByMemory(std::vector<EvictVictim>& victims);
void sortBeByCpu(std::vector<EvictVictim>& victims);
// MemoryEvict/CPUEvict order: eviction priority, priority, label priority
// ascending, then usage descending.
void sortByPriorityThenUsage(std::vector<EvictVictim>& victims);

// The candidates of the priority-based features: active pods the policy allows,
// priority with default <= threshold, label eviction-enabled "true", with a fresh
// sample of `usage` (a PodView member: memoryBytes or cpuCores) times `scale`.
// Policy errors are added to `errors` once per pod.
std::vector<EvictVictim> priorityVictims(const QosSnapshot& snap, std::string_view feature,
                                         int64_t priorityThreshold,
                                         std::optional<Sample> PodView::*usage, double scale,
                                         std::chrono::nanoseconds maxAge,
                                         std::vector<std::string>& errors);

// Every request of `pod` a task may count as released (EvictVictim's request fields):
// its batch-cpu request, and by its priority class with default the allocatable
// features' (koord-batch: batch-memory; koord-mid: mid-cpu, mid-memory).
void fillRequests(EvictVictim& v, const Pod& pod);

// What a task counts as released by a pod.
enum class ReleaseKind {
  kUsed,
  kBatchCpuRequest,
  kBatchMemoryRequest,
  kMidCpuRequest,
  kMidMemoryRequest
};

// What evicting `v` releases of `kind`.
int64_t releaseAmount(const EvictVictim& v, ReleaseKind kind);

struct EvictTask {
  std::string feature;  // the gate: "BEMemoryEvict"
  ReleaseKind kind = ReleaseKind::kUsed;
  int64_t toRelease = 0;  // > 0
  std::vector<EvictVictim> victims;
};

struct EvictTaskOutcome {
  int64_t released = 0;              // counted toward the target when the task ended
  std::vector<std::string> picked;   // names newly picked by this task, in order
  std::vector<std::string> pending;  // counted as already being released (ledger, terminating)
  std::vector<std::string> blocked;  // skipped: refused by a budget, or gone (404/409)
  bool met = false;                  // released >= toRelease
};

struct EvictWalk {
  std::vector<EvictionRequest> requests;  // in the order picked
  std::vector<EvictTaskOutcome> tasks;    // one per task, same order
  bool newlyPicked = false;               // at least one request: the cool-down starts
};

// ledger nullptr: nothing pending or blocked.
EvictWalk walkEvictTasks(const std::vector<EvictTask>& tasks, const EvictionLedger* ledger,
                         Clock::Monotonic now);

// A feature's decision this round, for the result and GET /status-like reports.
struct EvictFeatureReport {
  std::string feature;     // "BEMemoryEvict"
  bool triggered = false;  // a release target was computed and walked
  // Why it released nothing ("in cool-down", "below threshold: usage 55% < 70%",
  // "invalid config: ..."), or what it asked ("release 123 bytes: usage 80% >= 70%,
  // lower 68%").
  std::string decision;
  std::optional<int64_t> usagePercent;  // node usage, when computed
  int64_t toRelease = 0;                // bytes or milli-cores
  size_t candidates = 0;                // victims sorted
  EvictTaskOutcome outcome;             // the walk's, when triggered
};

struct EvictRoundReport {
  std::vector<EvictFeatureReport> features;  // the gated-on features, koordlet's order
  bool newlyPicked = false;                  // the cool-down started this round
  const EvictFeatureReport* feature(std::string_view name) const;
};

// The end of an eviction strategy's round: the tasks walked (walkEvictTasks), each
// task's outcome put in its feature's report (taskReport[i]: task i's index in
// report.features; a feature with two tasks, batch and mid, gets both outcomes
// merged: names appended, releases summed, met when both are), the requests appended
// to `requests`, report.newlyPicked set.
// Returns whether a pod was newly picked (the strategy's cool-down starts).
bool walkIntoReport(const std::vector<EvictTask>& tasks, const std::vector<size_t>& taskReport,
                    const EvictionLedger* ledger, Clock::Monotonic now, EvictRoundReport& report,
                    std::vector<EvictionRequest>& requests);

// amount × percent / 100, saturating at the int64 bounds instead of overflowing (a
// hostile Node capacity times a percent).
int64_t percentOfSat(int64_t amount, int64_t percent);

// The message of a request: "trigger by koordlet feature BEMemoryEvict, kill pod: be-1".
std::string evictMessage(std::string_view feature, std::string_view podName);

}  // namespace koord
