// OOMScoreAdj (Koordinator HEAD) in the real koordlet binary on this machine's real
// cgroup v1 kernel (values above the processes' 0: a lower one needs CAP_SYS_RESOURCE,
// which this CI host's root lacks; the kernel's refusal is then said, as step 4 shows): two idle
// processes in a pod's container cgroup (a private tree, the cgroupfs driver's names), the kubelet
// stand-in listing the pod with koordinator.sh/oom-score-adj. The hooks' reconciler sets the
// kernel's /proc/<pid>/oom_score_adj of both (hot: the annotation changed later is followed), a
// value the kernel would refuse is refused and the processes keep theirs, and the
// koordlet_container_oom_score_adj series says what is in force.
//
// Real time, with deadlines for a loaded 2-core machine. Needs root and cgroup v1.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/support/agent_process.h"
#include "tests/support/burner.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_agent_oom {  // this file's own names: one e2e binary, unity chunks

namespace {

using json = nlohmann::json;
using koord::test::AgentProcess;
using koord::test::Burner;
using koord::test::CgroupV1Tree;
using koord::test::TempTree;
using koord::test::TestKubelet;
using koord::test::waitFor;
using namespace std::chrono_literals;

constexpr auto kLimit = 30s;
const std::string kUid = "0aa1b2c3-d4e5-4f60-8a7b-8c9d0e1f2a3b";
const std::string kContainerId = "0a" + std::string(62, 'c');

std::string podList(const json& annotations) {
  json pod = {
      {"metadata",
       {{"name", "web"}, {"namespace", "default"}, {"uid", kUid}, {"annotations", annotations}}},
      {"spec", {{"containers", {{{"name", "main"}}}}}},
      {"status",
       {{"phase", "Running"},
        {"qosClass", "Burstable"},
        {"containerStatuses",
         {{{"name", "main"}, {"containerID", "containerd://" + kContainerId}}}}}}};
  return json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", {pod}}}.dump();
}

std::string oomOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/oom_score_adj");
  std::string v;
  std::getline(in, v);
  return v;
}

}  // namespace

TEST_CASE(
    "OOMScoreAdj sets the annotation's oom_score_adj on every process of the container, "
    "follows a changed annotation, and refuses a value the kernel would",
    "[e2e][oom]") {
  KOORDLET_SKIP_UNLESS_EMPTY(CgroupV1Tree::unavailableReason());
  const char* bin = std::getenv("KOORDLET_BIN");
  REQUIRE(bin != nullptr);
  TempTree tmp;
  CgroupV1Tree tree("oom", tmp.path("cgroup"));
  const std::string dir = "kubepods/burstable/pod" + kUid + "/" + kContainerId;
  tree.mkdirs(dir);
  auto place = [&](pid_t pid) { tree.attach(pid, dir); };
  Burner a(place, false), b(place, false);
  const std::string before = oomOf(a.pid());
  TestKubelet kubelet;
  kubelet.setBody(podList({{"koordinator.sh/oom-score-adj", "600"}}));
  AgentProcess agent(
      bin,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + tree.linkDir(), "--proc-root-dir=/proc/",
       "--var-run-root-dir=" + tmp.path("run"), "--kubelet-insecure-tls=true",
       "--kubelet-addr=127.0.0.1", "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
       "--kubelet-sync-interval=1s", "--runtime-hooks-reconcile-interval=1s",
       "--cpu-suppress-interval-seconds=0", "--enable-nri-runtime-hook=false",
       "--enable-runtime-hook-server=false", "--feature-gates=OOMScoreAdj=true",
       "--audit-log-dir=" + tmp.path("audit")},
      tmp.path("agent.log"), "oom-node");
  auto fail = [&](const std::string& what) {
    FAIL(what << "\n--- agent log ---\n" << agent.log());
  };
  const auto port = agent.waitForServingPort(kLimit);
  if (!port) fail("the agent did not start serving");

  // 1. Both processes get the pod's value.
  std::string why = waitFor(kLimit, [&]() -> std::string {
    const std::string va = oomOf(a.pid()), vb = oomOf(b.pid());
    return va == "600" && vb == "600" ? "" : "oom_score_adj " + va + " and " + vb;
  });
  if (!why.empty())
    fail("the pod's value never reached its processes (was " + before + "): " + why);
  why = waitFor(kLimit, [&]() -> std::string {
    auto m = koord::test::httpGet(*port, "/metrics");
    const std::string line =
        "koordlet_container_oom_score_adj{container_name=\"main\",node=\"oom-node\","
        "pod_name=\"web\",pod_namespace=\"default\",pod_uid=\"" +
        kUid + "\"} 600";
    return m && m->body.find(line) != std::string::npos ? "" : "no " + line;
  });
  CHECK(why.empty());

  // 2. Hot update: the container's own entry in the spec annotation wins.
  kubelet.setBody(podList({{"koordinator.sh/oom-score-adj", "600"},
                           {"koordinator.sh/oom-score-adj-spec", R"({"main": 300})"}}));
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string va = oomOf(a.pid()), vb = oomOf(b.pid());
    return va == "300" && vb == "300" ? "" : "oom_score_adj " + va + " and " + vb;
  });
  if (!why.empty()) fail("the changed annotation was not followed: " + why);

  // 3. Out of the kernel's range: refused, said once, the processes keep 300.
  kubelet.setBody(podList({{"koordinator.sh/oom-score-adj", "5000"}}));
  why = waitFor(kLimit, [&]() -> std::string {
    return agent.log().find("koordinator.sh/oom-score-adj: 5000 is outside [-1000, 1000]") !=
                   std::string::npos
               ? ""
               : "not said";
  });
  if (!why.empty()) fail("the refused value was not said");
  std::this_thread::sleep_for(3s);  // several reconciler rounds
  CHECK(oomOf(a.pid()) == "300");
  CHECK(oomOf(b.pid()) == "300");
  const std::string log = agent.log();
  CHECK(log.find("5000 is outside") == log.rfind("5000 is outside"));

  // 4. Under the processes' own minimum (0 here) without CAP_SYS_RESOURCE the kernel
  //    refuses: said once, naming the capability; with it (a privileged host) it is set.
  kubelet.setBody(podList({{"koordinator.sh/oom-score-adj", "-5"}}));
  why = waitFor(kLimit, [&]() -> std::string {
    if (oomOf(a.pid()) == "-5" && oomOf(b.pid()) == "-5") return "";
    return agent.log().find("needs CAP_SYS_RESOURCE") != std::string::npos ? "" : "neither";
  });
  if (!why.empty()) fail("a negative value was neither set nor refused by the kernel");
  CHECK(agent.terminate(10s) == 0);
}

}  // namespace test_e2e_agent_oom
