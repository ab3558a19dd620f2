// QosManager: runs the QoS strategies on their intervals and hands their intended
// writes to the one executor. It gathers each strategy's snapshot from the pod
// list, the metric cache (the newest samples, with their times), the CPU topology
// and the node's reservation, and reads the current knob values a strategy steps
// from through the executor.
//
// Scheduling: the agent calls runDue() right after each collection round, and a
// strategy runs when its interval has elapsed since its last run (within a quarter
// interval of jitter). A strategy therefore never runs more often than new samples
// arrive, and acts on samples at most one collection old: an LS load step reaches
// the BE cgroups within two collection intervals.
//
// One owner per knob per cgroup, so two strategies can never fight over a value:
//   cpu-suppress  besteffort dir: cpu.cfs_quota_us, cpuset.cpus;
//                 BE pod and container dirs: cpuset.cpus
//   cpu-burst     pod and container dirs of pods that are not LSE/LSR/BE and have
//                 no resource-status cpuset: cpu.cfs_burst_us, cpu.cfs_quota_us
//   runtime-hooks pod and container dirs of raw-QoS BE pods: cpu.shares,
//                 cpu.cfs_quota_us, memory limit; of pods with a resource-status
//                 cpuset: cpu.cfs_quota_us and (not BE / kube BestEffort) the
//                 containers' cpuset.cpus (hook_reconcile.h)
//   memory-qos    kube-QoS, pod and container dirs: memory.min, memory.low,
//                 memory.high, the wmark/priority/oom knobs and (opt-in, v1 without
//                 memory.low) BE's memory.soft_limit_in_bytes
// The sets are disjoint by construction (the besteffort dir and BE pods' cpusets
// belong to suppress, BE pods' and pinned pods' quotas to the hooks, every other
// pod's quota to burst); the executor refuses a second owner, so a
// future overlap shows as refused writes, not as a tug of war. Ownership is held
// while a strategy keeps asking for a knob: one not asked for in two force periods
// (a pod gone, a recovery done, a quota left as it is) is let go, so the record
// follows the live cgroups; the disjoint sets above, not the record, are what keep
// strategies apart over long pauses.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "kube/pod.h"
#include "cgroupfs/executor.h"
#include "cgroupfs/layout.h"
#include "metrics/cpu_topology.h"
#include "metrics/metric_cache.h"
#include "qos/cpu_burst.h"
#include "qos/cpu_suppress.h"
#include "qos/hook_reconcile.h"
#include "qos/memory_qos.h"
#include "qos/slo_config.h"
#include "qos/snapshot.h"

namespace koord {

struct QosManagerConfig {
  std::string cgroupRoot;  // --cgroup-root-dir: where the besteffort tree is listed
  std::chrono::nanoseconds suppressInterval =
      std::chrono::seconds(1);  // --cpu-suppress-interval-seconds
  std::chrono::nanoseconds burstInterval = std::chrono::seconds(1);  // --reconcile-interval-seconds
  bool suppressGate = true;                                          // BECPUSuppress
  bool burstGate = true;                                             // CPUBurst
  // Memory QoS (CgroupReconcile) runs on the reconcile interval, as koordlet's.
  std::chrono::nanoseconds memoryInterval = std::chrono::seconds(1);
  bool memoryGate = false;  // CgroupReconcile (koordlet: alpha, off)
  int64_t pageSize = 4096;
  // Bytes: --node-allocatable-memory, else the node's MemTotal (the agent fills it
  // in from the first node collection). 0: not known yet; memory QoS waits.
  int64_t nodeAllocatableMemory = 0;
  bool memorySoftLimitFallback = false;  // --memory-qos-v1-soft-limit
  NodeReservation reservation;
  CpuManagerPolicy cpuManagerPolicy = CpuManagerPolicy::kNone;
  // Runtime hooks reconciler (hook_reconcile.h). koordlet reconciles on every pods
  // sync and a 10 s timer; here on its own interval, like the other strategies.
  std::chrono::nanoseconds hooksInterval = std::chrono::seconds(1);
  bool batchResourceGate = true;      // BatchResource
  bool cpusetAllocatorGate = true;    // CPUSetAllocator
  bool resctrlGate = true;            // RdtResctrl (and resctrl ready: setResctrlReady)
  bool disableUnsetCpuQuota = false;  // --disable-unset-cpu-quota
};

// CurrentValues through the executor's reader, memoised for one round: a strategy
// may ask for the same file twice, and nothing writes between its reads.
class ExecutorValues final : public CurrentValues {
 public:
  explicit ExecutorValues(const Executor& executor) : executor_(&executor) {}
  std::optional<KnobValue> get(const std::string& dir, Knob knob) const override {
    auto key = std::make_pair(dir, knob);
    auto it = memo_.find(key);
    if (it == memo_.end()) {
      auto v = executor_->read(dir, knob);
      it = memo_.emplace(std::move(key), v ? std::optional<KnobValue>(*v) : std::nullopt).first;
    }
    return it->second;
  }

 private:
  const Executor* executor_;
  mutable std::map<std::pair<std::string, Knob>, std::optional<KnobValue>> memo_;
};

struct QosRound {
  std::optional<SuppressResult> suppress;  // set when suppress ran this round
  std::optional<double> suppressSeconds;
  std::optional<BurstResult> burst;  // set when burst ran this round
  std::optional<double> burstSeconds;
  std::optional<MemoryQosResult> memory;  // set when memory QoS ran this round
  std::optional<double> memorySeconds;
  std::optional<HookReconcileResult> hooks;  // set when the hooks reconciler ran
  std::optional<double> hooksSeconds;
  ExecutorStats writes;  // what the executor did with this round's writes
};

// The hook context's fields that follow from the config and the NodeSLO spec alone
// (gates, --disable-unset-cpu-quota, suppress forcing -1, memory sizes); what the
// kernel tells (cgroup version, burst file, memory QoS, resctrl) is left unset.
HookContext baseHookContext(const QosManagerConfig& config, const NodeSloSpec& spec);

class QosManager {
 public:
  // A non-positive interval disables its strategy (koordlet: Enabled() = gate && interval > 0).
  QosManager(QosManagerConfig config, CgroupLayout layout, CpuTopology topology, Executor& executor,
             const Clock& clock, uint32_t burstSeed);

  // Runs the strategies that are due, hands their writes to the executor.
  QosRound runDue(const std::vector<Pod>& pods, const MetricCache& cache, const NodeSloSpec& spec);

  // The snapshot a strategy would see now (tests, and GET /config's diagnostics).
  QosSnapshot snapshot(const std::vector<Pod>& pods, const MetricCache& cache) const;

  const QosManagerConfig& config() const { return config_; }
  // MemTotal from the node collector when no --node-allocatable-memory was given.
  void setNodeAllocatableMemory(int64_t bytes) { config_.nodeAllocatableMemory = bytes; }

  // What the runtime hooks decide from, for this manager's reconciler and for the
  // NRI plugin (the agent publishes the same context in its HookState, so both
  // compute the same values). spec must outlive the context.
  HookContext hookContext(const NodeSloSpec& spec) const;
  // Resctrl detected and mounted (the resctrl manager knows; default false).
  void setResctrlReady(bool ready) { resctrlReady_ = ready; }
  // Whether the kernel has memory.min/low/high; defaults to the executor's probe.
  void setMemoryQosSupported(bool supported) { memoryQosKernel_ = supported; }

 private:
  bool due(std::optional<Clock::Monotonic>& last, std::chrono::nanoseconds interval,
           Clock::Monotonic now) const;
  const std::vector<int>& pinnedCpus(const Pod& pod) const;
  // The cgroups under the besteffort dir in the cpuset hierarchy, depth 1 and 2.
  void listBesteffort(QosSnapshot& snap) const;

  QosManagerConfig config_;
  CgroupLayout layout_;
  CpuTopology topology_;
  Executor* executor_;
  const Clock* clock_;
  CpuSuppress suppress_;
  CpuBurst burst_;
  MemoryQosPlanner memory_;
  std::optional<Clock::Monotonic> lastSuppress_;
  std::optional<Clock::Monotonic> lastBurst_;
  std::optional<Clock::Monotonic> lastMemory_;
  std::optional<Clock::Monotonic> lastHooks_;
  bool resctrlReady_ = false;
  bool memoryQosKernel_ = false;
  // resource-status annotation text -> its CPUs, per pod uid (the pod list changes
  // every sync, the annotation almost never; parse once).
  mutable std::map<std::string, std::pair<std::string, std::vector<int>>> pinned_;
};

}  // namespace koord
