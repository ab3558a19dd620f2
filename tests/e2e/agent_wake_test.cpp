// The wake-up on new pod cgroups (issue 46) in the real koordlet binary: the kubelet
// stand-in is polled only once a minute (--kubelet-sync-interval=60s), so a BE pod's
// values can reach its container's cgroup within seconds only through the wake-up:
// inotify on the kubepods tree (a private cgroupfs-driver tree in a temp dir, made as
// runc makes it) sees the pod's dir, the agent asks the kubelet at once, and the
// hooks' reconciler writes. Then: a burst of 50 pods costs a few kubelet requests,
// not 50; the tree removed and made again is watched again; and with inotify
// refused (fs.inotify.max_user_instances set to 0 by the test while the agent
// starts, as root) the agent falls back to polling, says so, and still wakes.
// Real time: every wait is a poll with a deadline.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/read_file.h"
#include "tests/support/agent_process.h"
#include "tests/support/fake_kubepods.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_agent_wake {

namespace {

using koord::test::AgentProcess;
using koord::test::httpGet;
using koord::test::TempTree;
using koord::test::TestKubelet;
using koord::test::waitFor;
using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kLimit = 30s;

std::string uidOf(int i) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "0000%04d-aaaa-4bbb-8ccc-dddddddddddd", i);
  return buf;
}

// A BE pod with batch resources (1k cpu requested and limited, 64Mi), running, its
// one container created with id c<i>.
json bePod(int i) {
  const json batch = {{"kubernetes.io/batch-cpu", "1k"}, {"kubernetes.io/batch-memory", "64Mi"}};
  json container = {{"name", "stress"}, {"resources", {{"requests", batch}, {"limits", batch}}}};
  json status = {{"name", "stress"}, {"containerID", "containerd://c" + std::to_string(i)}};
  json pod;
  pod["metadata"] = {{"name", "be-" + std::to_string(i)},
                     {"namespace", "default"},
                     {"uid", uidOf(i)},
                     {"labels", {{"koordinator.sh/qosClass", "BE"}}}};
  pod["spec"]["containers"] = json::array({container});
  pod["status"] = {{"phase", "Running"}, {"qosClass", "BestEffort"}};
  pod["status"]["containerStatuses"] = json::array({status});
  return pod;
}

std::string listOf(const std::vector<int>& pods) {
  json items = json::array();
  // One LS pod always listed: an empty list reads as a kubelet restart.
  items.push_back({{"metadata", {{"name", "ls"}, {"namespace", "default"}, {"uid", "ls-uid"}}},
                   {"spec", {{"containers", {{{"name", "app"}}}}}},
                   {"status", {{"phase", "Running"}, {"qosClass", "BestEffort"}}}});
  for (int i : pods) items.push_back(bePod(i));
  return json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}}.dump();
}

// The pod's and its container's cgroups as runc makes them on the cgroupfs driver,
// with the kubelet's BestEffort values.
void makePodDirs(const TempTree& tmp, int i) {
  const std::string pod = "kubepods/besteffort/pod" + uidOf(i);
  for (const std::string& d : {pod, pod + "/c" + std::to_string(i)}) {
    tmp.write("cgroup/cpu/" + d + "/cpu.shares", "2\n");
    tmp.write("cgroup/cpu/" + d + "/cpu.cfs_quota_us", "-1\n");
    tmp.write("cgroup/cpu/" + d + "/cpu.cfs_period_us", "100000\n");
    tmp.write("cgroup/memory/" + d + "/memory.limit_in_bytes", "9223372036854771712\n");
  }
}

bool written(const TempTree& tmp, int i) {
  auto v = koord::readFile(tmp.path("cgroup/cpu/kubepods/besteffort/pod" + uidOf(i) + "/c" +
                                    std::to_string(i) + "/cpu.shares"));
  return v && *v == "1024\n";
}

void makeTree(const TempTree& tmp) { koord::test::makeFakeKubepodsV1(tmp); }

std::vector<std::string> flags(const TempTree& tmp, const TestKubelet& kubelet) {
  return {"--addr=127.0.0.1:0",
          "--cgroup-root-dir=" + tmp.path("cgroup"),
          "--proc-root-dir=/proc/",
          "--var-run-root-dir=" + tmp.path("run"),
          "--kubelet-insecure-tls=true",
          "--kubelet-addr=127.0.0.1",
          "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
          "--kubelet-sync-interval=60s",
          "--collect-res-used-interval=300ms",
          "--runtime-hooks-reconcile-interval=60s",
          "--reconcile-interval-seconds=1",
          "--cpu-suppress-interval-seconds=0",
          "--enable-nri-runtime-hook=false",
          "--enable-runtime-hook-server=false",
          "--audit-log-dir=" + tmp.path("audit")};
}

const char* agentBinary() {
  const char* bin = std::getenv("KOORDLET_BIN");
  if (bin == nullptr || *bin == '\0') FAIL("KOORDLET_BIN is not set");
  return bin;
}

std::string metric(uint16_t port, const std::string& line) {
  auto r = httpGet(port, "/metrics");
  if (!r) return "no /metrics";
  return r->body.find(line) != std::string::npos ? "" : "no line " + line;
}

}  // namespace

TEST_CASE(
    "a new pod cgroup wakes the agent: its values within a second, not at the next "
    "kubelet poll; a burst of 50 costs a few syncs; the tree is watched again after "
    "it is recreated",
    "[e2e][wake]") {
  TempTree tmp;
  makeTree(tmp);
  TestKubelet kubelet;
  kubelet.setBody(listOf({}));
  AgentProcess agent(agentBinary(), flags(tmp, kubelet), tmp.path("agent.log"), "e2e-wake-node");
  auto fail = [&](const std::string& what) {
    FAIL(what << "\n--- agent log ---\n" << agent.log());
  };
  auto port = agent.waitForServingPort(kLimit);
  if (!port) fail("the agent did not start serving");
  std::string why = waitFor(kLimit, [&] {
    return metric(
        *port, "koordlet_feature_supported{feature=\"pod_cgroup_watch\",node=\"e2e-wake-node\"} 1");
  });
  if (!why.empty()) fail(why);
  why = waitFor(kLimit,
                [&]() -> std::string { return kubelet.requestCount() >= 1 ? "" : "no sync"; });
  if (!why.empty()) fail(why);

  // 1. One BE pod: the kubelet lists it, its cgroups appear; no poll is due for a minute.
  kubelet.setBody(listOf({1}));
  const auto t0 = std::chrono::steady_clock::now();
  makePodDirs(tmp, 1);
  why = waitFor(
      kLimit, [&]() -> std::string { return written(tmp, 1) ? "" : "not yet"; }, 10ms);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!why.empty()) fail("the new pod's container never got its batch values");
  CHECK(ms < 5000);
  WARN("figure: a new pod's container values " << ms << " ms after its cgroup appeared");

  // 2. A burst of 50 pods: a few syncs, not 50.
  std::vector<int> burst;
  for (int i = 100; i < 150; ++i) burst.push_back(i);
  std::vector<int> all = burst;
  all.push_back(1);
  kubelet.setBody(listOf(all));
  const size_t before = kubelet.requestCount();
  auto hookRuns = [&]() -> int {
    auto c = httpGet(*port, "/config");
    if (!c) return -1;
    return json::parse(c->body)["strategyRuns"].value("runtime_hooks", 0);
  };
  const int runsBefore = hookRuns();
  const auto b0 = std::chrono::steady_clock::now();
  for (int i : burst) makePodDirs(tmp, i);
  why = waitFor(
      kLimit,
      [&]() -> std::string {
        for (int i : burst) {
          if (!written(tmp, i)) return "pod " + std::to_string(i) + " not yet";
        }
        return "";
      },
      20ms);
  if (!why.empty()) fail("the burst: " + why);
  const double burstMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - b0).count();
  std::this_thread::sleep_for(500ms);  // a trailing sync, if any, has come
  const size_t syncs = kubelet.requestCount() - before;
  CHECK(syncs >= 1);
  CHECK(syncs <= 6);
  // The reconciler's own interval is a minute: its runs here are the burst's.
  const int rounds = hookRuns() - runsBefore;
  CHECK(rounds >= 1);
  CHECK(rounds <= 6);
  WARN("figure: 50 new pods: " << syncs << " kubelet syncs, " << rounds
                               << " reconciler rounds, all values in " << burstMs << " ms");
  auto config = httpGet(*port, "/config");
  REQUIRE(config);
  const json watch = json::parse(config->body)["podCgroupWatch"];
  CHECK(watch["mode"] == "inotify");
  CHECK(watch["podDirEvents"].get<int>() >= 51);
  CHECK(watch["kubeletSyncsWoken"].get<int>() >= 2);
  CHECK(watch["kubeletSyncsWoken"].get<int>() <= watch["wakeUps"].get<int>());

  // 3. The BestEffort tree removed and made again (the pods gone, then a new one).
  std::filesystem::remove_all(tmp.path("cgroup/cpu/kubepods/besteffort"));
  kubelet.setBody(listOf({}));
  std::this_thread::sleep_for(300ms);
  std::filesystem::create_directories(tmp.path("cgroup/cpu/kubepods/besteffort"));
  std::this_thread::sleep_for(1500ms);  // rebuilt within its second
  kubelet.setBody(listOf({2}));
  const auto r0 = std::chrono::steady_clock::now();
  makePodDirs(tmp, 2);
  why = waitFor(
      kLimit, [&]() -> std::string { return written(tmp, 2) ? "" : "not yet"; }, 10ms);
  if (!why.empty()) fail("after the tree was recreated, a new pod never got its values");
  const double rebuiltMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count();
  CHECK(rebuiltMs < 5000);
  config = httpGet(*port, "/config");
  REQUIRE(config);
  CHECK(json::parse(config->body)["podCgroupWatch"]["rebuilds"].get<int>() >= 1);
  WARN("figure: after the tree was recreated, a new pod's values in " << rebuiltMs << " ms");
  CHECK(agent.terminate(10s) == 0);
}

TEST_CASE("with inotify refused the agent says so once, exports it, and wakes by polling",
          "[e2e][wake]") {
  if (geteuid() != 0) {
    KOORDLET_SKIP("sets fs.inotify.max_user_instances (root only) so that inotify is refused");
  }
  const std::string sysctl = "/proc/sys/fs/inotify/max_user_instances";
  auto old = koord::readFile(sysctl);
  REQUIRE(old);
  struct Restore {
    std::string path, value;
    ~Restore() { std::ofstream(path) << value; }
  } restore{sysctl, *old};
  TempTree tmp;
  makeTree(tmp);
  TestKubelet kubelet;
  kubelet.setBody(listOf({}));
  std::ofstream(sysctl) << "0";
  AgentProcess agent(agentBinary(), flags(tmp, kubelet), tmp.path("agent.log"), "e2e-wake-node");
  auto fail = [&](const std::string& what) {
    FAIL(what << "\n--- agent log ---\n" << agent.log());
  };
  std::string why = waitFor(kLimit, [&]() -> std::string {
    return agent.log().find("inotify refused") != std::string::npos ? "" : "not said";
  });
  std::ofstream(sysctl) << *old;  // the host's limit back at once
  if (!why.empty()) fail("the agent never said inotify was refused");
  auto port = agent.waitForServingPort(kLimit);
  if (!port) fail("the agent did not start serving");
  why = waitFor(kLimit, [&] {
    return metric(
        *port, "koordlet_feature_supported{feature=\"pod_cgroup_watch\",node=\"e2e-wake-node\"} 0");
  });
  if (!why.empty()) fail(why);
  why = waitFor(kLimit,
                [&]() -> std::string { return kubelet.requestCount() >= 1 ? "" : "no sync"; });
  kubelet.setBody(listOf({3}));
  const auto t0 = std::chrono::steady_clock::now();
  makePodDirs(tmp, 3);
  why = waitFor(
      kLimit, [&]() -> std::string { return written(tmp, 3) ? "" : "not yet"; }, 10ms);
  if (!why.empty()) fail("polling never woke the agent");
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms < 5000);
  WARN("figure: with inotify refused (polling), a new pod's values in " << ms << " ms");
  auto config = httpGet(*port, "/config");
  REQUIRE(config);
  const json watch = json::parse(config->body)["podCgroupWatch"];
  CHECK(watch["mode"] == "polling");
  CHECK_THAT(watch["fallbackReason"].get<std::string>(), Catch::Contains("inotify_init1"));
  // Said once.
  const std::string log = agent.log();
  CHECK(log.find("inotify refused") == log.rfind("inotify refused"));
  CHECK(agent.terminate(10s) == 0);
}

}  // namespace test_e2e_agent_wake
