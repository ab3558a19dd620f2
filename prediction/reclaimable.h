// The prod reclaimable prediction koordlet puts into NodeMetric's
// status.prodReclaimableMetric (reference colocation.md §1.6): how much of what
// prod pods requested they will not use at their peak, which koord-manager turns
// into kubernetes.io/mid-cpu and mid-memory.
//
// Two predictors, and their per-resource minimum ("minPredictor"):
//  * pod: for each prod (or no-class) pod past its cold start, not deleting and not
//    finished: peak = p95 CPU, p98 memory of its model × (100 + margin)%;
//    Σpeak is unreclaimable, Σ(request - peak) where positive is reclaimable;
//    result = min(max(allocatable - Σpeak, 0), Σreclaimable).
//  * priority: peak = (system + koord-prod class + no-class class) p95 CPU / p98
//    memory × (100 + margin)%; result = min(max(allocatable - peak, 0),
//    max(Σrequests of the live prod pods, cold ones too, - peak, 0)).
// Quirks kept: a pod whose own model is missing is left out of both predictors
// (koordlet's minPredictor stops at the first predictor's error) without failing
// the result; only a missing node allocatable, or a missing system or class model,
// fails it. When the pod predictor fails, the priority one is not computed.
// Allocatable is the node.koordinator.sh/raw-allocatable annotation when it parses,
// else status.allocatable; a resource absent there is absent from the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "kube/pod.h"
#include "prediction/peak_models.h"

namespace koord::prediction {

struct ReclaimableResources {
  std::optional<int64_t> cpuMilli;
  std::optional<int64_t> memoryBytes;
};

struct ReclaimableResult {
  Result<ReclaimableResources> pod = makeError("not computed");
  Result<ReclaimableResources> priority = makeError("not computed");
  Result<ReclaimableResources> min = makeError("not computed");
  // Pods left out for want of a model (koordlet logs them at V(4)).
  std::vector<std::string> podsWithoutModel;
};

// `pods`: those NodeMetric reports (their usage query found samples), as koordlet
// adds only those. `allocatable`: nullopt when the Node is not known.
ReclaimableResult predictProdReclaimable(const PeakModels& models,
                                         const std::vector<const Pod*>& pods,
                                         const std::optional<ReclaimableResources>& allocatable,
                                         Clock::Wall now);

}  // namespace koord::prediction
