// Memory QoS (reference koordlet.md §4.3, koordlet's CgroupReconcile): protect what
// pods asked for (memory.min / memory.low from requests) and throttle before the
// limit (memory.high), per container, pod and kube-QoS dir.
//
//   container min  = request × minLimitPercent/100 (BE-labelled pods: batch-memory)
//   container low  = request × lowLimitPercent/100, raised to min when > 0
//   container high = "max" (-1) when throttlingPercent is 0, else
//                    floor((req + (limit − req) × pct/100) / page) × page, limit = the
//                    container's (batch-)memory limit or node allocatable memory;
//                    raised to min when > 0
//   pod min/low    = pod request × pct/100 (Σ requests, or the largest init container's
//                    when bigger; BE-labelled pods: Σ batch-memory requests); low
//                    raised to min when > 0
//   QoS dir min/low = Σ of the pod values of its pods; the Guaranteed dir (the kubepods
//                    root) holds the sum over all three classes. A dir with no active
//                    pod under it (the root: no active pod at all) is not written, as
//                    koordlet leaves it.
//
//   container, pod  memory.wmark_ratio / wmark_scale_factor / wmark_min_adj =
//                    wmarkRatio / wmarkScalePermill / wmarkMinAdj (Alinux async reclaim)
//   container, pod, QoS dir  memory.priority / use_priority_oom / oom.group =
//                    priority / priorityEnable / oomKillGroup
//
// Config: the pod's class block (qosWithDefault: LSE and LSR → lsr, LS → ls, BE → be,
// SYSTEM → system), with disabled LSR/LS/BE blocks replaced by the "none" values
// (resetDisabled), then the pod annotation koordinator.sh/memoryQOS
// {"policy":"default|none|auto", <MemoryQOS fields>}: none → the none values (fields
// ignored, as koordlet returns before merging), auto → koordlet's built-in block of
// the pod's class, then the annotation's fields merged over (default / absent policy:
// merged over the class block). A bad annotation is an error naming the pod and the
// class block is used, as koordlet does. The QoS dirs' priority/oom knobs come from
// koordlet's kube-QoS mapping (Guaranteed = the kubepods root → lsr, Burstable → ls,
// BestEffort → be, after resetDisabled) and are written every round, pods or not:
// koordlet's calculateQoSResources sets them from the class config unconditionally
// (only min/low depend on the pod summary), and they are values, not sums.
//
// Pods: phase Pending or Running only (koordlet's IsPodInactive). Containers whose dir
// is "" (not created yet) are skipped; their pod still counts. Writes are targets;
// the executor orders them (koordlet's LeveledUpdateBatch raises top-down, then
// writes bottom-up).
//
// Kernel support (options.support, probed once at the kubepods root): a knob the
// kernel lacks is never emitted. Vanilla v1 has no memory.min/low/high, wmark,
// priority or oom.group, so the strategy emits nothing there (unless the soft-limit
// fallback is on); vanilla v2 has min/low/high and oom.group (4.19+) but no Alinux
// knob. memoryQosSupported() is the koordlet_feature_supported{feature="memory_qos"}
// answer. Departure: koordlet writes oom.group (oomKillGroup, default 0) to every
// container, which on v2 undoes the kubelet's memory.oom.group=1 (kubelet 1.28+,
// singleProcessOOMKill off: an OOM kills the whole container, not one process).
// Here a container's oom.group is written only when oomKillGroup is 1; 0 leaves the
// kubelet's choice in place (so setting it back to 0 leaves 1, the kubelet's default,
// until the container restarts). Pod and QoS dirs, which the kubelet does not set,
// get the configured value either way.
//
// Soft-limit fallback (options.softLimitFallback, our addition; kernels with
// memory.soft_limit_in_bytes and without memory.low, i.e. vanilla v1): pods labelled
// BE get memory.soft_limit_in_bytes on their pod and container dirs = their memory.low
// target (pod: the pod's low; container: the container's low), rounded down to a page;
// 0 when that target is 0 (all of BE's memory is first in line for global reclaim,
// the intent of lowLimitPercent 0); -1 (unlimited, the kernel default) when BE's
// memoryQOS block is disabled or the pod's annotation says policy none, so turning it
// off resets it. What it gives: under global memory pressure (kswapd, and global
// direct reclaim on v1) the kernel first reclaims, with bounded effort, from the group
// furthest above its soft limit, so BE memory above its low target goes before LS
// memory. What it does not give: no protection at all (once soft-limit reclaim has
// made its passes, ordinary reclaim takes from every group); nothing against reclaim
// forced by the memcg's own limit or an ancestor's (memory.limit_in_bytes); no
// memory.min guarantee; nothing for higher-order allocations or where the multi-gen
// LRU is on (mem_cgroup_soft_limit_reclaim returns early for order > 0 and, 6.1+,
// under lru_gen); no effect on v2 (the file does not exist there); LS, LSR and
// SYSTEM pods and the QoS dirs get nothing (their soft limits are left as they are).
// Where memory.low exists the fallback is off and no soft limit is written.
//
// Disabled (gate CgroupReconcile off, koordlet's default): koordlet does not run the
// strategy and leaves every knob as it is; so do we (no writes, no reset). A class
// with memoryQOS.enable false is different: its pods get the none values (min 0,
// low 0, high max, wmark ratio 0, scale 50, min_adj 0, priority 0, use_priority_oom
// 0, oom.group 0), which resets what an earlier config set.
//
// Owns (owner "memory-qos"): memory.min, memory.low, memory.high, the wmark, priority
// and oom.group knobs and (fallback) memory.soft_limit_in_bytes of pod dirs, container
// dirs and, for min/low/priority/oom.group, the three kube-QoS dirs. The CPU
// strategies never touch memory knobs.
// Not done: the Alinux page-cache limit (memory.pagecache_limit.*); the annotation's
// fields for it are accepted and checked but have no effect.
//
// Departures from koordlet: an unknown policy, an unknown field or a percent outside
// 0..100 in the annotation is an error (koordlet ignores unknown fields and merges
// under an unknown policy); sidecar init containers and pod overhead are not in the
// pod request (the pod model has neither); a round without node allocatable memory
// or page size writes nothing (koordlet skips a round without a node); the v1
// soft-limit fallback.
//
// Kept from koordlet: a QoS dir's low is Σ pod request × lowLimitPercent, while pod and
// container lows are raised to their min. With 0 < lowLimitPercent < minLimitPercent a
// pod's memory.low therefore exceeds its QoS dir's (v2 accepts it and clips the pod's
// effective low; memory.min protection is unaffected). With low >= min, or low 0, every
// target keeps child <= parent, and the executor's order keeps it after every write
// (shown on real v2 kernels by tests/rig/test_memory_qos_v2_kernel.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cgroupfs/executor.h"
#include "cgroupfs/layout.h"
#include "qos/slo_config.h"
#include "qos/snapshot.h"
#include "qos/strategy.h"

namespace koord {

inline constexpr const char* kOwnerMemoryQos = "memory-qos";
inline constexpr const char* kMemoryQosAnnotation = "koordinator.sh/memoryQOS";

struct MemoryQosResult {
  // Run by the manager, they move to the strategy's outcome (the round's report
  // says what the executor did with them) and this is left empty.
  std::vector<CgroupWrite> writes;
  // One line per problem, naming the pod ("pod ns/name: annotation
  // koordinator.sh/memoryQOS: ..."); the round still writes what it can.
  std::vector<std::string> errors;
};

// The annotation merged over the pod's class block (`classBlock`, after
// resetDisabled) and koordlet's default block of the class (`autoBlock`). Errors name
// the annotation and field.
Result<MemoryQos> mergeMemoryQosAnnotation(const MemoryQos& classBlock, const MemoryQos& autoBlock,
                                           std::string_view json);

// What a round needs besides the snapshot and the NodeSLO config.
struct MemoryQosOptions {
  bool enabled = false;               // gate CgroupReconcile
  int64_t pageSize = 4096;            // bytes (sysconf(_SC_PAGESIZE))
  int64_t nodeAllocatableMemory = 0;  // bytes: --node-allocatable-memory, else MemTotal
  // Which knobs this kernel has (probed once by the executor): knobs it lacks are
  // not emitted at all, so a vanilla v1 kernel costs nothing per round.
  KnobSupport support = KnobSupport::all();
  // --memory-qos-v1-soft-limit: on kernels without memory.low (vanilla v1), BE pod
  // and container dirs get memory.soft_limit_in_bytes = their memory.low target
  // (so global reclaim takes BE memory above it first); -1 (unlimited) when BE's
  // block is disabled. Ignored where memory.low exists. See the top of this file for
  // what it does and does not guarantee.
  bool softLimitFallback = false;
};

class MemoryQosPlanner {
 public:
  // The layout gives the kube-QoS dirs (the snapshot only carries the besteffort one).
  explicit MemoryQosPlanner(CgroupLayout layout) : layout_(std::move(layout)) {}

  // config: NodeSLO resourceQOSStrategy as parsed (resetDisabled is applied here).
  MemoryQosResult run(const QosSnapshot& snap, const ResourceQosStrategy& config,
                      const MemoryQosOptions& options) const;

 private:
  CgroupLayout layout_;
};

// MemoryQosPlanner on the manager's schedule, enabled with the gate, with the
// node's page size, allocatable memory and knob support. Its round's result:
// MemoryQosResult; its problems (bad annotations, a round skipped) are its errors.
class MemoryQosStrategy final : public GatedStrategy {
 public:
  static constexpr std::string_view kName = "memory_qos";
  // interval: --reconcile-interval-seconds; gate: CgroupReconcile;
  // softLimitFallback: --memory-qos-v1-soft-limit.
  MemoryQosStrategy(std::chrono::nanoseconds interval, bool gate, CgroupLayout layout,
                    bool softLimitFallback)
      : GatedStrategy(kName, kOwnerMemoryQos, interval, gate),
        softLimitFallback_(softLimitFallback),
        planner_(std::move(layout)) {}

  StrategyOutcome run(const StrategyContext& ctx) override;

 private:
  bool softLimitFallback_;
  MemoryQosPlanner planner_;
};

}  // namespace koord
