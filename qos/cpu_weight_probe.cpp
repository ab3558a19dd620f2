#include "qos/cpu_weight_probe.h"

#include "base/read_file.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/cgroup_parsers.h"
#include "qos/runtime_hooks.h"

namespace koord {

std::optional<CpuWeightEvidence> probeCpuWeightConversion(const std::vector<Pod>& pods,
                                                          const CgroupLayout& layout,
                                                          const std::string& cgroupRoot,
                                                          int maxReads) {
  if (layout.version() != CgroupVersion::kV2) return std::nullopt;
  int reads = 0;
  for (const Pod& pod : pods) {
    if (pod.qosWithDefault() == KoordQos::kBE) continue;  // the agent writes those
    const std::string podDir = layout.podDir(pod.kubeQos, pod.uid);
    for (const Container& c : pod.containers) {
      if (c.init || c.id.empty() || !c.requests.cpuMilli) continue;
      const int64_t shares = milliCpuToShares(*c.requests.cpuMilli);
      // Both conversions agree on the smallest shares: nothing to learn there.
      if (cpuSharesToWeight(shares, CpuWeightConversion::kLinear) ==
          cpuSharesToWeight(shares, CpuWeightConversion::kQuadratic)) {
        continue;
      }
      auto dir = layout.containerDir(podDir, c.runtime, c.id);
      if (!dir) continue;
      if (++reads > maxReads) return std::nullopt;
      auto text = readFile(cgroupFilePath(layout, cgroupRoot, *dir, CgroupFile::kCpuShares), 32);
      if (!text) continue;  // not made yet, or gone
      auto weight = parseSingleInt(*text);
      if (!weight) continue;
      auto conversion = classifyCpuWeight(shares, *weight);
      if (!conversion) continue;  // neither conversion: someone else set it
      return CpuWeightEvidence{*conversion, *dir, pod.ns + "/" + pod.name + " " + c.name, shares,
                               *weight};
    }
  }
  return std::nullopt;
}

}  // namespace koord
