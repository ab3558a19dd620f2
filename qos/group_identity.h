// GroupIdentity (reference colocation.md §4): Alibaba Cloud Linux / Anolis kernels
// schedule cgroups by identity through cpu.bvt_warp_ns (-1..2): a latency-sensitive
// cgroup (2) preempts a best-effort one (-1) at once. koordlet writes a value per
// QoS class from the NodeSLO's resourceQOSStrategy.<class>.cpuQOS.
//
// Values: policies.cpuPolicy groupIdentity (the default) and the class's
// cpuQOS.enable give that class its cpuQOS.groupIdentity; otherwise the class gets 0
// (so turning a class off resets its cgroups). The rule is on when any of LSR, LS, BE
// is.
//   pod: label LSE/LSR -> LSR, LS -> LS, BE -> BE; no label (or SYSTEM): kube
//        Guaranteed -> LSR if LSR is on, else LS if LS is on, else 0; Burstable -> LS;
//        BestEffort -> BE. An LS-labelled pod's koordinator.sh/cpuQOS annotation
//        ({"enable": true, "groupIdentity": n}) overrides: n when enabled, else 0.
//   containers: their pod's value.
//   kube-QoS dirs: kubepods (Guaranteed) 0 always, burstable LS, besteffort BE.
//   host applications (their own cgroup, as the NodeSLO names it): by their qos as
//        the pod labels; other qos 0.
// Every reconcile interval and on pod-list changes, as koordlet's reconciler; the
// executor drops writes equal to the file. Not done (noted in docs/colocation.md): cgroups on
// disk that no listed pod owns ("dangling" pod dirs koordlet also resets), and the
// hook paths' pod-sandbox write (the reconciler writes a new pod within a round).
//
// Kernels without cpu.bvt_warp_ns at the kubepods root (every mainline kernel): the
// agent says so once and the strategy is not registered.
//
// Owns: cpu.bvt_warp_ns of the kube-QoS dirs, pod and container dirs and host
// application cgroups (owner "group-identity").
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cgroupfs/executor.h"
#include "cgroupfs/layout.h"
#include "qos/slo_config.h"
#include "qos/snapshot.h"
#include "qos/strategy.h"

namespace koord {

inline constexpr const char* kOwnerGroupIdentity = "group-identity";
inline constexpr const char* kCpuQosAnnotation = "koordinator.sh/cpuQOS";

struct BvtRule {
  bool enable = false;  // any of LSR, LS, BE on
  bool lsrOn = false;
  bool lsOn = false;
  bool beOn = false;
  int64_t lsr = 0;
  int64_t ls = 0;
  int64_t be = 0;
  int64_t forQos(KoordQos qos) const;  // LSE/LSR, LS, BE; others 0
};

BvtRule bvtRule(const NodeSloSpec& spec);

// The pod's value; an unusable cpuQOS annotation is ignored and said in `error`.
int64_t podBvt(const Pod& pod, const BvtRule& rule, std::string* error = nullptr);

// Every write of one round (no filesystem), in koordlet's order: kube-QoS dirs,
// pods, their containers, host applications.
struct BvtPlan {
  std::vector<CgroupWrite> writes;
  std::vector<std::string> errors;
};
BvtPlan planGroupIdentity(const QosSnapshot& snap, const NodeSloSpec& spec,
                          const CgroupLayout& layout);

// The kernel switches (reference §4.1): with the rule on and
// /proc/sys/kernel/sched_group_identity_enabled present, sched_core (when present)
// goes to 0 first (the two conflict), then sched_group_identity_enabled to 1. With
// the rule off nothing is switched back (koordlet leaves it too). `current` holds
// each file's value, nullopt when the file is absent. Returned in write order:
// (file under /proc/sys/kernel, value); empty when nothing changes.
struct SysctlValues {
  std::optional<int64_t> groupIdentityEnabled;  // sched_group_identity_enabled
  std::optional<int64_t> schedCore;             // sched_core
};
std::vector<std::pair<std::string, int64_t>> groupIdentitySysctls(const BvtRule& rule,
                                                                  const SysctlValues& current);

class GroupIdentityStrategy final : public GatedStrategy {
 public:
  static constexpr std::string_view kName = "group_identity";
  // interval: --runtime-hooks-reconcile-interval; gate: GroupIdentity.
  GroupIdentityStrategy(std::chrono::nanoseconds interval, bool gate, CgroupLayout layout)
      : GatedStrategy(kName, kOwnerGroupIdentity, interval, gate), layout_(std::move(layout)) {}
  StrategyOutcome run(const StrategyContext& ctx) override;
  bool runsOnPodsChange() const override { return true; }

 private:
  CgroupLayout layout_;
};

}  // namespace koord
