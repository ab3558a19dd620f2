// Node topology benchmark (not a test): one sync's computation on the real 128-CPU,
// 4-NUMA-node capture (tests/fixtures/sysfs/arm-128cpu-2socket-4numa) with N pods,
// a tenth of them pinned by the scheduler: computeNodeTopology (the annotations, the
// pools, the zones) and nrtDiffers against the object as stored (what every sync does
// when nothing changed), timed over many rounds; and the sizes of the object.
//   node_topology_bench FIXTURES_DIR [ROUNDS] [PODS...]   (default 2000, 110 500)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/nrt_object.h"
#include "metrics/cpu_topology.h"
#include "metrics/node_hardware.h"
#include "qos/node_topology.h"

using namespace koord;
using Steady = std::chrono::steady_clock;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FIXTURES_DIR [ROUNDS] [PODS...]\n", argv[0]);
    return 2;
  }
  const std::string fixtures = argv[1];
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 2000;
  std::vector<int> podCounts;
  for (int i = 3; i < argc; ++i) podCounts.push_back(std::atoi(argv[i]));
  if (podCounts.empty()) podCounts = {110, 500};

  HostPaths paths;
  paths.sysRoot = fixtures + "/sysfs/arm-128cpu-2socket-4numa";
  paths.procRoot = paths.sysRoot + "/proc";
  paths.sysFsRoot = paths.sysRoot + "/none";
  auto topo = readCpuTopology(paths);
  auto mem = readNumaMemory(paths);
  if (!topo || !mem) {
    std::fprintf(stderr, "capture unreadable\n");
    return 1;
  }
  std::printf("capture: %zu CPUs, %zu NUMA nodes; %d rounds each\n", topo->count(), mem->size(),
              rounds);
  std::printf("pods  pinned  compute us  compare us  object bytes  cpu-topology bytes\n");
  for (int n : podCounts) {
    std::vector<Pod> pods(static_cast<size_t>(n));
    int pinned = 0;
    for (int i = 0; i < n; ++i) {
      Pod& p = pods[static_cast<size_t>(i)];
      p.uid = "uid-" + std::to_string(i);
      p.ns = "bench";
      p.name = "pod-" + std::to_string(i);
      p.phase = "Running";
      p.kubeQos = KubeQos::kBurstable;
      p.koordQos = KoordQos::kLS;
      if (i % 10 == 0 && pinned < 60) {  // two CPUs each, up to 120 of the 128
        p.koordQos = KoordQos::kLSR;
        p.annotations[kResourceStatusAnnotation] = R"({"cpuset":")" + std::to_string(2 * pinned) +
                                                   "-" + std::to_string(2 * pinned + 1) + R"("})";
        ++pinned;
      }
    }
    NodeTopologyInputs in;
    in.topology = &*topo;
    in.basicInfo = readCpuBasicInfo(paths, *topo);
    in.numaMemoryBytes = *mem;
    in.kubelet.cpuManagerPolicy = "none";
    for (const Pod& p : pods) in.pods.push_back(&p);

    auto first = computeNodeTopology(in);
    if (!first) {
      std::fprintf(stderr, "%s\n", first.error().message.c_str());
      return 1;
    }
    const nlohmann::json stored = newNrtObject("bench-node", "uid", first->content);
    size_t sink = 0;
    const auto t0 = Steady::now();
    for (int r = 0; r < rounds; ++r) sink += computeNodeTopology(in)->content.annotations.size();
    const auto t1 = Steady::now();
    for (int r = 0; r < rounds; ++r) sink += nrtDiffers(stored, first->content) ? 1 : 0;
    const auto t2 = Steady::now();
    auto us = [&](auto a, auto b) {
      return std::chrono::duration<double, std::micro>(b - a).count() / rounds;
    };
    std::printf("%4d  %6d  %10.1f  %10.1f  %12zu  %18zu\n", n, pinned, us(t0, t1), us(t1, t2),
                stored.dump().size(), first->content.annotations.at(kAnnoCpuTopology).size());
    if (sink == 0) std::printf("(unreachable)\n");
  }
  return 0;
}
