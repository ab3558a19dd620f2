// resctrl_plan: what the LSR/LS/BE groups should hold this round, computed from the
// host's ResctrlInfo, the NodeSLO resctrlQOS blocks and the threads of each pod
// (reference §4.7). Pure: resctrl_writer.h compares it with the groups and writes.
//
// Decisions (koordlet's behaviour unless said):
//  * Schemata for all three groups every round, even when a class's resctrlQOS is
//    disabled (its block is then the "none" values: 0-100 %, MBA 100), so turning a
//    class off resets its group instead of leaving the last limits in force.
//  * Groups: LSE/LSR pods -> LSR, LS -> LS, BE -> BE (groupForQos of qosWithDefault);
//    SYSTEM and unclassified pods stay in the root group (no tasks moved).
//  * Tasks: the threads of pods (phase Pending/Running) whose class block has
//    enable=true and that carry no node.koordinator.sh/resctrl annotation (that pod
//    has its own koordlet-<uid> group, managed by the runtime hook).
//  * A group whose schemata cannot be computed (the config asks for less than one
//    cache way, mbaPercent 0) gets no schemata lines this round and an error naming
//    the class and field; its tasks are still planned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kube/pod.h"
#include "qos/slo_config.h"
#include "resctrl/group_plan.h"
#include "resctrl/resctrl_info.h"
#include "resctrl/schemata.h"

namespace koord::resctrl {

// The threads found in one pod's cgroups (pod dir and every cgroup below it).
struct PodThreads {
  const Pod* pod = nullptr;
  std::vector<int32_t> tids;
};

// LSE and LSR -> "LSR", LS -> "LS", BE -> "BE". kSystem and kNone -> "" (stay in the root
// group): koordinator has no SYSTEM group, and callers pass pod->qosWithDefault(), so
// kNone only reaches here for pods koordlet does not classify.
const char* groupForQos(KoordQos qos);

// config: the NodeSLO resourceQOSStrategy as parsed (resetDisabled is applied here).
ResctrlPlan planResctrl(const ResctrlInfo& info, CpuVendor vendor,
                        const ResourceQosStrategy& config, const std::vector<PodThreads>& pods);

}  // namespace koord::resctrl
