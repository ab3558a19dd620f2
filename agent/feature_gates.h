// FeatureGates: koordlet's feature gates (reference koordlet.md §1.6) with their
// names, stages and defaults, set by --feature-gates "Name=true,Other=false" in
// Kubernetes' syntax (AllAlpha / AllBeta included). An unknown gate is an error, as
// in Kubernetes' featuregate package.
//
// Like Kubernetes, settings accumulate over set() calls and the result does not
// depend on their order: a gate named explicitly (in any call, the last value
// winning) beats AllAlpha/AllBeta, which beat the gate's default.
//
// Every gate of koordlet's is accepted, but not every one does something here:
// GateSpec::implemented says whether code of this version reads it. An enabled gate
// that is not implemented changes nothing; main() warns once about each, and /config
// shows both facts per gate.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord {

enum class GateStage { kAlpha, kBeta, kGA };

struct GateSpec {
  const char* name;
  bool defaultOn;
  GateStage stage;
  // Whether this version reads the gate (agent/agent.cpp's featureGates.enabled()
  // calls). Kept by hand: a gate wired to a module sets it in the same change.
  bool implemented;
};

class FeatureGates {
 public:
  // Every known gate at its default.
  FeatureGates();

  // Applies one --feature-gates value. On error nothing is changed.
  // Items are "Name=bool" separated by commas; blanks around items, names and
  // values are ignored, as are empty items. Values use Go's ParseBool spellings.
  Status set(std::string_view spec);

  bool enabled(std::string_view gate) const;
  // Name -> effective value, for /config and the log line at start.
  const std::map<std::string, bool, std::less<>>& effective() const { return values_; }

  // Enabled gates that this version does not implement, sorted: each is accepted
  // for koordlet compatibility and has no effect.
  std::vector<std::string> enabledNotImplemented() const;

  static const std::vector<GateSpec>& known();
  // Whether `gate` is known and implemented.
  static bool implemented(std::string_view gate);

 private:
  // Recomputes values_ from the defaults and raw_.
  void apply();

  std::map<std::string, bool, std::less<>> values_;
  // Every Name=bool given so far, AllAlpha/AllBeta included.
  std::map<std::string, bool, std::less<>> raw_;
};

}  // namespace koord
