// End-to-end test of host applications in the real koordlet binary on this
// machine's real cgroup v1 kernel: a private subtree (tests/support/cgroup_v1_tree.h)
// with the kubelet's kubepods root and one host application's cgroup, a process
// burning one CPU in it; the API server stand-in holds the Node, a NodeSLO naming
// that host application (and a bad entry beside it), and the NodeMetric.
//
// What is checked, as koord-manager and an operator would see it:
//  * NodeMetric's hostApplicationMetric carries the app with the CPU the kernel
//    accounted to its cgroup (about one core) and its priority and QoS as named;
//  * the bad entry is named once in the log and skipped, the good one kept;
//  * /metrics has koordlet_host_application_resource_usage for it;
//  * the system usage leaves the app's CPU out (node - pods - host apps);
//  * GroupIdentity on this kernel: the probe's answer in koordlet_feature_supported,
//    one line when the kernel lacks cpu.bvt_warp_ns (mainline kernels do).
// Needs root and cgroup v1 (a visible skip without them, a failure in CI). Real
// time: the NodeMetric is reported every 30 s, its minimum; about 40 s.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/read_file.h"
#include "kube/pod.h"
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

namespace test_e2e_agent_host_apps {  // this file's own names: one e2e binary, unity chunks

namespace {

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
using namespace std::chrono_literals;

const std::string kNode = "e2e-node";
const std::string kToken = "e2e-token";

double milliCores(const json& q) {
  if (!q.is_string()) FAIL("quantity " << q.dump() << " is not a string");
  auto v = koord::parseQuantityMilli(q.get<std::string>());
  if (!v) FAIL("quantity " << q.dump() << ": " << v.error().message);
  return static_cast<double>(*v);
}

}  // namespace

TEST_CASE(
    "a host application burning a CPU in its own cgroup is reported in NodeMetric and /metrics "
    "and left out of system usage",
    "[kernel]") {
  const char* agentBinary = std::getenv("KOORDLET_BIN");
  if (agentBinary == nullptr || *agentBinary == '\0') FAIL("KOORDLET_BIN is not set");
  if (auto why = koord::test::CgroupV1Tree::unavailableReason(); !why.empty()) KOORDLET_SKIP(why);

  TempTree work;
  koord::test::CgroupV1Tree tree("hostapp-e2e", work.path("cgroup"));
  tree.mkdirs("kubepods/besteffort");
  tree.mkdirs("kubepods/burstable");
  tree.mkdirs("hostapps/db");
  koord::test::Burner burner([&](pid_t pid) { tree.attach(pid, "hostapps/db"); }, true);

  TestKubelet kubelet;
  kubelet.setBody(readFixture("kubelet/k8s-1.35/pods.json"));  // no pod has a cgroup here
  TestApiServer api(TestApiServer::Options{kToken, 1000ms, true});
  json node = json::parse(readFixture("kube-api/node-get.body"));
  node["metadata"]["name"] = kNode;
  node["status"]["addresses"] = {{{"type", "InternalIP"}, {"address", "127.0.0.1"}}};
  api.put("nodes", node);
  api.put(
      "nodeslos",
      json{
          {"apiVersion", "slo.koordinator.sh/v1alpha1"},
          {"kind", "NodeSLO"},
          {"metadata", {{"name", kNode}}},
          {"spec",
           {{"hostApplications",
             json::array({{{"name", "db"},
                           {"priority", "koord-prod"},
                           {"qos", "LS"},
                           {"cgroupPath", {{"parentDir", "hostapps"}, {"relativePath", "db"}}}},
                          {{"name", "escape"}, {"cgroupPath", {{"parentDir", "../../etc"}}}}})}}}});
  json nodeMetric = json::parse(readFixture("kube-api/nodemetric-get.body"));
  nodeMetric["metadata"] = {{"name", kNode}};
  api.put("nodemetrics", nodeMetric);  // reportIntervalSeconds 30, aggregate 60 s
  work.write("kubeconfig", koord::test::kubeconfigFor(api.url(), api.caFile(), kToken));

  AgentProcess agent(
      agentBinary,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + tree.linkDir(), "--proc-root-dir=/proc/",
       "--kubelet-insecure-tls=true", "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
       "--kubelet-sync-interval=1s", "--collect-res-used-interval=500ms", "--dry-run",
       "--sys-fs-root-dir=" + work.path("no-sys-fs"), "--kubeconfig=" + work.path("kubeconfig"),
       "--prediction-checkpoint-filepath="},
      work.path("agent.log"), kNode);
  auto failWith = [&](const std::string& what, const std::string& why) {
    FAIL(what << ": " << why << "\n--- agent log ---\n" << agent.log());
  };
  const auto port = agent.waitForServingPort(10s);
  if (!port) failWith("start", "no serving line");

  // /metrics first: the gauge appears from the app's second read.
  std::optional<double> gaugeCpu;
  std::string why = waitFor(20s, [&]() -> std::string {
    auto m = httpGet(*port, "/metrics");
    if (!m || m->status != 200) return "no /metrics";
    gaugeCpu = Scrape(m->body).value("koordlet_host_application_resource_usage",
                                     {{"host_application_name", "db"},
                                      {"resource", "cpu"},
                                      {"priority_class", "koord-prod"},
                                      {"qos", "LS"}});
    return gaugeCpu ? "" : "no host application gauge yet";
  });
  if (!why.empty()) failWith("host application gauge", why);
  CHECK(*gaugeCpu > 0.4);
  CHECK(*gaugeCpu < 1.2);

  // NodeMetric: the report after the app has a minute of samples in the window.
  json status;
  why = waitFor(
      75s,
      [&]() -> std::string {
        if (!agent.running()) failWith("NodeMetric", "the agent exited");
        auto nm = api.get("nodemetrics", kNode);
        if (!nm || !nm->contains("status")) return "no status yet";
        status = (*nm)["status"];
        return status.contains("hostApplicationMetric") ? "" : "no hostApplicationMetric yet";
      },
      500ms);
  if (!why.empty()) failWith("NodeMetric hostApplicationMetric", why);
  INFO(status.dump(2));
  const json& apps = status["hostApplicationMetric"];
  REQUIRE(apps.size() == 1);
  CHECK(apps[0]["name"] == "db");
  CHECK(apps[0]["priority"] == "koord-prod");
  CHECK(apps[0]["qos"] == "LS");
  const double appCpu = milliCores(apps[0]["usage"]["resources"]["cpu"]);
  CHECK(appCpu > 400);
  CHECK(appCpu < 1200);
  CHECK(apps[0]["usage"]["resources"].contains("memory"));
  // Node CPU includes the burner; system leaves it out (no pod has a cgroup here).
  const double nodeCpu = milliCores(status["nodeMetric"]["nodeUsage"]["resources"]["cpu"]);
  const double systemCpu = milliCores(status["nodeMetric"]["systemUsage"]["resources"]["cpu"]);
  CHECK(nodeCpu >= appCpu * 0.9);
  CHECK(systemCpu <= nodeCpu - appCpu * 0.8);

  // GroupIdentity (on by default) on this kernel, which has no cpu.bvt_warp_ns: one
  // line, the feature gauge at 0, and no "no effect" warning for the gate.
  auto m = httpGet(*port, "/metrics");
  REQUIRE(m);
  const bool kernelHasBvt =
      std::filesystem::exists(tree.kernelPath("cpu", "kubepods", "cpu.bvt_warp_ns"));
  CHECK(Scrape(m->body).value("koordlet_feature_supported", {{"feature", "group_identity"}}) ==
        (kernelHasBvt ? 1 : 0));
  const std::string log = agent.log();
  CHECK(log.find("feature gate GroupIdentity is enabled but has no effect") == std::string::npos);
  if (!kernelHasBvt) {
    const std::string line = "GroupIdentity: this kernel has no cpu.bvt_warp_ns";
    const size_t first = log.find(line);
    CHECK(first != std::string::npos);
    CHECK(log.find(line, first + 1) == std::string::npos);
  }
  CHECK(log.find("spec.hostApplications[1] (name \"escape\"): cgroupPath.parentDir: must stay "
                 "under its base") != std::string::npos);
  auto exit = agent.terminate(10s);
  REQUIRE(exit);
  CHECK(WEXITSTATUS(*exit) == 0);
}

}  // namespace test_e2e_agent_host_apps
