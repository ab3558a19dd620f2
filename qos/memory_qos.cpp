#include "qos/memory_qos.h"

#include "qos/write_reasons.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <optional>

#include <nlohmann/json.hpp>

namespace koord {
namespace {

using nlohmann::json;

constexpr std::string_view kWhere = "annotation koordinator.sh/memoryQOS: ";

enum class FieldType { kInt, kBool };

struct Field {
  const char* name;
  FieldType type;
  int64_t min;
  int64_t max;
  int64_t MemoryQos::*member;  // nullptr: accepted, checked, not acted on
};

constexpr int64_t kNoMax = INT64_MAX;

const std::array<Field, 14>& fields() {
  static const std::array<Field, 14> kFields{{
      {"enable", FieldType::kBool, 0, 1, nullptr},  // handled apart (a bool member)
      {"minLimitPercent", FieldType::kInt, 0, 100, &MemoryQos::minLimitPercent},
      {"lowLimitPercent", FieldType::kInt, 0, 100, &MemoryQos::lowLimitPercent},
      {"throttlingPercent", FieldType::kInt, 0, 100, &MemoryQos::throttlingPercent},
      {"wmarkRatio", FieldType::kInt, 0, 100, &MemoryQos::wmarkRatio},
      {"wmarkScalePermill", FieldType::kInt, 1, 1000, &MemoryQos::wmarkScalePermill},
      {"wmarkMinAdj", FieldType::kInt, -25, 50, &MemoryQos::wmarkMinAdj},
      {"priorityEnable", FieldType::kInt, 0, 1, &MemoryQos::priorityEnable},
      {"priority", FieldType::kInt, 0, 12, &MemoryQos::priority},
      {"oomKillGroup", FieldType::kInt, 0, 1, &MemoryQos::oomKillGroup},
      // Alinux page-cache limit: no knob yet.
      {"pageCacheEnable", FieldType::kBool, 0, 1, nullptr},
      {"pageCacheLimitPercent", FieldType::kInt, 0, 100, nullptr},
      {"pageCacheLimitSize", FieldType::kInt, 0, kNoMax, nullptr},
      {"pageCacheReclaimSync", FieldType::kBool, 0, 1, nullptr},
  }};
  return kFields;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

std::string describeValue(const json& v) {
  if (v.is_string()) return "string " + v.dump();
  if (v.is_boolean()) return "boolean " + v.dump();
  if (v.is_number()) return "number " + v.dump();
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return v.dump();
}

Error fieldError(std::string_view field, const std::string& what) {
  return makeError(std::string(kWhere) + std::string(field) + ": " + what);
}

// x × pct / 100, truncated like Go's int64 arithmetic, without overflow for 0 ≤ pct ≤ 100.
int64_t percentOf(int64_t x, int64_t pct) { return (x / 100) * pct + (x % 100) * pct / 100; }

const MemoryQos& classBlock(const ResourceQosStrategy& q, KoordQos qos) {
  switch (qos) {
    case KoordQos::kLSE:
    case KoordQos::kLSR:
      return q.lsr.memory;
    case KoordQos::kLS:
      return q.ls.memory;
    case KoordQos::kBE:
      return q.be.memory;
    case KoordQos::kSystem:
      return q.system.memory;
    case KoordQos::kNone:
      break;
  }
  return q.ls.memory;  // cannot happen: qosWithDefault never gives kNone
}

// The most memory one container may request or be limited to, 64 TiB: above any
// node's memory today, and small enough that the sums of a node's pods cannot
// overflow int64. A pod with a larger value (a hostile or broken annotation) is left
// alone, with an error naming it, rather than written with a wrapped sum.
constexpr int64_t kMaxContainerBytes = int64_t{1} << 46;

// The first request or limit above kMaxContainerBytes, named; "" when none.
std::string implausibleMemory(const Pod& pod) {
  const bool be = pod.koordQos == KoordQos::kBE;
  const char* field = be ? kBatchMemoryResource : "memory";
  auto check = [&](const Container& c) -> std::string {
    for (const auto& [what, v] :
         {std::pair<const char*, const std::optional<int64_t>&>{
              "request", be ? c.requests.batchMemoryBytes : c.requests.memoryBytes},
          {"limit", be ? c.limits.batchMemoryBytes : c.limits.memoryBytes}}) {
      if (v && *v > kMaxContainerBytes) {
        return "container " + c.name + ": " + field + " " + what + " " + std::to_string(*v) +
               " is above 64 TiB";
      }
    }
    return "";
  };
  for (const Container& c : pod.containers) {
    if (auto why = check(c); !why.empty()) return why;
  }
  for (const Container& c : pod.initContainers) {
    if (auto why = check(c); !why.empty()) return why;
  }
  return "";
}

// The request the percents apply to. BE by the raw label (koordlet's
// GetPodQoSClassRaw): batch-memory; else memory.
int64_t containerRequest(const Pod& pod, const Container& c) {
  const auto& v =
      pod.koordQos == KoordQos::kBE ? c.requests.batchMemoryBytes : c.requests.memoryBytes;
  return std::max<int64_t>(v.value_or(0), 0);
}

int64_t containerLimit(const Pod& pod, const Container& c) {
  const auto& v = pod.koordQos == KoordQos::kBE ? c.limits.batchMemoryBytes : c.limits.memoryBytes;
  return v.value_or(-1);
}

int64_t podRequest(const Pod& pod) {
  int64_t sum = 0;
  for (const Container& c : pod.containers) sum += containerRequest(pod, c);
  if (pod.koordQos == KoordQos::kBE) return sum;
  // Kubernetes' effective pod request: init containers run one at a time, before.
  for (const Container& c : pod.initContainers) sum = std::max(sum, containerRequest(pod, c));
  return sum;
}

}  // namespace

namespace {

struct Merged {
  MemoryQos cfg;
  bool policyNone = false;  // the annotation turned memory QoS off for the pod
};

Result<Merged> mergeAnnotation(const MemoryQos& classBlock, const MemoryQos& autoBlock,
                               std::string_view text) {
  if (text.size() > 65536) return makeError(std::string(kWhere) + "longer than 65536 bytes");
  json obj = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (obj.is_discarded()) return makeError(std::string(kWhere) + "invalid JSON");
  if (!obj.is_object()) {
    return makeError(std::string(kWhere) + "expected a JSON object, got " + describeValue(obj));
  }
  std::string policy = "default";
  std::vector<std::pair<const Field*, const json*>> set;
  for (const auto& [key, value] : obj.items()) {
    if (equalsIgnoreCase(key, "policy")) {
      if (value.is_null()) continue;
      if (!value.is_string())
        return fieldError("policy", "expected a string, got " + describeValue(value));
      policy = value.get<std::string>();
      if (policy.empty()) policy = "default";
      if (policy != "default" && policy != "none" && policy != "auto") {
        return fieldError("policy", "\"" + policy + "\" is not one of default, none, auto");
      }
      continue;
    }
    const Field* field = nullptr;
    for (const Field& f : fields()) {
      if (key == f.name) field = &f;
    }
    if (field == nullptr) {
      for (const Field& f : fields()) {
        if (equalsIgnoreCase(key, f.name)) field = &f;
      }
    }
    if (field == nullptr) return fieldError(key, "unknown field");
    if (value.is_null()) continue;
    if (field->type == FieldType::kBool) {
      if (!value.is_boolean()) {
        return fieldError(field->name, "expected a boolean, got " + describeValue(value));
      }
    } else {
      if (!value.is_number_integer()) {
        return fieldError(field->name, "expected an integer, got " + describeValue(value));
      }
      const bool tooBig = value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX;
      const int64_t n = tooBig ? INT64_MAX : value.get<int64_t>();
      if (tooBig || n < field->min || n > field->max) {
        return fieldError(field->name,
                          value.dump() + " is out of range " + std::to_string(field->min) + ".." +
                              (field->max == kNoMax ? "" : std::to_string(field->max)));
      }
    }
    set.emplace_back(field, &value);
  }
  if (policy == "none") return Merged{noneMemoryQos(), true};
  MemoryQos out = policy == "auto" ? autoBlock : classBlock;
  for (const auto& [field, value] : set) {
    if (field->member != nullptr) {
      out.*(field->member) = value->get<int64_t>();
    } else if (std::string_view(field->name) == "enable") {
      out.enable = value->get<bool>();
    }
  }
  return Merged{out, false};
}

}  // namespace

Result<MemoryQos> mergeMemoryQosAnnotation(const MemoryQos& classBlock, const MemoryQos& autoBlock,
                                           std::string_view text) {
  auto merged = mergeAnnotation(classBlock, autoBlock, text);
  if (!merged) return merged.error();
  return merged->cfg;
}

MemoryQosResult MemoryQosPlanner::run(const QosSnapshot& snap, const ResourceQosStrategy& config,
                                      const MemoryQosOptions& options) const {
  const bool enabled = options.enabled;
  const int64_t pageSize = options.pageSize;
  const int64_t nodeAllocatableMemory = options.nodeAllocatableMemory;
  MemoryQosResult result;
  if (!enabled) return result;
  if (pageSize <= 0 || nodeAllocatableMemory <= 0) {
    result.errors.push_back("memory qos: round skipped: page size " + std::to_string(pageSize) +
                            ", node allocatable memory " + std::to_string(nodeAllocatableMemory) +
                            " (both must be positive)");
    return result;
  }
  const ResourceQosStrategy node = resetDisabled(config);
  const ResourceQosStrategy builtIn = defaultNodeSlo().qos;
  const KnobSupport& support = options.support;
  const bool softLimits = options.softLimitFallback && !support.has(Knob::kMemoryLow) &&
                          support.has(Knob::kMemorySoftLimit);

  // Knobs this kernel lacks are not emitted at all.
  auto emit = [&](std::vector<CgroupWrite>& out, const std::string& dir, Knob knob, int64_t v) {
    if (!support.has(knob)) return;
    out.push_back(CgroupWrite{dir, knob, KnobValue::of(v), kOwnerMemoryQos});
  };
  // Alinux async-reclaim watermarks: container and pod dirs.
  auto emitWmark = [&](std::vector<CgroupWrite>& out, const std::string& dir, const MemoryQos& c) {
    emit(out, dir, Knob::kMemoryWmarkRatio, c.wmarkRatio);
    emit(out, dir, Knob::kMemoryWmarkScaleFactor, c.wmarkScalePermill);
    emit(out, dir, Knob::kMemoryWmarkMinAdj, c.wmarkMinAdj);
  };
  // OOM priority (Alinux) and oom.group: container, pod and kube-QoS dirs.
  // A container's oom.group is written only to turn it on: 0 leaves the value the
  // kubelet and runtime chose (kubelet 1.28+ on v2 sets 1, kill the whole container).
  auto emitOom = [&](std::vector<CgroupWrite>& out, const std::string& dir, const MemoryQos& c,
                     bool container) {
    emit(out, dir, Knob::kMemoryPriority, c.priority);
    emit(out, dir, Knob::kMemoryUsePriorityOom, c.priorityEnable);
    if (!container || c.oomKillGroup != 0) emit(out, dir, Knob::kMemoryOomGroup, c.oomKillGroup);
  };
  auto pageDown = [&](int64_t v) { return v / pageSize * pageSize; };

  // Σ pod min/low per kube QoS; nullopt: no active pod of that class.
  std::array<std::optional<int64_t>, 3> qosMin, qosLow;
  std::vector<CgroupWrite> podWrites;
  for (const PodView& view : snap.pods) {
    if (view.pod == nullptr || !view.pod->active()) continue;
    const Pod& pod = *view.pod;
    if (std::string why = implausibleMemory(pod); !why.empty()) {
      result.errors.push_back("pod " + pod.ns + "/" + pod.name + ": " + why +
                              ": memory QoS leaves the pod alone");
      continue;
    }
    MemoryQos cfg = classBlock(node, view.qos);
    bool off = !classBlock(config, view.qos).enable;  // resetDisabled gave the none values
    if (auto it = pod.annotations.find(kMemoryQosAnnotation); it != pod.annotations.end()) {
      auto merged = mergeAnnotation(cfg, classBlock(builtIn, view.qos), it->second);
      if (merged) {
        cfg = merged->cfg;
        off = off || merged->policyNone;
      } else {
        result.errors.push_back("pod " + pod.ns + "/" + pod.name + ": " + merged.error().message +
                                " (the class config is used)");
      }
    }
    // v1 fallback: BE only (the koordinator label, as view.qos gives it).
    const bool softLimit = softLimits && view.qos == KoordQos::kBE;

    const int64_t req = podRequest(pod);
    const int64_t podMin = percentOf(req, cfg.minLimitPercent);
    int64_t podLow = percentOf(req, cfg.lowLimitPercent);
    if (podLow > 0 && podLow < podMin) podLow = podMin;
    const auto k = static_cast<size_t>(pod.kubeQos);
    qosMin[k] = qosMin[k].value_or(0) + percentOf(req, cfg.minLimitPercent);
    qosLow[k] = qosLow[k].value_or(0) + percentOf(req, cfg.lowLimitPercent);
    if (!view.dir.empty()) {
      emit(podWrites, view.dir, Knob::kMemoryMin, podMin);
      emit(podWrites, view.dir, Knob::kMemoryLow, podLow);
      emitWmark(podWrites, view.dir, cfg);
      emitOom(podWrites, view.dir, cfg, false);
      if (softLimit) emit(podWrites, view.dir, Knob::kMemorySoftLimit, off ? -1 : pageDown(podLow));
    }

    for (const ContainerView& cv : view.containers) {
      if (cv.dir.empty() || cv.container == nullptr || cv.container->init) continue;
      const int64_t creq = containerRequest(pod, *cv.container);
      const int64_t min = percentOf(creq, cfg.minLimitPercent);
      int64_t low = percentOf(creq, cfg.lowLimitPercent);
      if (low > 0 && low < min) low = min;
      int64_t high = -1;  // "max"
      if (cfg.throttlingPercent != 0) {
        const int64_t climit = containerLimit(pod, *cv.container);
        const int64_t limit = climit > 0 ? climit : nodeAllocatableMemory;
        high = pageDown(creq + percentOf(limit - creq, cfg.throttlingPercent));
        if (high > 0 && high < min) high = min;
      }
      emit(podWrites, cv.dir, Knob::kMemoryMin, min);
      emit(podWrites, cv.dir, Knob::kMemoryLow, low);
      emit(podWrites, cv.dir, Knob::kMemoryHigh, high);
      emitWmark(podWrites, cv.dir, cfg);
      emitOom(podWrites, cv.dir, cfg, true);
      if (softLimit) emit(podWrites, cv.dir, Knob::kMemorySoftLimit, off ? -1 : pageDown(low));
    }
  }

  // The Guaranteed dir is the kubepods root, the parent of the other two.
  const size_t g = static_cast<size_t>(KubeQos::kGuaranteed);
  std::optional<int64_t> rootMin, rootLow;
  for (size_t k = 0; k < 3; ++k) {
    if (qosMin[k]) rootMin = rootMin.value_or(0) + *qosMin[k];
    if (qosLow[k]) rootLow = rootLow.value_or(0) + *qosLow[k];
  }
  qosMin[g] = rootMin;
  qosLow[g] = rootLow;
  for (KubeQos q : {KubeQos::kGuaranteed, KubeQos::kBurstable, KubeQos::kBestEffort}) {
    const auto k = static_cast<size_t>(q);
    const std::string dir = layout_.qosDir(q);
    if (qosMin[k]) emit(result.writes, dir, Knob::kMemoryMin, *qosMin[k]);
    if (qosLow[k]) emit(result.writes, dir, Knob::kMemoryLow, *qosLow[k]);
    // koordlet's GetKubeQoSResourceQoSByQoSClass; written with or without pods.
    const MemoryQos& qosCfg = q == KubeQos::kGuaranteed  ? node.lsr.memory
                              : q == KubeQos::kBurstable ? node.ls.memory
                                                         : node.be.memory;
    emitOom(result.writes, dir, qosCfg, false);
  }
  result.writes.insert(result.writes.end(), std::make_move_iterator(podWrites.begin()),
                       std::make_move_iterator(podWrites.end()));
  return result;
}

StrategyOutcome MemoryQosStrategy::run(const StrategyContext& ctx) {
  MemoryQosOptions options;
  options.enabled = true;
  options.pageSize = ctx.node.pageSize;
  options.nodeAllocatableMemory = ctx.node.nodeAllocatableMemory;
  options.support = ctx.node.support;
  options.softLimitFallback = softLimitFallback_;
  MemoryQosResult r = planner_.run(ctx.snapshot, ctx.spec.qos, options);
  // Moved, not copied: at 500 pods on v2 a round plans ~10,000 writes, ~3 MB.
  StrategyOutcome out{std::move(r.writes), r.errors, {}, {}};
  // The blocks by class; the pod's QoS (GET /explain's pod) says which applies.
  auto why = std::make_shared<WriteReason>();
  for (const char* cls : {"lsrClass", "lsClass", "beClass"}) {
    const std::string block = std::string("resourceQOSStrategy.") + cls + ".memoryQOS.";
    for (const char* field : {"enable", "minLimitPercent", "lowLimitPercent", "throttlingPercent",
                              "wmarkRatio", "priority", "oomKillGroup"}) {
      why->inputs.push_back(sloInput(ctx.spec, block + field));
    }
  }
  why->add("nodeAllocatableMemory", std::to_string(ctx.node.nodeAllocatableMemory));
  why->rule =
      "memory.min = request x minLimitPercent, memory.low = request x lowLimitPercent, "
      "memory.high = limit (or node allocatable) x throttlingPercent, of the pod's class; "
      "kube-QoS dirs get their pods' sums";
  out.why = std::move(why);
  out.result = std::move(r);
  return out;
}

}  // namespace koord
