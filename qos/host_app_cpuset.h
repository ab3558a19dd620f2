// The CPUSetAllocator's knob on host applications (reference colocation.md §2.4):
// an app with qos LS gets cpuset.cpus = every CPU of the node's LS share pools, the CPUs
// LS pods share, so a node daemon declared latency-sensitive runs where LS pods do and
// not on CPUs the scheduler pinned to LSE/LSR pods. Other QoS classes get nothing
// (koordlet logs an error for them each time; here they are simply not written).
// Only with the share pools known (qos/node_topology.h) and not empty. Written through
// the executor into exactly the app's own cgroup (Executor::allowOutside).
//
// Owns: cpuset.cpus of LS host applications' cgroups (owner "host-app-cpuset").
#pragma once

#include <chrono>
#include <vector>

#include "cgroupfs/executor.h"
#include "cgroupfs/layout.h"
#include "qos/node_topology.h"
#include "qos/slo_config.h"
#include "qos/strategy.h"

namespace koord {

inline constexpr const char* kOwnerHostAppCpuset = "host-app-cpuset";

std::vector<CgroupWrite> planHostAppCpusets(const NodeSloSpec& spec, const CpuSetRule* rule,
                                            const CgroupLayout& layout);

class HostAppCpusetStrategy final : public GatedStrategy {
 public:
  static constexpr std::string_view kName = "host_app_cpuset";
  // interval: --runtime-hooks-reconcile-interval; gate: CPUSetAllocator.
  HostAppCpusetStrategy(std::chrono::nanoseconds interval, bool gate, CgroupLayout layout)
      : GatedStrategy(kName, kOwnerHostAppCpuset, interval, gate), layout_(std::move(layout)) {}
  StrategyOutcome run(const StrategyContext& ctx) override {
    return StrategyOutcome{
        planHostAppCpusets(ctx.spec, ctx.node.cpusetRule.get(), layout_), {}, {}, {}};
  }

 private:
  CgroupLayout layout_;
};

}  // namespace koord
