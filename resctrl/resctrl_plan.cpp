#include "resctrl/resctrl_plan.h"

#include <algorithm>

#include "agent/text_scan.h"
#include "resctrl/schemata.h"

namespace koord::resctrl {
namespace {

std::string_view trim(std::string_view s) { return text::trim(s, " \t\r"); }

}  // namespace

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
    auto lines = groupSchemata(info, vendor, *c.qos);
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

Result<std::vector<int32_t>> parseTids(std::string_view content, const std::string& file) {
  std::vector<int32_t> out;
  text::Lines lines(content);
  std::string_view raw;
  bool terminated = false;
  int lineNo = 0;
  while (lines.next(raw, terminated)) {
    ++lineNo;
    const std::string_view field = trim(raw);
    if (field.empty()) continue;
    uint64_t v = 0;
    const char* why = text::toU64(field, v);
    // tid 0 is refused: written to a tasks file it means "the writing thread", which
    // would move the agent itself into the group.
    if (why == nullptr && (v == 0 || v > INT32_MAX)) why = "is not a valid tid";
    if (why != nullptr) {
      return makeError(text::cat(file, ":", std::to_string(lineNo), ": \"", field, "\" ", why));
    }
    out.push_back(static_cast<int32_t>(v));
  }
  return out;
}

}  // namespace koord::resctrl
