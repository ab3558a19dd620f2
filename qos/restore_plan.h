// The restore plan (`koordlet restore`): the writes that put every knob the agent
// may own back to what the kubelet and the runtime would hold without it, computed
// from the pod list, the cgroup dirs found on disk and which strategies the agent's
// flags turn on (a knob kind no enabled strategy writes is never touched). Pure: the
// caller lists dirs, reads the kubepods cpuset and hands the writes to the executor
// (which drops what already holds its value, orders parents and children, and stays
// inside kubepods).
//
// The values, as the kubelet sets them (kubelet's ResourceConfigForPod and the
// runtime's container resources; v1 units):
//   cpu.cfs_quota_us   kube-QoS dirs -1; a pod: its containers' cpu limits summed (the
//                      larger of that and the largest init container's, plus the
//                      overhead) when every container has one, else -1; a container:
//                      its limit, else -1. Never divided by a normalization ratio,
//                      never burst.
//   cpu.shares         (BE pods, BatchResource) a pod: its cpu requests summed, a
//                      container: its request, as shares (at least 2).
//   memory limit       (BE pods, BatchResource) the memory limits likewise, else -1.
//   cpu.cfs_burst_us   0.
//   cpuset.cpus        the besteffort dir, BE pods and containers (suppress), and the
//                      containers of every other pod (CPUSetAllocator: share pools or a
//                      resource-status cpuset), but Guaranteed pods' under the kubelet's
//                      static policy (its own): on v1 the kubepods dir's CPUs, on v2
//                      empty (the parent's, as the kubelet leaves it).
//   memory.min/low 0, memory.high -1 (max), wmark_ratio 0, wmark_scale_factor 50,
//   wmark_min_adj 0, priority 0, use_priority_oom 0, soft limit -1; memory.oom.group
//   0 on kube-QoS and pod dirs (a container's is the kubelet's: 1 on v2 since 1.28).
//   cpu.bvt_warp_ns    0.
// A pod's knobs are restored only while the kubelet lists it (its limits say the
// value); the besteffort tree's cpusets are restored from disk, listed or not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cgroupfs/executor.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"

namespace koord {

inline constexpr const char* kOwnerRestore = "restore";

// What the agent's flags turn on: the knob kinds restore may touch.
struct RestoreScope {
  bool cpuSuppress = false;       // BECPUSuppress
  bool cpuBurst = false;          // CPUBurst
  bool batchResource = false;     // BatchResource (the hooks and their reconciler)
  bool cpusetAllocator = false;   // CPUSetAllocator
  bool cpuNormalization = false;  // CPUNormalization
  bool memoryQos = false;         // MemoryQoS (and the soft-limit fallback)
  bool groupIdentity = false;     // GroupIdentity
  // The kubelet's CPU manager policy is static: it holds Guaranteed pods' container
  // cpusets itself (exclusive CPUs), so restore leaves those to it.
  bool kubeletStaticCpuPolicy = false;
};

struct RestoreInput {
  CgroupLayout layout{CgroupVersion::kV1, CgroupDriver::kCgroupfs};
  RestoreScope scope;
  KnobSupport support;
  // nullopt: the kubelet could not be asked; per-pod limits are unknown and those
  // knobs are left alone (the caller says so).
  std::optional<std::vector<Pod>> pods;
  // The CPUs a cpuset gets back (the kubepods dir's; on v2 those in force there).
  std::vector<int> fullCpus;
  // Dirs found on disk under the besteffort dir (cpuset hierarchy): pods and their
  // containers, relative to the hierarchy root.
  std::vector<std::string> besteffortDirs;
};

// The writes, owner kOwnerRestore, each with a WriteReason naming the kubelet's rule.
std::vector<CgroupWrite> planRestore(const RestoreInput& in);

}  // namespace koord
