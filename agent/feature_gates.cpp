#include "agent/feature_gates.h"

#include "agent/flag_set.h"
#include "base/text_scan.h"

namespace koord {
namespace {

constexpr std::string_view kAllAlpha = "AllAlpha";
constexpr std::string_view kAllBeta = "AllBeta";

std::string_view trim(std::string_view s) {
  constexpr std::string_view kBlank = " \t\n\r\v\f";
  const size_t b = s.find_first_not_of(kBlank);
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(kBlank);
  return s.substr(b, e - b + 1);
}

const GateSpec* findGate(std::string_view name) {
  for (const GateSpec& g : FeatureGates::known()) {
    if (name == g.name) return &g;
  }
  return nullptr;
}

}  // namespace

const std::vector<GateSpec>& FeatureGates::known() {
  // koordlet's core gates (pkg/features/koordlet_features.go), then the runtime
  // hook gates registered into the same set (pkg/koordlet/runtimehooks/config.go).
  // The last column: whether this version reads the gate. AuditEvents is not read
  // (the audit log follows --audit-log-dir alone), nor is the Resctrl hook gate (the
  // resctrl hook follows RdtResctrl).
  static const std::vector<GateSpec> kGates = {
      {"AuditEvents", false, GateStage::kAlpha, false},
      {"AuditEventsHTTPHandler", false, GateStage::kAlpha, false},
      {"BECPUSuppress", true, GateStage::kBeta, true},
      {"BECPUManager", false, GateStage::kAlpha, false},
      {"BECPUEvict", false, GateStage::kAlpha, true},
      {"CPUEvict", false, GateStage::kAlpha, true},
      {"CPUAllocatableEvict", false, GateStage::kAlpha, true},
      {"BEMemoryEvict", false, GateStage::kAlpha, true},
      {"MemoryEvict", false, GateStage::kAlpha, true},
      {"MemoryAllocatableEvict", false, GateStage::kAlpha, true},
      {"CPUBurst", true, GateStage::kBeta, true},
      {"SystemConfig", false, GateStage::kAlpha, false},
      {"RdtResctrl", true, GateStage::kBeta, true},
      {"ResctrlCollector", false, GateStage::kAlpha, true},
      {"CgroupReconcile", false, GateStage::kAlpha, true},
      {"NodeTopologyReport", true, GateStage::kBeta, true},
      {"Accelerators", false, GateStage::kAlpha, true},
      {"RDMADevices", false, GateStage::kAlpha, false},
      {"CPICollector", false, GateStage::kAlpha, false},
      {"Libpfm4", false, GateStage::kAlpha, false},
      {"PSICollector", false, GateStage::kAlpha, true},
      {"BlkIOReconcile", false, GateStage::kAlpha, false},
      {"ColdPageCollector", false, GateStage::kAlpha, false},
      {"HugePageReport", false, GateStage::kAlpha, false},
      {"PodResourcesProxy", false, GateStage::kAlpha, false},
      {"HamiCoreVGPUMonitor", false, GateStage::kAlpha, false},
      {"PerCPUMetric", false, GateStage::kAlpha, false},
      {"NodeMetricPromMetrics", false, GateStage::kAlpha, false},
      // Runtime hook gates.
      {"GroupIdentity", true, GateStage::kBeta, true},
      {"CPUSetAllocator", true, GateStage::kBeta, true},
      {"GPUEnvInject", false, GateStage::kAlpha, true},
      {"RDMADeviceInject", false, GateStage::kAlpha, false},
      {"BatchResource", true, GateStage::kBeta, true},
      {"CPUNormalization", false, GateStage::kAlpha, true},
      {"CoreSched", false, GateStage::kAlpha, false},
      {"TerwayQoS", false, GateStage::kAlpha, false},
      {"TCNetworkQoS", false, GateStage::kAlpha, false},
      {"Resctrl", false, GateStage::kAlpha, false},
      {"OOMScoreAdj", false, GateStage::kAlpha, true},
  };
  return kGates;
}

FeatureGates::FeatureGates() { apply(); }

Status FeatureGates::set(std::string_view spec) {
  // Parse the whole spec into a copy first so that an error changes nothing.
  auto raw = raw_;
  text::Split split(spec, ',');
  for (std::string_view field; split.next(field);) {
    const std::string_view item = trim(field);
    if (item.empty()) continue;  // "A=true,,B=false" and a trailing comma are fine

    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return makeError("malformed feature gate item " + quoteText(item) +
                       ": want Name=true or Name=false");
    }
    const std::string_view name = trim(item.substr(0, eq));
    const std::string_view value = trim(item.substr(eq + 1));
    if (name != kAllAlpha && name != kAllBeta && findGate(name) == nullptr) {
      return makeError("unrecognized feature gate " + quoteText(name));
    }
    auto on = parseGoBool(value);
    if (!on) {
      return makeError("invalid value " + quoteText(value) + " for feature gate " +
                       std::string(name) + ": want true or false");
    }
    raw[std::string(name)] = *on;
  }
  raw_ = std::move(raw);
  apply();
  return Ok{};
}

void FeatureGates::apply() {
  const auto allAlpha = raw_.find(kAllAlpha);
  const auto allBeta = raw_.find(kAllBeta);
  values_.clear();
  for (const GateSpec& g : known()) {
    bool on = g.defaultOn;
    if (auto it = raw_.find(std::string_view(g.name)); it != raw_.end()) {
      on = it->second;
    } else if (g.stage == GateStage::kAlpha && allAlpha != raw_.end()) {
      on = allAlpha->second;
    } else if (g.stage == GateStage::kBeta && allBeta != raw_.end()) {
      on = allBeta->second;
    }
    values_[g.name] = on;
  }
}

std::vector<std::string> FeatureGates::enabledNotImplemented() const {
  std::vector<std::string> out;
  for (const auto& [name, on] : values_) {  // a sorted map: the result is sorted
    if (on && !implemented(name)) out.push_back(name);
  }
  return out;
}

bool FeatureGates::implemented(std::string_view gate) {
  const GateSpec* g = findGate(gate);
  return g != nullptr && g->implemented;
}

bool FeatureGates::enabled(std::string_view gate) const {
  auto it = values_.find(gate);
  return it != values_.end() && it->second;
}

}  // namespace koord
