// The NodeSLO spec: koordlet's defaults, the merge of a file over them, the typed
// view the strategies read, and the two entry points. Reading the text is
// qos/yaml_json.h, the field checks qos/slo_schema.h, the file's form (bare spec,
// NodeSLO, ConfigMap) qos/slo_source.h.
#include "qos/slo_config.h"

#include <utility>

#include "kube/pod.h"
#include "qos/slo_schema.h"
#include "qos/slo_source.h"
#include "qos/yaml_json.h"

namespace koord {

const char* toString(CpuSuppressPolicy p) {
  switch (p) {
    case CpuSuppressPolicy::kCpuset:
      return "cpuset";
    case CpuSuppressPolicy::kCfsQuota:
      return "cfsQuota";
  }
  return "cpuset";
}

const char* toString(CpuEvictPolicy p) {
  return p == CpuEvictPolicy::kEvictByAllocatable ? "evictByAllocatable" : "evictByRealLimit";
}

const char* toString(CpuBurstPolicy p) {
  switch (p) {
    case CpuBurstPolicy::kNone:
      return "none";
    case CpuBurstPolicy::kCpuBurstOnly:
      return "cpuBurstOnly";
    case CpuBurstPolicy::kCfsQuotaBurstOnly:
      return "cfsQuotaBurstOnly";
    case CpuBurstPolicy::kAuto:
      return "auto";
  }
  return "none";
}

namespace {

using slo::boolOr;
using slo::describe;
using slo::intOr;
using slo::member;
using slo::stringOr;
using json = nlohmann::json;

const std::string kAnnotationWhere = std::string("annotation ") + kCpuBurstAnnotation + ": ";

// ---------------------------------------------------------------------------
// Defaults (koordinator pkg/util/sloconfig/nodeslo_config.go, reference §5.1).

json cpuQosJson(int64_t groupIdentity, bool coreExpeller) {
  return {{"enable", false},
          {"groupIdentity", groupIdentity},
          {"schedIdle", 0},
          {"coreExpeller", coreExpeller}};
}

json memoryQosJson(int64_t wmarkRatio, int64_t wmarkScalePermill, int64_t wmarkMinAdj) {
  return {{"enable", false},
          {"minLimitPercent", 0},
          {"lowLimitPercent", 0},
          {"throttlingPercent", 0},
          {"wmarkRatio", wmarkRatio},
          {"wmarkScalePermill", wmarkScalePermill},
          {"wmarkMinAdj", wmarkMinAdj},
          {"priorityEnable", 0},
          {"priority", 0},
          {"oomKillGroup", 0}};
}

json resctrlQosJson(int64_t catRangeEnd) {
  return {{"enable", false},
          {"catRangeStartPercent", 0},
          {"catRangeEndPercent", catRangeEnd},
          {"mbaPercent", 100}};
}

json blkioNone() { return {{"enable", false}}; }

json networkNone() {
  return {{"enable", false},
          {"ingressRequest", 0},
          {"ingressLimit", 0},
          {"egressRequest", 0},
          {"egressLimit", 0}};
}

json classJson(json cpu, json memory, json resctrl) {
  return {{"cpuQOS", std::move(cpu)},
          {"memoryQOS", std::move(memory)},
          {"resctrlQOS", std::move(resctrl)},
          {"blkioQOS", blkioNone()},
          {"networkQOS", networkNone()}};
}

const json& defaultSpecJson() {
  static const json spec = {
      {"resourceUsedThresholdWithBE",
       {{"enable", false},
        {"cpuSuppressThresholdPercent", 65},
        {"cpuSuppressPolicy", "cpuset"},
        {"memoryEvictThresholdPercent", 70},
        {"cpuEvictPolicy", "evictByRealLimit"}}},
      {"resourceQOSStrategy",
       {{"policies", {{"cpuPolicy", "groupIdentity"}, {"netQOSPolicy", "tc"}}},
        {"lsrClass",
         classJson(cpuQosJson(2, true), memoryQosJson(95, 20, -25), resctrlQosJson(100))},
        {"lsClass",
         classJson(cpuQosJson(2, true), memoryQosJson(95, 20, -25), resctrlQosJson(100))},
        {"beClass",
         classJson(cpuQosJson(-1, false), memoryQosJson(95, 20, 50), resctrlQosJson(30))},
        {"systemClass",
         classJson(cpuQosJson(0, false), memoryQosJson(0, 50, 0), resctrlQosJson(100))},
        {"cgroupRoot", {{"blkioQOS", blkioNone()}}}}},
      {"cpuBurstStrategy",
       {{"policy", "none"},
        {"cpuBurstPercent", 1000},
        {"cfsQuotaBurstPercent", 300},
        {"cfsQuotaBurstPeriodSeconds", -1},
        {"sharePoolThresholdPercent", 50}}},
      {"systemStrategy", {{"totalNetworkBandwidth", "0"}}},
      {"extensions", json::object()},
  };
  return spec;
}

// File fields replace defaults, objects merge field by field, arrays replace, a
// null keeps the default.
void mergeInto(json& base, const json& overlay) {
  if (!base.is_object() || !overlay.is_object()) {
    base = overlay;
    return;
  }
  for (const auto& item : overlay.items()) {
    if (item.value().is_null()) continue;
    auto it = base.find(item.key());
    if (it == base.end() || it->is_null()) {
      base[item.key()] = item.value();
    } else {
      mergeInto(*it, item.value());
    }
  }
}

// ---------------------------------------------------------------------------
// Typed view of the (validated) effective spec.
CpuBurstPolicy burstPolicyOf(const std::string& s, CpuBurstPolicy fallback) {
  if (s == "none") return CpuBurstPolicy::kNone;
  if (s == "cpuBurstOnly") return CpuBurstPolicy::kCpuBurstOnly;
  if (s == "cfsQuotaBurstOnly") return CpuBurstPolicy::kCfsQuotaBurstOnly;
  if (s == "auto") return CpuBurstPolicy::kAuto;
  return fallback;
}

// Fills the fields present in `obj` (a validated cpuBurstStrategy or annotation).
void applyBurst(const json& obj, CpuBurstConfig* c) {
  c->policy = burstPolicyOf(stringOr(obj, "policy", ""), c->policy);
  c->cpuBurstPercent = intOr(obj, "cpuBurstPercent", c->cpuBurstPercent);
  c->cfsQuotaBurstPercent = intOr(obj, "cfsQuotaBurstPercent", c->cfsQuotaBurstPercent);
  c->cfsQuotaBurstPeriodSeconds =
      intOr(obj, "cfsQuotaBurstPeriodSeconds", c->cfsQuotaBurstPeriodSeconds);
  c->sharePoolThresholdPercent =
      intOr(obj, "sharePoolThresholdPercent", c->sharePoolThresholdPercent);
}

ResourceQos classFrom(const json& obj) {
  ResourceQos q;
  const json& cpu = member(obj, "cpuQOS");
  q.cpu.enable = boolOr(cpu, "enable", q.cpu.enable);
  q.cpu.groupIdentity = intOr(cpu, "groupIdentity", q.cpu.groupIdentity);
  q.cpu.schedIdle = intOr(cpu, "schedIdle", q.cpu.schedIdle);
  q.cpu.coreExpeller = boolOr(cpu, "coreExpeller", q.cpu.coreExpeller);
  const json& mem = member(obj, "memoryQOS");
  MemoryQos& m = q.memory;
  m.enable = boolOr(mem, "enable", m.enable);
  m.minLimitPercent = intOr(mem, "minLimitPercent", m.minLimitPercent);
  m.lowLimitPercent = intOr(mem, "lowLimitPercent", m.lowLimitPercent);
  m.throttlingPercent = intOr(mem, "throttlingPercent", m.throttlingPercent);
  m.wmarkRatio = intOr(mem, "wmarkRatio", m.wmarkRatio);
  m.wmarkScalePermill = intOr(mem, "wmarkScalePermill", m.wmarkScalePermill);
  m.wmarkMinAdj = intOr(mem, "wmarkMinAdj", m.wmarkMinAdj);
  m.priorityEnable = intOr(mem, "priorityEnable", m.priorityEnable);
  m.priority = intOr(mem, "priority", m.priority);
  m.oomKillGroup = intOr(mem, "oomKillGroup", m.oomKillGroup);
  const json& rdt = member(obj, "resctrlQOS");
  q.resctrl.enable = boolOr(rdt, "enable", q.resctrl.enable);
  q.resctrl.catRangeStartPercent =
      intOr(rdt, "catRangeStartPercent", q.resctrl.catRangeStartPercent);
  q.resctrl.catRangeEndPercent = intOr(rdt, "catRangeEndPercent", q.resctrl.catRangeEndPercent);
  q.resctrl.mbaPercent = intOr(rdt, "mbaPercent", q.resctrl.mbaPercent);
  return q;
}

NodeSloSpec typedFrom(json effective) {
  NodeSloSpec s;
  const json& t = member(effective, "resourceUsedThresholdWithBE");
  s.threshold.enable = boolOr(t, "enable", s.threshold.enable);
  s.threshold.cpuSuppressThresholdPercent =
      intOr(t, "cpuSuppressThresholdPercent", s.threshold.cpuSuppressThresholdPercent);
  if (member(t, "cpuSuppressMinPercent").is_number_integer()) {
    s.threshold.cpuSuppressMinPercent = intOr(t, "cpuSuppressMinPercent", 0);
  }
  s.threshold.cpuSuppressPolicy = stringOr(t, "cpuSuppressPolicy", "cpuset") == "cfsQuota"
                                      ? CpuSuppressPolicy::kCfsQuota
                                      : CpuSuppressPolicy::kCpuset;
  s.threshold.memoryEvictThresholdPercent =
      intOr(t, "memoryEvictThresholdPercent", s.threshold.memoryEvictThresholdPercent);
  const auto optInt = [&](const char* field, std::optional<int64_t>* out) {
    if (member(t, field).is_number_integer()) *out = intOr(t, field, 0);
  };
  optInt("memoryEvictLowerPercent", &s.threshold.memoryEvictLowerPercent);
  optInt("cpuEvictBESatisfactionUpperPercent", &s.threshold.cpuEvictBESatisfactionUpperPercent);
  optInt("cpuEvictBESatisfactionLowerPercent", &s.threshold.cpuEvictBESatisfactionLowerPercent);
  optInt("cpuEvictBEUsageThresholdPercent", &s.threshold.cpuEvictBEUsageThresholdPercent);
  optInt("cpuEvictTimeWindowSeconds", &s.threshold.cpuEvictTimeWindowSeconds);
  optInt("cpuEvictThresholdPercent", &s.threshold.cpuEvictThresholdPercent);
  optInt("cpuEvictLowerPercent", &s.threshold.cpuEvictLowerPercent);
  optInt("evictEnabledPriorityThreshold", &s.threshold.evictEnabledPriorityThreshold);
  optInt("cpuAllocatableEvictThresholdPercent", &s.threshold.cpuAllocatableEvictThresholdPercent);
  optInt("cpuAllocatableEvictLowerPercent", &s.threshold.cpuAllocatableEvictLowerPercent);
  optInt("memoryAllocatableEvictThresholdPercent",
         &s.threshold.memoryAllocatableEvictThresholdPercent);
  optInt("memoryAllocatableEvictLowerPercent", &s.threshold.memoryAllocatableEvictLowerPercent);
  optInt("allocatableEvictPriorityThreshold", &s.threshold.allocatableEvictPriorityThreshold);
  s.threshold.cpuEvictPolicy =
      stringOr(t, "cpuEvictPolicy", "evictByRealLimit") == "evictByAllocatable"
          ? CpuEvictPolicy::kEvictByAllocatable
          : CpuEvictPolicy::kEvictByRealLimit;
  applyBurst(member(effective, "cpuBurstStrategy"), &s.cpuBurst);
  const json& q = member(effective, "resourceQOSStrategy");
  s.qos.lsr = classFrom(member(q, "lsrClass"));
  s.qos.ls = classFrom(member(q, "lsClass"));
  s.qos.be = classFrom(member(q, "beClass"));
  s.qos.system = classFrom(member(q, "systemClass"));
  s.qos.cgroupRoot = classFrom(member(q, "cgroupRoot"));
  s.effective = std::move(effective);
  return s;
}

}  // namespace

NodeSloSpec defaultNodeSlo() { return typedFrom(defaultSpecJson()); }

CpuQos noneCpuQos() { return CpuQos{false, 0, 0, false}; }

MemoryQos noneMemoryQos() {
  MemoryQos m;
  m.enable = false;
  m.minLimitPercent = 0;
  m.lowLimitPercent = 0;
  m.throttlingPercent = 0;
  m.wmarkRatio = 0;
  m.wmarkScalePermill = 50;
  m.wmarkMinAdj = 0;
  m.priorityEnable = 0;
  m.priority = 0;
  m.oomKillGroup = 0;
  return m;
}

ResctrlQos noneResctrlQos() { return ResctrlQos{false, 0, 100, 100}; }

ResourceQosStrategy resetDisabled(const ResourceQosStrategy& qos) {
  ResourceQosStrategy out = qos;
  for (ResourceQos* c : {&out.lsr, &out.ls, &out.be}) {
    if (!c->cpu.enable) c->cpu = noneCpuQos();
    if (!c->memory.enable) c->memory = noneMemoryQos();
    if (!c->resctrl.enable) c->resctrl = noneResctrlQos();
  }
  return out;
}

Result<NodeSloSpec> parseNodeSlo(std::string_view text, std::string_view fileName) {
  const std::string file(fileName);
  if (text.size() > kMaxSloConfigBytes) {
    return makeError(file + ": " + std::to_string(text.size()) + " bytes, more than the " +
                     std::to_string(kMaxSloConfigBytes) + "-byte limit for a config file");
  }
  auto yaml = parseYaml(text, file);
  if (!yaml) return yaml.error();
  if (yaml->documents > 1) {
    return makeError(file + ": " + std::to_string(yaml->documents) +
                     " YAML documents; expected one (a spec, a NodeSLO or a ConfigMap)");
  }
  json doc = std::move(yaml->value);

  if (doc.is_null()) return defaultNodeSlo();  // empty file or only comments
  if (!doc.is_object()) {
    return makeError(file + ": expected a mapping (a spec, a NodeSLO or a ConfigMap), got " +
                     describe(doc));
  }

  slo::Validator v(file + ": ");
  auto source = slo::sourceOf(std::move(doc), text, *yaml, file, v);
  if (!source) return source.error();
  slo::Source& src = *source;

  if (v.ok()) {
    v.checkMembers(src.spec, slo::specBlock(), [&](std::string_view f) { return src.pathOf(f); });
  }
  if (!v.ok()) return v.error();

  json effective = defaultSpecJson();
  mergeInto(effective, src.spec);
  slo::checkOrdering(
      effective, [&](std::string_view f) { return src.pathOf(f); }, v);
  if (!v.ok()) return v.error();

  // Unknown top-level fields are kept (newer koordinator versions add some), but
  // said so, since a misspelt strategy name would otherwise go unnoticed.
  for (const auto& item : src.spec.items()) {
    if (slo::specBlock().find(item.key()) != nullptr) continue;
    std::string_view close = slo::closestField(slo::specBlock(), item.key());
    src.notes.push_back(src.pathOf(item.key()) + ": not a field this agent knows, kept as-is" +
                        (close.empty() ? "" : "; did you mean " + std::string(close) + "?"));
  }

  NodeSloSpec spec = typedFrom(std::move(effective));
  spec.source = src.label;
  spec.origin = "file " + file + (src.label == "spec" ? "" : " (" + src.label + ")");
  spec.given = std::move(src.spec);
  spec.notes = std::move(src.notes);
  if (const auto it = spec.effective.find("hostApplications"); it != spec.effective.end()) {
    spec.hostApplications = parseHostApplications(*it, spec.notes);
  }
  return spec;
}

Result<CpuBurstConfig> mergeCpuBurstAnnotation(const CpuBurstConfig& node, std::string_view text) {
  if (text.size() > 65536) {
    return makeError(std::string(kAnnotationWhere) + "longer than 65536 bytes");
  }
  JsonText parsed = parseStrictJson(std::string(text));
  if (!parsed.error.empty()) {
    std::string at = parsed.line == 0 ? "" : " at column " + std::to_string(parsed.column);
    if (parsed.line > 1) {
      at = " at line " + std::to_string(parsed.line) + ", column " + std::to_string(parsed.column);
    }
    return makeError(std::string(kAnnotationWhere) + "invalid JSON" + at + ": " + parsed.error);
  }
  json& obj = parsed.value;
  if (!obj.is_object()) {
    return makeError(std::string(kAnnotationWhere) + "expected a JSON object, got " +
                     describe(obj));
  }
  slo::Validator v(kAnnotationWhere);
  v.checkBlock(obj, slo::cpuBurstAnnotationBlock(), "");
  if (!v.ok()) return v.error();
  CpuBurstConfig out = node;
  applyBurst(obj, &out);
  return out;
}

}  // namespace koord
