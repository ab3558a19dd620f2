#include "qos/group_identity.h"

#include "qos/write_reasons.h"

#include <nlohmann/json.hpp>

#include "qos/host_apps.h"

namespace koord {

int64_t BvtRule::forQos(KoordQos qos) const {
  switch (qos) {
    case KoordQos::kLSE:
    case KoordQos::kLSR:
      return lsr;
    case KoordQos::kLS:
      return ls;
    case KoordQos::kBE:
      return be;
    case KoordQos::kSystem:
    case KoordQos::kNone:
      return 0;
  }
  return 0;
}

BvtRule bvtRule(const NodeSloSpec& spec) {
  bool groupIdentityPolicy = true;  // "" and absent mean groupIdentity
  if (const auto p = spec.effective.find("policies"); p != spec.effective.end() && p->is_object()) {
    if (const auto c = p->find("cpuPolicy"); c != p->end() && c->is_string()) {
      const auto& v = c->get_ref<const std::string&>();
      groupIdentityPolicy = v.empty() || v == "groupIdentity";
    }
  }
  BvtRule r;
  r.lsrOn = groupIdentityPolicy && spec.qos.lsr.cpu.enable;
  r.lsOn = groupIdentityPolicy && spec.qos.ls.cpu.enable;
  r.beOn = groupIdentityPolicy && spec.qos.be.cpu.enable;
  r.lsr = r.lsrOn ? spec.qos.lsr.cpu.groupIdentity : 0;
  r.ls = r.lsOn ? spec.qos.ls.cpu.groupIdentity : 0;
  r.be = r.beOn ? spec.qos.be.cpu.groupIdentity : 0;
  r.enable = r.lsrOn || r.lsOn || r.beOn;
  return r;
}

int64_t podBvt(const Pod& pod, const BvtRule& rule, std::string* error) {
  switch (pod.koordQos) {
    case KoordQos::kLSE:
    case KoordQos::kLSR:
      return rule.lsr;
    case KoordQos::kLS: {
      const auto it = pod.annotations.find(kCpuQosAnnotation);
      if (it == pod.annotations.end()) return rule.ls;
      const auto j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
      const auto gi = j.is_object() ? j.find("groupIdentity") : nlohmann::json::const_iterator{};
      if (!j.is_object() || gi == j.end()) {
        if (!j.is_object() && error) {
          *error = "pod " + pod.ns + "/" + pod.name + ": annotation " + kCpuQosAnnotation +
                   ": not a JSON object; the LS value applies";
        }
        return rule.ls;
      }
      if (!gi->is_number_integer() || gi->get<int64_t>() < -1 || gi->get<int64_t>() > 2) {
        if (error) {
          *error = "pod " + pod.ns + "/" + pod.name + ": annotation " + kCpuQosAnnotation +
                   ": groupIdentity must be an integer -1..2, got " + gi->dump() +
                   "; the LS value applies";
        }
        return rule.ls;
      }
      const auto en = j.find("enable");
      const bool enabled = en != j.end() && en->is_boolean() && en->get<bool>();
      return enabled ? gi->get<int64_t>() : 0;
    }
    case KoordQos::kBE:
      return rule.be;
    case KoordQos::kSystem:
    case KoordQos::kNone:
      break;
  }
  switch (pod.kubeQos) {
    case KubeQos::kGuaranteed:
      return rule.lsrOn ? rule.lsr : (rule.lsOn ? rule.ls : 0);
    case KubeQos::kBurstable:
      return rule.ls;
    case KubeQos::kBestEffort:
      return rule.be;
  }
  return 0;
}

BvtPlan planGroupIdentity(const QosSnapshot& snap, const NodeSloSpec& spec,
                          const CgroupLayout& layout) {
  BvtPlan plan;
  const BvtRule rule = bvtRule(spec);
  auto write = [&](const std::string& dir, int64_t value) {
    plan.writes.push_back({dir, Knob::kCpuBvtWarpNs, KnobValue::of(value), kOwnerGroupIdentity});
  };
  write(layout.qosDir(KubeQos::kGuaranteed), 0);
  write(layout.qosDir(KubeQos::kBurstable), rule.ls);
  write(layout.qosDir(KubeQos::kBestEffort), rule.be);
  for (const PodView& pv : snap.pods) {
    if (pv.dir.empty() || !pv.pod->active()) continue;
    std::string error;
    const int64_t value = podBvt(*pv.pod, rule, &error);
    if (!error.empty()) plan.errors.push_back(std::move(error));
    write(pv.dir, value);
    for (const ContainerView& cv : pv.containers) {
      if (!cv.dir.empty()) write(cv.dir, value);
    }
  }
  for (const HostApplication& app : spec.hostApplications) {
    if (std::string dir = hostAppCgroupDir(app, layout); !dir.empty()) {
      write(dir, rule.forQos(app.qos));
    }
  }
  return plan;
}

std::vector<std::pair<std::string, int64_t>> groupIdentitySysctls(const BvtRule& rule,
                                                                  const SysctlValues& current) {
  std::vector<std::pair<std::string, int64_t>> out;
  if (!rule.enable || !current.groupIdentityEnabled || *current.groupIdentityEnabled == 1) {
    return out;
  }
  if (current.schedCore && *current.schedCore != 0) out.emplace_back("sched_core", 0);
  out.emplace_back("sched_group_identity_enabled", 1);
  return out;
}

StrategyOutcome GroupIdentityStrategy::run(const StrategyContext& ctx) {
  StrategyOutcome out;
  BvtPlan plan = planGroupIdentity(ctx.snapshot, ctx.spec, layout_);
  out.writes = std::move(plan.writes);
  out.errors = std::move(plan.errors);
  auto why = std::make_shared<WriteReason>();
  for (const char* cls : {"lsrClass", "lsClass", "beClass"}) {
    const std::string block = std::string("resourceQOSStrategy.") + cls + ".cpuQOS.";
    why->inputs.push_back(sloInput(ctx.spec, block + "enable"));
    why->inputs.push_back(sloInput(ctx.spec, block + "groupIdentity"));
  }
  why->rule =
      "cpu.bvt_warp_ns of a pod, its containers and its kube-QoS dir = its class's "
      "groupIdentity (koordinator.sh/cpuQOS may set an LS pod's), host applications by their qos";
  out.why = std::move(why);
  return out;
}

}  // namespace koord
