#include "agent/feature_gates.h"

#include "agent/flag_set.h"

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
  static const std::vector<GateSpec> kGates = {
      {"AuditEvents", false, GateStage::kAlpha},
      {"AuditEventsHTTPHandler", false, GateStage::kAlpha},
      {"BECPUSuppress", true, GateStage::kBeta},
      {"BECPUManager", false, GateStage::kAlpha},
      {"BECPUEvict", false, GateStage::kAlpha},
      {"CPUEvict", false, GateStage::kAlpha},
      {"CPUAllocatableEvict", false, GateStage::kAlpha},
      {"BEMemoryEvict", false, GateStage::kAlpha},
      {"MemoryEvict", false, GateStage::kAlpha},
      {"MemoryAllocatableEvict", false, GateStage::kAlpha},
      {"CPUBurst", true, GateStage::kBeta},
      {"SystemConfig", false, GateStage::kAlpha},
      {"RdtResctrl", true, GateStage::kBeta},
      {"ResctrlCollector", false, GateStage::kAlpha},
      {"CgroupReconcile", false, GateStage::kAlpha},
      {"NodeTopologyReport", true, GateStage::kBeta},
      {"Accelerators", false, GateStage::kAlpha},
      {"RDMADevices", false, GateStage::kAlpha},
      {"CPICollector", false, GateStage::kAlpha},
      {"Libpfm4", false, GateStage::kAlpha},
      {"PSICollector", false, GateStage::kAlpha},
      {"BlkIOReconcile", false, GateStage::kAlpha},
      {"ColdPageCollector", false, GateStage::kAlpha},
      {"HugePageReport", false, GateStage::kAlpha},
      {"PodResourcesProxy", false, GateStage::kAlpha},
      {"HamiCoreVGPUMonitor", false, GateStage::kAlpha},
      {"PerCPUMetric", false, GateStage::kAlpha},
      {"NodeMetricPromMetrics", false, GateStage::kAlpha},
      // Runtime hook gates.
      {"GroupIdentity", true, GateStage::kBeta},
      {"CPUSetAllocator", true, GateStage::kBeta},
      {"GPUEnvInject", false, GateStage::kAlpha},
      {"RDMADeviceInject", false, GateStage::kAlpha},
      {"BatchResource", true, GateStage::kBeta},
      {"CPUNormalization", false, GateStage::kAlpha},
      {"CoreSched", false, GateStage::kAlpha},
      {"TerwayQoS", false, GateStage::kAlpha},
      {"TCNetworkQoS", false, GateStage::kAlpha},
      {"Resctrl", false, GateStage::kAlpha},
      {"OOMScoreAdj", false, GateStage::kAlpha},
  };
  return kGates;
}

FeatureGates::FeatureGates() { apply(); }

Status FeatureGates::set(std::string_view spec) {
  // Parse the whole spec into a copy first so that an error changes nothing.
  auto raw = raw_;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view item = trim(spec.substr(pos, comma - pos));
    pos = comma + 1;
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

bool FeatureGates::enabled(std::string_view gate) const {
  auto it = values_.find(gate);
  return it != values_.end() && it->second;
}

}  // namespace koord
