// The reconciler side of the runtime hooks: every reconcile interval, the pod and
// container intents of runtime_hooks.h for every active pod, as cgroup writes.
// It repairs what NRI missed (plugin down, event failed, pod created before the
// agent started): a container without its intended values gets them within one
// interval. Only the cgroup fields are written here: cpu.shares, cfs quota, memory
// limit and a non-empty cpuset; the unified v2 values are the CPU burst and memory
// QoS strategies' own, the resctrl class the resctrl manager's.
//
// Owns (owner "runtime-hooks"): of raw-QoS BE pods, the pod and container dirs'
// cpu.shares, cpu.cfs_quota_us and memory limit; of pods with a resource-status
// cpuset, the container dirs' cpuset.cpus and the pod and container dirs'
// cpu.cfs_quota_us. CPU burst skips pods with a resource-status cpuset, so the sets
// stay disjoint.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cgroupfs/executor.h"
#include "qos/runtime_hooks.h"
#include "qos/snapshot.h"
#include "qos/strategy.h"

namespace koord {

inline constexpr const char* kOwnerRuntimeHooks = "runtime-hooks";

// One reconcile of one cgroup file's value for a pod or a container, timed as
// koordlet times its reconcile functions:
// koordlet_runtime_hook_reconciler_invoked_duration_milliseconds{level,resource_type,status}.
struct HookReconcileTiming {
  const char* level;         // "pod" | "container" (koordlet's ReconcilerLevel)
  std::string resourceType;  // the v1 file name, as koordlet names it: "cpu.shares", ...
  bool ok = true;            // false: a hook refused a value of this pod or container
  double millis = 0;         // computing that pod's or container's values
};

// A container's processes' oom_score_adj (OOMScoreAdj): not a cgroup file, so the
// agent applies it (cgroupfs/oom_score_adj_writer.h) to the processes in `dir`.
struct OomScoreAdjWrite {
  std::string dir;  // the container's cgroup dir
  std::string podNs, podName, podUid, container;
  int64_t value = 0;
  double millis = 0;  // computing the container's values
};

struct HookReconcileResult {
  std::vector<CgroupWrite> writes;  // moved to the outcome when run by the manager
  std::vector<OomScoreAdjWrite> oomScoreAdj;
  std::vector<std::string> errors;  // one line per problem, naming the pod
  // One per resource the hooks decided (written or refused) per pod and container.
  std::vector<HookReconcileTiming> timings;
};

HookReconcileResult reconcileHooks(const QosSnapshot& snap, const HookContext& ctx);

// An intent's cgroup fields as writes to `dir` (owner runtime-hooks): cpu.shares,
// cfs quota, memory limit, and a non-empty cpuset when `cpusetAllowed`. The
// reconciler's and the sandbox writes' one conversion.
void appendHookWrites(std::vector<CgroupWrite>& out, const std::string& dir,
                      const HookIntent& intent, bool cpusetAllowed);

// A pod's own writes at its sandbox (PreRunPodSandbox's pod intent, both hook
// paths), to `podDir`, each with its /explain reason: what the reconciler would write
// for the pod, less the quota of a pod that is not BE unless it is a pinned pod's -1
// (an LS pod's normalized quota is CPU burst's to step from, or the reconciler's:
// one owner per knob). Never a cpuset (containers get theirs).
std::vector<CgroupWrite> sandboxWrites(const HookPod& pod, const HookIntent& intent,
                                       const std::string& podDir);

// What the hooks take from the feature gates and flags: their own gates, and
// whether the strategies whose values they mirror run (a gate on with a positive
// interval).
struct HookGates {
  bool batchResource = true;          // BatchResource
  bool cpusetAllocator = true;        // CPUSetAllocator
  bool resctrl = true;                // RdtResctrl (and resctrl ready: NodeFacts)
  bool cpuBurst = true;               // CPUBurst, reconcile interval > 0
  bool cpuSuppress = true;            // BECPUSuppress, suppress interval > 0
  bool memoryQos = false;             // CgroupReconcile, reconcile interval > 0
  bool disableUnsetCpuQuota = false;  // --disable-unset-cpu-quota
  bool gpuEnvInject = false;          // GPUEnvInject (container create only)
  bool oomScoreAdj = false;           // OOMScoreAdj
};

// The hook context's fields that follow from the gates and the NodeSLO spec alone
// (suppress forcing -1, memory sizes); what the kernel tells (cgroup version, burst
// file, memory QoS, resctrl) is left unset. spec must outlive the context.
HookContext baseHookContext(const HookGates& gates, const NodeSloSpec& spec, int64_t pageSize,
                            int64_t nodeAllocatableMemory);
// The full context: what the reconciler and the NRI plugin both decide from (the
// agent publishes the same context in its HookState, so both compute the same
// values).
HookContext hookContext(const HookGates& gates, const NodeSloSpec& spec, const NodeFacts& node);

// The reconciler on the manager's schedule, enabled while BatchResource,
// CPUSetAllocator or OOMScoreAdj is on. Its round's result: HookReconcileResult.
class HookReconcileStrategy final : public GatedStrategy {
 public:
  static constexpr std::string_view kName = "runtime_hooks";
  // interval: --runtime-hooks-reconcile-interval; and in the round after the pod
  // list changes (koordlet reconciles pods and containers on every pods sync).
  HookReconcileStrategy(std::chrono::nanoseconds interval, HookGates gates)
      : GatedStrategy(kName, kOwnerRuntimeHooks, interval,
                      gates.batchResource || gates.cpusetAllocator || gates.oomScoreAdj),
        gates_(gates) {}

  StrategyOutcome run(const StrategyContext& ctx) override;
  bool runsOnPodsChange() const override { return true; }

 private:
  HookGates gates_;
};

}  // namespace koord
