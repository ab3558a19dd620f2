// The hooks' published state both runtime hook targets (fuzz_nri_session,
// fuzz_proxy_hooks) answer from: every hook on (suppress with cfsQuota, burst auto,
// memory QoS and resctrl for LS and BE), cgroup v2 (so the unified values are made),
// share pools known. Built once.
#pragma once

#include <memory>
#include <string_view>

#include "qos/hook_runtime.h"
#include "qos/slo_config.h"

namespace koord::fuzz {

inline HookStateStore& hookStore() {
  static HookStateStore* s = [] {
    constexpr std::string_view kSpec = R"(resourceUsedThresholdWithBE:
  enable: true
  cpuSuppressPolicy: cfsQuota
cpuBurstStrategy:
  policy: auto
resourceQOSStrategy:
  lsClass:
    memoryQOS: {enable: true}
    resctrlQOS: {enable: true}
  beClass:
    memoryQOS: {enable: true}
    resctrlQOS: {enable: true}
)";
    auto* st = new HookStateStore;
    auto state = std::make_shared<HookState>();
    auto spec = parseNodeSlo(kSpec, "fuzz.yaml");
    if (!spec.ok()) __builtin_trap();  // the spec above is valid
    state->spec = *spec;
    state->context.resctrl = true;
    state->context.memoryQos = true;
    state->context.version = CgroupVersion::kV2;
    state->context.nodeAllocatableMemory = int64_t{64} << 30;
    auto rule = std::make_shared<CpuSetRule>();
    rule->sharePools = {CpuSharePool{0, 0, {0, 1, 2, 3}}, CpuSharePool{1, 1, {4, 5, 6, 7}}};
    state->context.cpusetRule = rule;
    st->publish(std::move(state));
    return st;
  }();
  return *s;
}

}  // namespace koord::fuzz
