// End-to-end test of the real koordlet binary publishing its node's topology: a real
// 2-socket, 4-NUMA-node, 128-CPU sysfs capture (--sys-root-dir), the kubelet stand-in
// on its secure port serving a real PodList capture and a real kubelet /configz, and
// the API server stand-in, which records every request.
//
// What is checked, as koord-scheduler and an operator would see it:
//  * the NodeResourceTopology is created once, with the capture's CPUs, four share
//    pools, four zones, the kubelet's policy, and owned by the Node;
//  * while nothing changes, nothing is written (the issue's "only on change");
//  * a pod the scheduler pins shrinks the pools by its CPUs in one update, and its
//    leaving grows them back in one more;
//  * /config shows the same content.
// Real time, every wait bounded generously for a loaded 2-core machine.
#include <catch2/catch.hpp>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "base/read_file.h"
#include "kube/pod.h"
#include "tests/support/agent_process.h"
#include "tests/support/e2e_cluster.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_agent_topology {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::test::AgentProcess;
using koord::test::httpGet;
using koord::test::readFixture;
using koord::test::TempTree;
using koord::test::TestApiServer;
using koord::test::TestKubelet;
using koord::test::waitFor;
using json = nlohmann::json;
using namespace std::chrono_literals;

const std::string kNode = "e2e-topo-node";
constexpr auto kPhase = 30s;
const char* kPools = "node.koordinator.sh/cpu-shared-pools";

std::string poolsOf(const std::optional<json>& nrt) {
  if (!nrt) return "";
  const auto ptr = json::json_pointer("/metadata/annotations/" +
                                      std::string("node.koordinator.sh~1cpu-shared-pools"));
  return nrt->contains(ptr) ? (*nrt)[ptr].get<std::string>() : "";
}

}  // namespace

TEST_CASE(
    "the agent creates its NodeResourceTopology once and updates it only when pods pin CPUs") {
  const char* agentBinary = std::getenv("KOORDLET_BIN");
  if (agentBinary == nullptr || *agentBinary == '\0') FAIL("KOORDLET_BIN is not set");
  TempTree work;
  work.write("token", "kubelet-token\n");
  work.write("cgroup/cpu/.keep", "");

  // The pods: a real capture; the first running pod is the one the scheduler pins.
  json podList = json::parse(readFixture("kubelet/k8s-1.35/pods.json"));
  json* pinned = nullptr;
  for (json& p : podList["items"]) {
    if (p["status"].value("phase", "") == "Running") {
      pinned = &p;
      break;
    }
  }
  REQUIRE(pinned != nullptr);
  TestKubelet::Options tls;
  tls.tls = true;
  TestKubelet kubelet(tls);
  kubelet.setBody(podList.dump());
  kubelet.setConfigz(readFixture("kubelet/configz/kubeadm-v1.30-none.json"));

  TestApiServer api;
  json node = json::parse(readFixture("kube-api/node-get.body"));
  node["metadata"]["name"] = kNode;
  node["metadata"]["uid"] = "e2e-node-uid";
  node["metadata"]["annotations"].erase("node.koordinator.sh/reservation");
  node["status"]["addresses"] = {{{"type", "InternalIP"}, {"address", "127.0.0.1"}}};
  node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] = kubelet.port();
  api.put("nodes", node);
  work.write("kubeconfig", koord::test::kubeconfigPlain(api.url()));
  AgentProcess agent(
      agentBinary,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + work.path("cgroup"), "--proc-root-dir=/proc/",
       "--sys-root-dir=" + koord::test::fixturePath("sysfs/arm-128cpu-2socket-4numa"),
       "--kubelet-token-file=" + work.path("token"), "--kubelet-sync-interval=1s",
       "--node-topology-sync-interval=1s", "--dry-run", "--sys-fs-root-dir=" + work.path("cgroup"),
       "--kubeconfig=" + work.path("kubeconfig")},
      work.path("agent.log"), kNode);
  auto failWith = [&](const std::string& what, const std::string& why) {
    FAIL(what << ": " << why << "\n--- agent log ---\n" << agent.log());
  };
  const auto port = agent.waitForServingPort(10s);
  if (!port) failWith("start", "no serving line");
  auto nrt = [&] { return api.get("noderesourcetopologies", kNode); };
  auto writes = [&] {
    return api.count("create", "noderesourcetopologies") +
           api.count("update", "noderesourcetopologies");
  };

  // 1. Created, once, with the capture's topology and the kubelet's policy.
  std::string why = waitFor(kPhase, [&]() -> std::string {
    if (!agent.running()) failWith("create", "the agent exited");
    return nrt() ? "" : "no NodeResourceTopology yet";
  });
  if (!why.empty()) failWith("create", why);
  const json created = *nrt();
  CHECK(api.count("create", "noderesourcetopologies") == 1);
  CHECK(created["metadata"]["ownerReferences"][0]["uid"] == "e2e-node-uid");
  CHECK(created["topologyPolicies"] == json::array({"None"}));
  REQUIRE(created["zones"].size() == 4);
  CHECK(created["zones"][3]["name"] == "node-3");
  const json& annotations = created["metadata"]["annotations"];
  CHECK(annotations["kubelet.koordinator.sh/cpu-manager-policy"] == R"({"policy":"none"})");
  CHECK(json::parse(annotations["node.koordinator.sh/cpu-topology"].get<std::string>())["detail"]
            .size() == 128);
  const std::string fullPools =
      R"([{"socket":0,"node":0,"cpuset":"0-31"},{"socket":0,"node":1,"cpuset":"32-63"},)"
      R"({"socket":1,"node":2,"cpuset":"64-95"},{"socket":1,"node":3,"cpuset":"96-127"}])";
  CHECK(poolsOf(created) == fullPools);
  std::cout << "figure: NodeResourceTopology of the 128-CPU capture: " << created.dump().size()
            << " bytes as stored, "
            << annotations["node.koordinator.sh/cpu-topology"].get<std::string>().size()
            << " bytes of cpu-topology\n";

  // 2. Nothing changes: nothing is written (10 syncs at 1 s).
  std::this_thread::sleep_for(10s);
  CHECK(writes() == 1);

  // 3. The scheduler pins a pod to CPUs 32-35: one update, node 1's pool shrinks.
  (*pinned)["metadata"]["annotations"]["scheduling.koordinator.sh/resource-status"] =
      R"({"cpuset":"32-35"})";
  (*pinned)["metadata"]["labels"]["koordinator.sh/qosClass"] = "LSR";
  kubelet.setBody(podList.dump());
  why = waitFor(kPhase, [&]() -> std::string {
    const std::string p = poolsOf(nrt());
    return p.find(R"("node":1,"cpuset":"36-63")") != std::string::npos ? "" : "pools " + p;
  });
  if (!why.empty()) failWith("pinned", why);
  std::this_thread::sleep_for(4s);
  CHECK(writes() == 2);

  // 4. The pod leaves: the pool grows back, in one more update.
  (*pinned)["metadata"]["annotations"].erase("scheduling.koordinator.sh/resource-status");
  kubelet.setBody(podList.dump());
  why =
      waitFor(kPhase, [&] { return poolsOf(nrt()) == fullPools ? "" : "pools " + poolsOf(nrt()); });
  if (!why.empty()) failWith("unpinned", why);
  std::this_thread::sleep_for(4s);
  CHECK(writes() == 3);
  CHECK(api.count("update", "noderesourcetopologies") == 2);

  // 5. /config shows what was written, and where the kubelet's policy came from.
  auto r = httpGet(*port, "/config");
  REQUIRE(r);
  json c = json::parse(r->body);
  CHECK(c["nodeTopology"]["kubeletCpuManagerSource"] == "kubelet /configz");
  CHECK(c["nodeTopology"]["nodeResourceTopology"]["annotations"][kPools] == fullPools);
  CHECK(c["kubeApi"]["nodeResourceTopology"]["updates"] == 2);
  std::cout << "figure: last NodeResourceTopology update body: "
            << c["kubeApi"]["nodeResourceTopology"]["lastBodyBytes"] << " bytes\n";
  CHECK(agent.log().find("kubelet CPU manager policy \"none\"") != std::string::npos);
}

TEST_CASE("without an API server the node topology is computed and shown in /config only") {
  const char* agentBinary = std::getenv("KOORDLET_BIN");
  if (agentBinary == nullptr || *agentBinary == '\0') FAIL("KOORDLET_BIN is not set");
  TempTree work;
  work.write("cgroup/cpu/.keep", "");
  TestKubelet kubelet;  // the read-only port: no /configz, the flag's policy
  kubelet.setBody(readFixture("kubelet/k8s-1.35/pods.json"));
  AgentProcess agent(
      agentBinary,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + work.path("cgroup"), "--proc-root-dir=/proc/",
       "--sys-root-dir=" + koord::test::fixturePath("sysfs/intel-hybrid-i7-1370p"),
       "--kubelet-insecure-tls=true", "--kubelet-addr=127.0.0.1",
       "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
       "--kubelet-cpu-manager-policy=static", "--kubelet-sync-interval=1s",
       "--node-topology-sync-interval=1s", "--dry-run", "--sys-fs-root-dir=" + work.path("cgroup")},
      work.path("agent.log"), kNode);
  const auto port = agent.waitForServingPort(10s);
  if (!port) FAIL("no serving line\n" << agent.log());
  json topo;
  const std::string why = waitFor(kPhase, [&]() -> std::string {
    if (!agent.running()) FAIL("the agent exited\n" << agent.log());
    auto r = httpGet(*port, "/config");
    if (!r || r->status != 200) return "no /config";
    topo = json::parse(r->body)["nodeTopology"];
    return topo.contains("nodeResourceTopology") ? "" : "no content yet: " + topo.dump();
  });
  if (!why.empty()) FAIL(why << "\n--- agent log ---\n" << agent.log());
  CHECK(topo["reporting"] == false);
  CHECK(topo["reportingOff"] == "standalone (no API server): computed, not written");
  CHECK(topo["kubeletCpuManagerSource"].get<std::string>().rfind(
            "flag --kubelet-cpu-manager-policy", 0) == 0);
  const json& a = topo["nodeResourceTopology"]["annotations"];
  CHECK(a["kubelet.koordinator.sh/cpu-manager-policy"] == R"({"policy":"static"})");
  CHECK(a[kPools] == R"([{"socket":0,"node":0,"cpuset":"0-19"}])");
  // The capture's SMT file says hyper-threading is on (cpuinfo is this host's: /proc/).
  CHECK(json::parse(
            a["node.koordinator.sh/cpu-basic-info"].get<std::string>())["hyperThreadEnabled"] ==
        true);
  CHECK(topo["nodeResourceTopology"]["zones"].size() == 1);
}

}  // namespace test_e2e_agent_topology
