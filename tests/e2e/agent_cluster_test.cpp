// End-to-end test of the real koordlet binary in a Koordinator loop: the API server
// stand-in (tests/support/test_apiserver, HTTPS with a bearer token, answers shaped
// after a real kube-apiserver 1.32) holds the node's Node, NodeSLO and NodeMetric;
// the kubelet stand-in serves a real PodList capture; a fake cgroup v1 tree holds
// the running pods' captured files. The agent gets a kubeconfig and no kubelet
// address, so it must take the kubelet's address from its Node.
//
// What is checked, as an operator or koord-manager would see it:
//  * the cluster's NodeSLO wins over --config, and /config says where it came from;
//  * a NodeSLO edit reaches /config without a restart (the time it takes is printed:
//    issue 16's figure, target under 2 s);
//  * the NodeMetric status the agent writes agrees with its own cache and the pod
//    list (node memory against /metrics, every running pod's memory exactly);
//  * a bad NodeSLO keeps the last good one, counted and shown;
//  * the API server restarting (all watches lost) is survived;
//  * /readyz, the request counts and the User-Agent; SIGTERM ends it with status 0.
// Real time, with every wait a poll bounded generously for a loaded 2-core machine.
#include <dlfcn.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"
#include "tests/support/agent_process.h"
#include "tests/support/e2e_cluster.h"
#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_agent_cluster {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::CgroupFile;
using koord::test::AgentProcess;
using koord::test::configJson;
using koord::test::httpGet;
using koord::test::readFixture;
using koord::test::Scrape;
using koord::test::TempTree;
using koord::test::TestApiServer;
using koord::test::TestKubelet;
using koord::test::waitFor;
using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
using namespace std::chrono_literals;

const std::string kNode = "e2e-node";
const std::string kToken = "e2e-token";
constexpr auto kPhase = 30s;

const std::string kEksRoot = "cgroup/v1/elastic-amzn2-eks-node/sys/fs/cgroup";
const std::string kEksContainer =
    "kubepods.slice/kubepods-burstable.slice/"
    "kubepods-burstable-pod7a96c459_d529_44ae_9f99_90d3798d6426.slice/"
    "cri-containerd-1d3d308a7d48a27814a68bf33a44acf4441c9c02463ca0bc1cdfdc8c0b4a8496.scope";
// anon + unevictable of that capture's memory.stat (agent_pods_test checks the sum).
constexpr int64_t kPodMemory = 1119498240;

json nodeSlo(const json& threshold) {
  return {{"apiVersion", "slo.koordinator.sh/v1alpha1"},
          {"kind", "NodeSLO"},
          {"metadata", {{"name", kNode}}},
          {"spec", {{"resourceUsedThresholdWithBE", threshold}}}};
}

std::optional<int> thresholdOf(const json& config) {
  const auto ptr = "/spec/resourceUsedThresholdWithBE/cpuSuppressThresholdPercent"_json_pointer;
  if (!config.is_object() || !config.contains(ptr)) return std::nullopt;
  return config[ptr].get<int>();
}

int64_t quantity(const json& q) {
  if (!q.is_string()) FAIL("quantity " << q.dump() << " is not a string");
  auto v = koord::parseQuantity(q.get<std::string>());
  if (!v) FAIL("quantity " << q.dump() << ": " << v.error().message);
  return *v;
}

}  // namespace

TEST_CASE(
    "the agent follows its cluster NodeSLO, reports NodeMetric from its own cache, keeps the "
    "last good NodeSLO and survives the API server restarting") {
  const char* agentBinary = std::getenv("KOORDLET_BIN");
  if (agentBinary == nullptr || *agentBinary == '\0') FAIL("KOORDLET_BIN is not set");

  // The pods: a real kubelet capture; the running ones get cgroups.
  const std::string podListBody = readFixture("kubelet/k8s-1.35/pods.json");
  auto pods = koord::parsePodList(podListBody);
  if (!pods) FAIL("parsePodList: " << pods.error().message);
  TempTree work;
  const std::string cgroupRoot = work.path("cgroup");
  const koord::CgroupLayout layout(koord::CgroupVersion::kV1, koord::CgroupDriver::kCgroupfs);
  auto eks = [&](CgroupFile file) {
    const std::string mount = file == CgroupFile::kMemoryStat ? "memory" : "cpu,cpuacct";
    return readFixture(kEksRoot + "/" + mount + "/" + kEksContainer + "/" +
                       koord::cgroupFileSpec(file).v1File);
  };
  std::vector<std::string> running;  // "namespace/name", sorted later
  for (const auto& pod : *pods) {
    if (pod.phase != "Running") continue;
    running.push_back(pod.ns + "/" + pod.name);
    const std::string dir = layout.podDir(pod.kubeQos, pod.uid);
    for (CgroupFile f : {CgroupFile::kCpuUsage, CgroupFile::kMemoryStat, CgroupFile::kCpuStat}) {
      work.write(
          std::filesystem::relative(koord::cgroupFilePath(layout, cgroupRoot, dir, f), work.path())
              .string(),
          eks(f));
    }
  }
  REQUIRE(running.size() >= 3);
  std::sort(running.begin(), running.end());
  std::filesystem::create_directories(work.path("sys-fs"));

  // The kubelet and the API server with the node's three objects.
  TestKubelet kubelet;
  kubelet.setBody(podListBody);
  TestApiServer api(TestApiServer::Options{kToken, 1000ms, true});
  json node = json::parse(readFixture("kube-api/node-get.body"));
  node["metadata"]["name"] = kNode;  // its annotations stay: the reservation
  node["status"]["addresses"] = {{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                                 {{"type", "Hostname"}, {"address", kNode}}};
  api.put("nodes", node);
  api.put("nodeslos", nodeSlo({{"enable", true}, {"cpuSuppressThresholdPercent", 55}}));
  json nodeMetric = json::parse(readFixture("kube-api/nodemetric-get.body"));
  nodeMetric["metadata"] = {{"name", kNode}};
  api.put("nodemetrics", nodeMetric);  // reportIntervalSeconds 30, aggregate 60 s

  work.write("kubeconfig", koord::test::kubeconfigFor(api.url(), api.caFile(), kToken));
  // A local file the cluster's object must win over.
  work.write("slo.yaml", "resourceUsedThresholdWithBE:\n  cpuSuppressThresholdPercent: 45\n");

  AgentProcess agent(
      agentBinary,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + cgroupRoot, "--proc-root-dir=/proc/",
       "--kubelet-insecure-tls=true", "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
       "--kubelet-sync-interval=1s", "--collect-res-used-interval=300ms", "--dry-run",
       "--sys-fs-root-dir=" + work.path("sys-fs"), "--kubeconfig=" + work.path("kubeconfig"),
       "--config=" + work.path("slo.yaml"), "--feature-gates=Accelerators=true",
       "--xpu-device-infos-dir=" + work.path("xpu-device-infos")},
      work.path("agent.log"), kNode);
  auto failWith = [&](const std::string& what, const std::string& why) {
    FAIL(what << ": " << why << "\n--- agent log ---\n" << agent.log());
  };
  const auto servedOn = agent.waitForServingPort(10s);
  if (!servedOn) failWith("start", "no serving line");
  const uint16_t port = *servedOn;

  // The node memory the agent sees, as its gauge says every 100 ms: the NodeMetric's
  // average over its window must lie within what the agent saw (this host's memory
  // moves while other tests and builds run, so no single reading will do).
  std::mutex seenMu;
  double seenMin = 0, seenMax = 0;
  std::jthread sampler([&](std::stop_token stop) {
    while (!stop.stop_requested()) {
      if (auto m = httpGet(port, "/metrics"); m && m->status == 200) {
        if (auto v = Scrape(m->body).value("koordlet_node_used_memory_bytes", {{"node", kNode}})) {
          std::lock_guard lock(seenMu);
          seenMin = seenMin == 0 ? *v : std::min(seenMin, *v);
          seenMax = std::max(seenMax, *v);
        }
      }
      std::this_thread::sleep_for(100ms);
    }
  });

  // 1. The cluster's NodeSLO is in force and named as the source.
  std::string why = waitFor(kPhase, [&]() -> std::string {
    if (!agent.running()) failWith("config", "the agent exited");
    json c = configJson(port);
    if (thresholdOf(c) != 55) return "threshold " + (c.is_object() ? c.dump() : "no /config");
    if (c["source"].get<std::string>().rfind("cluster NodeSLO " + kNode, 0) != 0) {
      return "source " + c["source"].dump();
    }
    return "";
  });
  if (!why.empty()) failWith("cluster NodeSLO in /config", why);

  // 2. Pods come from the kubelet at the Node's address; /readyz says the API is fine.
  why = waitFor(kPhase, [&]() -> std::string {
    auto r = httpGet(port, "/readyz");
    if (!r || r->status != 200) return "/readyz not 200";
    for (const char* want : {"kube api: https://127.0.0.1:", ", reachable", "nodeslos watching",
                             "nodes watching", "nodemetrics watching", ": ok, 24 pods"}) {
      if (r->body.find(want) == std::string::npos)
        return std::string("no '") + want + "' in\n" + r->body;
    }
    return "";
  });
  if (!why.empty()) failWith("/readyz", why);
  // The Node's reservation annotation (the capture has one) is what suppress reserves.
  why = waitFor(kPhase, [&]() -> std::string {
    json c = configJson(port);
    const std::string source = c.is_object() ? c["node"]["reservationSource"].dump() : "";
    return source.find("Node annotation node.koordinator.sh/reservation") != std::string::npos
               ? ""
               : "reservation source " + source;
  });
  if (!why.empty()) failWith("Node reservation", why);
  // Its allocatable memory is memory QoS's node limit (taken at the QoS rounds).
  why = waitFor(kPhase, [&]() -> std::string {
    json c = configJson(port);
    const std::string source = c.is_object() ? c["node"]["allocatableMemorySource"].dump() : "";
    return source.find("Node status.allocatable.memory") != std::string::npos
               ? ""
               : "allocatable source " + source;
  });
  if (!why.empty()) failWith("Node allocatable memory", why);

  // 3. A NodeSLO edit reaches /config without a restart: the figure.
  api.put("nodeslos", nodeSlo({{"enable", true}, {"cpuSuppressThresholdPercent", 65}}));
  const auto edited = SteadyClock::now();
  why = waitFor(
      kPhase, [&] { return thresholdOf(configJson(port)) == 65 ? "" : "not yet"; }, 10ms);
  if (!why.empty()) failWith("NodeSLO edit", why);
  const double editSeconds = std::chrono::duration<double>(SteadyClock::now() - edited).count();
  std::cout << "figure: NodeSLO edit to /config in " << editSeconds << " s\n";
  CHECK(editSeconds < 2.0);

  // 4. A bad NodeSLO keeps the last good one, counted and shown.
  api.put("nodeslos", nodeSlo({{"enable", true}, {"cpuSuppressThresholdPercent", "lots"}}));
  why = waitFor(kPhase, [&]() -> std::string {
    json c = configJson(port);
    if (!c.is_object()) return "no /config";
    if (c["lastError"].get<std::string>().find("cpuSuppressThresholdPercent") ==
        std::string::npos) {
      return "lastError " + c["lastError"].dump();
    }
    return thresholdOf(c) == 65 ? "" : "threshold changed: " + c.dump();
  });
  if (!why.empty()) failWith("bad NodeSLO", why);

  // 5. NodeMetric: at first sight, then every 30 s; wait for a report with pods.
  json status;
  why = waitFor(
      75s,
      [&]() -> std::string {
        if (!agent.running()) failWith("NodeMetric", "the agent exited");
        auto nm = api.get("nodemetrics", kNode);
        if (!nm || !nm->contains("status")) return "no status yet";
        status = (*nm)["status"];
        if (!status.contains("podsMetric") || status["podsMetric"].empty())
          return "no podsMetric yet";
        return "";
      },
      500ms);
  if (!why.empty()) failWith("NodeMetric report", why);
  INFO(status.dump(2));
  CHECK(status["updateTime"].get<std::string>().size() == 20);
  // Node memory against what the agent's gauge showed meanwhile (a 2 % margin for
  // readings between two scrapes).
  const double reported =
      static_cast<double>(quantity(status["nodeMetric"]["nodeUsage"]["resources"]["memory"]));
  {
    std::lock_guard lock(seenMu);
    INFO("seen " << seenMin << " .. " << seenMax << ", reported " << reported);
    REQUIRE(seenMin > 0);
    CHECK(reported >= seenMin * 0.98);
    CHECK(reported <= seenMax * 1.02);
  }
  CHECK(status["nodeMetric"]["nodeUsage"]["resources"].contains("cpu"));
  // Every pod reported is a running pod of the list, sorted, with the capture's memory.
  std::vector<std::string> reportedPods;
  for (const auto& p : status["podsMetric"]) {
    reportedPods.push_back(p["namespace"].get<std::string>() + "/" + p["name"].get<std::string>());
    CHECK(quantity(p["podUsage"]["resources"]["memory"]) == kPodMemory);
    CHECK(!p["qos"].get<std::string>().empty());
  }
  CHECK(std::is_sorted(reportedPods.begin(), reportedPods.end()));
  CHECK(reportedPods == running);

  // 6. The strategies follow the NodeSLO: suppress stops when it is disabled there
  // and runs again when enabled.
  auto suppressRunning = [&]() -> std::optional<bool> {
    json c = configJson(port);
    const auto ptr = "/strategies/cpuSuppress/running"_json_pointer;
    if (!c.is_object() || !c.contains(ptr)) return std::nullopt;
    return c[ptr].get<bool>();
  };
  why = waitFor(kPhase, [&] { return suppressRunning() == true ? "" : "suppress not running"; });
  if (!why.empty()) failWith("suppress running on the cluster NodeSLO", why);
  api.put("nodeslos", nodeSlo({{"enable", false}, {"cpuSuppressThresholdPercent", 65}}));
  why = waitFor(kPhase, [&] { return suppressRunning() == false ? "" : "suppress still running"; });
  if (!why.empty()) failWith("suppress off by the NodeSLO", why);

  // 7. The API server down: /readyz stays 200 and says so; QoS goes on.
  api.stop();
  why = waitFor(kPhase, [&]() -> std::string {
    auto r = httpGet(port, "/readyz");
    if (!r) return "/readyz: no reply";
    if (r->status != 200) return "/readyz " + std::to_string(r->status) + ": " + r->body;
    return r->body.find(", unreachable") != std::string::npos ? ""
                                                              : "no 'unreachable' in\n" + r->body;
  });
  if (!why.empty()) failWith("/readyz with the API down", why);
  CHECK(thresholdOf(configJson(port)) == 65);  // the last good NodeSLO stays
  api.start();

  // 8. The API server restarts, losing every watch; an edit after it still arrives.
  api.restart();
  api.put("nodeslos", nodeSlo({{"enable", true}, {"cpuSuppressThresholdPercent", 70}}));
  why = waitFor(kPhase, [&] { return thresholdOf(configJson(port)) == 70 ? "" : "not yet"; });
  if (!why.empty()) failWith("after the API restart", why);
  why = waitFor(kPhase, [&] { return suppressRunning() == true ? "" : "suppress not back"; });
  if (!why.empty()) failWith("suppress on again by the NodeSLO", why);

  // 9. Counts, watches and the User-Agent.
  // The watches are re-opened after the restart a moment after the edit arrives
  // (by the relist): poll until every one is synced again.
  std::optional<Scrape> scraped;
  why = waitFor(kPhase, [&]() -> std::string {
    auto m = httpGet(port, "/metrics");
    if (!m || m->status != 200) return "no /metrics";
    scraped.emplace(m->body);
    for (const char* r : {"nodeslos", "nodes", "nodemetrics"}) {
      if (scraped->value("koordlet_kube_api_watch_synced", {{"resource", r}}) != 1) {
        return std::string("watch not synced: ") + r;
      }
    }
    return "";
  });
  if (!why.empty()) failWith("watches synced after the API restart", why);
  const Scrape& after = *scraped;
  CHECK(after.value("koordlet_kube_api_reachable", {{"node", kNode}}) == 1);
  CHECK(after.value("koordlet_kube_api_watch_synced", {{"resource", "nodeslos"}}) == 1);
  CHECK(after.value("koordlet_node_metric_reports_total", {{"result", "ok"}}).value_or(0) >= 1);
  CHECK(after.value("koordlet_config_reload_errors_total", {{"node", kNode}}).value_or(0) >= 1);
  CHECK(after
            .find("koordlet_kube_api_requests_total",
                  {{"verb", "WATCH"}, {"resource", "nodeslos"}, {"code", "200"}})
            .size() == 1);
  for (const auto& r : api.requests()) {
    CHECK(r.userAgent.rfind("koordlet-cpp/", 0) == 0);
    CHECK(r.authorization == "Bearer " + kToken);
  }
  CHECK(api.count("list", "nodeslos") >= 1);
  // Accelerators on a node without NVML (this machine, CI's): one line, exported, no
  // error, and an empty Device, as koordlet writes one on a node with no device.
  if (void* nvml = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(nvml);
    WARN("libnvidia-ml.so.1 loads here: the no-GPU checks do not apply");
  } else {
    const std::string log = agent.log();
    const std::string line = "Accelerators: no NVML on this node (cannot load libnvidia-ml.so.1";
    CHECK(log.find(line) != std::string::npos);
    CHECK(log.find(line) == log.rfind(line));
    CHECK(log.find("GPU use not read") == std::string::npos);
    CHECK(after.value("koordlet_feature_supported", {{"feature", "nvml"}}) == 0);
    const auto device = api.get("devices", kNode);
    REQUIRE(device);
    CHECK((*device)["spec"]["devices"] == json::array());
    CHECK_FALSE((*device)["metadata"].contains("labels"));
    CHECK(api.count("create", "devices") == 1);
  }

  // 10. Reports keep coming: at least three, every reportIntervalSeconds (30 s) from
  // the tick, none closer; the gap that spans the API server being down (phase 7,
  // where that tick's PUT found no server) is a whole number of intervals.
  auto reportTimes = [&] {
    std::vector<double> at;
    for (const auto& r : api.requests()) {
      if (r.resource == "nodemetrics/status" && r.verb == "update" && r.status == 200) {
        at.push_back(std::chrono::duration<double>(r.at.time_since_epoch()).count());
      }
    }
    return at;
  };
  why = waitFor(75s, [&]() -> std::string {
    const size_t n = reportTimes().size();
    return n >= 3 ? "" : std::to_string(n) + " reports stored";
  });
  if (!why.empty()) failWith("reports keep coming", why);
  const std::vector<double> times = reportTimes();
  size_t longGaps = 0;
  for (size_t i = 1; i < times.size(); ++i) {
    const double gap = times[i] - times[i - 1];
    const double intervals = std::round(gap / 30.0);
    INFO("report " << i << " came " << gap << " s after the one before");
    CHECK(gap >= 29.0);
    CHECK(intervals >= 1);
    CHECK(std::abs(gap - intervals * 30.0) < 1.5);
    if (intervals > 1) ++longGaps;
  }
  CHECK(longGaps <= 1);

  auto exit = agent.terminate(10s);
  REQUIRE(exit);
  CHECK(WIFEXITED(*exit));
  CHECK(WEXITSTATUS(*exit) == 0);
}

TEST_CASE("on the secure port the agent reaches the kubelet at the Node's address and port") {
  const char* agentBinary = std::getenv("KOORDLET_BIN");
  if (agentBinary == nullptr || *agentBinary == '\0') FAIL("KOORDLET_BIN is not set");
  TempTree work;
  work.write("token", "kubelet-token\n");
  work.write("cgroup/cpu/.keep", "");
  TestKubelet::Options tls;
  tls.tls = true;
  TestKubelet kubelet(tls);
  kubelet.setBody(readFixture("kubelet/k8s-1.35/pods.json"));
  TestApiServer api;  // plain HTTP: this test is about the kubelet's endpoint
  json node = json::parse(readFixture("kube-api/node-get.body"));
  node["metadata"]["name"] = kNode;
  node["status"]["addresses"] = {{{"type", "InternalIP"}, {"address", "127.0.0.1"}}};
  node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] = kubelet.port();
  api.put("nodes", node);
  work.write("kubeconfig", koord::test::kubeconfigPlain(api.url()));
  // No --kubelet-addr, NODE_IP or --kubelet-secure-port: the Node says where.
  AgentProcess agent(
      agentBinary,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + work.path("cgroup"), "--proc-root-dir=/proc/",
       "--kubelet-token-file=" + work.path("token"), "--kubelet-sync-interval=1s", "--dry-run",
       "--sys-fs-root-dir=" + work.path("cgroup"), "--kubeconfig=" + work.path("kubeconfig")},
      work.path("agent.log"), kNode);
  const auto port = agent.waitForServingPort(10s);
  if (!port) FAIL("no serving line\n" << agent.log());
  const std::string want = "kubelet https://127.0.0.1:" + std::to_string(kubelet.port()) + ": ok";
  const std::string why = waitFor(kPhase, [&]() -> std::string {
    if (!agent.running()) FAIL("the agent exited\n" << agent.log());
    auto r = httpGet(*port, "/readyz");
    if (!r) return "/readyz: no reply";
    return r->body.find(want) != std::string::npos ? "" : "no '" + want + "' in\n" + r->body;
  });
  if (!why.empty()) FAIL(why << "\n--- agent log ---\n" << agent.log());
  CHECK(agent.log().find("kubelet endpoint from Node " + kNode) != std::string::npos);
}

}  // namespace test_e2e_agent_cluster
