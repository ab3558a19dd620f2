// The node scenes of the v2-node rig (tests/rig/node/, meson test `v2-node`): run inside
// the guest boot-node.sh boots, a cgroup v2 node with systemd as PID 1, Debian's
// containerd 2.x (NRI on) and runc. Everything here is real but the kubelet and the API
// server (stand-ins in this process, speaking their wire format): pods and containers
// are made through CRI as the kubelet makes them (tests/support/cri_client.h), so their
// cgroups are runc's: inside slices systemd owns (the systemd cgroup driver), then, in
// a second scene on the same boot, in the tree the kubelet's cgroupfs driver makes.
//
// One agent a scene, in the order a node lives it (each boot is ~20 s of TCG, so the
// steps share it; each step's failure message says what it saw):
//   1. the kubelet's QoS tree (systemd: slices, as its driver asks PID 1; cgroupfs:
//      directories), and a BE pod made before the agent runs: the kubelet's values;
//   2. the agent registers with containerd's NRI; a BE pod with batch resources then
//      starts with the agent's values (the container prints its own cgroup files), and
//      one the kubelet does not list has its pod cgroup's values by StartContainer;
//   3. an LS pod: CPU burst on cpu.max.burst (5.14+; the degraded form before), memory
//      QoS (memory.min/low/high), usage and PSI series; the reconciler brings the first
//      BE pod to the batch values; suppress writes the besteffort QoS cgroup's cpu.max;
//   4. (systemd) systemd rewrites the slices (daemon-reload; set-property as the
//      kubelet's QoS manager does): whatever it reset is repaired, the time printed;
//   5. the node's memory over a NodeSLO threshold: BE pods evicted through the API,
//      never the LS pod;
//   6. the agent stopped, `koordlet restore`: the knobs back to the kubelet's values.
// Real time: every wait is a poll with a deadline sized for TCG on a loaded host.
#include <catch2/catch.hpp>

#include <sys/statfs.h>
#include <sys/utsname.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/rig/node/node_scene.h"
#include "tests/support/agent_process.h"
#include "tests/support/batch_pod.h"
#include "tests/support/cri_client.h"
#include "tests/support/http_get.h"
#include "tests/support/kernel_release.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver.h"
#include "tests/support/test_kubelet.h"

namespace test_rig_v2_node {

namespace {

using koord::test::AgentProcess;
using koord::test::CriClient;
using koord::test::readTextFile;
using koord::test::TempTree;
using koord::test::TestApiServer;
using koord::test::TestKubelet;
using koord::test::waitFor;
using namespace koord::test::node;  // node_scene.h: the guest's names, sh, knob, the NodeSLO

// The kubelet's two cgroup drivers, as the runtime is told of them: systemd (runc asks
// PID 1 for slices and scopes) or cgroupfs (runc makes the directories itself, under a
// tree the kubelet made outside every systemd unit). One containerd serves both, by
// runtime handler (containerd-config.toml).
struct Driver {
  std::string name;     // "systemd" or "cgroupfs"
  std::string handler;  // containerd's runtime handler; "" its default
  bool systemd() const { return name == "systemd"; }
  std::string kubepods() const { return kCgroup + (systemd() ? "kubepods.slice" : "kubepods"); }
  std::string qosDir(const std::string& qos) const {
    return kubepods() + (systemd() ? "/kubepods-" + qos + ".slice" : "/" + qos);
  }
  // What the kubelet passes as the sandbox's cgroup parent.
  std::string cgroupParent(const std::string& qos, const std::string& uid) const {
    return systemd() ? podSlice(qos, uid) : "/kubepods/" + qos + "/pod" + uid;
  }
  std::string podDir(const std::string& qos, const std::string& uid) const {
    return qosDir(qos) + "/" + (systemd() ? podSlice(qos, uid) : "pod" + uid);
  }
  std::string containerDir(const std::string& pod, const std::string& id) const {
    return pod + (systemd() ? "/cri-containerd-" + id + ".scope" : "/" + id);
  }
};
const Driver kSystemdDriver{"systemd", ""};
const Driver kCgroupfsDriver{"cgroupfs", "runc-cgroupfs"};

using koord::test::kBeLabels;
const auto& kBeAnnotations = koord::test::kBeBatchAnnotations;  // tests/support/batch_pod.h
const std::map<std::string, std::string> kLsLabels = {{"koordinator.sh/qosClass", "LS"}};

struct CriPod {
  std::string name, uid, qos, sandboxId, containerId, logPath;
  const Driver* driver = nullptr;
  runtime::v1::PodSandboxConfig sandbox;
  std::string dir() const { return driver->podDir(qos, uid); }
  std::string containerDir() const { return driver->containerDir(dir(), containerId); }
};

// The pod as the kubelet lists it on /pods/.
json podJson(const CriPod& p) {
  json status = {{"name", "stress"}, {"ready", true}, {"restartCount", 0}};
  if (!p.containerId.empty()) status["containerID"] = "containerd://" + p.containerId;
  json meta = {{"name", p.name}, {"namespace", "default"}, {"uid", p.uid}};
  json container = {{"name", "stress"}, {"image", kImage}};
  json spec;
  std::string kubeQos;
  if (p.qos == "besteffort") {
    meta["labels"] = kBeLabels;
    meta["annotations"] = kBeAnnotations;
    const json& batch = koord::test::kBatchResources;
    container["resources"] = {{"limits", batch}, {"requests", batch}};
    spec = {{"priorityClassName", "koord-batch"}, {"priority", 5000}};
    kubeQos = "BestEffort";
  } else {
    meta["labels"] = kLsLabels;
    container["resources"] = {{"requests", {{"cpu", "1"}, {"memory", "64Mi"}}},
                              {"limits", {{"cpu", "2"}, {"memory", "128Mi"}}}};
    spec = {{"priorityClassName", "koord-prod"}, {"priority", 9000}};
    kubeQos = "Burstable";
  }
  spec["containers"] = json::array({container});
  spec["nodeName"] = kNode;
  return {
      {"metadata", meta},
      {"spec", spec},
      {"status", {{"phase", "Running"}, {"qosClass", kubeQos}, {"containerStatuses", {status}}}}};
}

// The sandbox and one container, as the kubelet with `driver` asks for them.
CriPod runPod(CriClient& cri, const Driver& driver, const TempTree& tmp, const std::string& name,
              const std::string& uid, const std::string& qos,
              const std::map<std::string, std::string>& extraAnnotations = {},
              const std::vector<std::string>& command = kShowCgroup) {
  CriPod p;
  p.driver = &driver;
  p.name = name;
  p.uid = uid;
  p.qos = qos;
  const std::string logDir = tmp.path("pods/default_" + name + "_" + uid);
  std::filesystem::create_directories(logDir);
  const bool be = qos == "besteffort";
  auto annotations = be ? kBeAnnotations : std::map<std::string, std::string>{};
  annotations.insert(extraAnnotations.begin(), extraAnnotations.end());
  p.sandbox = koord::test::kubeletSandbox(name, "default", uid, driver.cgroupParent(qos, uid),
                                          logDir, be ? kBeLabels : kLsLabels, annotations);
  p.sandboxId = cri.runPodSandbox(p.sandbox, driver.handler);
  runtime::v1::LinuxContainerResources r;
  r.set_cpu_period(100000);
  if (be) {  // BestEffort: shares 2, no quota, no limit
    r.set_cpu_shares(2);
    r.set_oom_score_adj(1000);
  } else {  // requests cpu 1, memory 64Mi; limits cpu 2, memory 128Mi
    r.set_cpu_shares(1024);
    r.set_cpu_quota(200000);
    r.set_memory_limit_in_bytes(128 << 20);
    r.set_oom_score_adj(968);
  }
  p.containerId = cri.createContainer(
      p.sandboxId, koord::test::kubeletContainer("stress", kImage, command, p.sandbox, r),
      p.sandbox);
  cri.startContainer(p.containerId);
  p.logPath = logDir + "/stress/0.log";
  return p;
}

// The line the container printed at its start, from its CRI log ("<time> stdout F <line>").
std::string waitPrinted(const CriPod& p) {
  std::string got;
  waitFor(kLimit, [&]() -> std::string {
    std::istringstream in(readTextFile(p.logPath));
    for (std::string line; std::getline(in, line);) {
      const auto at = line.find(" stdout F ");
      if (at != std::string::npos) got = line.substr(at + 10);
    }
    return got.empty() ? "nothing printed yet" : "";
  });
  return got;
}

// 4. systemd rewrites what it owns. daemon-reload re-applies every unit's cgroup
//    properties; set-property (the kubelet's QoS manager updating a slice) re-applies
//    one unit's. Whatever they reset of the agent's values comes back.
void systemdRewrites(const Driver& d, const CriPod& control,
                     const std::function<void(const std::string&)>& fail) {
  const std::string beSlice = d.qosDir("besteffort");
  const std::string suppressed = knob(beSlice, "cpu.max");
  const std::string controlMax = knob(control.containerDir(), "cpu.max");
  for (const std::string& rewrite :
       {std::string("systemctl daemon-reload"),
        std::string("systemctl set-property --runtime kubepods-besteffort.slice CPUWeight=1"),
        "systemctl set-property --runtime " + podSlice("besteffort", control.uid) +
            " CPUWeight=1"}) {
    const auto t0 = Clock::now();
    Command c = sh(rewrite);
    INFO(rewrite << ": " << c.output);
    REQUIRE(c.rc == 0);
    const double took = msSince(t0);
    // What systemd left right after the call (it writes before it answers).
    const std::string slice = knob(beSlice, "cpu.max");
    const std::string container = knob(control.containerDir(), "cpu.max");
    std::ostringstream seen;
    seen << rewrite << " (" << took << " ms): besteffort cpu.max " << suppressed << " -> " << slice
         << ", be-control cpu.max " << controlMax << " -> " << container;
    auto repaired = [&](const std::string& dir, const std::string& want) {
      const auto start = Clock::now();
      const std::string w = waitFor(
          kLimit,
          [&]() -> std::string {
            const std::string v = knob(dir, "cpu.max");
            return v.rfind("max", 0) != 0 && (want.empty() || v == want) ? "" : v;
          },
          10ms);
      return std::make_pair(w, msSince(start) + took);
    };
    if (slice.rfind("max", 0) == 0) {
      auto [w, ms] = repaired(beSlice, "");
      if (!w.empty()) fail(seen.str() + "; the besteffort quota not repaired: " + w);
      seen << "; besteffort repaired " << ms << " ms after the call began";
    }
    if (container != controlMax) {
      auto [w, ms] = repaired(control.containerDir(), controlMax);
      if (!w.empty()) fail(seen.str() + "; be-control's quota not repaired: " + w);
      seen << "; be-control repaired " << ms << " ms after";
    }
    WARN("v2-node systemd: " << seen.str());
  }
}

// The kubelet's QoS tree. systemd driver: slices PID 1 owns (systemctl, as the kubelet
// asks over D-Bus), besteffort at CPUWeight 1. cgroupfs driver: directories under the
// root with the controllers enabled top-down (as the kubelet's libcontainer manager
// does), besteffort's cpu.weight 1; a node has one driver, so the systemd tree of an
// earlier scene is stopped first, or the agent would find kubepods.slice and take it.
void kubeletQosTree(const Driver& d) {
  if (d.systemd()) {
    for (const char* s :
         {"kubepods.slice", "kubepods-burstable.slice", "kubepods-besteffort.slice"}) {
      Command c = sh(std::string("systemctl start ") + s);
      INFO("systemctl start " << s << ": " << c.output);
      REQUIRE(c.rc == 0);
    }
    Command prop = sh("systemctl set-property --runtime kubepods-besteffort.slice CPUWeight=1");
    INFO(prop.output);
    REQUIRE(prop.rc == 0);
    return;
  }
  sh("systemctl stop kubepods.slice");
  const std::string gone = waitFor(kLimit, [] {
    return std::filesystem::exists(kCgroup + "kubepods.slice") ? "kubepods.slice still there" : "";
  });
  REQUIRE(gone.empty());
  const std::string controllers = "+cpu +cpuset +io +memory +pids";
  Command c = sh("set -e; cd " + kCgroup + "; echo '" + controllers +
                 "' > cgroup.subtree_control; mkdir -p kubepods; echo '" + controllers +
                 "' > kubepods/cgroup.subtree_control; for q in besteffort burstable; do mkdir -p "
                 "kubepods/$q; echo '" +
                 controllers + "' > kubepods/$q/cgroup.subtree_control; done; echo 1 > " +
                 "kubepods/besteffort/cpu.weight");
  INFO("the kubelet's cgroupfs tree: " << c.output);
  REQUIRE(c.rc == 0);
}

// One agent, one scene on `d`'s cgroups (the file's header lists the steps).
void nodeScene(const Driver& d) {
  struct statfs fs {};
  REQUIRE(::statfs(kCgroup.c_str(), &fs) == 0);
  REQUIRE(fs.f_type == 0x63677270);  // CGROUP2_SUPER_MAGIC: the unified hierarchy only
  REQUIRE(std::filesystem::read_symlink("/proc/1/exe") == "/usr/lib/systemd/systemd");
  const std::string bin = env("KOORDLET_BIN");
  REQUIRE(!bin.empty());
  const bool burst = koord::test::kernelHasCpuBurst();
  utsname u{};
  ::uname(&u);

  CriClient cri("/run/containerd/containerd.sock", 120s);
  const auto version = cri.version();
  WARN("v2-node " << d.name << " driver: kernel " << u.release << ", runtime "
                  << version.runtime_name() << " " << version.runtime_version() << " (CRI "
                  << version.runtime_api_version() << "), "
                  << trimmed(sh("runc --version | head -n 1").output) << ", "
                  << trimmed(sh("systemctl --version | head -n 1").output));
  TempTree tmp;
  auto journal = [] { return sh("journalctl -b --no-pager -n 40 -u containerd").output; };

  // 1. The kubelet's QoS tree, as its driver makes it, besteffort at weight 1 (shares 2).
  kubeletQosTree(d);
  const std::string beSlice = d.qosDir("besteffort");
  CHECK(knob(beSlice, "cpu.weight") == "1");

  const std::string controlUid = "6f0c9d1e-2b3a-4c5d-8e7f-90a1b2c3d4e5";
  const std::string beUid = "7a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d";
  const std::string lsUid = "8b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e";
  CriPod control;
  try {
    control = runPod(cri, d, tmp, "be-control", controlUid, "besteffort");
  } catch (const std::exception& e) {
    FAIL(e.what() << "\n" << journal());
  }
  CHECK(waitPrinted(control) == kKubeletBeValues);
  REQUIRE(std::filesystem::is_directory(control.containerDir()));

  // 2. The stand-ins and the agent.
  TestKubelet kubelet;
  CriPod be, ls;
  auto list = [&] {
    json items = json::array();
    for (const CriPod* p : {&control, &be, &ls}) {
      if (!p->uid.empty()) items.push_back(podJson(*p));
    }
    kubelet.setBody(json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}}.dump());
  };
  be.name = "be-demo";  // listed before its container exists, as the kubelet lists it
  be.uid = beUid;
  be.qos = "besteffort";
  be.driver = &d;
  list();
  TestApiServer api;
  api.put("nodes", nodeObject());
  api.put("nodeslos", nodeSlo(kSuppressOnly));
  const std::vector<std::string> flags = agentFlags(tmp, kubelet.port(), api.url());
  auto agent = std::make_unique<AgentProcess>(bin, flags, tmp.path("agent.log"), kNode);
  auto fail = [&](const std::string& what) {
    FAIL(what << "\n--- agent log (tail) ---\n"
              <<
         [&] {
           std::string l = agent ? agent->log() : "";
           return l.substr(l.size() > 8000 ? l.size() - 8000 : 0);
         }() << "\n--- containerd ---\n"
              << journal());
  };
  const auto port = agent->waitForServingPort(kLimit);
  if (!port) fail("the agent did not start serving");
  std::string why = waitFor(kLimit, [&]() -> std::string {
    const std::string r = body(*port, "/readyz");
    return r.find("nri: connected to containerd") != std::string::npos ? "" : r;
  });
  if (!why.empty()) fail("the agent never registered with containerd's NRI: " + why);
  const std::string ready = body(*port, "/readyz");
  if (ready.find("cgroup layout: v2, " + d.name + ",") == std::string::npos) {
    fail("the agent took another layout than v2, " + d.name + ": " + ready);
  }

  // A BE pod made now starts with the agent's values: only the NRI adjustment can have
  // put them there (the kubelet stand-in lists no container for it yet).
  try {
    be = runPod(cri, d, tmp, "be-demo", beUid, "besteffort");
  } catch (const std::exception& e) {
    fail(e.what());
  }
  const std::string printed = waitPrinted(be);
  if (printed != kBatchValues) fail("the BE container started with '" + printed + "'");

  // 2b. A pod's own cgroup holds its batch values (weight, 64 MiB) when its first
  //     container's StartContainer returns: a BE pod the kubelet stand-in does not list,
  //     so only the agent's answer to the sandbox's NRI event can have put them there.
  CriPod sandboxPod;
  try {
    // Its container prints its own oom_score_adj: OOMScoreAdj's annotation through the
    // adjustment, which containerd 2.x (NRI v0.8) applies (the kubelet asked 1000).
    sandboxPod = runPod(
        cri, d, tmp, "be-sandbox", "9c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f", "besteffort",
        {{"koordinator.sh/oom-score-adj", "700"}},
        {"/bin/sh", "-c", "echo oom=$(cat /proc/self/oom_score_adj); exec sleep 2147483647"});
  } catch (const std::exception& e) {
    fail(e.what());
  }
  const std::string podValues = "weight=" + knob(sandboxPod.dir(), "cpu.weight") +
                                " max=" + knob(sandboxPod.dir(), "cpu.max") +
                                " memory=" + knob(sandboxPod.dir(), "memory.max");
  INFO("the unlisted BE pod's own cgroup at StartContainer's return: " << podValues);
  CHECK(knob(sandboxPod.dir(), "memory.max") == "67108864");
  CHECK(knob(sandboxPod.dir(), "cpu.weight") != "1");
  WARN("v2-node " << d.name
                  << ": a BE pod's own cgroup at its first StartContainer's return: " << podValues);
  CHECK(waitPrinted(sandboxPod) == "oom=700");

  // 3. The LS pod; the kubelet now lists every container.
  try {
    ls = runPod(cri, d, tmp, "ls-demo", lsUid, "burstable");
  } catch (const std::exception& e) {
    fail(e.what());
  }
  list();
  for (const CriPod* p : {&control, &be, &ls}) api.put("pods", podJson(*p));  // evictions' targets
  // The reconciler: the BE pod made before the agent gets the batch values.
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string got = "weight=" + knob(control.containerDir(), "cpu.weight") +
                            " max=" + knob(control.containerDir(), "cpu.max") +
                            " memory=" + knob(control.containerDir(), "memory.max");
    return got == kBatchValues ? "" : got;
  });
  INFO("the reconciler left the first BE container at " << why);
  CHECK(why.empty());  // the scene goes on: the later steps do not depend on it
  // The NRI values and the reconciler's agree with runc's: the container keeps them.
  CHECK(knob(be.containerDir(), "cpu.weight") == kBatchWeight);

  // CPU burst: 50 % of the LS container's 200 ms quota.
  if (burst) {
    why = waitFor(kLimit, [&]() -> std::string {
      const std::string b = knob(ls.containerDir(), "cpu.max.burst");
      return b == "100000"
                 ? ""
                 : "cpu.max.burst " + b + ", cpu.max " + knob(ls.containerDir(), "cpu.max");
    });
    if (!why.empty()) fail("burst: " + why);
  } else {  // before 5.14: no knob, and the agent says so rather than failing rounds
    CHECK(knob(ls.containerDir(), "cpu.max.burst") == "<absent>");
  }
  // Memory QoS of lsClass: min 50 % and low 75 % of the 64 MiB request, high halfway
  // from the request to the 128 MiB limit.
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string got = knob(ls.containerDir(), "memory.min") + " " +
                            knob(ls.containerDir(), "memory.low") + " " +
                            knob(ls.containerDir(), "memory.high") + " pod " +
                            knob(ls.dir(), "memory.min") + " " + knob(ls.dir(), "memory.low");
    return got == "33554432 50331648 100663296 pod 33554432 50331648" ? "" : got;
  });
  if (!why.empty()) fail("memory QoS: " + why);
  CHECK(knob(ls.containerDir(), "memory.max") == "134217728");  // the kubelet's, untouched
  // Suppress (cfsQuota): the besteffort slice gets a quota.
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string q = knob(beSlice, "cpu.max");
    return q.rfind("max", 0) != 0 && q.find(" 100000") != std::string::npos ? "" : q;
  });
  if (!why.empty()) fail("suppress left the besteffort slice at cpu.max " + why);
  // Usage and PSI of runc's cgroups, by pod.
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string m = body(*port, "/metrics");
    for (const char* pod : {"ls-demo", "be-demo", "be-control"}) {
      const std::string label = std::string("pod_name=\"") + pod + "\"";
      if (!sample(m, "koordlet_pod_memory_usage_bytes", {label})) {
        return std::string("no memory usage of ") + pod;
      }
      if (!sample(m, "koordlet_container_cpu_usage_cores", {label})) {
        return std::string("no container cpu usage of ") + pod;
      }
      if (!sample(m, "koordlet_pod_psi", {label})) {
        return std::string("no PSI of ") + pod;
      }
    }
    return "";
  });
  if (!why.empty()) fail("usage: " + why);

  if (d.systemd()) systemdRewrites(d, control, fail);

  // 5. Memory over the eviction threshold: the node's use now, as the agent reads it
  //    (MemTotal - MemAvailable of the Node's capacity), and a threshold under it.
  const int64_t usedPercent =
      (memInfoKiB("MemTotal") - memInfoKiB("MemAvailable")) * 100 / memInfoKiB("MemTotal");
  REQUIRE(usedPercent >= 4);
  json evict = kSuppressOnly;
  evict["memoryEvictThresholdPercent"] = usedPercent - 2;
  evict["memoryEvictLowerPercent"] = usedPercent - 3;
  api.put("nodeslos", nodeSlo(evict));
  std::vector<std::string> evicted;
  why = waitFor(kLimit, [&]() -> std::string {
    evicted.clear();
    for (const auto& r : api.requests()) {
      if (r.resource == "pods/eviction") evicted.push_back(r.target);
    }
    return evicted.empty() ? "no eviction (node at " + std::to_string(usedPercent) + " %)" : "";
  });
  if (!why.empty()) fail(why);
  for (const auto& target : evicted) {
    INFO(target);
    CHECK(target.find("/pods/ls-demo/") == std::string::npos);
    CHECK((target.find("/pods/be-demo/") != std::string::npos ||
           target.find("/pods/be-control/") != std::string::npos));
  }
  api.put("nodeslos", nodeSlo(kSuppressOnly));

  // 6. The agent stopped, restore with its flags: the kubelet's values back.
  CHECK(agent->terminate(30s) == 0);
  agent.reset();
  std::vector<std::string> restore = {bin, "restore"};
  restore.insert(restore.end(), flags.begin(), flags.end());
  std::string line;
  for (const auto& a : restore) line += "'" + a + "' ";
  Command r = sh(line);
  INFO("restore: " << r.output);
  CHECK(r.rc == 0);
  CHECK(knob(beSlice, "cpu.max") == "max 100000");
  CHECK(knob(ls.containerDir(), "memory.min") == "0");
  CHECK(knob(ls.containerDir(), "memory.high") == "max");
  if (burst) CHECK(knob(ls.containerDir(), "cpu.max.burst") == "0");
  CHECK(knob(control.containerDir(), "cpu.weight") == "1");
  CHECK(knob(control.containerDir(), "memory.max") == "max");

  for (const CriPod* p : {&control, &be, &ls, &sandboxPod}) {
    cri.stopContainer(p->containerId, 0);
    cri.removeContainer(p->containerId);
    cri.stopPodSandbox(p->sandboxId);
    cri.removePodSandbox(p->sandboxId);
  }
  // runc removes the containers' cgroups; the pods' are the kubelet's: systemd's to remove
  // with the driver of that name, the kubelet's own (rmdir) with cgroupfs.
  CHECK(!std::filesystem::exists(control.containerDir()));
  if (!d.systemd()) {
    for (const CriPod* p : {&control, &be, &ls, &sandboxPod}) std::filesystem::remove(p->dir());
  }
}

}  // namespace

TEST_CASE(
    "on a cgroup v2 node with systemd and containerd 2.x the agent's NRI values, QoS knobs, "
    "evictions and restore land in runc's cgroups, and survive systemd rewriting its slices",
    "[v2node][systemd]") {
  nodeScene(kSystemdDriver);
}

TEST_CASE(
    "on the same node with the kubelet's cgroupfs driver the agent finds the kubepods tree "
    "outside systemd's units and its NRI values, QoS knobs, evictions and restore land there",
    "[v2node][cgroupfs]") {
  nodeScene(kCgroupfsDriver);
}

}  // namespace test_rig_v2_node
