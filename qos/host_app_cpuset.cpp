#include "qos/host_app_cpuset.h"

#include "qos/host_apps.h"

namespace koord {

std::vector<CgroupWrite> planHostAppCpusets(const NodeSloSpec& spec, const CpuSetRule* rule,
                                            const CgroupLayout& layout) {
  std::vector<CgroupWrite> out;
  if (rule == nullptr) return out;
  const std::vector<int> cpus = rule->allShareCpus();
  if (cpus.empty()) return out;  // an empty cpuset would leave the app no CPU at all
  for (const HostApplication& app : spec.hostApplications) {
    if (app.qos != KoordQos::kLS) continue;
    out.push_back({hostAppCgroupDir(app, layout), Knob::kCpusetCpus, KnobValue::ofCpus(cpus),
                   kOwnerHostAppCpuset});
  }
  return out;
}

}  // namespace koord
