// CPUAllocatableEvict and MemoryAllocatableEvict (koordlet v1.8, reference koordlet.md
// §4.4, §4.5): when the pods at or under a priority request more of the Node's batch
// or mid allocatable than a NodeSLO percent allows, evict until what they request is
// back at the lower percent. A task of the CPU and memory eviction strategies, in
// koordlet's order (after BECPUEvict / BEMemoryEvict, before CPUEvict / MemoryEvict),
// through the same walk and Eviction API path (qos/evict_victims.h).
//
// For each resource r (cpu: kubernetes.io/batch-cpu and mid-cpu, milli-cores; memory:
// batch-memory and mid-memory, bytes), batch before mid:
//   R  = Σ r requested by the pods of r's class (koord-batch, koord-mid: the class
//        with default) whose priority with default <= allocatableEvictPriorityThreshold
//        (app containers and sidecars, as koordlet at HEAD)
//   A  = the Node's status.allocatable of r
//   trigger   R × 100 > T × A (T: cpu|memoryAllocatableEvictThresholdPercent)
//   release   (R × 100 − L × A) / 100, truncated (L: the lower percent)
//   A absent or 0 while R > 0: all of R (koordlet's rule: nothing of r is allocatable)
// T, L and the priority threshold have no default (koordinator's API comments say
// 110 and 100; koordlet applies none): unset, the feature says so and does nothing.
// Victims: active pods the eviction policy allows, of r's class, priority <= the
// threshold, labelled koordinator.sh/eviction-enabled "true", with a fresh usage
// sample; by eviction priority, priority, label priority ascending, then r's request
// descending, then name; each releases its request of r.
//
// Deliberate differences from koordlet v1.8, each because its rule cannot be right:
//   - the plain cpu/memory requests of pods of other classes (koord-free, none) are
//     not compared: koordlet's entry for them can never be met by its own victims
//     (it counts only batch and mid releases), so it evicts every candidate;
//   - only pods that release something for r are r's candidates (koordlet also
//     evicts, first, free and mid pods that release nothing for a batch overflow);
//   - R counts Pending and Running pods only (a finished pod holds nothing);
//   - releases are counted once (v1.8 subtracts an earlier task's twice; HEAD fixed).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "qos/evict_victims.h"
#include "qos/strategy.h"

namespace koord {

enum class AllocatableResource { kCpu, kMemory };

// Decides the feature for this round into `rep` (its decision, toRelease, candidates)
// and appends its tasks (none, or one per resource that overflows) to `tasks`; config
// errors go to `errors` once. Returns how many tasks it appended.
size_t allocatableEvictTasks(AllocatableResource which, const QosSnapshot& snap,
                             const ResourceThresholdStrategy& cfg, const NodeFacts& node,
                             std::chrono::nanoseconds maxAge, EvictFeatureReport& rep,
                             std::vector<EvictTask>& tasks, std::vector<std::string>& errors);

}  // namespace koord
