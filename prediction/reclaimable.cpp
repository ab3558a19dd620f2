#include "prediction/reclaimable.h"

#include <algorithm>

namespace koord::prediction {

namespace {

bool prodOrNone(PriorityClass c) { return c == PriorityClass::kProd || c == PriorityClass::kNone; }

// util.MultiplyMilliQuant / MultiplyQuant: int64(float64(v) * factor).
int64_t scaled(int64_t v, double factor) {
  const double x = static_cast<double>(v) * factor;
  if (!(x < 9.2e18)) return INT64_MAX;
  if (!(x > -9.2e18)) return INT64_MIN;
  return static_cast<int64_t>(x);
}

int64_t sat(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return b > 0 ? INT64_MAX : INT64_MIN;
  return out;
}

int64_t diff(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out)) return b < 0 ? INT64_MAX : INT64_MIN;
  return out;
}

struct Pair {
  int64_t cpu = 0;
  int64_t memory = 0;
};

// min(max(alloc - unreclaimable, 0), reclaimable), for the resources alloc has.
ReclaimableResources bounded(const ReclaimableResources& alloc, Pair unreclaimable,
                             Pair reclaimable) {
  ReclaimableResources out;
  if (alloc.cpuMilli) {
    out.cpuMilli =
        std::min(std::max<int64_t>(diff(*alloc.cpuMilli, unreclaimable.cpu), 0), reclaimable.cpu);
  }
  if (alloc.memoryBytes) {
    out.memoryBytes = std::min(std::max<int64_t>(diff(*alloc.memoryBytes, unreclaimable.memory), 0),
                               reclaimable.memory);
  }
  return out;
}

std::optional<int64_t> minOf(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;  // MinResourceList keeps keys in both
  return std::min(*a, *b);
}

}  // namespace

ReclaimableResult predictProdReclaimable(const PeakModels& models,
                                         const std::vector<const Pod*>& pods,
                                         const std::optional<ReclaimableResources>& allocatable,
                                         Clock::Wall now) {
  ReclaimableResult out;
  const double margin = static_cast<double>(100 + models.config().safetyMarginPercent) / 100;

  Pair podUnreclaimable, podReclaimable, priorityRequest;
  for (const Pod* pod : pods) {
    if (!prodOrNone(pod->priorityWithDefault())) continue;
    const bool gone = pod->terminating || pod->terminated();
    // An unknown creation time counts as cold: no reclaimable from a pod of unknown age.
    const bool cold = !pod->created || now - *pod->created <= models.config().coldStart;
    if (!cold && !gone) {
      const auto p = models.predict(pod->uid);
      if (!p) {
        out.podsWithoutModel.push_back(pod->ns + "/" + pod->name);
        continue;  // minPredictor: the priority predictor never sees it either
      }
      const int64_t peakCpu = scaled(p->p95.cpuMilli, margin);
      const int64_t peakMemory = scaled(p->p98.memoryBytes, margin);
      podUnreclaimable.cpu = sat(podUnreclaimable.cpu, peakCpu);
      podUnreclaimable.memory = sat(podUnreclaimable.memory, peakMemory);
      const int64_t cpuLeft = diff(pod->requestCpuMilli(), peakCpu);
      const int64_t memoryLeft = diff(pod->requestMemoryBytes(), peakMemory);
      if (cpuLeft > 0) podReclaimable.cpu = sat(podReclaimable.cpu, cpuLeft);
      if (memoryLeft > 0) podReclaimable.memory = sat(podReclaimable.memory, memoryLeft);
    }
    if (!gone) {
      priorityRequest.cpu = sat(priorityRequest.cpu, pod->requestCpuMilli());
      priorityRequest.memory = sat(priorityRequest.memory, pod->requestMemoryBytes());
    }
  }

  if (!allocatable || (!allocatable->cpuMilli && !allocatable->memoryBytes)) {
    out.pod = makeError("node allocatable not known");
    out.min = out.pod.error();
    return out;
  }
  out.pod = bounded(*allocatable, podUnreclaimable, podReclaimable);

  Pair peak;
  std::vector<std::string> ids{std::string(kSystemModel), classModelId(PriorityClass::kProd),
                               classModelId(PriorityClass::kNone)};
  for (const auto& id : ids) {
    const auto p = models.predict(id);
    if (!p) {
      out.priority = makeError("no prediction of " + id + " yet");
      out.min = out.priority.error();
      return out;
    }
    peak.cpu = sat(peak.cpu, p->p95.cpuMilli);
    peak.memory = sat(peak.memory, p->p98.memoryBytes);
  }
  peak = {scaled(peak.cpu, margin), scaled(peak.memory, margin)};
  const Pair reclaimRequest{std::max<int64_t>(diff(priorityRequest.cpu, peak.cpu), 0),
                            std::max<int64_t>(diff(priorityRequest.memory, peak.memory), 0)};
  out.priority = bounded(*allocatable, peak, reclaimRequest);

  out.min = ReclaimableResources{minOf(out.pod->cpuMilli, out.priority->cpuMilli),
                                 minOf(out.pod->memoryBytes, out.priority->memoryBytes)};
  return out;
}

}  // namespace koord::prediction
