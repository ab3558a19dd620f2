// The NRI plugin in the real koordlet binary against a real containerd (Debian's
// package, tests/runtime/fetch-runtime.sh: 1.7 from trixie on this cgroup v1 host) and
// Debian bookworm's runc: pods and containers made through CRI as the kubelet makes them
// (tests/support/cri_client.h), on this machine's real cgroup v1 kernel, the pods'
// cgroups in a private subtree (tests/support/containerd_node.h).
//
// What only the real runtime can show: that containerd takes the plugin (registration,
// its event mask, its timeouts), that the adjustment the agent answers CreateContainer
// with reaches runc and the kernel before the container's first instruction (the
// container prints its own cgroup files as it starts), that a container made while
// no plugin is there gets the kubelet's values (the check can fail), that a pod's own
// cgroup holds its batch values when RunPodSandbox returns, that OOMScoreAdj's value is
// the container's first process's, that a containerd restart
// is met by one new connection, not two, and that without NRI the wake-up on the
// kubepods tree still gives a new pod its values within a second.
//
// The pods are the Koordinator docs' BE pod (kubernetes.io/batch-cpu 1k, batch-memory
// 64Mi) as the kubelet lists it; the kubelet stand-in serves that list.
// Real time: every wait is a poll with a deadline for a loaded 2-core machine.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/agent_process.h"
#include "tests/support/batch_pod.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/containerd_node.h"
#include "tests/support/cri_client.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_nri_containerd {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::test::AgentProcess;
using koord::test::CgroupV1Tree;
using koord::test::ContainerdNode;
using koord::test::CriClient;
using koord::test::TempTree;
using koord::test::TestKubelet;
using koord::test::waitFor;
using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kLimit = 30s;
const std::string kNode = "e2e-nri-containerd-node";
// What the container prints the moment it starts: its own cgroup files (runc bind-mounts
// the container's cgroup directories at /sys/fs/cgroup/<controller> on v1).
const std::vector<std::string> kShowCgroup = {
    "/bin/sh", "-c",
    "echo shares=$(cat /sys/fs/cgroup/cpu/cpu.shares) "
    "quota=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) "
    "memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes); exec sleep 2147483647"};

// batch-cpu 1k: shares 1024 and 100 ms a 100 ms period; batch-memory 64Mi.
const std::string kBatchValues = "shares=1024 quota=100000 memory=67108864";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

using koord::test::kBeLabels;
const auto& kBeAnnotations = koord::test::kBeBatchAnnotations;  // tests/support/batch_pod.h

// A BestEffort pod with Koordinator's batch resources, as the kubelet lists it (its
// container's ID once the runtime has one).
json bePod(const std::string& name, const std::string& uid, const std::string& containerId) {
  json status = {{"name", "stress"}, {"ready", false}, {"restartCount", 0}};
  if (!containerId.empty()) status["containerID"] = "containerd://" + containerId;
  const json& batch = koord::test::kBatchResources;
  return {{"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"uid", uid},
            {"labels", kBeLabels},
            {"annotations", kBeAnnotations}}},
          {"spec",
           {{"priorityClassName", "koord-batch"},
            {"priority", 5000},
            {"containers",
             {{{"name", "stress"},
               {"image", ContainerdNode::kImage},
               {"resources", {{"limits", batch}, {"requests", batch}}}}}}}},
          {"status",
           {{"phase", "Running"}, {"qosClass", "BestEffort"}, {"containerStatuses", {status}}}}};
}

// One pod made through CRI: the sandbox, then one container printing its cgroup files.
struct CriPod {
  std::string name, uid, sandboxId, containerId, logPath;
  runtime::v1::PodSandboxConfig sandbox;
};

CriPod runBePod(CriClient& cri, const CgroupV1Tree& tree, const TempTree& tmp,
                const std::string& name, const std::string& uid,
                const std::map<std::string, std::string>& annotations = kBeAnnotations,
                const std::vector<std::string>& command = kShowCgroup) {
  CriPod p;
  p.name = name;
  p.uid = uid;
  const std::string logDir = tmp.path("pods/default_" + name + "_" + uid);
  std::filesystem::create_directories(logDir);
  // The kubelet's cgroupfs driver: /kubepods/besteffort/pod<uid> under the node's root,
  // here under the private tree.
  p.sandbox = koord::test::kubeletSandbox(name, "default", uid,
                                          "/" + tree.prefix() + "/kubepods/besteffort/pod" + uid,
                                          logDir, kBeLabels, annotations);
  p.sandboxId = cri.runPodSandbox(p.sandbox);
  // What the kubelet asks for a BestEffort container: cpu.shares 2, no quota, no limit.
  runtime::v1::LinuxContainerResources kubelet;
  kubelet.set_cpu_period(100000);
  kubelet.set_cpu_shares(2);
  kubelet.set_oom_score_adj(1000);
  p.containerId = cri.createContainer(
      p.sandboxId,
      koord::test::kubeletContainer("stress", ContainerdNode::kImage, command, p.sandbox, kubelet),
      p.sandbox);
  cri.startContainer(p.containerId);
  p.logPath = logDir + "/stress/0.log";
  return p;
}

void removePod(CriClient& cri, const CriPod& p) {
  cri.stopContainer(p.containerId, 0);
  cri.removeContainer(p.containerId);
  cri.stopPodSandbox(p.sandboxId);
  cri.removePodSandbox(p.sandboxId);
}

// A pod's own cgroup values, in kBatchValues' form.
std::string podCgroupValues(const CgroupV1Tree& tree, const std::string& podDir) {
  auto read = [&](const char* c, const char* f) {
    std::string v = koord::test::readTextFile(tree.kernelPath(c, podDir, f));
    while (!v.empty() && v.back() == '\n') v.pop_back();
    return v;
  };
  return "shares=" + read("cpu", "cpu.shares") + " quota=" + read("cpu", "cpu.cfs_quota_us") +
         " memory=" + read("memory", "memory.limit_in_bytes");
}

// The line the container printed at its start, from its CRI log ("<time> stdout F <line>").
std::string printedCgroup(const CriPod& p) {
  std::istringstream in(koord::test::readTextFile(p.logPath));
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(" stdout F ");
    if (at != std::string::npos) return line.substr(at + 10);
  }
  return "";
}

std::string waitPrinted(const CriPod& p) {
  std::string got;
  waitFor(kLimit, [&]() -> std::string {
    got = printedCgroup(p);
    return got.empty() ? "nothing printed yet" : "";
  });
  return got;
}

std::string readyz(uint16_t port) {
  auto r = koord::test::httpGet(port, "/readyz");
  return r ? r->body : "no reply";
}

// "N connects, M disconnects" of /readyz's nri line.
std::string nriLine(uint16_t port) {
  const std::string body = readyz(port);
  const auto at = body.find("nri: ");
  return at == std::string::npos ? body : body.substr(at, body.find('\n', at) - at);
}

// The agent's runtime-hook and NRI series, for a failure's message.
std::string hookSeries(uint16_t port) {
  auto r = koord::test::httpGet(port, "/metrics");
  if (!r) return "no /metrics";
  std::istringstream in(r->body);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line[0] != '#' && (line.find("runtime_hook") != std::string::npos ||
                           line.find("koordlet_nri") != std::string::npos)) {
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace

TEST_CASE(
    "real containerd takes the agent as its NRI plugin: a BE pod's container starts with the "
    "agent's batch values where one made without the plugin starts with the kubelet's, a pod's "
    "own cgroup has them at its sandbox, a containerd restart is met by one new connection, and "
    "without NRI the wake-up sets a new pod's within a second",
    "[e2e][nri][containerd]") {
  if (std::string why = CgroupV1Tree::unavailableReason(); !why.empty()) {
    KOORDLET_SKIP("runc makes the pods' cgroups on the real cgroup v1 kernel: " << why);
  }
  const std::string runtimeRoot = env("KOORDLET_CONTAINERD_ROOT");
  const std::string runc = env("KOORDLET_RUNC");
  const std::string image = env("KOORDLET_TEST_IMAGE");
  if (runtimeRoot.empty() || runc.empty() || image.empty()) {
    FAIL(
        "KOORDLET_CONTAINERD_ROOT, KOORDLET_RUNC and KOORDLET_TEST_IMAGE are not set "
        "(tests/runtime/nri_containerd.sh sets them)");
  }
  if (std::string why = ContainerdNode::unavailableReason(runtimeRoot, runc); !why.empty()) {
    KOORDLET_SKIP(why);
  }
  const std::string bin = env("KOORDLET_BIN");
  REQUIRE(!bin.empty());

  TempTree tmp;
  CgroupV1Tree tree("nri-containerd", tmp.path("cgroup"));
  tree.mkdirs("kubepods/besteffort");
  tree.mkdirs("kubepods/burstable");
  ContainerdNode node({runtimeRoot, runc, image, tmp.path("containerd"), &tree});
  CriClient cri(node.criSocket());
  const auto v = cri.version();
  WARN("runtime: " << v.runtime_name() << " " << v.runtime_version() << " (CRI "
                   << v.runtime_api_version() << "); " << node.version());
  auto fail = [&](const std::string& what, AgentProcess* agent) {
    FAIL(what << "\n--- containerd log (tail) ---\n"
              << node.log().substr(node.log().size() > 6000 ? node.log().size() - 6000 : 0)
              << (agent ? "\n--- agent log ---\n" + agent->log() : std::string()));
  };

  const std::string controlUid = "6f0c9d1e-2b3a-4c5d-8e7f-90a1b2c3d4e5";
  const std::string beUid = "7a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d";
  TestKubelet kubelet;
  auto list = [&](const std::vector<json>& pods) {
    kubelet.setBody(json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", pods}}.dump());
  };

  // 1. Without the plugin, containerd starts the container with what the kubelet asked.
  CriPod control;
  try {
    control = runBePod(cri, tree, tmp, "be-control", controlUid);
  } catch (const std::exception& e) {
    fail(e.what(), nullptr);
  }
  const std::string kubeletValues = waitPrinted(control);
  CHECK(kubeletValues == "shares=2 quota=-1 memory=9223372036854771712");

  // 2. The agent connects to containerd's NRI socket.
  list({bePod("be-control", controlUid, control.containerId), bePod("be-demo", beUid, "")});
  AgentProcess agent(
      bin,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + tree.linkDir(), "--proc-root-dir=/proc/",
       "--var-run-root-dir=" + tmp.path("containerd"),
       "--runtime-hooks-nri-socket-path=nri/nri.sock", "--runtime-hooks-nri-backoff-duration=100ms",
       "--runtime-hooks-nri-backoff-cap=400ms", "--kubelet-insecure-tls=true",
       "--kubelet-addr=127.0.0.1", "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
       "--kubelet-sync-interval=1s", "--collect-res-used-interval=500ms",
       "--reconcile-interval-seconds=1", "--runtime-hooks-reconcile-interval=1s",
       "--cpu-suppress-interval-seconds=0", "--feature-gates=OOMScoreAdj=true",
       "--audit-log-dir=" + tmp.path("audit"), "--v=4"},
      tmp.path("agent.log"), kNode);
  const auto port = agent.waitForServingPort(kLimit);
  if (!port) fail("the agent did not start serving", &agent);
  std::string why = waitFor(kLimit, [&]() -> std::string {
    const std::string nri = nriLine(*port);
    return nri.rfind("nri: connected to containerd", 0) == 0 ? "" : nri;
  });
  if (!why.empty()) fail("the agent never registered with containerd: " + why, &agent);
  INFO(nriLine(*port));

  // 3. A BE pod made now: its container's first instruction sees the agent's values,
  // which only the CreateContainer adjustment can have put there (the kubelet stand-in
  // lists no container ID for it yet, so the reconciler cannot know its cgroup).
  CriPod be;
  try {
    be = runBePod(cri, tree, tmp, "be-demo", beUid);
  } catch (const std::exception& e) {
    fail(e.what(), &agent);
  }
  const std::string agentValues = waitPrinted(be);
  if (agentValues != kBatchValues) {
    fail("the BE container started with " + agentValues + ", not " + kBatchValues + "\n" +
             hookSeries(*port),
         &agent);
  }

  // 3b. A pod's own cgroup gets its values at RunPodSandbox, before any container: a BE
  // pod the kubelet stand-in does not list (so no reconcile round can know it), its
  // batch resources in the extended-resource-spec annotation (koord-manager's webhook
  // adds it), its pod cgroup made as the kubelet's cgroupfs driver makes it (shares 2,
  // no quota, no limit) before the sandbox.
  {
    const std::string sbUid = "9c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f";
    const std::string podDir = "kubepods/besteffort/pod" + sbUid;
    tree.mkdirs(podDir);
    std::ofstream(tree.kernelPath("cpu", podDir, "cpu.shares")) << "2";
    const std::string logDir = tmp.path("pods/default_be-sandbox_" + sbUid);
    std::filesystem::create_directories(logDir);
    const auto sandbox = koord::test::kubeletSandbox("be-sandbox", "default", sbUid,
                                                     "/" + tree.prefix() + "/" + podDir, logDir,
                                                     kBeLabels, kBeAnnotations);
    const std::string sandboxId = cri.runPodSandbox(sandbox);
    const auto returned = std::chrono::steady_clock::now();
    std::string got;
    why = waitFor(kLimit, [&]() -> std::string {
      got = podCgroupValues(tree, podDir);
      return got == kBatchValues ? "" : got;
    });
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - returned)
            .count();
    if (!why.empty()) {
      fail("the BE pod's own cgroup holds " + got + " after its sandbox, not " + kBatchValues,
           &agent);
    }
    WARN("figure: the pod's batch values in its cgroup " << ms
                                                         << " ms after RunPodSandbox returned");
    cri.stopPodSandbox(sandboxId);
    cri.removePodSandbox(sandboxId);
  }

  // 3c. OOMScoreAdj: the container's first process starts with the annotation's
  //     oom_score_adj (the kubelet asked 1000 for a BestEffort container), through the
  //     CreateContainer adjustment (the kubelet stand-in does not list the pod).
  {
    const std::string oomUid = "1e4f5a6b-7c8d-4e9f-8a0b-1c2d3e4f5a6b";
    auto annotations = kBeAnnotations;
    annotations["koordinator.sh/oom-score-adj"] = "700";
    CriPod oom;
    try {
      oom = runBePod(
          cri, tree, tmp, "be-oom", oomUid, annotations,
          {"/bin/sh", "-c", "echo oom=$(cat /proc/self/oom_score_adj); exec sleep 2147483647"});
    } catch (const std::exception& e) {
      fail(e.what(), &agent);
    }
    const std::string printed = waitPrinted(oom);
    // containerd before 1.7.26 speaks NRI v0.6, which drops oom_score_adj from an
    // adjustment (../shared/reference/nri.md §0): the container starts with the
    // kubelet's 1000, the agent says so, and its reconciler sets the processes once
    // the kubelet lists the container.
    int major = 0, minor = 0, patch = 0;
    std::sscanf(v.runtime_version().c_str(), "%d.%d.%d", &major, &minor, &patch);
    const bool dropsOom = major == 1 && (minor < 7 || (minor == 7 && patch < 26));
    if (!dropsOom) {
      if (printed != "oom=700") fail("the annotated container started with " + printed, &agent);
    } else {
      CHECK(printed == "oom=1000");
      CHECK(agent.log().find("ignores oom_score_adj in an adjustment") != std::string::npos);
      json annotated = bePod("be-oom", oomUid, oom.containerId);
      annotated["metadata"]["annotations"]["koordinator.sh/oom-score-adj"] = "700";
      list({bePod("be-control", controlUid, control.containerId),
            bePod("be-demo", beUid, be.containerId), annotated});
      const std::string procs = tree.kernelPath(
          "cpu", "kubepods/besteffort/pod" + oomUid + "/" + oom.containerId, "cgroup.procs");
      std::string seen;
      why = waitFor(kLimit, [&]() -> std::string {
        std::istringstream in(koord::test::readTextFile(procs));
        seen.clear();
        for (std::string pid; std::getline(in, pid);) {
          if (pid.empty()) continue;
          std::string v = koord::test::readTextFile("/proc/" + pid + "/oom_score_adj");
          seen += pid + "=" + v.substr(0, v.find('\n')) + " ";
        }
        return !seen.empty() && seen.find("=1000") == std::string::npos ? "" : seen;
      });
      if (!why.empty()) fail("the reconciler left the annotated container at " + seen, &agent);
      CHECK(seen.find("=700") != std::string::npos);
    }
    removePod(cri, oom);
  }

  // 4. The reconciler brings the control pod's running container to the same values.
  list({bePod("be-control", controlUid, control.containerId),
        bePod("be-demo", beUid, be.containerId)});
  const std::string controlDir = "kubepods/besteffort/pod" + controlUid + "/" + control.containerId;
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string shares =
        koord::test::readTextFile(tree.kernelPath("cpu", controlDir, "cpu.shares"));
    return shares == "1024\n" ? "" : "cpu.shares " + shares;
  });
  if (!why.empty()) fail("the reconciler did not repair the control container: " + why, &agent);

  // 5. containerd restarts (a node upgrade): the agent connects again, once.
  node.stop();
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string nri = nriLine(*port);
    return nri.find("1 disconnects") != std::string::npos ? "" : nri;
  });
  if (!why.empty()) fail("the agent did not see containerd go: " + why, &agent);
  node.start();
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string nri = nriLine(*port);
    return nri.rfind("nri: connected to containerd", 0) == 0 &&
                   nri.find("2 connects, 1 disconnects") != std::string::npos
               ? ""
               : nri;
  });
  if (!why.empty()) fail("no single reconnect after containerd's restart: " + why, &agent);
  std::this_thread::sleep_for(3s);  // several back-off periods: still one connection
  CHECK(nriLine(*port).find("2 connects, 1 disconnects") != std::string::npos);
  CriClient cri2(node.criSocket());
  const std::string after = "8b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e";
  list({bePod("be-control", controlUid, control.containerId),
        bePod("be-demo", beUid, be.containerId), bePod("be-after", after, "")});
  CriPod later;
  try {
    later = runBePod(cri2, tree, tmp, "be-after", after);
  } catch (const std::exception& e) {
    fail(e.what(), &agent);
  }
  const std::string laterValues = waitPrinted(later);
  if (laterValues != kBatchValues) {
    fail("after the restart a BE container started with " + laterValues, &agent);
  }

  for (const CriPod* p : {&control, &be, &later}) removePod(cri2, *p);

  // 6. The way events came: a runtime of NRI v0.12 (containerd 2.3) calls the per-event
  //    methods (RunPodSandbox, ...) and falls back to the StateChange it warns of as
  //    deprecated only for a plugin that answers code 12; one before v0.12 (1.7.24
  //    here, 2.0 to 2.2) sends StateChange alone, and no NRI_version in Configure.
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string nri = nriLine(*port);
    unsigned long perEvent = 0, stateChange = 0;
    const auto at = nri.find("; ");
    if (at == std::string::npos ||
        std::sscanf(nri.c_str() + at, "; %lu per-event calls, %lu StateChange", &perEvent,
                    &stateChange) != 2) {
      return "no event counts in: " + nri;
    }
    const bool v012 = nri.find("(NRI before v0.12)") == std::string::npos;
    if (v012 ? perEvent == 0 || stateChange != 0 : perEvent != 0 || stateChange == 0) {
      return std::string(v012 ? "a runtime of NRI v0.12+" : "a runtime before NRI v0.12") +
             ", yet " + nri;
    }
    return "";
  });
  INFO(node.version());
  CHECK(why == "");
  WARN("the agent's " << nriLine(*port));
  CHECK(agent.terminate(10s) == 0);

  // 7. The NRI socket gone (the agent pointed at one nobody serves) and the kubelet
  //    polled once a minute: a new BE pod's own cgroup still gets its batch values
  //    within a second of appearing, by the wake-up on the kubepods tree alone.
  AgentProcess alone(
      bin,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + tree.linkDir(), "--proc-root-dir=/proc/",
       "--var-run-root-dir=" + tmp.path("containerd"),
       "--runtime-hooks-nri-socket-path=nri/gone.sock", "--kubelet-insecure-tls=true",
       "--kubelet-addr=127.0.0.1", "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
       "--kubelet-sync-interval=60s", "--runtime-hooks-reconcile-interval=60s",
       "--collect-res-used-interval=500ms", "--cpu-suppress-interval-seconds=0",
       "--audit-log-dir=" + tmp.path("audit-alone")},
      tmp.path("agent-alone.log"), kNode);
  const auto alonePort = alone.waitForServingPort(kLimit);
  if (!alonePort) fail("the agent without NRI did not start serving", &alone);
  why = waitFor(kLimit, [&]() -> std::string {
    auto c = koord::test::httpGet(*alonePort, "/config");
    if (!c) return "no /config";
    const json j = json::parse(c->body);
    if (j["podCgroupWatch"]["mode"] != "inotify") return "watch " + j["podCgroupWatch"].dump();
    // The QoS loop has run (it waits for the kubelet's list and two pod rounds).
    return j["strategyRuns"].empty() ? "no QoS round yet" : "";
  });
  if (!why.empty()) fail("the agent without NRI never settled: " + why, &alone);
  CHECK(readyz(*alonePort).find("nri: connected") == std::string::npos);
  const std::string wokenUid = "0d4e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f6a";
  list({bePod("be-woken", wokenUid, "")});  // listed first: the kubelet admits, then makes it
  const std::string wokenDir = "kubepods/besteffort/pod" + wokenUid;
  tree.mkdirs(wokenDir);
  std::ofstream(tree.kernelPath("cpu", wokenDir, "cpu.shares")) << "2";
  const auto made = std::chrono::steady_clock::now();
  const std::string wokenLogs = tmp.path("pods/default_be-woken_" + wokenUid);
  std::filesystem::create_directories(wokenLogs);
  const std::string wokenSandbox = cri2.runPodSandbox(koord::test::kubeletSandbox(
      "be-woken", "default", wokenUid, "/" + tree.prefix() + "/" + wokenDir, wokenLogs, kBeLabels,
      kBeAnnotations));
  std::string woken;
  why = waitFor(
      kLimit,
      [&]() -> std::string {
        woken = podCgroupValues(tree, wokenDir);
        return woken == kBatchValues ? "" : woken;
      },
      5ms);
  const double wokenMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - made).count();
  if (!why.empty()) fail("without NRI the BE pod's cgroup holds " + woken, &alone);
  CHECK(wokenMs < 1000);
  WARN("figure: without NRI, the pod's batch values in its cgroup " << wokenMs
                                                                    << " ms after it appeared");
  cri2.stopPodSandbox(wokenSandbox);
  cri2.removePodSandbox(wokenSandbox);
  CHECK(alone.terminate(10s) == 0);
}

}  // namespace test_e2e_nri_containerd
