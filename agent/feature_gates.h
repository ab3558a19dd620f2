// FeatureGates: koordlet's feature gates (reference koordlet.md §1.6) with their
// names, stages and defaults, set by --feature-gates "Name=true,Other=false" in
// Kubernetes' syntax (AllAlpha / AllBeta included). An unknown gate is an error, as
// in Kubernetes' featuregate package.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/result.h"

namespace koord {

enum class GateStage { kAlpha, kBeta, kGA };

struct GateSpec {
  const char* name;
  bool defaultOn;
  GateStage stage;
};

class FeatureGates {
 public:
  // Every known gate at its default.
  FeatureGates();

  // Applies one --feature-gates value. On error nothing is changed.
  Status set(std::string_view spec);

  bool enabled(std::string_view gate) const;
  // Name -> effective value, for /config and the log line at start.
  const std::map<std::string, bool, std::less<>>& effective() const { return values_; }

  static const std::vector<GateSpec>& known();

 private:
  std::map<std::string, bool, std::less<>> values_;
};

}  // namespace koord
