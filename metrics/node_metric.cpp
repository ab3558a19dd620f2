// NodeMetric spec parsing and status building; see node_metric.h for the decisions.
#include "metrics/node_metric.h"

#include "base/time_format.h"

#include <algorithm>
#include <ctime>
#include <limits>
#include <tuple>

#include "base/duration.h"
#include "kube/json_type.h"
#include "metrics/host_app_collector.h"
#include "metrics/quantity_format.h"

namespace koord {

namespace {

using nlohmann::json;

constexpr const char* kPolicyPath = "spec.metricCollectPolicy";
// The most seconds a std::chrono::nanoseconds holds: larger values would overflow
// every time computation downstream (koordlet's time.Duration overflows silently).
constexpr int64_t kMaxSpecSeconds = std::numeric_limits<int64_t>::max() / 1'000'000'000;

struct Parser {
  std::string prefix;  // "NodeMetric <name>: "

  Error fail(const std::string& field, const std::string& what) const {
    return makeError(prefix + field + ": " + what);
  }
  Error wrongType(const std::string& field, const char* expected, const json& got) const {
    return fail(field, std::string("expected ") + expected + ", got " + jsonTypeName(got));
  }

  // An integer in int64 range, raised to `minimum` with a note.
  Status seconds(const json& policy, const char* key, int64_t minimum, std::chrono::seconds& out,
                 std::vector<std::string>& notes) const {
    const json* v = jsonMember(policy, key);
    if (v == nullptr) return Ok{};
    const std::string field = std::string(kPolicyPath) + "." + key;
    // Go's json into *int64 refuses 60.0 as well as 60.5 and "60".
    if (!v->is_number_integer()) return wrongType(field, "an integer", *v);
    if (v->is_number_unsigned() &&
        v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return fail(field, "out of int64 range: " + v->dump());
    }
    int64_t value = v->get<int64_t>();
    if (value > kMaxSpecSeconds) {
      notes.push_back(field + " " + std::to_string(value) + " is over " +
                      std::to_string(kMaxSpecSeconds) + " (292 years); using that");
      value = kMaxSpecSeconds;
    }
    if (value < minimum) {
      notes.push_back(field + " " + std::to_string(value) + " is under the minimum " +
                      std::to_string(minimum) + "; using " + std::to_string(minimum));
      value = minimum;
    }
    out = std::chrono::seconds(value);
    return Ok{};
  }

  Status durations(const json& policy, std::vector<std::chrono::nanoseconds>& out) const {
    const json* agg = jsonMember(policy, "nodeAggregatePolicy");
    if (agg == nullptr) return Ok{};
    const std::string aggField = std::string(kPolicyPath) + ".nodeAggregatePolicy";
    if (!agg->is_object()) return wrongType(aggField, "an object", *agg);
    const json* list = jsonMember(*agg, "durations");
    if (list == nullptr) return Ok{};
    const std::string listField = aggField + ".durations";
    if (!list->is_array()) return wrongType(listField, "an array", *list);
    std::vector<std::chrono::nanoseconds> parsed;
    parsed.reserve(list->size());
    for (size_t i = 0; i < list->size(); ++i) {
      const json& item = (*list)[i];
      const std::string field = listField + "[" + std::to_string(i) + "]";
      if (!item.is_string()) return wrongType(field, "a string", item);
      auto d = parseGoDuration(item.get_ref<const std::string&>());
      if (!d) return fail(field, d.error().message);
      if (d->count() <= 0)
        return fail(field, "must be positive, got \"" + item.get<std::string>() + "\"");
      parsed.push_back(*d);
    }
    out = std::move(parsed);  // an explicit [] means no aggregated usages, as in koordlet
    return Ok{};
  }

  Status memoryPolicy(const json& policy, NodeMemoryPolicy& out,
                      std::vector<std::string>& notes) const {
    const json* v = jsonMember(policy, "nodeMemoryCollectPolicy");
    if (v == nullptr) return Ok{};
    const std::string field = std::string(kPolicyPath) + ".nodeMemoryCollectPolicy";
    if (!v->is_string()) return wrongType(field, "a string", *v);
    const auto& text = v->get_ref<const std::string&>();
    if (text == "usageWithoutPageCache") {
      out = NodeMemoryPolicy::kWithoutPageCache;
    } else if (text == "usageWithPageCache") {
      out = NodeMemoryPolicy::kWithPageCache;
    } else if (text == "usageWithHotPageCache") {
      out = NodeMemoryPolicy::kWithHotPageCache;
      notes.push_back(field +
                      " usageWithHotPageCache: hot page cache is not collected (no kidled); "
                      "node memory is reported without page cache");
    } else {
      out = NodeMemoryPolicy::kWithoutPageCache;
      notes.push_back(field + " \"" + text + "\" is unknown; using usageWithoutPageCache");
    }
    return Ok{};
  }
};

}  // namespace

Result<NodeMetricSpec> parseNodeMetricSpec(const json& object) {
  if (!object.is_object()) {
    return makeError(std::string("NodeMetric: expected an object, got ") + jsonTypeName(object));
  }
  std::string name = "(unnamed)";
  if (const json* meta = jsonMember(object, "metadata"); meta && meta->is_object()) {
    if (const json* n = jsonMember(*meta, "name"); n && n->is_string())
      name = n->get<std::string>();
  }
  const Parser p{"NodeMetric " + name + ": "};

  NodeMetricSpec spec;
  const json* s = jsonMember(object, "spec");
  if (s == nullptr) return spec;
  if (!s->is_object()) return p.wrongType("spec", "an object", *s);
  const json* policy = jsonMember(*s, "metricCollectPolicy");
  if (policy == nullptr) return spec;
  if (!policy->is_object()) return p.wrongType(kPolicyPath, "an object", *policy);

  if (auto st = p.seconds(*policy, "aggregateDurationSeconds", kMinAggregateDurationSeconds,
                          spec.aggregateDuration, spec.adjustments);
      !st) {
    return st.error();
  }
  if (auto st = p.seconds(*policy, "reportIntervalSeconds", kMinReportIntervalSeconds,
                          spec.reportInterval, spec.adjustments);
      !st) {
    return st.error();
  }
  if (auto st = p.durations(*policy, spec.aggregateDurations); !st) return st.error();
  if (auto st = p.memoryPolicy(*policy, spec.memoryPolicy, spec.adjustments); !st) {
    return st.error();
  }
  return spec;
}

MetricKind nodeMemoryKind(NodeMemoryPolicy policy) {
  switch (policy) {
    case NodeMemoryPolicy::kWithPageCache:
      return MetricKind::kNodeMemoryWithPageCacheBytes;
    case NodeMemoryPolicy::kWithoutPageCache:
    case NodeMemoryPolicy::kWithHotPageCache:  // not collected: see node_metric.h
      return MetricKind::kNodeMemoryBytes;
  }
  return MetricKind::kNodeMemoryBytes;
}

const char* toString(NodeMemoryPolicy policy) {
  switch (policy) {
    case NodeMemoryPolicy::kWithoutPageCache:
      return "usageWithoutPageCache";
    case NodeMemoryPolicy::kWithPageCache:
      return "usageWithPageCache";
    case NodeMemoryPolicy::kWithHotPageCache:
      return "usageWithHotPageCache";
  }
  return "?";
}

namespace {

// {"resources": {"cpu": ..., "memory": ...}}: a ResourceMap.
json resourceMap(double cpuCores, double memoryBytes) {
  return json{{"resources",
               {{"cpu", formatMilliQuantityDecimalSI(milliFromCores(cpuCores))},
                {"memory", formatQuantityBinarySI(truncateToInt64(memoryBytes))}}}};
}

// The start of a window of length d ending at now; saturates instead of wrapping
// (the cache reads Monotonic::min() as "since forever").
Clock::Monotonic windowStart(Clock::Monotonic now, std::chrono::nanoseconds d) {
  using Rep = Clock::Monotonic::duration;
  const auto dn = std::chrono::duration_cast<Rep>(d).count();
  Rep::rep start = 0;
  if (__builtin_sub_overflow(now.time_since_epoch().count(), dn, &start)) {
    return Clock::Monotonic::min();
  }
  return Clock::Monotonic(Rep(start));
}

struct SeriesPair {
  MetricKind cpu;
  MetricKind memory;
};

// One GPU's devices entry from its core percent and memory bytes.
json gpuEntry(const NodeMetricGpu& gpu, double core, double memory) {
  const int64_t bytes = truncateToInt64(memory);
  const int64_t ratio = gpu.memoryTotal > 0
                            ? truncateToInt64(100.0 * memory / static_cast<double>(gpu.memoryTotal))
                            : 0;
  return json{
      {"type", "gpu"},
      {"id", gpu.uuid},
      {"minor", gpu.minor},
      {"health", false},
      {"resources",
       {{"koordinator.sh/gpu-core", formatMilliQuantityDecimalSI(truncateToInt64(core) * 1000)},
        {"koordinator.sh/gpu-memory", formatQuantityBinarySI(bytes)},
        {"koordinator.sh/gpu-memory-ratio", formatMilliQuantityDecimalSI(ratio * 1000)}}}};
}

// The devices of one owner's usage map (averages over [from, now]); [] when none.
json gpuDevices(const MetricCache& cache, const std::vector<NodeMetricGpu>& gpus,
                const std::string& owner, MetricKind coreKind, MetricKind memoryKind,
                Clock::Monotonic from, Clock::Monotonic now) {
  json list = json::array();
  for (const NodeMetricGpu& g : gpus) {
    const std::string minor = std::to_string(g.minor);
    const auto core = cache.query({coreKind, owner, minor}, Aggregation::kAvg, from, now);
    if (!core) continue;
    const auto mem = cache.query({memoryKind, owner, minor}, Aggregation::kAvg, from, now);
    if (!mem) continue;
    list.push_back(gpuEntry(g, *core, *mem));
  }
  return list;
}

// Mean of both series over [from, now], or {} when either has no point.
json averageUsage(const MetricCache& cache, const std::string& owner, SeriesPair kinds,
                  Clock::Monotonic from, Clock::Monotonic now) {
  const auto cpu = cache.query({kinds.cpu, owner, ""}, Aggregation::kAvg, from, now);
  if (!cpu) return json::object();
  const auto mem = cache.query({kinds.memory, owner, ""}, Aggregation::kAvg, from, now);
  if (!mem) return json::object();
  return resourceMap(*cpu, *mem);
}

// Each aggregation's devices for the node's GPUs with points in [from, now].
void addGpuAggregates(const MetricCache& cache, const std::vector<NodeMetricGpu>& gpus,
                      Clock::Monotonic from, Clock::Monotonic now, json& usage) {
  for (const NodeMetricGpu& g : gpus) {
    const std::string minor = std::to_string(g.minor);
    const auto core = cache.summarize({MetricKind::kNodeGpuCore, "", minor}, from, now);
    const auto mem = cache.summarize({MetricKind::kNodeGpuMemoryBytes, "", minor}, from, now);
    if (!core || !mem) continue;
    const std::pair<const char*, std::pair<double, double>> rows[] = {
        {"avg", {core->avg, mem->avg}},
        {"p50", {core->p50, mem->p50}},
        {"p90", {core->p90, mem->p90}},
        {"p95", {core->p95, mem->p95}},
        {"p99", {core->p99, mem->p99}}};
    for (const auto& [key, values] : rows) {
      usage[key]["devices"].push_back(gpuEntry(g, values.first, values.second));
    }
  }
}

json aggregatedUsages(const MetricCache& cache, SeriesPair kinds,
                      const std::vector<std::chrono::nanoseconds>& durations, Clock::Monotonic now,
                      const std::vector<NodeMetricGpu>& gpus = {}) {
  json list = json::array();
  for (const auto d : durations) {
    const Clock::Monotonic from = windowStart(now, d);
    const auto cpu = cache.summarize({kinds.cpu, "", ""}, from, now);
    const auto mem = cache.summarize({kinds.memory, "", ""}, from, now);
    // koordlet: cold when span.Seconds() < window.Seconds() * 0.5.
    const bool cold = !cpu || !mem ||
                      std::chrono::duration<double>(cpu->span()).count() <
                          std::chrono::duration<double>(d).count() * 0.5;
    json usage = json::object();
    if (cold) {
      for (const char* key : {"avg", "p50", "p90", "p95", "p99"}) usage[key] = json::object();
    } else {
      usage["avg"] = resourceMap(cpu->avg, mem->avg);
      usage["p50"] = resourceMap(cpu->p50, mem->p50);
      usage["p90"] = resourceMap(cpu->p90, mem->p90);
      usage["p95"] = resourceMap(cpu->p95, mem->p95);
      usage["p99"] = resourceMap(cpu->p99, mem->p99);
      addGpuAggregates(cache, gpus, from, now, usage);
    }
    list.push_back(json{{"duration", formatGoDuration(d)}, {"usage", std::move(usage)}});
  }
  return list;
}

json podsMetric(const MetricCache& cache, const std::vector<Pod>& pods, NodeMemoryPolicy policy,
                Clock::Monotonic from, Clock::Monotonic now, std::vector<const Pod*>& reported,
                const std::vector<NodeMetricGpu>& gpus) {
  const MetricKind memory = policy == NodeMemoryPolicy::kWithPageCache
                                ? MetricKind::kPodMemoryWithPageCacheBytes
                                : MetricKind::kPodMemoryBytes;
  std::vector<const Pod*> order;
  order.reserve(pods.size());
  for (const Pod& pod : pods) order.push_back(&pod);
  std::sort(order.begin(), order.end(), [](const Pod* a, const Pod* b) {
    return std::tie(a->ns, a->name, a->uid) < std::tie(b->ns, b->name, b->uid);
  });

  json list = json::array();
  for (const Pod* pod : order) {
    json usage = averageUsage(cache, pod->uid, {MetricKind::kPodCpuCores, memory}, from, now);
    if (usage.empty()) continue;  // no samples in the window: skipped, as koordlet
    if (json devices = gpuDevices(cache, gpus, pod->uid, MetricKind::kPodGpuCore,
                                  MetricKind::kPodGpuMemoryBytes, from, now);
        !devices.empty()) {
      usage["devices"] = std::move(devices);
    }
    reported.push_back(pod);
    json entry = json::object();
    entry["namespace"] = pod->ns;
    entry["name"] = pod->name;
    if (const char* p = toString(pod->priorityWithDefault()); *p != '\0') entry["priority"] = p;
    if (const char* q = toString(pod->qosWithDefault()); *q != '\0') entry["qos"] = q;
    entry["podUsage"] = std::move(usage);
    list.push_back(std::move(entry));
  }
  return list;
}

json hostAppsMetric(const MetricCache& cache, const std::vector<HostAppInfo>& apps,
                    NodeMemoryPolicy policy, Clock::Monotonic from, Clock::Monotonic now) {
  std::vector<const HostAppInfo*> order;
  for (const HostAppInfo& a : apps) order.push_back(&a);
  std::sort(order.begin(), order.end(),
            [](const HostAppInfo* a, const HostAppInfo* b) { return a->name < b->name; });
  const MetricKind memory = policy == NodeMemoryPolicy::kWithPageCache
                                ? MetricKind::kHostAppMemoryWithPageCacheBytes
                                : MetricKind::kHostAppMemoryBytes;
  json list = json::array();
  for (const HostAppInfo* a : order) {
    json usage = averageUsage(cache, HostAppCollector::owner(a->name),
                              {MetricKind::kHostAppCpuCores, memory}, from, now);
    if (usage.empty()) continue;  // koordlet skips an app whose query fails
    json entry = json::object();
    entry["name"] = a->name;
    entry["usage"] = std::move(usage);
    if (!a->priority.empty()) entry["priority"] = a->priority;
    if (!a->qos.empty()) entry["qos"] = a->qos;
    list.push_back(std::move(entry));
  }
  return list;
}

}  // namespace

json buildNodeMetricStatus(const MetricCache& cache, const std::vector<Pod>& pods,
                           const NodeMetricSpec& spec, Clock::Monotonic now, Clock::Wall wallNow,
                           const ReclaimableFn& prodReclaimable,
                           const std::vector<HostAppInfo>& hostApps,
                           const std::vector<NodeMetricGpu>& gpus) {
  const SeriesPair node{MetricKind::kNodeCpuCores, nodeMemoryKind(spec.memoryPolicy)};
  const SeriesPair system{MetricKind::kSystemCpuCores, MetricKind::kSystemMemoryBytes};
  const Clock::Monotonic from = windowStart(now, spec.aggregateDuration);

  json nodeMetric = json::object();
  nodeMetric["nodeUsage"] = averageUsage(cache, "", node, from, now);
  if (!nodeMetric["nodeUsage"].empty()) {
    if (json devices = gpuDevices(cache, gpus, "", MetricKind::kNodeGpuCore,
                                  MetricKind::kNodeGpuMemoryBytes, from, now);
        !devices.empty()) {
      nodeMetric["nodeUsage"]["devices"] = std::move(devices);
    }
  }
  nodeMetric["aggregatedNodeUsages"] =
      aggregatedUsages(cache, node, spec.aggregateDurations, now, gpus);
  nodeMetric["systemUsage"] = averageUsage(cache, "", system, from, now);
  nodeMetric["aggregatedSystemUsages"] =
      aggregatedUsages(cache, system, spec.aggregateDurations, now);

  json status = json::object();
  status["updateTime"] = rfc3339(wallNow);
  status["nodeMetric"] = std::move(nodeMetric);
  std::vector<const Pod*> reported;
  status["podsMetric"] = podsMetric(cache, pods, spec.memoryPolicy, from, now, reported, gpus);
  if (json apps = hostAppsMetric(cache, hostApps, spec.memoryPolicy, from, now); !apps.empty()) {
    status["hostApplicationMetric"] = std::move(apps);
  }
  if (prodReclaimable) status["prodReclaimableMetric"] = prodReclaimable(reported);
  return status;
}

}  // namespace koord
