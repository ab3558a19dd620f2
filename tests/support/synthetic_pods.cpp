#include "tests/support/synthetic_pods.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace koord::test {

namespace {

std::string hex64(size_t pod, size_t c) {
  char buf[65];
  std::snprintf(buf, sizeof buf, "%016zx%016zx%016zx%016zx", pod, c, pod * 31 + c, size_t{0x5e});
  return buf;
}

nlohmann::json resourcesFor(KubeQos qos) {
  switch (qos) {
    case KubeQos::kGuaranteed:
      return {{"requests", {{"cpu", "500m"}, {"memory", "256Mi"}}},
              {"limits", {{"cpu", "500m"}, {"memory", "256Mi"}}}};
    case KubeQos::kBurstable:
      return {{"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}}};
    default:
      return {{"requests",
               {{"kubernetes.io/batch-cpu", "1000"}, {"kubernetes.io/batch-memory", "512Mi"}}}};
  }
}

}  // namespace

SyntheticPod syntheticPod(size_t index) {
  SyntheticPod p;
  char uid[64];
  std::snprintf(uid, sizeof uid, "5e000000-0000-4000-8000-%012zu", index);
  p.uid = uid;
  p.name = "synthetic-" + std::to_string(index);
  p.qos = index % 3 == 0   ? KubeQos::kBestEffort
          : index % 3 == 1 ? KubeQos::kBurstable
                           : KubeQos::kGuaranteed;
  for (size_t c = 0; c < 3; ++c) p.containerIds.push_back(hex64(index, c));
  return p;
}

nlohmann::json syntheticPodJson(const SyntheticPod& p) {
  nlohmann::json containers = nlohmann::json::array(), statuses = nlohmann::json::array();
  for (size_t c = 0; c < p.containerIds.size(); ++c) {
    std::string name = "c";  // not "c" + to_string: g++ 12's false -Wrestrict
    name += std::to_string(c);
    containers.push_back(
        {{"name", name}, {"image", "busybox"}, {"resources", resourcesFor(p.qos)}});
    statuses.push_back(
        {{"name", name}, {"ready", true}, {"containerID", "containerd://" + p.containerIds[c]}});
  }
  nlohmann::json labels = {{"app", "synthetic"}};
  if (p.qos == KubeQos::kBestEffort) labels["koordinator.sh/qosClass"] = "BE";
  return {
      {"metadata",
       {{"name", p.name}, {"namespace", kSyntheticNamespace}, {"uid", p.uid}, {"labels", labels}}},
      {"spec", {{"containers", containers}}},
      {"status",
       {{"phase", "Running"}, {"qosClass", toString(p.qos)}, {"containerStatuses", statuses}}}};
}

std::string syntheticPodListJson(const std::vector<SyntheticPod>& pods) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& p : pods) items.push_back(syntheticPodJson(p));
  return nlohmann::json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}}.dump();
}

std::vector<std::string> syntheticPodDirs(const CgroupLayout& layout, const SyntheticPod& pod) {
  std::vector<std::string> dirs{layout.podDir(pod.qos, pod.uid)};
  for (const auto& id : pod.containerIds) {
    if (auto dir = layout.containerDir(dirs.front(), "containerd", id)) dirs.push_back(*dir);
  }
  return dirs;
}

}  // namespace koord::test
