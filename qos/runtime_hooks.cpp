#include "qos/runtime_hooks.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/checked_int.h"
#include "kube/json_quantity.h"
#include "kube/json_type.h"
#include "qos/cpu_burst.h"
#include "qos/gpu_env_hook.h"
#include "qos/memory_qos.h"
#include "qos/oom_score_adj.h"
#include "qos/snapshot.h"

namespace koord {
namespace {

using Json = nlohmann::json;

std::string podName(const HookPod& pod) { return pod.ns + "/" + pod.name; }

Error hookError(const HookPod& pod, HookName hook, const std::string& what) {
  return makeError("pod " + podName(pod) + ": hook " + toString(hook) + ": " + what);
}

// A resource.Quantity in JSON (jsonQuantityText), in plain units: batch-cpu's
// value is already milli-cores, batch-memory's bytes.
Result<int64_t> quantity(const Json& v, const std::string& field) {
  const std::optional<std::string> text = jsonQuantityText(v);
  if (!text) return makeError(field + ": expected a quantity string, got " + jsonTypeName(v));
  auto q = parseQuantity(*text);
  if (!q) return makeError(field + ": " + q.error().message);
  return *q;
}

Status readList(const Json& obj, const std::string& field, ResourceList& out) {
  if (obj.is_null()) return Ok{};
  if (!obj.is_object()) return makeError(field + ": expected an object, got " + jsonTypeName(obj));
  for (const auto& [name, value] : obj.items()) {
    if (value.is_null()) continue;
    auto q = quantity(value, field + "." + name);
    if (!q) return q.error();
    if (name == kBatchCpuResource) out.batchCpuMilli = *q;
    if (name == kBatchMemoryResource) out.batchMemoryBytes = *q;
  }
  return Ok{};
}

// Batch values are checked one field at a time. A value that cannot be right (a
// negative quantity, or one that overflows int64 once converted or summed) refuses
// the field it feeds, with an error naming the container and the resource; the
// hook's other fields are still set. Never a clamp: a negative limit read as 0 or
// as the minimum would be the harshest setting (memory.max 0 kills the cgroup on
// v2, a 1000 µs quota starves it).
class FieldErrors {
 public:
  void add(std::string what) { errors_.push_back(std::move(what)); }
  Status status() const {
    if (errors_.empty()) return Ok{};
    std::string joined;
    for (const std::string& e : errors_) joined += (joined.empty() ? "" : "; ") + e;
    return makeError(joined);
  }

 private:
  std::vector<std::string> errors_;
};

std::string fieldName(const HookContainer& c, const char* resource, const char* kind) {
  return "container " + c.name + ": " + resource + " " + kind;
}

// A batch request or limit: nullopt (missing) and 0 pass; a negative one is refused.
Result<int64_t> nonNegative(const std::optional<int64_t>& v, const std::string& field) {
  if (v && *v < 0) return makeError(field + " " + std::to_string(*v) + " is negative");
  return v.value_or(0);
}

// Milli-cores of request -> cpu.shares (koordlet's MilliCPUToShares), refusing a
// request too large for milli × 1024 (over nine billion cores: not a real pod).
Result<int64_t> sharesFromMilli(int64_t milli, const std::string& what) {
  if (!checkedMul(milli, 1024)) {
    return makeError(what + " " + std::to_string(milli) + " milli-cores overflows cpu shares");
  }
  return milliCpuToShares(milli);
}

// Milli-cores of limit (>= 0, 0: none) -> quota µs (milliCpuToQuota), refused
// above the kernel's largest quota (tg_set_cfs_bandwidth's EINVAL) rather than
// read as no limit.
Result<int64_t> quotaFromMilli(int64_t milli, const std::string& what) {
  if (milli > kMaxCfsQuotaUs / (kCfsPeriodUs / 1000)) {
    return makeError(what + " " + std::to_string(milli) +
                     " milli-cores is above the kernel's largest cfs quota");
  }
  return milliCpuToQuota(milli);
}

// One field of every hook container, for kube/pod_resources.h; a negative value is
// refused here, naming the container and field as the container-level hooks do.
Result<std::vector<ContainerAmount>> amounts(const HookPod& pod, const char* resource,
                                             std::optional<int64_t> ResourceList::*field,
                                             bool limits) {
  std::vector<ContainerAmount> out;
  out.reserve(pod.containers.size());
  for (const HookContainer& c : pod.containers) {
    const std::optional<int64_t>& v = (limits ? c.limits : c.requests).*field;
    auto ok = nonNegative(v, fieldName(c, resource, limits ? "limit" : "request"));
    if (!ok) return ok.error();
    out.push_back(ContainerAmount{c.name, c.kind, v});
  }
  return out;
}

// The pod's limit as the kubelet counts it (sidecars summed, init containers
// max'ed), or 0 (none) if any container has none. A negative limit or a sum past
// int64 refuses the pod's field.
Result<int64_t> podLimitSum(const HookPod& pod, const char* resource,
                            std::optional<int64_t> ResourceList::*field) {
  auto list = amounts(pod, resource, field, true);
  if (!list) return list.error();
  auto limit = podLimits(*list);
  if (!limit) return makeError(std::string(resource) + " limits overflow int64 when summed");
  return limit->value_or(0);
}

// The pod's request as the kubelet counts it.
Result<int64_t> podRequestSum(const HookPod& pod, const char* resource,
                              std::optional<int64_t> ResourceList::*field) {
  auto list = amounts(pod, resource, field, false);
  if (!list) return list.error();
  auto request = podRequests(*list);
  if (!request) return makeError(std::string(resource) + " requests overflow int64 when summed");
  return *request;
}

bool isRawBe(const HookPod& pod) { return pod.rawQos == KoordQos::kBE; }

bool hasBatch(const ResourceList& r) { return r.batchCpuMilli || r.batchMemoryBytes; }

// koordlet acts on BE pods "with extended resources": a BE-labelled pod that carries
// none (ordinary cpu/memory) keeps what the kubelet gave it, rather than losing its
// memory limit to -1.
bool carriesBatch(const HookPod& pod) {
  return std::any_of(pod.containers.begin(), pod.containers.end(), [](const HookContainer& c) {
    return hasBatch(c.requests) || hasBatch(c.limits);
  });
}

// --- BatchResource (§4.9) ---
Status batchResource(const HookPod& pod, const HookContainer* container, const HookContext& ctx,
                     HookIntent& out) {
  if (!ctx.batchResource || !isRawBe(pod)) return Ok{};
  if (!pod.extendedResourceError.empty()) return makeError(pod.extendedResourceError);
  if (!carriesBatch(pod)) return Ok{};
  FieldErrors errors;
  if (container != nullptr) {
    const HookContainer& c = *container;
    auto request =
        nonNegative(c.requests.batchCpuMilli, fieldName(c, kBatchCpuResource, "request"));
    if (request) request = sharesFromMilli(*request, fieldName(c, kBatchCpuResource, "request"));
    if (request) {
      out.cpuShares = *request;
    } else {
      errors.add(request.error().message + " (cpu shares not set)");
    }
    if (ctx.suppressCfsQuota) {
      out.cfsQuota = -1;
    } else {
      auto limit = nonNegative(c.limits.batchCpuMilli, fieldName(c, kBatchCpuResource, "limit"));
      if (limit) limit = quotaFromMilli(*limit, fieldName(c, kBatchCpuResource, "limit"));
      if (limit) {
        out.cfsQuota = normalizeQuota(*limit, ctx.cpuNormalizationRatio);
      } else {
        errors.add(limit.error().message + " (cfs quota not set)");
      }
    }
    auto mem = nonNegative(c.limits.batchMemoryBytes, fieldName(c, kBatchMemoryResource, "limit"));
    if (mem) {
      out.memoryLimit = *mem > 0 ? *mem : -1;
    } else {
      errors.add(mem.error().message + " (memory limit not set)");
    }
    return errors.status();
  }

  // Pod level: the containers' values counted as the kubelet counts a pod's.
  Result<int64_t> requestMilli =
      podRequestSum(pod, kBatchCpuResource, &ResourceList::batchCpuMilli);
  if (requestMilli) {
    requestMilli =
        sharesFromMilli(*requestMilli, std::string(kBatchCpuResource) + " requests summed to");
  }
  if (requestMilli) {
    out.cpuShares = *requestMilli;
  } else {
    errors.add(requestMilli.error().message + " (pod cpu shares not set)");
  }
  if (ctx.suppressCfsQuota) {
    out.cfsQuota = -1;
  } else {
    auto limit = podLimitSum(pod, kBatchCpuResource, &ResourceList::batchCpuMilli);
    if (limit) limit = quotaFromMilli(*limit, std::string(kBatchCpuResource) + " limits summed to");
    if (limit) {
      out.cfsQuota = normalizeQuota(*limit, ctx.cpuNormalizationRatio);
    } else {
      errors.add(limit.error().message + " (pod cfs quota not set)");
    }
  }
  auto mem = podLimitSum(pod, kBatchMemoryResource, &ResourceList::batchMemoryBytes);
  if (mem) {
    out.memoryLimit = *mem > 0 ? *mem : -1;
  } else {
    errors.add(mem.error().message + " (pod memory limit not set)");
  }
  return errors.status();
}

// --- CPUNormalization (colocation.md §5) ---
Status cpuNormalization(const HookPod& pod, const HookContainer* container, const HookContext& ctx,
                        HookIntent& out) {
  // Under the gate the quota is always written: divided while a ratio above 1 is in
  // force, the limit's own quota otherwise, so removing the ratio undoes it.
  if (!ctx.cpuNormalization) return Ok{};
  if (pod.rawQos != KoordQos::kLS && pod.rawQos != KoordQos::kNone) return Ok{};
  // Pinned by the scheduler (an LSR pod without its label): CPUSetAllocator's -1 stays.
  if (const auto st = pod.annotations.find(kResourceStatusAnnotation);
      st != pod.annotations.end()) {
    auto cpus = parseResourceStatusCpuset(st->second);
    if (cpus && !cpus->empty()) return Ok{};
  }
  Result<int64_t> limit = int64_t{0};
  if (container != nullptr) {
    limit = nonNegative(container->limits.cpuMilli, fieldName(*container, "cpu", "limit"));
  } else {
    limit = podLimitSum(pod, "cpu", &ResourceList::cpuMilli);
  }
  if (limit) limit = quotaFromMilli(*limit, "cpu limit");
  if (!limit) return makeError(limit.error().message + " (cfs quota not normalized)");
  out.cfsQuota = normalizeQuota(*limit, ctx.cpuNormalizationRatio);
  return Ok{};
}

// The NUMA nodes of resource-status numaNodeResources that hold cpu or batch-cpu.
Result<std::vector<int>> numaNodesWithCpu(std::string_view json) {
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  const std::string where = std::string(kResourceStatusAnnotation) + ": numaNodeResources";
  if (doc.is_discarded() || !doc.is_object()) return std::vector<int>{};  // rule 1 reported it
  auto list = doc.find("numaNodeResources");
  if (list == doc.end() || list->is_null()) return std::vector<int>{};
  if (!list->is_array()) return makeError(where + ": expected an array");
  std::vector<int> nodes;
  for (size_t i = 0; i < list->size(); ++i) {
    const auto& n = (*list)[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!n.is_object()) return makeError(at + ": expected an object");
    auto node = n.find("node");
    if (node == n.end() || !node->is_number_integer())
      return makeError(at + ".node: expected an integer");
    auto res = n.find("resources");
    if (res == n.end() || !res->is_object()) continue;
    bool hasCpu = false;
    for (const char* key : {"cpu", kBatchCpuResource}) {
      auto q = res->find(key);
      if (q == res->end()) continue;
      auto text = jsonQuantityText(*q);
      if (!text) return makeError(at + ".resources." + key + ": not a quantity");
      auto milli = parseQuantityMilli(*text);
      if (!milli) return makeError(at + ".resources." + key + ": " + milli.error().message);
      hasCpu = hasCpu || *milli > 0;
    }
    if (hasCpu) nodes.push_back(node->get<int>());
  }
  return nodes;
}

// --- CPUSetAllocator (§4.10) ---
Status cpusetAllocator(const HookPod& pod, const HookContainer* container, const HookContext& ctx,
                       HookIntent& out) {
  if (!ctx.cpusetAllocator) return Ok{};
  std::vector<int> cpus;
  const auto status = pod.annotations.find(kResourceStatusAnnotation);
  if (status != pod.annotations.end()) {
    auto parsed = parseResourceStatusCpuset(status->second);
    if (!parsed) return parsed.error();
    cpus = std::move(*parsed);
  }
  if (!cpus.empty()) {
    if (!ctx.disableUnsetCpuQuota) out.cfsQuota = -1;
    if (container != nullptr) out.cpuset = renderCpuList(cpus);
    return Ok{};
  }
  if (container == nullptr) return Ok{};
  // Kube BestEffort: cleared, CPU suppress decides where BE runs. BE pods are CPU
  // suppress's too. Both before the pool rules (koordlet tests them after): a pool on
  // a pod under a narrowed besteffort dir is refused by cgroup v1.
  if (pod.kubeQos == KubeQos::kBestEffort) {
    out.cpuset = "";
    return Ok{};
  }
  if (pod.qosWithDefault() == KoordQos::kBE) return Ok{};
  const CpuSetRule* rule = ctx.cpusetRule.get();
  if (rule != nullptr && status != pod.annotations.end() && pod.rawQos != KoordQos::kBE) {
    auto nodes = numaNodesWithCpu(status->second);
    if (!nodes) return nodes.error();
    if (!nodes->empty()) {
      out.cpuset = renderCpuList(rule->shareCpusOfNodes(*nodes));
      return Ok{};
    }
  }
  if (rule != nullptr && pod.rawQos == KoordQos::kSystem && !rule->systemQosCpus.empty()) {
    out.cpuset = renderCpuList(rule->systemQosCpus);
    return Ok{};
  }
  if (rule != nullptr && pod.rawQos == KoordQos::kLS) {
    out.cpuset = renderCpuList(rule->allShareCpus());
    return Ok{};
  }
  if (rule != nullptr && rule->kubeletPolicy != "static") {
    out.cpuset = renderCpuList(rule->allShareCpus());
  }
  return Ok{};
}

// --- Resctrl (§4.7): the class group of the container ---
Status resctrl(const HookPod& pod, const HookContainer* container, const HookContext& ctx,
               HookIntent& out) {
  if (!ctx.resctrl || ctx.spec == nullptr || container == nullptr) return Ok{};
  if (pod.annotations.contains(kPodResctrlAnnotation)) return Ok{};  // per-pod group: not ours
  const ResourceQosStrategy& q = ctx.spec->qos;
  switch (pod.qosWithDefault()) {
    case KoordQos::kLSE:
    case KoordQos::kLSR:
      if (q.lsr.resctrl.enable) out.rdtClass = "LSR";
      break;
    case KoordQos::kLS:
      if (q.ls.resctrl.enable) out.rdtClass = "LS";
      break;
    case KoordQos::kBE:
      if (q.be.resctrl.enable) out.rdtClass = "BE";
      break;
    case KoordQos::kSystem:
    case KoordQos::kNone:
      break;  // no SYSTEM group: stays in the root group
  }
  return Ok{};
}

// CPUBurst's input, checked before the hook runs: the burst scales the
// container's cpu limit, so a limit that cannot be right (negative, or above what
// the kernel's largest quota can hold) refuses cpu.max.burst, named, instead of
// reaching the burst arithmetic. Only where the hook would act (v2, a container).
Status cpuBurstLimit(const HookContainer* container, const HookContext& ctx) {
  if (!ctx.cpuBurst || container == nullptr || ctx.version != CgroupVersion::kV2) return Ok{};
  const std::string field = "container " + container->name + ": cpu limit";
  auto milli = nonNegative(container->limits.cpuMilli, field);
  if (milli) milli = quotaFromMilli(*milli, field);
  if (!milli) return makeError(milli.error().message + " (cpu.max.burst not set)");
  return Ok{};
}

// --- CPUBurst (§4.2, static part, v2 unified) ---
Status cpuBurst(const HookPod& pod, const HookContainer* container, const HookContext& ctx,
                HookIntent& out) {
  if (!ctx.cpuBurst || !ctx.unified || ctx.spec == nullptr || container == nullptr ||
      ctx.version != CgroupVersion::kV2) {
    return Ok{};
  }
  Pod probe;  // burstEligible reads the raw label only
  probe.koordQos = pod.rawQos;
  bool pinned = false;
  if (auto it = pod.annotations.find(kResourceStatusAnnotation); it != pod.annotations.end()) {
    auto cpus = parseResourceStatusCpuset(it->second);
    pinned = cpus && !cpus->empty();
  }
  if (!burstEligible(probe, pinned)) return Ok{};
  CpuBurstConfig config = ctx.spec->cpuBurst;
  if (auto it = pod.annotations.find(kCpuBurstAnnotation); it != pod.annotations.end()) {
    auto merged = mergeCpuBurstAnnotation(config, it->second);
    if (!merged) return merged.error();
    config = *merged;
  }
  const int64_t burst = staticBurstUs(container->limits, config,
                                      ctx.cpuNormalization ? ctx.cpuNormalizationRatio : -1);
  if (burst > 0) {
    out.unified["cpu.max.burst"] =
        renderKnob(Knob::kCpuBurst, CgroupVersion::kV2, KnobValue::of(burst));
  }
  return Ok{};
}

// --- MemoryQoS (§4.3, v2 unified): the strategy's own container writes ---
Status memoryQos(const HookPod& pod, const HookContainer* container, const HookContext& ctx,
                 HookIntent& out) {
  if (!ctx.memoryQos || !ctx.unified || ctx.spec == nullptr || container == nullptr ||
      pod.kubelet == nullptr || ctx.version != CgroupVersion::kV2) {
    return Ok{};
  }
  const Pod& kube = *pod.kubelet;
  // App containers and sidecars, as the memory QoS strategy sees them.
  const Container* c = nullptr;
  for (const auto* list : {&kube.containers, &kube.initContainers}) {
    for (const Container& k : *list) {
      if (k.name == container->name && k.kind() != ContainerKind::kInit) c = &k;
    }
  }
  if (c == nullptr) return Ok{};
  // A one-pod snapshot with placeholder dirs: the container's writes are the ones
  // to the placeholder container dir.
  constexpr const char* kPodDir = "hook-pod";
  constexpr const char* kContainerDir = "hook-pod/hook-container";
  QosSnapshot snap;
  PodView view;
  view.pod = &kube;
  view.qos = kube.qosWithDefault();
  view.dir = kPodDir;
  ContainerView cv;
  cv.container = c;
  cv.dir = kContainerDir;
  view.containers.push_back(cv);
  snap.pods.push_back(std::move(view));
  MemoryQosOptions options;
  options.enabled = true;
  options.pageSize = ctx.pageSize;
  options.nodeAllocatableMemory = ctx.nodeAllocatableMemory;
  options.support = KnobSupport();  // min/low/high only: the unified files we set
  options.support.set(Knob::kMemoryMin, true);
  options.support.set(Knob::kMemoryLow, true);
  options.support.set(Knob::kMemoryHigh, true);
  const MemoryQosPlanner strategy(CgroupLayout(CgroupVersion::kV2, CgroupDriver::kCgroupfs));
  const MemoryQosResult result = strategy.run(snap, ctx.spec->qos, options);
  for (const CgroupWrite& w : result.writes) {
    if (w.dir != kContainerDir) continue;
    out.unified[knobSpec(w.knob).v2File] = renderKnob(w.knob, CgroupVersion::kV2, w.value);
  }
  return Ok{};
}

void mergeInto(HookIntent& to, HookIntent&& from) {
  if (from.cpuShares) to.cpuShares = from.cpuShares;
  if (from.cfsQuota) to.cfsQuota = from.cfsQuota;
  if (from.memoryLimit) to.memoryLimit = from.memoryLimit;
  if (from.cpuset) to.cpuset = std::move(from.cpuset);
  if (from.rdtClass) to.rdtClass = std::move(from.rdtClass);
  for (auto& [k, v] : from.unified) to.unified[k] = std::move(v);
  for (auto& [k, v] : from.env) to.env[k] = std::move(v);
  if (from.oomScoreAdj) to.oomScoreAdj = from.oomScoreAdj;
}

HookIntent runAll(const HookPod& pod, const HookContainer* container, const HookContext& ctx,
                  std::vector<std::string>* errors) {
  HookIntent intent;
  if (skipHooks(pod)) return intent;
  for (HookName hook : kAllHooks) {
    Status s = runHook(hook, pod, container, ctx, intent);
    if (!s && errors != nullptr) errors->push_back(s.error().message);
  }
  if (container != nullptr) {
    Status s = runHook(HookName::kOomScoreAdj, pod, container, ctx, intent);
    if (!s && errors != nullptr) errors->push_back(s.error().message);
  }
  return intent;
}

}  // namespace

int64_t milliCpuToShares(int64_t milli) {
  if (milli <= 0) return kMinShares;
  // Overflow-safe for any milli a quantity can hold.
  if (milli > kMaxShares * 1000 / 1024 + 1) return kMaxShares;
  return std::clamp(milli * 1024 / 1000, kMinShares, kMaxShares);
}

Result<std::map<std::string, ExtendedResources>> parseExtendedResourceSpec(std::string_view json) {
  const std::string where = std::string("annotation ") + kExtendedResourceSpecAnnotation + ": ";
  const Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return makeError(where + "not valid JSON");
  std::map<std::string, ExtendedResources> out;
  if (doc.is_null()) return out;
  if (!doc.is_object()) return makeError(where + "expected an object, got " + jsonTypeName(doc));
  auto containers = doc.find("containers");
  if (containers == doc.end() || containers->is_null()) return out;
  if (!containers->is_object()) {
    return makeError(where + "containers: expected an object, got " + jsonTypeName(*containers));
  }
  for (const auto& [name, spec] : containers->items()) {
    const std::string field = "containers." + name;
    if (spec.is_null()) continue;
    if (!spec.is_object()) {
      return makeError(where + field + ": expected an object, got " + jsonTypeName(spec));
    }
    ExtendedResources res;
    if (auto r = spec.find("requests"); r != spec.end()) {
      if (auto s = readList(*r, field + ".requests", res.requests); !s) {
        return makeError(where + s.error().message);
      }
    }
    if (auto l = spec.find("limits"); l != spec.end()) {
      if (auto s = readList(*l, field + ".limits", res.limits); !s) {
        return makeError(where + s.error().message);
      }
    }
    out[name] = res;
  }
  return out;
}

const HookContainer* HookPod::container(std::string_view n) const {
  for (const HookContainer& c : containers) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

KoordQos HookPod::qosWithDefault() const { return koordQosWithDefault(rawQos, kubeQos); }

void mergeExtendedResourceSpec(HookPod& pod) {
  auto it = pod.annotations.find(kExtendedResourceSpecAnnotation);
  if (it == pod.annotations.end()) return;
  auto spec = parseExtendedResourceSpec(it->second);
  if (!spec) {
    pod.extendedResourceError = spec.error().message;
    return;
  }
  auto fill = [](std::optional<int64_t>& to, const std::optional<int64_t>& from) {
    if (!to && from) to = from;
  };
  for (HookContainer& c : pod.containers) {
    auto e = spec->find(c.name);
    if (e == spec->end()) continue;
    fill(c.requests.batchCpuMilli, e->second.requests.batchCpuMilli);
    fill(c.requests.batchMemoryBytes, e->second.requests.batchMemoryBytes);
    fill(c.limits.batchCpuMilli, e->second.limits.batchCpuMilli);
    fill(c.limits.batchMemoryBytes, e->second.limits.batchMemoryBytes);
  }
  // A pod the kubelet has not listed yet (a sandbox, or a container before the next
  // poll): the annotation's other containers are the pod's too, as app containers
  // (the annotation does not say which are init containers; koordlet sums them all
  // at its sandbox hook as well). With the kubelet's spec, its containers alone.
  if (pod.kubelet != nullptr) return;
  for (const auto& [name, res] : *spec) {
    if (pod.container(name) != nullptr) continue;
    HookContainer c;
    c.name = name;
    c.requests = res.requests;
    c.limits = res.limits;
    pod.containers.push_back(std::move(c));
  }
}

Result<HookPod> hookPodFromKubelet(const Pod& pod) {
  HookPod out;
  out.uid = pod.uid;
  out.ns = pod.ns;
  out.name = pod.name;
  out.labels = pod.labels;
  out.annotations = pod.annotations;
  out.kubeQos = pod.kubeQos;
  out.rawQos = pod.koordQos;
  out.kubelet = &pod;
  out.containers.reserve(pod.initContainers.size() + pod.containers.size());
  for (const auto* list : {&pod.initContainers, &pod.containers}) {
    for (const Container& c : *list) {
      out.containers.push_back(HookContainer{c.name, c.id, c.requests, c.limits, c.kind()});
    }
  }
  mergeExtendedResourceSpec(out);
  return out;
}

bool HookIntent::empty() const {
  return !cpuShares && !cfsQuota && !memoryLimit && !cpuset && !rdtClass && unified.empty() &&
         env.empty() && !oomScoreAdj;
}

const char* toString(HookName h) {
  switch (h) {
    case HookName::kBatchResource:
      return "BatchResource";
    case HookName::kCpusetAllocator:
      return "CPUSetAllocator";
    case HookName::kResctrl:
      return "Resctrl";
    case HookName::kCpuBurst:
      return "CPUBurst";
    case HookName::kMemoryQos:
      return "MemoryQoS";
    case HookName::kCpuNormalization:
      return "CPUNormalization";
    case HookName::kGpuEnvInject:
      return "GPUEnvInject";
    case HookName::kOomScoreAdj:
      return "OOMScoreAdj";
  }
  return "unknown";
}

bool skipHooks(const HookPod& pod) {
  auto it = pod.labels.find(kSkipHookServerLabel);
  return it != pod.labels.end() && it->second == "true";
}

Status runHook(HookName hook, const HookPod& pod, const HookContainer* container,
               const HookContext& ctx, HookIntent& intent) {
  // Computed apart, then merged: a hook that fails as a whole sets nothing before
  // it returns its error; one that refuses single fields (a value that cannot be
  // right) has set only the others.
  HookIntent part;
  Status s = Ok{};
  switch (hook) {
    case HookName::kBatchResource:
      s = batchResource(pod, container, ctx, part);
      break;
    case HookName::kCpusetAllocator:
      s = cpusetAllocator(pod, container, ctx, part);
      break;
    case HookName::kResctrl:
      s = resctrl(pod, container, ctx, part);
      break;
    case HookName::kCpuBurst:
      s = cpuBurstLimit(container, ctx);
      if (s) s = cpuBurst(pod, container, ctx, part);
      break;
    case HookName::kMemoryQos:
      s = memoryQos(pod, container, ctx, part);
      break;
    case HookName::kCpuNormalization:
      s = cpuNormalization(pod, container, ctx, part);
      break;
    case HookName::kGpuEnvInject:
      if (ctx.gpuEnvInject && container != nullptr) {
        auto env = gpuEnv(pod.annotations);
        if (env) {
          part.env = std::move(*env);
        } else {
          s = env.error();
        }
      }
      break;
    case HookName::kOomScoreAdj:
      if (ctx.oomScoreAdj && container != nullptr) {
        auto v = oomScoreAdjFor(pod.annotations, container->name);
        if (v) {
          part.oomScoreAdj = *v;
        } else {
          s = Error{"container " + container->name + ": " + v.error().message};
        }
      }
      break;
  }
  mergeInto(intent, std::move(part));
  if (!s) return hookError(pod, hook, s.error().message);
  return Ok{};
}

HookIntent podIntent(const HookPod& pod, const HookContext& ctx, std::vector<std::string>* errors) {
  return runAll(pod, nullptr, ctx, errors);
}

HookIntent containerIntent(const HookPod& pod, const HookContainer& container,
                           const HookContext& ctx, std::vector<std::string>* errors) {
  return runAll(pod, &container, ctx, errors);
}

}  // namespace koord
