// NodeMetric (slo.koordinator.sh/v1alpha1): the pure halves of koordlet's status
// reporter (reference koordlet.md §3.3): the spec as koordlet reads it, and the
// status built from the metric cache. Requests, retries and the report loop are the
// caller's.
//
// Spec decisions:
//  * Defaults as koordlet's: aggregateDurationSeconds 300, reportIntervalSeconds 60,
//    nodeAggregatePolicy.durations [5m0s, 10m0s, 30m0s], nodeMemoryCollectPolicy
//    usageWithoutPageCache. An absent or null field takes its default.
//  * Under the minimum (aggregate 60 s, report 30 s): raised to it, with a note in
//    `adjustments`. koordlet's interval getters do this (max(value, minimum));
//    its status builder, though, reads aggregateDurationSeconds unclamped, so a 10
//    there averages 10 s in koordlet and 60 s here. We clamp both: a window under a
//    minute of 1 s samples is noise, and 0 or a negative would be an empty window.
//  * Over 9,223,372,036 s (292 years, the most a nanosecond count holds): lowered
//    to that, with a note (koordlet's time.Duration would overflow silently).
//  * A wrong JSON type is an error naming the object and field: "NodeMetric
//    rig-node: spec.metricCollectPolicy.reportIntervalSeconds: expected an
//    integer, got a string". So is a duration Go cannot parse or one not positive
//    (koordlet would query an empty window for "0s"; the CRD cannot express
//    minimums on durations, so this is our guard).
//  * An unknown memory policy (the CRD's enum forbids it) degrades to
//    usageWithoutPageCache, as koordlet's does, with a note.
//
// Status decisions (buildNodeMetricStatus):
//  * Times: the window ends at `now` (monotonic, the cache's time) and updateTime
//    is `wallNow`, RFC3339 in UTC to the second (metav1.Time's form).
//  * nodeUsage / systemUsage: mean over aggregateDuration of CPU (milli-cores) and
//    memory; {} when either series has no point in the window (koordlet's failed
//    query). No cold-start filter, as koordlet.
//  * aggregatedNodeUsages / aggregatedSystemUsages: one entry per spec duration, in
//    spec order, {duration: "5m0s", usage: {avg, p50, p90, p95, p99}}; every
//    aggregation's map is {} (the key stays, as koordlet's map of empty
//    ResourceMaps serialises) when the CPU series' span, first to last point in the
//    window, is under half the window (koordlet's cold-start filter judges the CPU
//    series) or either series is empty. A window over twice the cache's node
//    retention (so over 60 min at the default 30) is therefore always cold.
//  * Quantities: CPU as NewMilliQuantity(int64(cores*1000), DecimalSI) and memory as
//    NewQuantity(int64(bytes), BinarySI) print (metrics/quantity_format.h). The
//    cache stores floats, so a rate of exactly 0.9 cores reads 0.89999998 and
//    truncates to 899m where koordlet's float64 gives 900m: at most 1m off, the
//    same size as the truncation itself.
//  * Memory by policy: usageWithoutPageCache -> MemTotal - MemAvailable;
//    usageWithPageCache -> MemTotal - MemFree (kNodeMemoryWithPageCacheBytes,
//    which we always collect; koordlet only with --enable-pagecache-collector and
//    reports {} without it); usageWithHotPageCache -> hot page cache needs kidled,
//    which we do not read, so it falls back to usageWithoutPageCache (koordlet's
//    fallback for policies it cannot serve) and the status does not say so; the
//    spec's `adjustments` does. systemUsage memory is the system series
//    whatever the policy, as koordlet's.
//  * podsMetric: every pod given (the kubelet's list, as koordlet's GetAllPods)
//    whose CPU and memory series both have a point in the aggregate window; a pod
//    without one is left out (koordlet skips a pod whose query fails). Pod memory
//    by the policy, as koordlet's: usageWithPageCache -> memory.stat anon +
//    unevictable + active_file + inactive_file (kPodMemoryWithPageCacheBytes, which
//    the agent keeps only while the policy asks for it), otherwise without page
//    cache (hot page cache: see above). Sorted by namespace, name
//    (then uid). priority is the class with koordinator's default from the QoS
//    (SYSTEM/LSE/LSR/LS -> koord-prod, BE -> koord-batch); qos is the label with
//    the kube-QoS default. Both omitted when "" (PriorityNone is "", as in
//    koordinator; there is no "koord-none"), which the defaults make impossible.
//  * Always present, also when empty: nodeMetric's four fields and podsMetric
//    (koordlet omits an empty podsMetric and aggregate list). Not produced:
//    numaUsages, prodPeakMetric (HEAD only, read by nothing).
//  * hostApplicationMetric: one entry per host application given whose CPU and
//    memory series both have a point in the window, sorted by name, {name, usage,
//    priority, qos} (priority and qos as the NodeSLO spells them, omitted when "");
//    memory by policy: usageWithPageCache -> memory.usage_in_bytes / memory.current,
//    otherwise memory.stat's anon + unevictable (no hot page cache here either).
//    Omitted when empty, as koordlet's omitempty slice.
//  * prodReclaimableMetric: what `prodReclaimable` returns, given the pods
//    podsMetric reports (koordlet adds only those to its predictor); absent when the
//    caller gives none (the predictor lives above this layer, prediction/).
//  * GPUs (gate Accelerators): a "devices" list in nodeUsage, in each aggregate's
//    maps and in a pod's podUsage, as koordlet: per GPU with a point of both series
//    in the window, {type "gpu", id (UUID), minor, health false (koordlet leaves it
//    unset here; the Device carries health), resources {koordinator.sh/gpu-core:
//    int64(core percent) DecimalSI, koordinator.sh/gpu-memory: int64(bytes)
//    BinarySI, koordinator.sh/gpu-memory-ratio: int64(100 x bytes / total)}}, in
//    minor order; omitted when empty, and absent where the usage map itself is {}.
//    Node use is the driver's per-GPU figure, a pod's its processes' sum
//    (metrics/gpu_collector.h).
//  * Send it whole (PUT /status with the object's resourceVersion, as koordlet's
//    UpdateStatus): a JSON merge patch would merge a {} into the stored map and
//    keep yesterday's figures.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/result.h"
#include "kube/pod.h"
#include "metrics/metric_cache.h"

namespace koord {

enum class NodeMemoryPolicy { kWithoutPageCache, kWithPageCache, kWithHotPageCache };

inline constexpr int64_t kDefaultAggregateDurationSeconds = 300;
inline constexpr int64_t kMinAggregateDurationSeconds = 60;
inline constexpr int64_t kDefaultReportIntervalSeconds = 60;
inline constexpr int64_t kMinReportIntervalSeconds = 30;

struct NodeMetricSpec {
  std::chrono::seconds aggregateDuration{kDefaultAggregateDurationSeconds};
  std::chrono::seconds reportInterval{kDefaultReportIntervalSeconds};
  std::vector<std::chrono::nanoseconds> aggregateDurations{
      std::chrono::minutes(5), std::chrono::minutes(10), std::chrono::minutes(30)};
  NodeMemoryPolicy memoryPolicy = NodeMemoryPolicy::kWithoutPageCache;
  // What the spec asked for that we changed (a value raised to its minimum, a
  // policy we cannot serve), one sentence each, for the caller to log once.
  std::vector<std::string> adjustments;
};

// Reads spec.metricCollectPolicy of a NodeMetric object (the whole object, as the
// API returns it; its metadata.name names it in errors).
Result<NodeMetricSpec> parseNodeMetricSpec(const nlohmann::json& object);

// The node memory series the policy reports (see the header comment).
MetricKind nodeMemoryKind(NodeMemoryPolicy policy);
const char* toString(NodeMemoryPolicy policy);

// The NodeMetric status (the value of "status") from the cache at `now`.
// A host application as NodeMetric reports it (the NodeSLO's entry; qos/host_apps.h).
struct HostAppInfo {
  std::string name;
  std::string priority;
  std::string qos;
};

// A GPU of the node, for the devices of nodeUsage, its aggregates and podUsage.
struct NodeMetricGpu {
  unsigned minor = 0;
  std::string uuid;
  uint64_t memoryTotal = 0;  // bytes
};

using ReclaimableFn = std::function<nlohmann::json(const std::vector<const Pod*>& reported)>;
nlohmann::json buildNodeMetricStatus(const MetricCache& cache, const std::vector<Pod>& pods,
                                     const NodeMetricSpec& spec, Clock::Monotonic now,
                                     Clock::Wall wallNow, const ReclaimableFn& prodReclaimable = {},
                                     const std::vector<HostAppInfo>& hostApps = {},
                                     const std::vector<NodeMetricGpu>& gpus = {});

}  // namespace koord
