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
//                    when bigger; BE-labelled pods: Σ batch-memory requests)
//   QoS dir min/low = Σ of the pod values of its pods; the Guaranteed dir (the kubepods
//                    root) holds the sum over all three classes. A dir with no active
//                    pod under it (the root: no active pod at all) is not written, as
//                    koordlet leaves it.
//
// Config: the pod's class block (qosWithDefault: LSE and LSR → lsr, LS → ls, BE → be,
// SYSTEM → system), with disabled LSR/LS/BE blocks replaced by the "none" values
// (resetDisabled), then the pod annotation koordinator.sh/memoryQOS
// {"policy":"default|none|auto", <MemoryQOS fields>}: none → the none values (fields
// ignored, as koordlet returns before merging), auto → koordlet's built-in block of
// the pod's class, then the annotation's fields merged over (default / absent policy:
// merged over the class block). A bad annotation is an error naming the pod and the
// class block is used, as koordlet does. The QoS dirs' own class mapping
// (Guaranteed→LSR, Burstable→LS, BestEffort→BE) only matters for the priority/oom
// knobs, not written here.
//
// Pods: phase Pending or Running only (koordlet's IsPodInactive). Containers whose dir
// is "" (not created yet) are skipped; their pod still counts. Writes are targets;
// the executor orders them (koordlet's LeveledUpdateBatch raises top-down, then
// writes bottom-up).
//
// Disabled (gate CgroupReconcile off, koordlet's default): koordlet does not run the
// strategy and leaves every knob as it is; so do we (no writes, no reset). A class
// with memoryQOS.enable false is different: its pods get the none values (min 0,
// low 0, high max), which resets what an earlier config set.
//
// Owns: memory.min, memory.low, memory.high of pod dirs, container dirs and the three
// kube-QoS dirs (owner "memory-qos"). The CPU strategies never touch memory knobs.
// Not done (their knobs are not in cgroupfs/knob.h yet): memory.wmark_ratio,
// wmark_scale_factor, wmark_min_adj, memory.priority, use_priority_oom, oom.group and
// the Alinux page-cache limit; the annotation's fields for them are accepted and
// checked but have no effect.
//
// Departures from koordlet: an unknown policy, an unknown field or a percent outside
// 0..100 in the annotation is an error (koordlet ignores unknown fields and merges
// under an unknown policy); sidecar init containers and pod overhead are not in the
// pod request (the pod model has neither); a round without node allocatable memory
// or page size writes nothing (koordlet skips a round without a node).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/result.h"
#include "cgroupfs/executor.h"
#include "cgroupfs/layout.h"
#include "qos/slo_config.h"
#include "qos/snapshot.h"

namespace koord {

inline constexpr const char* kOwnerMemoryQos = "memory-qos";
inline constexpr const char* kMemoryQosAnnotation = "koordinator.sh/memoryQOS";

struct MemoryQosResult {
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
  bool enabled = false;                // gate CgroupReconcile
  int64_t pageSize = 4096;             // bytes (sysconf(_SC_PAGESIZE))
  int64_t nodeAllocatableMemory = 0;   // bytes: --node-allocatable-memory, else MemTotal
  // Which knobs this kernel has (probed once by the executor): knobs it lacks are
  // not emitted at all, so a vanilla v1 kernel costs nothing per round.
  KnobSupport support = KnobSupport::all();
  // --memory-qos-v1-soft-limit: on kernels without memory.low (vanilla v1), BE pod
  // and container dirs get memory.soft_limit_in_bytes = their memory.low target
  // (so global reclaim takes BE memory above it first); -1 (unlimited) when BE's
  // block is disabled. Ignored where memory.low exists.
  bool softLimitFallback = false;
};

class MemoryQosStrategy {
 public:
  // The layout gives the kube-QoS dirs (the snapshot only carries the besteffort one).
  explicit MemoryQosStrategy(CgroupLayout layout) : layout_(std::move(layout)) {}

  // config: NodeSLO resourceQOSStrategy as parsed (resetDisabled is applied here).
  MemoryQosResult run(const QosSnapshot& snap, const ResourceQosStrategy& config,
                      const MemoryQosOptions& options) const;

 private:
  CgroupLayout layout_;
};

}  // namespace koord
