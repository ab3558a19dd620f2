// GPU round benchmark (not a test): the agent's side of one GPU round, without a GPU:
// GpuCollector::collect (each GPU's use, each process placed in its pod and container
// by reading /proc/<pid>/cgroup) and Exporter::recordGpus (the series replaced),
// over a GpuLibrary that answers at once from memory, so what is timed is the
// agent's own work. The driver's calls (NVML: utilisation, memory, processes and
// their samples, per GPU) come on top and are measured only on a GPU machine
// (bench/gpu_check.sh).
//   gpu_round_bench [GPUS] [PROCESSES_PER_GPU] [ROUNDS]   (default 8 16 2000)
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "metrics/exporter.h"
#include "metrics/gpu_collector.h"

using namespace koord;
using Steady = std::chrono::steady_clock;

namespace {

class MemoryGpus final : public GpuLibrary {
 public:
  MemoryGpus(unsigned gpus, unsigned perGpu) : gpus_(gpus), perGpu_(perGpu) {}
  Result<GpuSystemInfo> system() override { return GpuSystemInfo{"535.261.03", "12.2"}; }
  Result<std::vector<GpuDeviceInfo>> devices() override {
    std::vector<GpuDeviceInfo> out;
    for (unsigned i = 0; i < gpus_; ++i) {
      out.push_back({i, "GPU-bench-" + std::to_string(i), i, "NVIDIA H100 80GB HBM3",
                     85520809984ULL, "", true, ""});
    }
    return out;
  }
  Result<GpuDeviceUsage> usage(unsigned index, uint64_t) override {
    GpuDeviceUsage u;
    u.coreUtil = 50;
    u.memoryUsed = 40ULL << 30;
    u.memoryTotal = 85520809984ULL;
    for (unsigned p = 0; p < perGpu_; ++p) {
      u.processes.push_back({static_cast<int>(pidOf(index, p)), 1ULL << 30, 3u});
    }
    return u;
  }
  Result<GpuWatchStart> watchHealth() override { return makeError("not in this benchmark"); }
  unsigned pidOf(unsigned gpu, unsigned p) const { return 10000 + gpu * perGpu_ + p; }

 private:
  unsigned gpus_, perGpu_;
};

}  // namespace

int main(int argc, char** argv) {
  const unsigned gpus = argc > 1 ? std::atoi(argv[1]) : 8;
  const unsigned perGpu = argc > 2 ? std::atoi(argv[2]) : 16;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 2000;
  // A private /proc stand-in (only the processes' cgroup files), under $TMPDIR.
  std::string tmpl = (std::filesystem::temp_directory_path() / "gpu-round-bench.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string proc = tmpl;
  auto lib = std::make_unique<MemoryGpus>(gpus, perGpu);
  MemoryGpus& fake = *lib;
  // Each process in a container of its own pod (two processes per container), the
  // systemd driver's cgroup v2 path, as containerd writes it.
  for (unsigned g = 0; g < gpus; ++g) {
    for (unsigned p = 0; p < perGpu; ++p) {
      const unsigned pid = fake.pidOf(g, p);
      char uid[37];
      std::snprintf(uid, sizeof uid, "%08x_1a3b_4c5d_8e9f_a0b1c2d3e4f5", pid / 2);
      std::string ctr(64, 'a');
      const std::string id = std::to_string(pid / 2);
      ctr.replace(64 - id.size(), id.size(), id);
      std::filesystem::create_directories(proc + "/" + std::to_string(pid));
      std::ofstream(proc + "/" + std::to_string(pid) + "/cgroup")
          << "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" << uid
          << ".slice/cri-containerd-" << ctr << ".scope\n";
    }
  }
  GpuCollector collector(std::move(lib), proc, proc + "/no-sys");
  if (!collector.start()) return 1;
  Exporter exporter("bench-node", "v1");
  std::vector<double> collectUs, recordUs;
  size_t pods = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Steady::now();
    GpuRound round = collector.collect(static_cast<uint64_t>(r) * 1000000);
    const auto t1 = Steady::now();
    exporter.recordGpus(collector.inventory(), collector.system(), round);
    const auto t2 = Steady::now();
    collectUs.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    recordUs.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    pods = round.pods.size();
  }
  auto pct = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
  };
  std::printf("| %u GPUs x %u processes (%zu pods) | %.0f | %.0f | %.0f | %.0f |\n", gpus, perGpu,
              pods, pct(collectUs, 0.5), pct(collectUs, 0.99), pct(recordUs, 0.5),
              pct(recordUs, 0.99));
  std::filesystem::remove_all(proc);
  return 0;
}
