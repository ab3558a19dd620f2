// The fake cgroup v1 tree the API benchmarks share (api_steady, fleet): for each
// Running pod of the kubelet capture, its pod dir under `cgroupRoot` holding the EKS
// capture's cpuacct.usage, memory.stat and cpu.stat. Returns the Running pods' count.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"
#include "tests/support/temp_tree.h"

namespace koord::bench {

// fixture(rel): a fixture file's text (the caller's reader, which exits on a miss).
inline size_t writeCaptureCgroups(test::TempTree& work, const std::string& cgroupRoot,
                                  const std::vector<Pod>& pods,
                                  const std::function<std::string(const std::string&)>& fixture) {
  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  const std::string eks = "cgroup/v1/elastic-amzn2-eks-node/sys/fs/cgroup/";
  const std::string container =
      "/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod7a96c459_d529_44ae_9f99_90d3798d6426.slice/"
      "cri-containerd-1d3d308a7d48a27814a68bf33a44acf4441c9c02463ca0bc1cdfdc8c0b4a8496.scope/";
  size_t running = 0;
  for (const auto& pod : pods) {
    if (pod.phase != "Running") continue;
    ++running;
    const std::string dir = layout.podDir(pod.kubeQos, pod.uid);
    for (CgroupFile f : {CgroupFile::kCpuUsage, CgroupFile::kMemoryStat, CgroupFile::kCpuStat}) {
      const std::string mount = f == CgroupFile::kMemoryStat ? "memory" : "cpu,cpuacct";
      const std::string path = cgroupFilePath(layout, cgroupRoot, dir, f);
      work.write(std::filesystem::relative(path, work.path()).string(),
                 fixture(eks + mount + container + cgroupFileSpec(f).v1File));
    }
  }
  return running;
}

}  // namespace koord::bench
