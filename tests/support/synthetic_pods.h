// Synthetic pods for end-to-end tests and benchmarks that need a node of many pods:
// N pods of three containers each, a third each BestEffort (Koordinator BE, batch
// resources), Burstable and Guaranteed; their PodList JSON as the kubelet serves
// it; and their cgroup directories (pod and containers, cgroupfs driver) to make in
// a CgroupV1Tree. Pure values: the test owns the tree and the kubelet stand-in.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cgroupfs/layout.h"
#include "kube/qos_class.h"

namespace koord::test {

struct SyntheticPod {
  std::string uid, name;
  KubeQos qos = KubeQos::kBurstable;
  std::vector<std::string> containerIds;  // 64 hex digits each
};

// Pod number `index` (uid, name and ids derive from it, so a pod made again with
// the same index is the same pod).
SyntheticPod syntheticPod(size_t index);

inline constexpr const char* kSyntheticNamespace = "synthetic";

// One pod as the kubelet and the API server show it (Running).
nlohmann::json syntheticPodJson(const SyntheticPod& pod);

// The kubelet's /pods reply listing `pods`, all Running.
std::string syntheticPodListJson(const std::vector<SyntheticPod>& pods);

// The pod's cgroup directory, then its containers', relative to the cgroup root.
std::vector<std::string> syntheticPodDirs(const CgroupLayout& layout, const SyntheticPod& pod);

}  // namespace koord::test
