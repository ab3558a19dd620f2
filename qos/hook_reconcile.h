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

#include <string>
#include <vector>

#include "cgroupfs/executor.h"
#include "qos/runtime_hooks.h"
#include "qos/snapshot.h"

namespace koord {

inline constexpr const char* kOwnerRuntimeHooks = "runtime-hooks";

struct HookReconcileResult {
  std::vector<CgroupWrite> writes;
  std::vector<std::string> errors;  // one line per problem, naming the pod
};

HookReconcileResult reconcileHooks(const QosSnapshot& snap, const HookContext& ctx);

}  // namespace koord
