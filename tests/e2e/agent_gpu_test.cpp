// End-to-end test of the real koordlet binary on a GPU node, as far as a machine
// without a GPU allows: the NVML stand-in (tests/fake_nvml, the driver library's
// exported functions over a JSON description of the node) is found by the dynamic
// loader through LD_LIBRARY_PATH, exactly where the agent's dlopen of
// libnvidia-ml.so.1 looks; the API server stand-in takes the Device.
//
// What is checked, as koord-scheduler and an operator would see it:
//  * the Device is created once with the three GPUs, owned by the Node; the GPU too
//    old for health events is reported unhealthy from the start (as koordlet);
//  * GPU use and the health-events support are on /metrics;
//  * a process the driver lists on a GPU, living in a pod's container cgroup on the
//    real kernel (cgroup v1, a private subtree: root), is that pod's and container's
//    use, placed by its /proc/<pid>/cgroup as the agent reads it; its series go when
//    the driver stops listing it;
//  * an application's Xid is counted and changes nothing; a critical Xid makes its
//    GPU unhealthy in the Device within seconds, in one update, and on /metrics;
//  * SIGTERM ends the agent promptly (the event thread stops within one wait).
// Real time, every wait bounded generously for a loaded 2-core machine.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "base/read_file.h"
#include "tests/support/agent_process.h"
#include "tests/support/burner.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/e2e_cluster.h"
#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_agent_gpu {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::test::AgentProcess;
using koord::test::Burner;
using koord::test::CgroupV1Tree;
using koord::test::httpGet;
using koord::test::readFixture;
using koord::test::Scrape;
using koord::test::TempTree;
using koord::test::TestApiServer;
using koord::test::TestKubelet;
using koord::test::waitFor;
using json = nlohmann::json;
using namespace std::chrono_literals;

const std::string kNode = "e2e-gpu-node";
constexpr auto kPhase = 30s;

// Three GPUs as NVML lists them: two H100s, and one whose driver cannot register
// critical-error events (NVML_ERROR_NOT_SUPPORTED).
json gpuNode() {
  auto gpu = [](int minor, const std::string& uuid, const std::string& bus, unsigned util) {
    return json{{"uuid", uuid},
                {"minor", minor},
                {"name", "NVIDIA H100 80GB HBM3"},
                {"memTotal", 85520809984ull},
                {"memUsed", 1073741824ull * (minor + 1)},
                {"util", util},
                {"busId", bus}};
  };
  json node = {{"driver", "535.261.03"}, {"cuda", 12020}};
  node["devices"] = {gpu(0, "GPU-e2e-0", "00000000:1B:00.0", 37),
                     gpu(1, "GPU-e2e-1", "00000000:9A:00.0", 5),
                     gpu(2, "GPU-e2e-2", "00000000:C3:00.0", 0)};
  node["devices"][2]["registerRc"] = 3;
  return node;
}

std::optional<bool> healthOf(const std::optional<json>& device, int minor) {
  if (!device) return std::nullopt;
  for (const json& d : (*device)["spec"]["devices"]) {
    if (d.value("type", "") == "gpu" && d.value("minor", -1) == minor)
      return d.value("health", false);
  }
  return std::nullopt;
}

// The node's object on the API server stand-in: its uid owns the Device.
void putNode(TestApiServer& api) {
  json node = json::parse(readFixture("kube-api/node-get.body"));
  node["metadata"]["name"] = kNode;
  node["metadata"]["uid"] = "e2e-gpu-node-uid";
  node["metadata"]["annotations"].erase("node.koordinator.sh/reservation");
  node["status"]["addresses"] = {{{"type", "InternalIP"}, {"address", "127.0.0.1"}}};
  api.put("nodes", node);
}

// A node with no NVML (or with it, told not to use it): the agent, its API server
// and kubelet stand-ins, its device-info dir in `work`.
struct DeviceInfoNode {
  TempTree work;
  TestKubelet kubelet;
  TestApiServer api;
  std::unique_ptr<AgentProcess> agent;
  std::optional<uint16_t> port;

  explicit DeviceInfoNode(std::vector<std::string> extra) {
    const char* agentBinary = std::getenv("KOORDLET_BIN");
    if (agentBinary == nullptr || *agentBinary == '\0') FAIL("KOORDLET_BIN is not set");
    work.write("cgroup/cpu/.keep", "");
    work.write("xpu-device-infos/.keep", "");
    kubelet.setBody(readFixture("kubelet/k8s-1.35/pods.json"));
    putNode(api);
    work.write("kubeconfig", koord::test::kubeconfigPlain(api.url()));
    std::vector<std::string> args{"--addr=127.0.0.1:0",
                                  "--cgroup-root-dir=" + work.path("cgroup"),
                                  "--proc-root-dir=/proc/",
                                  "--kubelet-insecure-tls=true",
                                  "--kubelet-addr=127.0.0.1",
                                  "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
                                  "--kubelet-sync-interval=1s",
                                  "--collect-res-used-interval=500ms",
                                  "--node-topology-sync-interval=1s",
                                  "--dry-run",
                                  "--sys-fs-root-dir=" + work.path("cgroup"),
                                  "--kubeconfig=" + work.path("kubeconfig"),
                                  "--xpu-device-infos-dir=" + work.path("xpu-device-infos"),
                                  "--feature-gates=Accelerators=true"};
    args.insert(args.end(), extra.begin(), extra.end());
    agent = std::make_unique<AgentProcess>(agentBinary, args, work.path("agent.log"), kNode);
    port = agent->waitForServingPort(10s);
    if (!port) fail("start", "no serving line");
  }
  [[noreturn]] void fail(const std::string& what, const std::string& why) {
    FAIL(what << ": " << why << "\n--- agent log ---\n" << agent->log());
    std::abort();
  }
  std::optional<json> device() { return api.get("devices", kNode); }
  // Waits until the Device has `n` gpu entries (and `check` passes), within a phase.
  json waitDevices(const std::string& phase, size_t n,
                   const std::function<std::string(const json&)>& check = {}) {
    std::string why = waitFor(kPhase, [&]() -> std::string {
      if (!agent->running()) fail(phase, "the agent exited");
      auto d = device();
      if (!d) return "no Device yet";
      if ((*d)["spec"].value("devices", json::array()).size() != n) {
        return "devices: " + (*d)["spec"].dump();
      }
      return check ? check(*d) : "";
    });
    if (!why.empty()) fail(phase, why);
    return *device();
  }
  // Written whole and renamed in, as koord-device-daemon's renameio does.
  void writeInfos(const std::string& name, const std::string& text) {
    work.write("xpu-device-infos/.tmp-" + name, text);
    std::filesystem::rename(work.path("xpu-device-infos/.tmp-" + name),
                            work.path("xpu-device-infos/" + name));
  }
};

}  // namespace

TEST_CASE("on a GPU node the Device is reported and a critical Xid makes its GPU unhealthy") {
  const char* agentBinary = std::getenv("KOORDLET_BIN");
  const char* fakeNvml = std::getenv("KOORDLET_FAKE_NVML");
  if (agentBinary == nullptr || *agentBinary == '\0') FAIL("KOORDLET_BIN is not set");
  if (fakeNvml == nullptr || *fakeNvml == '\0') FAIL("KOORDLET_FAKE_NVML is not set");
  TempTree work;
  work.write("cgroup/cpu/.keep", "");
  work.write("nvml.json", gpuNode().dump());
  work.write("xid-events", "");
  // The agent inherits these: the loader finds the stand-in as libnvidia-ml.so.1.
  ::setenv("LD_LIBRARY_PATH", std::filesystem::path(fakeNvml).parent_path().c_str(), 1);
  ::setenv("FAKE_NVML_STATE", work.path("nvml.json").c_str(), 1);
  ::setenv("FAKE_NVML_EVENTS", work.path("xid-events").c_str(), 1);
  auto xid = [&](const std::string& line) {
    std::ofstream(work.path("xid-events"), std::ios::app) << line << "\n";
  };

  TestKubelet kubelet;
  kubelet.setBody(readFixture("kubelet/k8s-1.35/pods.json"));
  TestApiServer api;
  putNode(api);
  work.write("kubeconfig", koord::test::kubeconfigPlain(api.url()));
  AgentProcess agent(
      agentBinary,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + work.path("cgroup"), "--proc-root-dir=/proc/",
       "--kubelet-insecure-tls=true", "--kubelet-addr=127.0.0.1",
       "--kubelet-read-only-port=" + std::to_string(kubelet.port()), "--kubelet-sync-interval=1s",
       "--collect-res-used-interval=500ms", "--node-topology-sync-interval=1s", "--dry-run",
       "--sys-fs-root-dir=" + work.path("cgroup"), "--kubeconfig=" + work.path("kubeconfig"),
       "--xpu-device-infos-dir=" + work.path("xpu-device-infos"),
       "--feature-gates=Accelerators=true"},
      work.path("agent.log"), kNode);
  auto failWith = [&](const std::string& what, const std::string& why) {
    FAIL(what << ": " << why << "\n--- agent log ---\n" << agent.log());
  };
  const auto port = agent.waitForServingPort(10s);
  if (!port) failWith("start", "no serving line");
  auto device = [&] { return api.get("devices", kNode); };
  auto scrape = [&]() -> Scrape {
    auto r = httpGet(*port, "/metrics");
    return Scrape(r && r->status == 200 ? r->body : "");
  };

  // 1. The Device, once, with the three GPUs; the one without events unhealthy.
  std::string why = waitFor(kPhase, [&]() -> std::string {
    if (!agent.running()) failWith("create", "the agent exited");
    return device() ? "" : "no Device yet";
  });
  if (!why.empty()) failWith("create", why);
  const json created = *device();
  CHECK(created["metadata"]["ownerReferences"][0]["uid"] == "e2e-gpu-node-uid");
  CHECK(created["metadata"]["labels"]["node.koordinator.sh/gpu-model"] == "H100-80GB-HBM3");
  CHECK(created["metadata"]["labels"]["node.koordinator.sh/gpu-driver-version"] == "535.261.03");
  REQUIRE(created["spec"]["devices"].size() == 3);
  CHECK(created["spec"]["devices"][0]["id"] == "GPU-e2e-0");
  // This machine's sysfs has no such PCI device: no topology rather than a made-up one.
  CHECK_FALSE(created["spec"]["devices"][0].contains("topology"));
  CHECK(healthOf(created, 0) == true);
  CHECK(healthOf(created, 1) == true);
  CHECK(healthOf(created, 2) == false);
  CHECK(agent.log().find("GPU 2 (GPU-e2e-2) reported unhealthy: it cannot report critical errors "
                         "(nvmlDeviceRegisterEvents: Not Supported (3))") != std::string::npos);

  // 2. Use and health on /metrics.
  const koord::test::Labels gpu0{
      {"gpu_minor", "0"}, {"gpu_device_uuid", "GPU-e2e-0"}, {"node", kNode}};
  why = waitFor(kPhase, [&]() -> std::string {
    Scrape s = scrape();
    if (s.value("koordlet_node_gpu_core_usage", gpu0) != 37) return "no GPU 0 use yet";
    if (s.value("koordlet_node_gpu_memory_usage_bytes", gpu0) != 1073741824.0) return "memory";
    if (s.value("koordlet_feature_supported", {{"feature", "gpu_health_events"}}) != 1) {
      return "gpu_health_events not 1";
    }
    return "";
  });
  if (!why.empty()) failWith("metrics", why);

  // 2b. A process on GPU 0 in a pod's container cgroup (cgroupfs driver's layout, under
  // a private v1 subtree): the pod's and the container's use; gone when it ends.
  // The stand-in reads the file at every call: replaced whole (rename), never seen half.
  auto setNode = [&](const json& state) {
    work.write("nvml.json.new", state.dump());
    std::filesystem::rename(work.path("nvml.json.new"), work.path("nvml.json"));
  };
  const std::string treeUnavailable = CgroupV1Tree::unavailableReason();
  if (treeUnavailable.empty()) {
    const std::string uid = "3f2c9d41-7b6a-4e58-a1d0-9c8b7a6f5e4d";
    const std::string ctr = "c0ffee" + std::string(58, '7');
    const std::string dir = "kubepods/besteffort/pod" + uid + "/" + ctr;
    CgroupV1Tree tree("gpu", work.path("links"));
    tree.mkdirs(dir);
    Burner process([&](pid_t pid) { tree.attach(pid, dir); }, /*busy=*/false);
    json state = gpuNode();
    state["devices"][0]["processes"] = {
        {{"pid", process.pid()}, {"mem", 536870912ull}, {"sm", 25}}};
    setNode(state);
    const koord::test::Labels pod{
        {"gpu_minor", "0"}, {"gpu_device_uuid", "GPU-e2e-0"}, {"pod_uid", uid}, {"node", kNode}};
    const koord::test::Labels container{{"gpu_minor", "0"},
                                        {"gpu_device_uuid", "GPU-e2e-0"},
                                        {"container_id", ctr},
                                        {"node", kNode}};
    why = waitFor(kPhase, [&]() -> std::string {
      Scrape s = scrape();
      if (s.value("koordlet_pod_gpu_memory_usage_bytes", pod) != 536870912.0) return "pod memory";
      if (s.value("koordlet_pod_gpu_core_usage", pod) != 25) return "pod core";
      if (s.value("koordlet_container_gpu_memory_usage_bytes", container) != 536870912.0) {
        return "container memory";
      }
      return "";
    });
    if (!why.empty()) failWith("a GPU process in a pod", why);
    setNode(gpuNode());
    why = waitFor(kPhase, [&]() -> std::string {
      Scrape s = scrape();
      if (!s.value("koordlet_node_gpu_core_usage", gpu0)) return "no scrape";
      return s.find("koordlet_pod_gpu_memory_usage_bytes", pod).empty() ? ""
                                                                        : "pod series still there";
    });
    if (!why.empty()) failWith("the GPU process gone", why);
  }

  // 3. An application's Xid (13) is counted; GPU 0 stays healthy, nothing is written.
  xid("0 xid 13");
  const koord::test::Labels xid13{
      {"gpu_minor", "0"}, {"gpu_device_uuid", "GPU-e2e-0"}, {"error", "Xid 13"}, {"node", kNode}};
  why = waitFor(kPhase, [&]() -> std::string {
    return scrape().value("koordlet_gpu_critical_errors_total", xid13) == 1 ? "" : "not counted";
  });
  if (!why.empty()) failWith("Xid 13", why);
  CHECK(healthOf(device(), 0) == true);
  CHECK(api.count("update", "devices") == 0);

  // 4. A critical Xid (79, fallen off the bus) on GPU 1: unhealthy in the Device, in
  // one update, and on /metrics.
  const auto before = std::chrono::steady_clock::now();
  xid("1 xid 79");
  why = waitFor(kPhase, [&]() -> std::string {
    return healthOf(device(), 1) == false ? "" : "GPU 1 still healthy in the Device";
  });
  if (!why.empty()) failWith("Xid 79", why);
  std::cout << "figure: Xid event to Device update: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - before)
                   .count()
            << " ms\n";
  CHECK(healthOf(device(), 0) == true);
  CHECK(api.count("create", "devices") == 1);
  CHECK(api.count("update", "devices") == 1);
  why = waitFor(kPhase, [&]() -> std::string {
    const koord::test::Labels gpu1{
        {"gpu_minor", "1"}, {"gpu_device_uuid", "GPU-e2e-1"}, {"node", kNode}};
    return scrape().value("koordlet_gpu_device_healthy", gpu1) == 0 ? "" : "GPU 1 healthy gauge";
  });
  if (!why.empty()) failWith("Xid 79 metric", why);
  CHECK(agent.log().find("GPU 1 unhealthy: Xid 79") != std::string::npos);
  // /config says which GPUs are unhealthy and why.
  auto config = httpGet(*port, "/config");
  REQUIRE(config);
  const json gpu = json::parse(config->body)["gpu"];
  CHECK(gpu["healthEvents"] == true);
  CHECK(gpu["unhealthy"] ==
        json{{"1", "Xid 79"},
             {"2", "no critical-error events: nvmlDeviceRegisterEvents: Not Supported (3)"}});

  // 5. SIGTERM: out promptly, the event thread with it.
  const auto status = agent.terminate(10s);
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  ::unsetenv("LD_LIBRARY_PATH");
  ::unsetenv("FAKE_NVML_STATE");
  ::unsetenv("FAKE_NVML_EVENTS");
  if (!treeUnavailable.empty()) {
    KOORDLET_SKIP(
        "the GPU process in a pod's cgroup (step 2b) was not checked: " << treeUnavailable);
  }
}

TEST_CASE("without NVML the Device is empty, then koord-device-daemon's files, last good kept") {
  ::unsetenv("LD_LIBRARY_PATH");
  DeviceInfoNode n({});
  // On a GPU host the agent finds the driver's NVML and lists its GPUs.
  auto config = httpGet(*n.port, "/config");
  REQUIRE(config);
  if (json::parse(config->body)["gpu"].value("off", "") == "") {
    KOORDLET_SKIP("NVML loads on this host (a GPU host): the agent lists its GPUs");
  }
  // 1. No GPU anywhere: an empty Device, owned by the Node, as koordlet writes one.
  json d = n.waitDevices("empty", 0);
  CHECK(d["metadata"]["ownerReferences"][0]["uid"] == "e2e-gpu-node-uid");
  CHECK_FALSE(d["metadata"].contains("labels"));
  // 2. The daemon's file: its NPUs, labels, the unhealthy one's condition.
  n.writeInfos("ic-device", readFixture("device-infos/ascend-910b3-ic-device"));
  d = n.waitDevices("from the file", 2);
  CHECK(d["metadata"]["labels"] == json{{"node.koordinator.sh/gpu-model", "Ascend-910B3"},
                                        {"node.koordinator.sh/gpu-vendor", "huawei"}});
  CHECK(d["spec"]["devices"][0]["resources"]["huawei.com/npu-core"] == "20");
  CHECK_FALSE(d["spec"]["devices"][0]["resources"].contains("koordinator.sh/gpu-core"));
  CHECK(d["spec"]["devices"][1]["health"] == false);
  CHECK(d["spec"]["devices"][1]["conditions"][0]["reason"] == "ChipError");
  const size_t updates = n.api.count("update", "devices");
  // 3. A second writer's file with NVLink pairs: the partitions; a broken one: named,
  // skipped, nothing of the Device lost.
  n.writeInfos("z-links", R"([
    {"vendor": "huawei", "model": "Ascend-910B3", "uuid": "npu-2-2", "minor": "2",
     "topology": {"p2pLinks": [{"peerMinor": "3", "type": "HCCS"}], "mustHonorPartition": true}},
    {"vendor": "huawei", "model": "Ascend-910B3", "uuid": "npu-3-3", "minor": "3"}])");
  d = n.waitDevices("partitions", 4, [](const json& d) -> std::string {
    return d["metadata"].contains("annotations") ? "" : "no annotation yet";
  });
  CHECK(d["metadata"]["annotations"]["scheduling.koordinator.sh/gpu-partitions"] ==
        R"({"2":[{"minors":[2,3],"gpuLinkType":"HCCS","allocationScore":1}]})");
  // The first device (ic-device's) has no p2pLinks: no policy label, as koordlet.
  CHECK_FALSE(d["metadata"]["labels"].contains("node.koordinator.sh/gpu-partition-policy"));
  n.writeInfos("z-links", R"([{"uuid": "npu-2-2", "minor": 2}])");
  std::string why = waitFor(kPhase, [&]() -> std::string {
    return n.agent->log().find("z-links: [0].minor: want a string, got a number") !=
                   std::string::npos
               ? ""
               : "the bad file is not named";
  });
  if (!why.empty()) n.fail("a broken file", why);
  const size_t afterLinks = n.api.count("update", "devices");
  CHECK(afterLinks > updates);
  std::this_thread::sleep_for(2s);  // two syncs
  CHECK(n.device()->at("spec")["devices"].size() == 4);
  CHECK(n.api.count("update", "devices") == afterLinks);
  // Said once, not every sync.
  const std::string log = n.agent->log();
  size_t said = 0;
  for (size_t at = 0; (at = log.find("z-links: [0].minor", at)) != std::string::npos; ++at) ++said;
  CHECK(said == 1);
  // 4. Both files gone: empty again.
  std::filesystem::remove(n.work.path("xpu-device-infos/ic-device"));
  std::filesystem::remove(n.work.path("xpu-device-infos/z-links"));
  d = n.waitDevices("files removed", 0);
  CHECK_FALSE(d["metadata"].contains("labels"));
  CHECK_FALSE(d["metadata"].contains("annotations"));
  CHECK(n.api.count("create", "devices") == 1);
  const auto status = n.agent->terminate(10s);
  REQUIRE(status);
  CHECK(WEXITSTATUS(*status) == 0);
}

TEST_CASE("with --xpu-enforce-collect-from-device-infos NVML's GPUs stay out of the Device") {
  const char* fakeNvml = std::getenv("KOORDLET_FAKE_NVML");
  if (fakeNvml == nullptr || *fakeNvml == '\0') FAIL("KOORDLET_FAKE_NVML is not set");
  TempTree nvml;
  nvml.write("nvml.json", gpuNode().dump());
  nvml.write("xid-events", "");
  ::setenv("LD_LIBRARY_PATH", std::filesystem::path(fakeNvml).parent_path().c_str(), 1);
  ::setenv("FAKE_NVML_STATE", nvml.path("nvml.json").c_str(), 1);
  ::setenv("FAKE_NVML_EVENTS", nvml.path("xid-events").c_str(), 1);
  DeviceInfoNode n({"--xpu-enforce-collect-from-device-infos=true"});
  n.waitDevices("enforced, no file", 0);
  // NVML is still read: its use on /metrics.
  const koord::test::Labels gpu0{
      {"gpu_minor", "0"}, {"gpu_device_uuid", "GPU-e2e-0"}, {"node", kNode}};
  std::string why = waitFor(kPhase, [&]() -> std::string {
    auto r = httpGet(*n.port, "/metrics");
    return Scrape(r && r->status == 200 ? r->body : "")
                       .value("koordlet_node_gpu_core_usage", gpu0) == 37
               ? ""
               : "no GPU 0 use";
  });
  if (!why.empty()) n.fail("NVML metrics", why);
  CHECK(n.device()->at("spec")["devices"].empty());
  // A file: its devices, NVML's still not.
  n.writeInfos("ic-device", readFixture("device-infos/ascend-910b3-ic-device"));
  json d = n.waitDevices("a file", 2);
  CHECK(d["spec"]["devices"][0]["id"] == "npu-0-0");
  const auto status = n.agent->terminate(10s);
  REQUIRE(status);
  CHECK(WEXITSTATUS(*status) == 0);
  ::unsetenv("LD_LIBRARY_PATH");
  ::unsetenv("FAKE_NVML_STATE");
  ::unsetenv("FAKE_NVML_EVENTS");
}

}  // namespace test_e2e_agent_gpu
