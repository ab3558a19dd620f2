// The GPU collector over a test double of the GpuLibrary seam (the driver's facts
// of a two-GPU H100 node as nvidia-smi -q shows them), with a fake sysfs (the PCI
// device links a real node has) and fake /proc/<pid>/cgroup files of both drivers.
#include <catch2/catch.hpp>

#include <filesystem>

#include "metrics/exporter.h"
#include "metrics/gpu_collector.h"
#include "tests/support/temp_tree.h"

namespace test_metrics_gpu_collector {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

constexpr const char* kPodA = "0f2b4c6e-1a3b-4c5d-8e9f-a0b1c2d3e4f5";
constexpr const char* kPodB = "7d6c5b4a-3928-4716-a5b4-c3d2e1f0a9b8";
const std::string kCtrA(64, 'a');
const std::string kCtrB = std::string(63, 'b') + "1";

class FakeGpus final : public GpuLibrary {
 public:
  Result<GpuSystemInfo> system() override { return GpuSystemInfo{"535.104.05", "12.2"}; }
  Result<std::vector<GpuDeviceInfo>> devices() override {
    if (failDevices) return makeError("NVML nvmlDeviceGetCount_v2: Unknown Error (999)");
    return std::vector<GpuDeviceInfo>{
        {0, "GPU-6b1ff724-4fe2-17b8-adfe-1f4c8a4148d1", 0, "NVIDIA H100 80GB HBM3", 85520809984ULL,
         "0000:3b:00.0", true, ""},
        {1, "GPU-702ee422-96de-2dde-438f-b6eda3ef7efc", 1, "NVIDIA H100 80GB HBM3", 85520809984ULL,
         "0000:d8:00.0", true, ""}};
  }
  Result<GpuDeviceUsage> usage(unsigned index, uint64_t sinceMicros) override {
    sinces.push_back(sinceMicros);
    if (index == 1 && failSecond)
      return makeError("NVML nvmlDeviceGetUtilizationRates: GPU is lost (15)");
    GpuDeviceUsage u;
    u.memoryTotal = 85520809984ULL;
    if (index == 0) {
      u.coreUtil = 87;
      u.memoryUsed = 30ULL << 30;
      // Two processes of pod A's container, one of pod B (systemd driver), one host
      // daemon, one that exited since the driver listed it.
      u.processes = {{100, 10ULL << 30, 40u},
                     {101, 8ULL << 30, 30u},
                     {200, 6ULL << 30, 15u},
                     {300, 1ULL << 30, std::nullopt},
                     {999, 1ULL << 30, 2u}};
    } else {
      u.coreUtil = 5;
      u.memoryUsed = 2ULL << 30;
      u.processes = {{200, 2ULL << 30, std::nullopt}};
    }
    return u;
  }
  Result<GpuWatchStart> watchHealth() override {
    return makeError("NVML has no nvmlEventSetWait_v2 (a driver older than R450)");
  }
  bool failDevices = false;
  bool failSecond = false;
  std::vector<uint64_t> sinces;
};

struct Node {
  Node() {
    const std::string a =
        "12:cpu,cpuacct:/kubepods/burstable/pod" + std::string(kPodA) + "/" + kCtrA + "\n0::/\n";
    std::string uidB = kPodB;
    for (char& c : uidB) c = c == '-' ? '_' : c;
    const std::string b = "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" +
                          uidB + ".slice/cri-containerd-" + kCtrB + ".scope\n";
    proc.write("100/cgroup", a);
    proc.write("101/cgroup", a);
    proc.write("200/cgroup", b);
    proc.write("300/cgroup", "0::/system.slice/nvidia-persistenced.service\n");
    namespace fs = std::filesystem;
    for (auto [root, bus, numa, cpus, cpu, socket] :
         {std::tuple{"pci0000:3a", "0000:3b:00.0", "0", "0-55", "0", "0"},
          std::tuple{"pci0000:d7", "0000:d8:00.0", "1", "56-111", "56", "1"}}) {
      const std::string dev =
          std::string("devices/") + root + "/0000:" + std::string(root).substr(7) + ":00.0/" + bus;
      sys.write(dev + "/numa_node", std::string(numa) + "\n");
      sys.write(dev + "/local_cpulist", std::string(cpus) + "\n");
      sys.write(std::string("devices/system/cpu/cpu") + cpu + "/topology/physical_package_id",
                std::string(socket) + "\n");
      fs::create_directories(sys.path("bus/pci/devices"));
      fs::create_symlink(sys.path(dev), sys.path(std::string("bus/pci/devices/") + bus));
    }
  }
  test::TempTree proc;
  test::TempTree sys;
};

}  // namespace

TEST_CASE("a process's pod and container are read from its cgroup, either driver", "[gpu]") {
  CHECK(parseProcessOwner("11:memory:/kubepods/pod" + std::string(kPodA) + "/" + kCtrA + "\n") ==
        ProcessOwner{kPodA, kCtrA});
  CHECK(parseProcessOwner("0::/kubepods.slice/kubepods-pod0f2b4c6e_1a3b_4c5d_8e9f_a0b1c2d3e4f5"
                          ".slice/docker-" +
                          kCtrA + ".scope\n") == ProcessOwner{kPodA, kCtrA});
  // The pause process's pod-level cgroup: the pod, no container.
  CHECK(parseProcessOwner("0::/kubepods/besteffort/pod" + std::string(kPodA) + "\n") ==
        ProcessOwner{kPodA, ""});
  CHECK_FALSE(parseProcessOwner("0::/system.slice/containerd.service\n"));
  CHECK_FALSE(parseProcessOwner("0::/kubepods/burstable/podnot-a-uid/x\n"));
  CHECK_FALSE(parseProcessOwner(""));
}

TEST_CASE("the PCI root of a GPU is the pciDDDD:BB directory of its sysfs path", "[gpu]") {
  CHECK(pcieRootOf("/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0") == "pci0000:3a");
  CHECK(pcieRootOf("/sys/devices/platform/gpu") == "");
}

TEST_CASE("the GPUs' facts and places are read once at start", "[gpu]") {
  Node node;
  auto fake = std::make_unique<FakeGpus>();
  GpuCollector collector(std::move(fake), node.proc.path(), node.sys.path());
  REQUIRE(collector.start().ok());
  CHECK(collector.system().driverVersion == "535.104.05");
  REQUIRE(collector.inventory().size() == 2);
  const GpuInventory& second = collector.inventory()[1];
  CHECK(second.info.minor == 1);
  CHECK(second.place == GpuPlace{1, 1});
  CHECK(second.pcieId == "pci0000:d7");
  CHECK(collector.inventory()[0].pcieId == "pci0000:3a");
}

TEST_CASE("a round gives the node's use per GPU and each pod's and container's share", "[gpu]") {
  Node node;
  auto fake = std::make_unique<FakeGpus>();
  FakeGpus* gpus = fake.get();
  GpuCollector collector(std::move(fake), node.proc.path(), node.sys.path());
  REQUIRE(collector.start().ok());
  GpuRound r = collector.collect(1'000'000);
  CHECK(r.errors.empty());
  // The node: the driver's own figures, host daemon included.
  CHECK(r.node.at(0) == GpuUse{87, 30ULL << 30});
  CHECK(r.node.at(1) == GpuUse{5, 2ULL << 30});
  // Pod A: its two processes on GPU 0.
  CHECK(r.pods.at(kPodA).size() == 1);
  CHECK(r.pods.at(kPodA).at(0) == GpuUse{70, 18ULL << 30});
  CHECK(r.containers.at(kCtrA).at(0) == GpuUse{70, 18ULL << 30});
  // Pod B on both GPUs; on GPU 1 no core sample: its memory only.
  CHECK(r.pods.at(kPodB).at(0) == GpuUse{15, 6ULL << 30});
  CHECK(r.pods.at(kPodB).at(1) == GpuUse{0, 2ULL << 30});
  CHECK(r.containers.at(kCtrB).at(1) == GpuUse{0, 2ULL << 30});
  // The host daemon and the exited process belong to no pod.
  CHECK(r.pods.size() == 2);
  // Per-process samples are asked since the last round.
  collector.collect(2'000'000);
  CHECK(gpus->sinces == std::vector<uint64_t>{0, 0, 1'000'000, 1'000'000});
}

TEST_CASE("a GPU whose use cannot be read is said, and the others still count", "[gpu]") {
  Node node;
  auto fake = std::make_unique<FakeGpus>();
  fake->failSecond = true;
  GpuCollector collector(std::move(fake), node.proc.path(), node.sys.path());
  REQUIRE(collector.start().ok());
  GpuRound r = collector.collect(1);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0] ==
        "GPU 1 (GPU-702ee422-96de-2dde-438f-b6eda3ef7efc): NVML nvmlDeviceGetUtilizationRates: "
        "GPU is lost (15)");
  CHECK(r.node.count(0) == 1);
  CHECK(r.node.count(1) == 0);
}

TEST_CASE("a driver that cannot list its GPUs leaves none", "[gpu]") {
  Node node;
  auto fake = std::make_unique<FakeGpus>();
  fake->failDevices = true;
  GpuCollector collector(std::move(fake), node.proc.path(), node.sys.path());
  auto st = collector.start();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message == "NVML nvmlDeviceGetCount_v2: Unknown Error (999)");
  CHECK(collector.inventory().empty());
  CHECK(collector.collect(1).node.empty());
}

TEST_CASE("each round's GPU series replace the last round's", "[gpu]") {
  Node node;
  GpuCollector collector(std::make_unique<FakeGpus>(), node.proc.path(), node.sys.path());
  REQUIRE(collector.start().ok());
  Exporter e("gpu-node", "v1");
  e.recordGpus(collector.inventory(), collector.system(), collector.collect(1));
  std::string text = e.render();
  CHECK(text.find("koordlet_node_gpu_core_usage{gpu_device_uuid=\"GPU-6b1ff724-4fe2-17b8-adfe-"
                  "1f4c8a4148d1\",gpu_minor=\"0\",node=\"gpu-node\"} 87") != std::string::npos);
  CHECK(text.find("koordlet_pod_gpu_core_usage{gpu_device_uuid=\"GPU-6b1ff724-4fe2-17b8-adfe-"
                  "1f4c8a4148d1\",gpu_minor=\"0\",node=\"gpu-node\",pod_uid=\"" +
                  std::string(kPodA) + "\"} 70") != std::string::npos);
  CHECK(text.find("model=\"NVIDIA H100 80GB HBM3\"") != std::string::npos);
  // Pod A's processes end: its series go with the next round.
  node.proc.write("100/cgroup", "0::/system.slice/x.service\n");
  node.proc.write("101/cgroup", "0::/system.slice/x.service\n");
  e.recordGpus(collector.inventory(), collector.system(), collector.collect(2));
  text = e.render();
  CHECK(text.find(kPodA) == std::string::npos);
  CHECK(text.find(kCtrA) == std::string::npos);
  CHECK(text.find(kPodB) != std::string::npos);
}

TEST_CASE("a GPU marked unhealthy keeps its first reason; an event naming no GPU marks them all",
          "[gpu]") {
  Node node;
  GpuCollector collector(std::make_unique<FakeGpus>(), node.proc.path(), node.sys.path());
  REQUIRE(collector.start().ok());
  CHECK(collector.markUnhealthy("GPU-702ee422-96de-2dde-438f-b6eda3ef7efc", "Xid 79") ==
        std::vector<unsigned>{1});
  CHECK(collector.markUnhealthy("GPU-702ee422-96de-2dde-438f-b6eda3ef7efc", "Xid 48").empty());
  CHECK(collector.markUnhealthy("GPU-not-on-this-node", "Xid 79").empty());
  CHECK(collector.inventory()[1].info.unhealthyReason == "Xid 79");
  CHECK(collector.inventory()[0].info.healthy);
  // Only the one still healthy is newly marked.
  CHECK(collector.markUnhealthy("", "GPU lost") == std::vector<unsigned>{0});
  CHECK_FALSE(collector.inventory()[0].info.healthy);

  Exporter e("gpu-node", "v1");
  e.recordGpus(collector.inventory(), collector.system(), collector.collect(1));
  const std::string text = e.render();
  CHECK(text.find("koordlet_gpu_device_healthy{gpu_device_uuid=\"GPU-702ee422-96de-2dde-438f-"
                  "b6eda3ef7efc\",gpu_minor=\"1\",node=\"gpu-node\"} 0") != std::string::npos);
}

TEST_CASE("the driver's critical errors are counted per GPU and error, in bounded series",
          "[gpu]") {
  Exporter e("gpu-node", "v1");
  e.countGpuCriticalError("1", "GPU-b", "Xid 79");
  e.countGpuCriticalError("1", "GPU-b", "Xid 79");
  e.countGpuCriticalError("", "", "GPU lost");
  std::string text = e.render();
  CHECK(text.find("koordlet_gpu_critical_errors_total{error=\"Xid 79\",gpu_device_uuid=\"GPU-b\","
                  "gpu_minor=\"1\",node=\"gpu-node\"} 2") != std::string::npos);
  CHECK(text.find("koordlet_gpu_critical_errors_total{error=\"GPU lost\",gpu_device_uuid=\"\","
                  "gpu_minor=\"\",node=\"gpu-node\"} 1") != std::string::npos);
  // A flood of distinct Xids (a driver gone wrong) stops adding series at 256.
  for (int xid = 1000; xid < 1400; ++xid)
    e.countGpuCriticalError("0", "GPU-a", "Xid " + std::to_string(xid));
  text = e.render();
  CHECK(text.find("error=\"Xid 1253\"") != std::string::npos);  // the 256th pair
  CHECK(text.find("error=\"Xid 1254\"") == std::string::npos);
  CHECK(text.find("koordlet_gpu_critical_errors_total{error=\"other\",gpu_device_uuid=\"GPU-a\","
                  "gpu_minor=\"0\",node=\"gpu-node\"} 146") != std::string::npos);
}

}  // namespace test_metrics_gpu_collector
