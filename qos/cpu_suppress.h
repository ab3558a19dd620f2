// CPU suppress (reference koordlet.md §4.1): when latency-sensitive load rises,
// shrink what best-effort pods may use, so LS pods keep their headroom.
//
//   suppress = capacity × threshold% − Σ usage(non-BE pods) − systemUsed
//   systemUsed = max(max(nodeUsed − Σ usage(all pods), 0), reservation.cpuMilli)
//   suppress = max(suppress, capacity × cpuSuppressMinPercent%) when that is set
//
// Policy cpuset: BE gets ceil(suppress/1000) CPUs (at least 2; growth limited to
// ceil(10% of CPUs) per round, shrinking immediate), picked from the CPUs not
// reserved and not pinned by LSE pods, split between the LSR-pinned pool and the
// rest in proportion, HT sibling pairs first, round-robin over (NUMA node, socket)
// buckets; written to the besteffort dir, BE pod dirs and BE container dirs (with
// the kubelet's static CPU manager: pod dirs get the full BE set, containers the
// suppressed one). The besteffort quota is recovered to -1.
//
// Policy cfsQuota: the besteffort dir's quota = max(suppress × 100, 2000) µs per
// 100 ms, skipped when within 1% of capacity of the current value, growth limited
// to 10% of capacity per round; the BE cpusets are recovered to the full BE set.
//
// Disabled (gate off, or NodeSLO resourceUsedThresholdWithBE.enable false): both
// recovered once, then left alone.
//
// Owns: cpu.cfs_quota_us of the besteffort dir; cpuset.cpus of the besteffort dir,
// BE pod dirs and BE container dirs (owner "cpu-suppress").
//
// Details, as koordlet unless said: BE pods are those with qos BE or of kube class
// BestEffort (its NonBEPodFilter; they all live under the besteffort dir). LSE/LSR
// pinning is read by the raw qosClass label. A pod without a fresh sample counts
// 0; an empty pod list or a stale node sample skips the round with no writes. An
// unreadable current cpuset/quota skips that policy's write but not the other
// knob's recovery. Departures: a cpuset target above the CPUs BE may use gives
// them all (koordlet gives none); no CPU left for BE writes no cpuset at all; the
// full-set recovery when disabled happens once (koordlet rewrites it each round).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cgroupfs/executor.h"
#include "qos/slo_config.h"
#include "qos/snapshot.h"
#include "qos/strategy.h"

namespace koord {

inline constexpr const char* kOwnerCpuSuppress = "cpu-suppress";

struct SuppressResult {
  std::vector<CgroupWrite> writes;
  // Set when this round computed a suppression: the BE allowance in cores (for
  // cpuset: the CPUs given; for cfsQuota: quota / period), and the inputs.
  std::optional<double> suppressCores;
  CpuSuppressPolicy policy = CpuSuppressPolicy::kCpuset;
  std::optional<double> lsUsedCores;  // Σ usage of non-BE pods
  std::optional<double> beUsedCores;  // Σ usage of BE pods
  std::optional<double> nodeUsedCores;
  std::optional<double> systemUsedCores;  // max(node − pods, reserved)
  // Why nothing was suppressed this round ("" when it was): disabled, recovered,
  // node usage stale, besteffort quota unreadable, ...
  std::string skipped;
};

class CpuSuppress {
 public:
  // Freshness of "last" samples (koordlet: 2 s).
  static constexpr std::chrono::seconds kMaxSampleAge{2};

  // enabled = gate BECPUSuppress && config.threshold.enable.
  SuppressResult run(const QosSnapshot& snap, const ResourceThresholdStrategy& config, bool enabled,
                     const CurrentValues& current);

  // The CPUs BE may use at all: every online CPU minus reserved, system-exclusive
  // and LSE-pinned ones (the "recovered" cpuset).
  static std::vector<int> fullBeCpus(const QosSnapshot& snap);

  // The pure CPU picking rule: `count` CPUs out of `candidates` by topology.
  static std::vector<int> pickCpus(const CpuTopology& topo, const std::vector<int>& candidates,
                                   size_t count);

 private:
  // A recovery (besteffort quota back to -1, BE cpusets back to the full set) is
  // written once, then checked against the files each round: what a write failed
  // to set (EBUSY, a cgroup not there yet) is written again; once every file holds
  // its target, nothing more until suppression runs again.
  enum class Recovery { kNeeded, kWritten, kDone };
  static void recover(Recovery& state, const std::vector<CgroupWrite>& writes,
                      const CurrentValues& current, std::vector<CgroupWrite>& out);
  Recovery quotaRecovery_ = Recovery::kNeeded;
  Recovery cpusetRecovery_ = Recovery::kNeeded;
};

// CpuSuppress on the manager's schedule. Enabled with the gate; with the gate on,
// NodeSLO's resourceUsedThresholdWithBE.enable decides between suppressing and
// recovering. Its round's result: SuppressResult.
class CpuSuppressStrategy final : public GatedStrategy {
 public:
  static constexpr std::string_view kName = "cpu_suppress";
  // interval: --cpu-suppress-interval-seconds; gate: BECPUSuppress (and the node's
  // CPU count known).
  CpuSuppressStrategy(std::chrono::nanoseconds interval, bool gate)
      : GatedStrategy(kName, kOwnerCpuSuppress, interval, gate) {}

  StrategyOutcome run(const StrategyContext& ctx) override;

 private:
  CpuSuppress suppress_;
};

}  // namespace koord
