#include "qos/resctrl_plan.h"

#include <algorithm>

#include "base/text_scan.h"
#include "resctrl/schemata.h"

namespace koord::resctrl {
const char* groupForQos(KoordQos qos) {
  switch (qos) {
    case KoordQos::kLSE:
    case KoordQos::kLSR:
      return kGroupLSR;
    case KoordQos::kLS:
      return kGroupLS;
    case KoordQos::kBE:
      return kGroupBE;
    case KoordQos::kSystem:
    case KoordQos::kNone:
      break;
  }
  return "";
}

ResctrlPlan planResctrl(const ResctrlInfo& info, CpuVendor vendor,
                        const ResourceQosStrategy& config, const std::vector<PodThreads>& pods) {
  // koordlet's view: a disabled class block becomes 0-100 % / MBA 100 (and enable=false,
  // so its pods' threads are not moved either).
  const ResourceQosStrategy strategy = resetDisabled(config);
  struct Class {
    const char* group;
    const char* name;
    const ResctrlQos* qos;
  };
  const Class classes[] = {{kGroupLSR, "LSR", &strategy.lsr.resctrl},
                           {kGroupLS, "LS", &strategy.ls.resctrl},
                           {kGroupBE, "BE", &strategy.be.resctrl}};

  ResctrlPlan plan;
  for (const Class& c : classes) {
    GroupPlan g;
    g.group = c.group;
    const ClassShare share{c.qos->catRangeStartPercent, c.qos->catRangeEndPercent,
                           c.qos->mbaPercent};
    auto lines = groupSchemata(info, vendor, share);
    if (lines) {
      g.schemata = std::move(*lines);
    } else {
      g.schemataKnown = false;
      plan.errors.push_back(text::cat("resctrlQOS of class ", c.name, ": ", lines.error().message));
    }
    plan.groups.push_back(std::move(g));
  }

  for (const PodThreads& pt : pods) {
    if (pt.pod == nullptr || !pt.pod->active()) continue;
    // A pod with its own koordlet-<uid> group belongs to the runtime hook.
    if (pt.pod->annotations.count(kPodResctrlAnnotation) != 0) continue;
    const std::string_view group = groupForQos(pt.pod->qosWithDefault());
    for (size_t i = 0; i < std::size(classes); ++i) {
      if (group != classes[i].group || !classes[i].qos->enable) continue;
      auto& tids = plan.groups[i].tids;
      tids.insert(tids.end(), pt.tids.begin(), pt.tids.end());
    }
  }
  for (GroupPlan& g : plan.groups) {
    std::sort(g.tids.begin(), g.tids.end());
    g.tids.erase(std::unique(g.tids.begin(), g.tids.end()), g.tids.end());
  }
  return plan;
}

}  // namespace koord::resctrl
