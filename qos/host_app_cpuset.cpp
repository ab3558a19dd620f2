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
    std::string dir = hostAppCgroupDir(app, layout);
    if (dir.empty()) continue;  // a kubepods QoS dir or above: never an app's to set
    auto why = std::make_shared<WriteReason>();
    why->add("hostApplications[" + app.name + "].qos", "LS", spec.origin);
    why->add("lsSharePoolCpus", renderCpuList(cpus));
    why->rule = "an LS host application runs on the LS share pools (CPUs no LSE/LSR pod holds)";
    out.push_back({std::move(dir), Knob::kCpusetCpus, KnobValue::ofCpus(cpus), kOwnerHostAppCpuset,
                   std::move(why)});
  }
  return out;
}

}  // namespace koord
