// CPU eviction (reference koordlet.md §4.5): three features, in koordlet's order
// (BECPUEvict, CPUAllocatableEvict: qos/allocatable_evict.h, CPUEvict), sharing one
// walk (qos/evict_victims.h).
//
// BECPUEvict, when BE pods get too little of the CPU they asked for. Over the
// window W = max(collect interval, cpuEvictTimeWindowSeconds) (whole seconds), the
// averages of the BE usage U, request R and real limit L (metric cache, node
// level); valid only when count × interval >= W / 3 (count: the fewest samples of
// the three). With cpuEvictPolicy evictByAllocatable, L is the Node's batch-cpu
// allocatable instead (0 counts as 1 milli-core).
//   usage high enough: L <= 0 no; L < 1000 yes; else U / L >= threshold% (default 90)
//   satisfaction S = L / R (R <= 0: release 0); S > lower%: release 0;
//   release = int(R × (upper% − S)) milli-cores of batch-cpu request
// The same from the newest samples (within two intervals); when their R and L equal
// the averages the average's release stands, else the smaller of the two.
// Victims: pods labelled BE (the raw label) the eviction policy allows, by
// spec.priority when both have one and they differ, else by usage / batch-cpu
// request descending; a pod releases its batch-cpu request.
//
// CPUEvict, when the node's CPU usage is high. usage% = int(avg node CPU over W in
// milli-cores) × 100 / Node capacity cpu; trigger at >= cpuEvictThresholdPercent;
// lower = cpuEvictLowerPercent or threshold − 2 (must be below it); release =
// capacity × (usage% − lower) / 100 milli-cores. Victims as MemoryEvict's
// (qos/memory_evict.h) by CPU usage; a pod releases its usage.
//
// No eviction in the first cool-down (20 s) after start, nor within one after a
// round that asked for a new eviction. Gated on NodeSLO
// resourceUsedThresholdWithBE.enable.
#pragma once

#include <chrono>

#include "qos/evict_victims.h"
#include "qos/strategy.h"

namespace koord {

inline constexpr const char* kOwnerCpuEvict = "cpu-evict";

struct CpuEvictGates {
  bool beCpuEvict = false;
  bool cpuEvict = false;
  bool cpuAllocatableEvict = false;  // qos/allocatable_evict.h
};

// The BE figures BECPUEvict decided from (milli-cores), when it got that far.
struct BeCpuFigures {
  int64_t windowSeconds = 0;
  int64_t samples = 0;
  double avgUsage = 0, avgRequest = 0, avgLimit = 0;
  double curUsage = 0, curRequest = 0, curLimit = 0;
  int64_t avgRelease = 0, curRelease = 0;
};

struct CpuEvictResult : EvictRoundReport {
  std::optional<BeCpuFigures> be;
};

class CpuEvictStrategy final : public QosStrategy {
 public:
  static constexpr std::string_view kName = "cpu_evict";
  // koordlet's --cpu-evict-cool-time-seconds default.
  static constexpr std::chrono::seconds kDefaultCoolDown{20};
  static constexpr int64_t kReleaseBufferPercent = 2;
  static constexpr int64_t kBeUsageThresholdPercent = 90;
  static constexpr int64_t kSatisfactionLowerMax = 60;
  static constexpr int64_t kSatisfactionUpperMax = 100;  // exclusive

  // startedAt: the cool-down runs from here, so no eviction in the first coolDown.
  CpuEvictStrategy(std::chrono::nanoseconds interval, CpuEvictGates gates,
                   std::chrono::nanoseconds coolDown, Clock::Monotonic startedAt)
      : interval_(interval), gates_(gates), coolDown_(coolDown), lastEvict_(startedAt) {}

  std::string_view name() const override { return kName; }
  std::string_view owner() const override { return kOwnerCpuEvict; }
  std::chrono::nanoseconds interval() const override { return interval_; }
  bool enabled(const NodeSloSpec&) const override {
    return (gates_.beCpuEvict || gates_.cpuEvict || gates_.cpuAllocatableEvict) &&
           interval_.count() > 0;
  }
  // Returns no writes: the evictions and a CpuEvictResult.
  StrategyOutcome run(const StrategyContext& ctx) override;

 private:
  std::chrono::nanoseconds interval_;
  CpuEvictGates gates_;
  std::chrono::nanoseconds coolDown_;
  Clock::Monotonic lastEvict_;
};

}  // namespace koord
