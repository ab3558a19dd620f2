// Memory eviction (reference koordlet.md §4.4): when the node's memory usage
// reaches memoryEvictThresholdPercent of its capacity, evict pods until it would
// be back at the lower percent.
//
//   usage%  = last node memory (MemTotal − MemAvailable, fresh within two collect
//             intervals) × 100 / Node capacity memory, integer division
//   trigger   usage% >= memoryEvictThresholdPercent
//   lower     memoryEvictLowerPercent, else threshold − 2; must be < threshold
//   release = capacity × (usage% − lower) / 100 bytes
//
// Three features, in koordlet's order, sharing one walk (qos/evict_victims.h):
//   BEMemoryEvict  pods whose koordinator.sh/qosClass label is BE (never a pod of
//                  another class, whatever its usage), by spec.priority, then
//                  memory usage descending (pods without usage last, by name
//                  descending); a pod releases its memory usage.
//   MemoryAllocatableEvict  the batch/mid memory the pods request against the Node's
//                  allocatable (qos/allocatable_evict.h); its own thresholds, not the
//                  usage ones above.
//   MemoryEvict    active pods labelled koordinator.sh/eviction-enabled "true" whose
//                  priority with default is <= evictEnabledPriorityThreshold (which
//                  must be set) and that have a fresh memory sample; by eviction
//                  priority, priority, label priority, then usage descending.
// Both honour the koordinator.sh/eviction-policy annotation. A round that asks for
// at least one new eviction starts a cool-down (koordlet: 4 s) with no eviction.
// Gated on NodeSLO resourceUsedThresholdWithBE.enable.
//
// Deliberate difference: koordlet counts a MemoryEvict victim's usage × 1000
// (reference §10 quirk 8), so one victim always meets the target; here it counts
// the real bytes, so MemoryEvict picks as many pods as the release needs.
#pragma once

#include <chrono>
#include <optional>

#include "qos/evict_victims.h"
#include "qos/strategy.h"

namespace koord {

inline constexpr const char* kOwnerMemoryEvict = "memory-evict";

struct MemoryEvictGates {
  bool beMemoryEvict = false;
  bool memoryEvict = false;
  bool memoryAllocatableEvict = false;  // qos/allocatable_evict.h
};

// Per feature, what was decided; decision texts name the NodeSLO field at fault.
struct MemoryEvictResult : EvictRoundReport {};

class MemoryEvictStrategy final : public QosStrategy {
 public:
  static constexpr std::string_view kName = "memory_evict";
  // koordlet's --memory-evict-cool-time-seconds default.
  static constexpr std::chrono::seconds kDefaultCoolDown{4};
  // koordlet's memoryReleaseBufferPercent: lower = threshold − 2 when unset.
  static constexpr int64_t kReleaseBufferPercent = 2;

  MemoryEvictStrategy(std::chrono::nanoseconds interval, MemoryEvictGates gates,
                      std::chrono::nanoseconds coolDown = kDefaultCoolDown)
      : interval_(interval), gates_(gates), coolDown_(coolDown) {}

  std::string_view name() const override { return kName; }
  std::string_view owner() const override { return kOwnerMemoryEvict; }
  std::chrono::nanoseconds interval() const override { return interval_; }
  bool enabled(const NodeSloSpec&) const override {
    return (gates_.beMemoryEvict || gates_.memoryEvict || gates_.memoryAllocatableEvict) &&
           interval_.count() > 0;
  }
  // Returns no writes: the evictions and a MemoryEvictResult.
  StrategyOutcome run(const StrategyContext& ctx) override;

 private:
  std::chrono::nanoseconds interval_;
  MemoryEvictGates gates_;
  std::chrono::nanoseconds coolDown_;
  std::optional<Clock::Monotonic> lastEvict_;  // when a round last picked a new pod
};

}  // namespace koord
