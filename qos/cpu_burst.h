// CPU burst (reference koordlet.md §4.2): let LS containers with CPU limits run
// above their limit for short spikes, while the node has idle CPU.
//
// Static burst (policies cpuBurstOnly, auto): container cpu.cfs_burst_us (v2
// cpu.max.burst) = limit × cpuBurstPercent% × 100000 / 1000, at most the
// container's quota; the pod's = Σ its containers', at most the pod's quota (the
// kernel's rule: burst <= quota in one cgroup). Kernels without the file skip it (the executor
// counts it as unsupported).
//
// Dynamic quota (policies cfsQuotaBurstOnly, auto): each running container with a
// limit has base = limit×100 µs (min 1000) and ceiling = base × cfsQuotaBurstPercent%.
// Throttled in the last sample -> scale up ×1.2; the node's share pool (CPUs not
// requested by LSE/LSR pods, used by everything but LSE/LSR/BE pods) above
// sharePoolThresholdPercent -> scale down ×0.8 (Overload), near it (≥ 90%) -> hold
// (Cooling); a per-container token bucket (cfsQuotaBurstPeriodSeconds ≥ 0) stops
// sustained bursting. The change is applied to the container's and the pod's quota.
// Policies without it reset the quota to base.
//
// Owns: cpu.cfs_burst_us and cpu.cfs_quota_us of pod and container dirs of
// eligible pods (raw QoS label not LSE/LSR/BE, phase Pending or Running, and no
// scheduling.koordinator.sh/resource-status cpuset); owner "cpu-burst". CPU
// suppress owns the besteffort dir and BE pods, the runtime hooks (hook_reconcile.h)
// the quota of pods with a resource-status cpuset, so they never meet.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cgroupfs/executor.h"
#include "qos/slo_config.h"
#include "qos/snapshot.h"
#include "qos/strategy.h"

namespace koord {

inline constexpr const char* kOwnerCpuBurst = "cpu-burst";

// The static burst of one container, µs: limit × cpuBurstPercent% × 100000 / 1000,
// evaluated in floating point in koordlet's order, then held to the container's
// quota (limit × 100 µs, at least 1000): the kernel refuses cfs_burst_us /
// cpu.max.burst above the cgroup's own quota, so any percent above 100 bursts up to
// the quota. 0 when the policy does not burst CPU or the container has no CPU
// limit. Shared with the CPUBurst runtime hook (runtime_hooks.h), so NRI and this
// strategy give a container the same value, one the kernel takes.
// normalizationRatio: the CPU normalization ratio in force for the container's
// quota (-1: none): the burst is held to the quota as normalized (knob.h).
int64_t staticBurstUs(const ResourceList& limits, const CpuBurstConfig& config,
                      double normalizationRatio = -1);

// A burst the kernel accepts next to quotaUs in the same cgroup: within [0, 100 s]
// (koordlet's validator) and at most the quota when the quota is limited (> 0).
int64_t burstWithinQuota(int64_t burstUs, int64_t quotaUs);

// Whether CPU burst acts on the pod at all (raw QoS label not LSE/LSR/BE; a pod
// whose scheduler-assigned cpuset is non-empty is not, see above).
bool burstEligible(const Pod& pod, bool pinned);

enum class SharePoolState { kUnknown, kIdle, kCooling, kOverload };
const char* toString(SharePoolState s);

struct BurstMetric {
  const Pod* pod = nullptr;
  const Container* container = nullptr;
  std::string containerId;         // "<runtime>://<id>"
  std::optional<int64_t> burstUs;  // the cfs_burst_us intended this round
  std::optional<int64_t> quotaUs;  // the cfs_quota_us intended this round
};

struct BurstResult {
  std::vector<CgroupWrite> writes;
  std::vector<BurstMetric> metrics;
  SharePoolState nodeState = SharePoolState::kUnknown;
  std::vector<Error> errors;  // bad koordinator.sh/cpuBurst annotations (pod named)
};

class CpuBurst {
 public:
  static constexpr std::chrono::seconds kMaxSampleAge{2};

  // seed: the token buckets' random initial fill (koordlet: [0, 0.5) × capacity);
  // tests pass a fixed seed.
  explicit CpuBurst(uint32_t seed = std::random_device{}());

  // enabled = gate CPUBurst. When disabled nothing is written (koordlet leaves the
  // values in place).
  // normalizationRatio: the node's CPU normalization ratio when the CPUNormalization
  // gate is on (else -1): a container's base quota is its limit's quota divided by
  // it (knob.h normalizeQuota), so the quota is stepped around what the hooks set.
  BurstResult run(const QosSnapshot& snap, const CpuBurstConfig& nodeConfig, bool enabled,
                  const CurrentValues& current, double normalizationRatio = -1);

  size_t limiterCount() const { return limiters_.size(); }

 private:
  struct Limiter {
    double tokens = 0;
    double capacity = 0;
    Clock::Monotonic last{};
    Clock::Monotonic lastUsed{};  // dropped after 2 × period without use
    // 2 × cfsQuotaBurstPeriodSeconds of the config that last used it.
    std::chrono::nanoseconds expireAfter{};
  };
  // The container's token bucket, created or (on a capacity change) refilled at
  // random, then updated with the container's usage since the last evaluation.
  // True when it still holds tokens (always true without a limiter configured).
  bool limiterAllows(const ContainerView& c, int64_t limitMilli, const CpuBurstConfig& config,
                     Clock::Monotonic now);
  // Limiters of containers gone from the pod list, or not evaluated for 2 × period.
  void recycleLimiters(const QosSnapshot& snap);
  std::mt19937 rng_;
  std::map<std::string, Limiter> limiters_;  // by container id
};

// CpuBurst on the manager's schedule, enabled with the gate. Its round's result:
// BurstResult (the per-container values koordlet_container_scaled_cfs_* export);
// bad annotations are its errors.
class CpuBurstStrategy final : public GatedStrategy {
 public:
  static constexpr std::string_view kName = "cpu_burst";
  // interval: --reconcile-interval-seconds; gate: CPUBurst; seed: CpuBurst's.
  CpuBurstStrategy(std::chrono::nanoseconds interval, bool gate,
                   uint32_t seed = std::random_device{}())
      : GatedStrategy(kName, kOwnerCpuBurst, interval, gate), burst_(seed) {}

  StrategyOutcome run(const StrategyContext& ctx) override;

 private:
  CpuBurst burst_;
};

}  // namespace koord
