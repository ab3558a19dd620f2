// End-to-end test of the NRI plugin in the real koordlet binary, against our
// runtime-side peer (tests/support/nri_runtime_peer.h: containerd's side of NRI,
// written from the reference with its own framing) and the test kubelet, with the
// pods' cgroups in a private subtree of this machine's real cgroup v1 hierarchies.
//
// The pods are the Koordinator docs' BE pod (kubernetes.io/batch-cpu 4k,
// batch-memory 4Gi) and an LSR pod the scheduler bound to CPU 1
// (scheduling.koordinator.sh/resource-status), in a kubelet PodList; the runtime
// sees the same pods as containerd 1.7 describes them.
//
// A process, its timers and sockets run in real time: every wait is a poll with a
// deadline wide enough for a loaded 2-core machine and sanitizer builds.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "tests/support/agent_process.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/nri_runtime_peer.h"
#include "tests/support/poll.h"
#include "tests/support/promtool.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_agent_nri {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::test::AgentProcess;
using koord::test::CgroupV1Tree;
using koord::test::httpGet;
using koord::test::NriRuntimePeer;
using koord::test::Scrape;
using koord::test::TempTree;
using koord::test::TestKubelet;
using koord::test::waitFor;
using json = nlohmann::json;
namespace api = koord::nri::api;
using namespace std::chrono_literals;

constexpr auto kLimit = 20s;
const std::string kNode = "e2e-nri-node";

const char* agentBinary() {
  const char* bin = std::getenv("KOORDLET_BIN");
  if (bin == nullptr || *bin == '\0') {
    FAIL("KOORDLET_BIN is not set (tests/e2e/meson.build sets it to the koordlet binary)");
  }
  return bin;
}

// The two pods as the kubelet lists them and as the runtime describes them.
struct NodePods {
  std::string beUid = "5d1b3b63-8d2a-4f0e-9a57-0c7f6b1e2a41";
  std::string beContainer = koord::test::hexId("be-pod-demo/stress");
  std::string lsrUid = "0a7e2c44-61f3-4b8e-b1c9-3f5d8e9a7b20";
  std::string lsrContainer = koord::test::hexId("lsr-pod-demo/app");

  std::string podList() const {
    json be = {
        {"metadata",
         {{"name", "be-pod-demo"},
          {"namespace", "default"},
          {"uid", beUid},
          {"labels", {{"koordinator.sh/qosClass", "BE"}}}}},
        {"spec",
         {{"priorityClassName", "koord-batch"},
          {"priority", 5000},
          {"containers",
           {{{"name", "stress"},
             {"image", "polinux/stress"},
             {"resources",
              {{"limits",
                {{"kubernetes.io/batch-cpu", "4k"}, {"kubernetes.io/batch-memory", "4Gi"}}},
               {"requests",
                {{"kubernetes.io/batch-cpu", "4k"}, {"kubernetes.io/batch-memory", "4Gi"}}}}}}}}}},
        {"status",
         {{"phase", "Running"},
          {"qosClass", "BestEffort"},
          {"containerStatuses",
           {{{"name", "stress"}, {"containerID", "containerd://" + beContainer}}}}}}};
    json lsr = {
        {"metadata",
         {{"name", "lsr-pod-demo"},
          {"namespace", "default"},
          {"uid", lsrUid},
          {"labels", {{"koordinator.sh/qosClass", "LSR"}}},
          {"annotations", {{"scheduling.koordinator.sh/resource-status", R"({"cpuset":"1"})"}}}}},
        {"spec",
         {{"containers",
           {{{"name", "app"},
             {"image", "nginx:1.25"},
             {"resources",
              {{"limits", {{"cpu", "1"}, {"memory", "256Mi"}}},
               {"requests", {{"cpu", "1"}, {"memory", "256Mi"}}}}}}}}}},
        {"status",
         {{"phase", "Running"},
          {"qosClass", "Guaranteed"},
          {"containerStatuses",
           {{{"name", "app"}, {"containerID", "containerd://" + lsrContainer}}}}}}};
    return json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", {be, lsr}}}.dump();
  }

  api::PodSandbox bePod() const {
    koord::test::PodSpec s;
    s.name = "be-pod-demo";
    s.ns = "default";
    s.uid = beUid;
    s.qos = koord::test::PodQos::kBestEffort;
    s.koordQos = "BE";
    return koord::test::makePod(s);
  }
  api::Container beCtr(const api::PodSandbox& pod) const {
    koord::test::ContainerSpec c;
    c.name = "stress";
    c.image = "polinux/stress";
    api::Container out = koord::test::makeContainer(pod, c);
    out.set_id(beContainer);
    return out;
  }
  api::PodSandbox lsrPod() const {
    koord::test::PodSpec s;
    s.name = "lsr-pod-demo";
    s.ns = "default";
    s.uid = lsrUid;
    s.qos = koord::test::PodQos::kGuaranteed;
    s.koordQos = "LSR";
    s.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"1"})";
    return koord::test::makePod(s);
  }
  api::Container lsrCtr(const api::PodSandbox& pod) const {
    koord::test::ContainerSpec c;
    c.name = "app";
    c.cpuRequestMilli = 1000;
    c.cpuLimitMilli = 1000;
    c.memoryLimitBytes = 256 << 20;
    api::Container out = koord::test::makeContainer(pod, c);
    out.set_id(lsrContainer);
    return out;
  }
};

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string kernelRead(const CgroupV1Tree& tree, const std::string& ctrl, const std::string& dir,
                       const std::string& file) {
  auto text = koord::readFile(tree.kernelPath(ctrl, dir, file));
  return text ? trimmed(*text) : "<unreadable: " + text.error().message + ">";
}

void kernelWrite(const CgroupV1Tree& tree, const std::string& ctrl, const std::string& dir,
                 const std::string& file, const std::string& value) {
  std::ofstream out(tree.kernelPath(ctrl, dir, file));
  out << value;
  out.flush();
  REQUIRE(out.good());
  REQUIRE(kernelRead(tree, ctrl, dir, file) == value);
}

std::string readyz(uint16_t port) {
  auto r = httpGet(port, "/readyz");
  return r ? std::to_string(r->status) + " " + r->body : "no reply";
}

}  // namespace

TEST_CASE(
    "with NRI on, the agent is Ready without the runtime's socket, its reconciler gives the "
    "containers their hook values on the real kernel, it registers once the socket appears, "
    "answers CreateContainer with the same values, and finds a restarted runtime again",
    "[e2e][nri]") {
  if (std::string why = CgroupV1Tree::unavailableReason(); !why.empty()) {
    KOORDLET_SKIP("the reconciler half writes real cgroup v1 files: " << why);
  }
  const char* bin = agentBinary();
  TempTree tmp;
  CgroupV1Tree tree("nri", tmp.path("cgroup"));
  NodePods pods;

  // The cgroups the kubelet made, with the kubelet's values: BestEffort cpu.shares 2;
  // the Guaranteed 1-CPU pod and its container capped at 100 ms per 100 ms.
  const std::string beDir = "kubepods/besteffort/pod" + pods.beUid;
  const std::string beCtrDir = beDir + "/" + pods.beContainer;
  const std::string lsrDir = "kubepods/pod" + pods.lsrUid;
  const std::string lsrCtrDir = lsrDir + "/" + pods.lsrContainer;
  tree.mkdirs(beCtrDir);
  tree.mkdirs(lsrCtrDir);
  tree.mkdirs("kubepods/burstable");
  kernelWrite(tree, "cpu", beDir, "cpu.shares", "2");
  kernelWrite(tree, "cpu", beCtrDir, "cpu.shares", "2");
  kernelWrite(tree, "cpu", lsrDir, "cpu.cfs_quota_us", "100000");
  kernelWrite(tree, "cpu", lsrCtrDir, "cpu.cfs_quota_us", "100000");

  TestKubelet kubelet;
  kubelet.setBody(pods.podList());

  const std::string socketPath = tmp.path("run/nri/nri.sock");
  AgentProcess agent(
      bin,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + tree.linkDir(), "--proc-root-dir=/proc/",
       "--var-run-root-dir=" + tmp.path("run"), "--runtime-hooks-nri-socket-path=nri/nri.sock",
       "--runtime-hooks-nri-backoff-duration=100ms", "--runtime-hooks-nri-backoff-cap=400ms",
       "--kubelet-insecure-tls=true", "--kubelet-addr=127.0.0.1",
       "--kubelet-read-only-port=" + std::to_string(kubelet.port()), "--kubelet-sync-interval=1s",
       "--collect-res-used-interval=300ms", "--reconcile-interval-seconds=1",
       "--cpu-suppress-interval-seconds=0", "--audit-log-dir=" + tmp.path("audit")},
      tmp.path("agent.log"), kNode);
  auto fail = [&](const std::string& what) {
    FAIL(what << "\n--- agent log ---\n" << agent.log());
  };
  auto port = agent.waitForServingPort(kLimit);
  if (!port) fail("the agent did not start serving");

  // 1. No NRI socket: Ready all the same, and /readyz says why NRI is not connected.
  std::string why = waitFor(kLimit, [&]() -> std::string {
    std::string r = readyz(*port);
    if (r.rfind("200 ", 0) != 0) return "readyz: " + r;
    if (r.find("nri: not connected") == std::string::npos) return "readyz: " + r;
    if (r.find("2 pods") == std::string::npos) return "readyz: " + r;
    return "";
  });
  if (!why.empty()) fail(why);

  // 2. The reconciler (no NRI yet: every container here was "created" without the
  // plugin) gives them their hook values, and the kernel accepts each write.
  const std::string shares = std::to_string(4000 * 1024 / 1000);  // batch-cpu 4k milli-cores
  const std::string quota = std::to_string(4000 * 100);           // µs per 100 ms period
  const std::string memory = std::to_string(int64_t{4} << 30);    // batch-memory 4Gi
  const auto repairStart = std::chrono::steady_clock::now();
  why = waitFor(kLimit, [&]() -> std::string {
    struct Want {
      std::string ctrl, dir, file, value;
    };
    const Want wants[] = {
        {"cpu", beCtrDir, "cpu.shares", shares},
        {"cpu", beCtrDir, "cpu.cfs_quota_us", quota},
        {"memory", beCtrDir, "memory.limit_in_bytes", memory},
        {"cpu", beDir, "cpu.shares", shares},
        {"cpu", beDir, "cpu.cfs_quota_us", quota},
        {"memory", beDir, "memory.limit_in_bytes", memory},
        {"cpuset", lsrCtrDir, "cpuset.cpus", "1"},
        {"cpu", lsrCtrDir, "cpu.cfs_quota_us", "-1"},
        {"cpu", lsrDir, "cpu.cfs_quota_us", "-1"},
    };
    for (const Want& w : wants) {
      std::string got = kernelRead(tree, w.ctrl, w.dir, w.file);
      if (got != w.value) return w.dir + "/" + w.file + " = " + got + ", want " + w.value;
    }
    return "";
  });
  if (!why.empty()) fail("reconciler: " + why);
  const double repairSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - repairStart).count();
  WARN("reconciler repaired both pods " << repairSeconds << " s after the agent was ready");

  // Retrying an absent socket is one log line, not one per attempt.
  why = waitFor(kLimit, [&]() -> std::string {
    auto m = httpGet(*port, "/metrics");
    if (!m) return "no scrape";
    auto attempts = Scrape(m->body).value("koordlet_nri_connection_attempts_total");
    return attempts && *attempts >= 3 ? "" : "fewer than 3 connection attempts so far";
  });
  if (!why.empty()) fail(why);
  {
    std::istringstream log(agent.log());
    int absentLines = 0;
    for (std::string line; std::getline(log, line);) {
      if (line.find("NRI socket " + socketPath + " absent") != std::string::npos) ++absentLines;
    }
    CHECK(absentLines == 1);
  }

  // 3. The runtime appears: the agent registers as koordlet_nri/00 and subscribes
  // koordlet's events (0x8D).
  std::filesystem::create_directories(tmp.path("run/nri"));  // containerd makes it, mode 0700
  NriRuntimePeer peer;
  peer.setSyncState({pods.bePod(), pods.lsrPod()},
                    {pods.beCtr(pods.bePod()), pods.lsrCtr(pods.lsrPod())});
  peer.listen(socketPath);
  if (!peer.waitReady(kLimit)) fail("no NRI handshake: " + peer.violationsText());
  auto regs = peer.registrations();
  REQUIRE(regs.size() == 1);
  CHECK(regs[0].name == "koordlet_nri");
  CHECK(regs[0].idx == "00");
  CHECK(peer.events() == 0x8D);
  why = waitFor(kLimit, [&]() -> std::string {
    std::string r = readyz(*port);
    return r.rfind("200 ", 0) == 0 && r.find("nri: connected to containerd") != std::string::npos
               ? ""
               : "readyz: " + r;
  });
  if (!why.empty()) fail(why);

  // 4. CreateContainer gets the values the reconciler wrote.
  const api::PodSandbox bePod = pods.bePod();
  auto create = peer.createContainer(bePod, pods.beCtr(bePod));
  REQUIRE(create.ok());
  INFO(create.response.DebugString());
  const api::LinuxResources& be = create.response.adjust().linux().resources();
  REQUIRE(be.cpu().has_shares());
  CHECK(std::to_string(be.cpu().shares().value()) == shares);
  REQUIRE(be.cpu().has_quota());
  CHECK(std::to_string(be.cpu().quota().value()) == quota);
  REQUIRE(be.memory().has_limit());
  CHECK(std::to_string(be.memory().limit().value()) == memory);
  CHECK(create.response.update_size() == 0);  // never an update for the container being created
  CHECK(create.latency < 1s);

  const api::PodSandbox lsrPod = pods.lsrPod();
  auto lsr = peer.createContainer(lsrPod, pods.lsrCtr(lsrPod));
  REQUIRE(lsr.ok());
  INFO(lsr.response.DebugString());
  CHECK(lsr.response.adjust().linux().resources().cpu().cpus() == "1");
  REQUIRE(lsr.response.adjust().linux().resources().cpu().has_quota());
  CHECK(lsr.response.adjust().linux().resources().cpu().quota().value() == -1);

  // UpdateContainer (kubelet resizing the BE container) keeps the batch values.
  api::LinuxResources asked;
  asked.mutable_cpu()->mutable_shares()->set_value(2);
  auto update = peer.updateContainer(bePod, pods.beCtr(bePod), asked);
  REQUIRE(update.ok());
  REQUIRE(update.response.update_size() == 1);
  CHECK(update.response.update(0).container_id() == pods.beContainer);
  CHECK(std::to_string(update.response.update(0).linux().resources().cpu().shares().value()) ==
        shares);

  // A pod the kubelet has not listed yet: the runtime's annotations are enough.
  koord::test::PodSpec fresh;
  fresh.name = "be-fresh";
  fresh.uid = "9f0e1d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f";
  fresh.qos = koord::test::PodQos::kBestEffort;
  fresh.koordQos = "BE";
  fresh.annotations["node.koordinator.sh/extended-resource-spec"] =
      R"({"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"500"},)"
      R"("limits":{"kubernetes.io/batch-cpu":"1000","kubernetes.io/batch-memory":"1Gi"}}}})";
  koord::test::ContainerSpec freshCtr;
  freshCtr.name = "main";
  const api::PodSandbox freshPod = koord::test::makePod(fresh);
  auto freshReply = peer.createContainer(freshPod, koord::test::makeContainer(freshPod, freshCtr));
  REQUIRE(freshReply.ok());
  INFO(freshReply.response.DebugString());
  CHECK(freshReply.response.adjust().linux().resources().cpu().shares().value() == 512);
  CHECK(freshReply.response.adjust().linux().resources().cpu().quota().value() == 100000);
  CHECK(freshReply.response.adjust().linux().resources().memory().limit().value() == int64_t{1}
                                                                                         << 30);
  // ... unless it is labelled to skip the hooks.
  fresh.labels["runtimeproxy.koordinator.sh/skip-hookserver"] = "true";
  const api::PodSandbox skipPod = koord::test::makePod(fresh);
  auto skipped = peer.createContainer(skipPod, koord::test::makeContainer(skipPod, freshCtr));
  REQUIRE(skipped.ok());
  CHECK_FALSE(skipped.response.adjust().linux().has_resources());

  // 5. What an operator scrapes: hook timings, the connection, a clean exposition.
  // The agent serves one rendered page for up to 250 ms: poll until it shows the calls.
  std::optional<koord::test::HttpReply> metrics;
  std::optional<double> created;
  why = waitFor(kLimit, [&]() -> std::string {
    metrics = httpGet(*port, "/metrics");
    if (!metrics) return "no scrape";
    created = Scrape(metrics->body)
                  .value("koordlet_runtime_hook_invoked_duration_milliseconds_count",
                         {{"hook", "BatchResource"},
                          {"stage", "PreCreateContainer"},
                          {"status", "succeeded"}});
    return created && *created >= 3 ? "" : "fewer than 3 PreCreateContainer hook runs exported";
  });
  if (!why.empty()) fail(why);
  Scrape scrape(metrics->body);
  CHECK(scrape.value("koordlet_nri_connected") == 1.0);
  koord::test::PromtoolResult lint = koord::test::promtoolCheck(metrics->body);
  if (lint.ran) {
    INFO(lint.output);
    CHECK(lint.problems.empty());
  }

  // 6. The runtime restarts (socket gone, then a new one): the agent stays Ready,
  // reconnects, registers again and gets a fresh Configure and Synchronize.
  peer.stop();
  why = waitFor(kLimit, [&]() -> std::string {
    std::string r = readyz(*port);
    return r.rfind("200 ", 0) == 0 && r.find("nri: not connected") != std::string::npos
               ? ""
               : "readyz: " + r;
  });
  if (!why.empty()) fail("after the runtime stopped: " + why);
  peer.listen(socketPath);
  if (!peer.waitSynchronized(2, kLimit)) fail("no reconnect: " + peer.violationsText());
  CHECK(peer.registrations().size() == 2);
  auto again = peer.createContainer(bePod, pods.beCtr(bePod));
  REQUIRE(again.ok());
  CHECK(again.response.adjust().linux().resources().cpu().shares().value() ==
        create.response.adjust().linux().resources().cpu().shares().value());
  why = waitFor(kLimit, [&]() -> std::string {
    auto m = httpGet(*port, "/metrics");
    if (!m) return "no scrape";
    Scrape s(m->body);
    if (s.value("koordlet_nri_connects_total") != 2.0) return "connects_total != 2";
    if (s.value("koordlet_nri_disconnects_total") != 1.0) return "disconnects_total != 1";
    return "";
  });
  if (!why.empty()) fail(why);
  CHECK(peer.violations().empty());
  INFO(peer.violationsText());

  auto status = agent.terminate(5s);
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  // klog severity E: "E1122 04:25:52.530889 ..."; a lost runtime is a warning.
  std::istringstream log(agent.log());
  std::string errorLines;
  for (std::string line; std::getline(log, line);) {
    if (line.starts_with("E")) errorLines += line + "\n";
  }
  CHECK(errorLines == "");
}

TEST_CASE(
    "launched by the runtime with the socket on fd 3 and only the NRI environment, the agent "
    "registers under the runtime's name and index, serves the runtime, and exits 0 when the "
    "runtime closes the socket",
    "[e2e][nri]") {
  const char* bin = agentBinary();
  TempTree tmp;
  auto [runtimeEnd, pluginEnd] = koord::test::makeSocketPair();
  AgentProcess::Launched launched;
  launched.env = {"NRI_PLUGIN_SOCKET=3", "NRI_PLUGIN_IDX=20", "NRI_PLUGIN_NAME=koordlet"};
  launched.socketFd = pluginEnd;
  // Nothing else on the node in this test: no kubelet (unreachable port), fake roots.
  AgentProcess agent(bin,
                     {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + tmp.path("cgroup"),
                      "--var-run-root-dir=" + tmp.path("run"), "--kubelet-insecure-tls=true",
                      "--kubelet-addr=127.0.0.1", "--kubelet-read-only-port=1", "--audit-log-dir="},
                     tmp.path("agent.log"), launched);
  ::close(pluginEnd);
  auto fail = [&](const std::string& what) {
    FAIL(what << "\n--- agent log ---\n" << agent.log());
  };

  NriRuntimePeer peer;
  peer.adopt(runtimeEnd);
  if (!peer.waitReady(kLimit)) fail("no NRI handshake on fd 3: " + peer.violationsText());
  auto regs = peer.registrations();
  REQUIRE(regs.size() == 1);
  CHECK(regs[0].name == "koordlet");
  CHECK(regs[0].idx == "20");

  koord::test::PodSpec ps;
  ps.qos = koord::test::PodQos::kBestEffort;
  ps.koordQos = "BE";
  ps.annotations["node.koordinator.sh/extended-resource-spec"] =
      R"({"containers":{"nginx":{"requests":{"kubernetes.io/batch-cpu":"2000"},)"
      R"("limits":{"kubernetes.io/batch-cpu":"2000","kubernetes.io/batch-memory":"2Gi"}}}})";
  const api::PodSandbox pod = koord::test::makePod(ps);
  auto reply = peer.createContainer(pod, koord::test::makeContainer(pod, {}));
  REQUIRE(reply.ok());
  CHECK(reply.response.adjust().linux().resources().cpu().shares().value() == 2048);

  // The runtime goes away: a launched plugin has nothing to reconnect to.
  peer.stop();
  std::optional<int> status;
  std::string why =
      waitFor(kLimit, [&]() -> std::string { return agent.running() ? "still running" : ""; });
  if (!why.empty()) fail("the agent did not exit after the runtime closed fd 3");
  status = agent.terminate(1s);
  REQUIRE(status);
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK(agent.log().find("runtime closed the plugin socket") != std::string::npos);
}

TEST_CASE(
    "with --enable-nri-runtime-hook=false the agent never dials the runtime, is Ready, and "
    "says NRI is disabled",
    "[e2e][nri]") {
  const char* bin = agentBinary();
  TempTree tmp;
  std::filesystem::create_directories(tmp.path("run/nri"));
  NriRuntimePeer peer;
  peer.listen(tmp.path("run/nri/nri.sock"));
  AgentProcess agent(bin,
                     {"--addr=127.0.0.1:0", "--enable-nri-runtime-hook=false",
                      "--cgroup-root-dir=" + tmp.path("cgroup"),
                      "--var-run-root-dir=" + tmp.path("run"), "--kubelet-insecure-tls=true",
                      "--kubelet-addr=127.0.0.1", "--kubelet-read-only-port=1", "--audit-log-dir="},
                     tmp.path("agent.log"), kNode);
  auto fail = [&](const std::string& what) {
    FAIL(what << "\n--- agent log ---\n" << agent.log());
  };
  auto port = agent.waitForServingPort(kLimit);
  if (!port) fail("the agent did not start serving");
  std::string why = waitFor(kLimit, [&]() -> std::string {
    std::string r = readyz(*port);
    return r.rfind("200 ", 0) == 0 && r.find("\nnri: disabled\n") != std::string::npos
               ? ""
               : "readyz: " + r;
  });
  if (!why.empty()) fail(why);
  auto metrics = httpGet(*port, "/metrics");
  REQUIRE(metrics);
  Scrape scrape(metrics->body);
  CHECK(scrape.value("koordlet_nri_enabled") == 0.0);
  CHECK(scrape.value("koordlet_nri_connection_attempts_total") == 0.0);
  CHECK(peer.stats().connections == 0);
  auto status = agent.terminate(5s);
  REQUIRE(status);
  CHECK(WEXITSTATUS(*status) == 0);
}

}  // namespace test_e2e_agent_nri
