// The v2-node rig's scene with the real kubelet (1.35+, which refuses cgroup v1 by
// default) in place of the stand-in: an operator's check, not CI's (CI has no kubelet
// to run; its v2-node runs the stand-in scenes of test_v2_node.cpp). Hidden ([.kubelet]):
// it runs when v2_node.sh is given a kubelet binary (KOORDLET_NODE_KUBELET, copied into
// the guest; tests/rig/node/NOTES.md says how one was built and what it showed).
//
// The kubelet runs with static pods from a manifest dir, registered with a real API server
// on the host (KOORDLET_NODE_APISERVER; NOTES.md says how that one is set up), with the
// systemd cgroup driver over the guest's containerd 2.x; the agent runs with Koordinator's
// DaemonSet arguments and syncs over the kubelet's secure port (10250, webhook-authenticated
// token). In the order a node lives it:
//   1. the kubelet starts on the booted node: its own QoS slices (kubepods.slice ...);
//   2. the agent registers with NRI; the kubelet then makes a BE pod with batch resources
//      (its container prints its cgroup at start: the agent's NRI values; its own slice
//      holds the sandbox's) and an LS pod;
//   3. the agent finds both in the kubelet's own /pods and cgroup names: usage, PSI,
//      memory QoS and burst on the LS container, suppress on the kubelet's besteffort slice;
//   4. the kubelet's periodic QoS update (every minute, through systemd) watched for 75 s:
//      what it resets of the agent's values, and how fast they come back (printed);
//   5. the manifests removed: the kubelet removes the pods, the agent forgets them.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/rig/node/node_scene.h"
#include "tests/support/agent_process.h"
#include "tests/support/batch_pod.h"
#include "tests/support/kernel_release.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"

namespace test_rig_v2_node_kubelet {

namespace {

using koord::test::AgentProcess;
using koord::test::readTextFile;
using koord::test::TempTree;
using koord::test::waitFor;
using namespace koord::test::node;  // node_scene.h

constexpr uint16_t kReadOnlyPort = 10255;
const std::string kManifests = "/etc/kubernetes/manifests";

// Systemd driver, the agent's token checked by webhook (TokenReview, SubjectAccessReview),
// the read-only port open (the scene reads its pods there), fast file checks; evictions and
// image GC out of the way of a 1-2 GiB guest.
const std::string kKubeletConfig = R"(apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
staticPodPath: /etc/kubernetes/manifests
fileCheckFrequency: 1s
syncFrequency: 10s
address: 0.0.0.0
readOnlyPort: 10255
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
authorization: {mode: Webhook}
failSwapOn: false
resolvConf: ""
hairpinMode: none
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
)";

// The container's command in the manifest: the kubelet expands $(NAME) in commands, so
// the shell's $( is written $$(.
std::string manifestCommand() {
  std::string c = kShowCgroup[2];
  for (size_t at = c.find("$("); at != std::string::npos; at = c.find("$(", at + 3)) {
    c.insert(at, "$");
  }
  return c;
}

// A static pod in the kubelet's manifest format, the image the node imported. Its
// PriorityClass by name and its value: an API server refuses the mirror pod of a static
// pod whose integer priority is not its class's ("must not be provided in pod spec").
std::string manifest(const std::string& name, const std::string& labels,
                     const std::string& annotations, const std::string& priorityClass, int priority,
                     const std::string& resources) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\n  namespace: default\n  labels: " + labels + "\n  annotations: " + annotations +
         "\nspec:\n  hostNetwork: true\n  priorityClassName: " + priorityClass +
         "\n  priority: " + std::to_string(priority) +
         "\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: stress\n    image: " +
         kImage + "\n    imagePullPolicy: Never\n    command: [\"/bin/sh\", \"-c\", \"" +
         manifestCommand() + "\"]\n    resources: " + resources + "\n";
}

// The pod the kubelet lists on /pods/ under `name`: its uid and its container's id.
struct Listed {
  std::string uid, containerId;
};
std::optional<Listed> listed(const std::string& name) {
  const json pods = json::parse(body(kReadOnlyPort, "/pods/"), nullptr, false);
  if (!pods.is_object() || !pods.contains("items")) return std::nullopt;
  for (const auto& p : pods["items"]) {
    if (p["metadata"].value("name", "") != name) continue;
    Listed l{p["metadata"].value("uid", ""), ""};
    for (const auto& s : p["status"].value("containerStatuses", json::array())) {
      std::string id = s.value("containerID", "");
      if (id.rfind("containerd://", 0) == 0) l.containerId = id.substr(13);
    }
    return l;
  }
  return std::nullopt;
}

// The pod's slice as the kubelet's systemd driver names it (besteffort, burstable).
std::string podDir(const std::string& qos, const std::string& uid) {
  return kCgroup + "kubepods.slice/kubepods-" + qos + ".slice/" + podSlice(qos, uid);
}

// The earlier scenes' trees: the cgroupfs one (directories) and the systemd one (slices
// the test started); the kubelet makes its own.
void clearEarlierTrees() {
  sh("systemctl stop kubepods.slice");
  for (const char* d : {"kubepods/besteffort", "kubepods/burstable", "kubepods"}) {
    std::filesystem::path p = kCgroup + d;
    if (std::filesystem::exists(p)) ::rmdir(p.c_str());
  }
}

}  // namespace

TEST_CASE(
    "with the real kubelet on a cgroup v2 systemd node the agent sets a BE pod's values at "
    "create, finds the kubelet's pods and cgroups, and holds its values against the "
    "kubelet's QoS updates",
    "[.kubelet]") {
  const std::string bin = env("KOORDLET_BIN");
  const std::string kubeletBin = env("KOORDLET_KUBELET");
  REQUIRE(!bin.empty());
  REQUIRE(!kubeletBin.empty());
  const bool burst = koord::test::kernelHasCpuBurst();
  TempTree tmp;
  clearEarlierTrees();

  // The API server on the host (KOORDLET_NODE_APISERVER, e.g. https://10.0.2.2:6443,
  // reached through QEMU's user network): the kubelet registers the Node there and checks
  // the agent's token with it; the host gives the Node its batch resources (as
  // koord-manager would) and the NodeSLO. Standalone, the kubelet would refuse the BE pod:
  // it admits extended resources only against its Node's allocatable.
  const std::string apiServer = env("KOORDLET_NODE_APISERVER");
  if (apiServer.empty()) {
    FAIL(
        "KOORDLET_NODE_APISERVER unset: a standalone kubelet refuses a BE pod's batch "
        "resources (UnexpectedAdmissionError); tests/rig/node/NOTES.md says how to run it");
  }
  // No udev in the guest: the NIC's driver loaded by hand (KOORDLET_NODE_MODULES).
  const Command net =
      sh("modprobe virtio_net && ip link set lo up && ip link set eth0 up && "
         "ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2");
  INFO(net.output);
  REQUIRE(net.rc == 0);
  // (a context named "n" would be YAML 1.1's false to the kubelet's loader)
  tmp.write("kubelet.kubeconfig",
            "apiVersion: v1\nkind: Config\ncurrent-context: kubelet\nclusters:\n- name: c\n"
            "  cluster: {server: '" +
                apiServer + "', certificate-authority: '" + env("KOORDLET_NODE_API_CA") +
                "'}\ncontexts:\n- name: kubelet\n  context: {cluster: c, user: u}\n"
                "users:\n- name: u\n  user: {token: '" +
                env("KOORDLET_NODE_KUBELET_TOKEN") + "'}\n");

  // 1. The kubelet, with no pod yet.
  std::filesystem::create_directories(kManifests);
  // The guest's / is the initramfs (rootfs), which the kubelet's cAdvisor finds no
  // filesystem info for ("failed to get rootfs info"): its root dir on a mount of its own.
  sh("mkdir -p /var/lib/kubelet && mount -t tmpfs -o size=256m kubelet /var/lib/kubelet");
  tmp.write("kubelet.yaml", kKubeletConfig);
  const std::string version = trimmed(sh(kubeletBin + " --version").output);
  Command started =
      sh(kubeletBin + " --config=" + tmp.path("kubelet.yaml") + " --hostname-override=" + kNode +
         " --kubeconfig=" + tmp.path("kubelet.kubeconfig") + " --v=2 >" + tmp.path("kubelet.log") +
         " 2>&1 & echo $!");
  REQUIRE(started.rc == 0);
  const std::string kubeletPid = trimmed(started.output);
  auto kubeletLog = [&] {
    // Without the lines it repeats every few seconds on this guest (no CNI, no disk).
    std::istringstream in(readTextFile(tmp.path("kubelet.log")));
    std::string l;
    for (std::string line; std::getline(in, line);) {
      bool noise = false;
      for (const char* n : {"FLAG:", "cri_stats_provider", "eviction_manager", "node status fields",
                            "register mirror pod because", "nodeinfomanager", "Error getting node",
                            "Skipping pod synchronization", "Recording event message"}) {
        noise = noise || line.find(n) != std::string::npos;
      }
      if (!noise) l += line + "\n";
    }
    return l.substr(l.size() > 20000 ? l.size() - 20000 : 0);
  };
  std::string why = waitFor(kLimit, [&]() -> std::string {
    if (!std::filesystem::exists(kCgroup + "kubepods.slice/kubepods-besteffort.slice")) {
      return "no kubepods-besteffort.slice";
    }
    const json pods = json::parse(body(kReadOnlyPort, "/pods/"), nullptr, false);
    return pods.is_object() && pods.contains("items") ? "" : "no pod list on the read-only port";
  });
  INFO("kubelet " << version << " log:\n" << kubeletLog());
  REQUIRE(why.empty());
  const std::string beSlice = kCgroup + "kubepods.slice/kubepods-besteffort.slice";
  WARN("v2-node kubelet: " << version << " up; its besteffort slice cpu.weight "
                           << knob(beSlice, "cpu.weight") << ", cpu.max "
                           << knob(beSlice, "cpu.max"));

  // 2. The agent, then the pods.
  // Koordinator's DaemonSet (../shared/fixtures/koordinator/repo/koordlet-daemonset.yaml):
  // its arguments unchanged, its host paths where the pod mounts them, the service
  // account's token and CA where a pod has them.
  for (const auto& [at, from] : std::vector<std::pair<std::string, std::string>>{
           {"/host-cgroup", "/sys/fs/cgroup"},
           {"/host-sys", "/sys"},
           {"/host-sys-fs", "/sys/fs"},
           {"/host-var-run", "/var/run"},
           {"/host-run", "/run"},
           {"/host-var-run-koordlet", "/var/run/koordlet"}}) {
    REQUIRE(sh("mkdir -p " + at + " " + from + " && mount --rbind " + from + " " + at).rc == 0);
  }
  const std::string sa = "/var/run/secrets/kubernetes.io/serviceaccount";
  REQUIRE(sh("mkdir -p " + sa + " && cp " + env("KOORDLET_NODE_API_CA") + " " + sa +
             "/ca.crt && printf %s '" + env("KOORDLET_NODE_AGENT_TOKEN") + "' >" + sa + "/token")
              .rc == 0);
  const std::string url = apiServer.substr(apiServer.find("://") + 3);
  ::setenv("KUBERNETES_SERVICE_HOST", url.substr(0, url.find(':')).c_str(), 1);
  ::setenv("KUBERNETES_SERVICE_PORT", url.substr(url.find(':') + 1).c_str(), 1);
  // (the same list tests/agent/test_options.cpp finds in that fixture)
  const std::vector<std::string> flags = {
      "-cgroup-root-dir=/host-cgroup/",
      "-feature-gates=AllAlpha=true,AllBeta=true",
      "-runtime-hooks-network=unix",
      "-runtime-hooks-addr=/host-var-run-koordlet/koordlet.sock",
      "-runtime-hooks-host-endpoint=/var/run/koordlet//koordlet.sock",
      "--logtostderr=true",
      "--v=4"};
  auto agent = std::make_unique<AgentProcess>(bin, flags, tmp.path("agent.log"), kNode);
  auto fail = [&](const std::string& what) {
    std::string l = agent ? agent->log() : "";
    FAIL(what << "\n--- agent log (tail) ---\n"
              << l.substr(l.size() > 6000 ? l.size() - 6000 : 0) << "\n--- kubelet (tail) ---\n"
              << kubeletLog());
  };
  const auto port = agent->waitForServingPort(kLimit);
  if (!port) fail("the agent did not start serving");
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string r = body(*port, "/readyz");
    return r.find("nri: connected to containerd") != std::string::npos &&
                   r.find("cgroup layout: v2, systemd,") != std::string::npos
               ? ""
               : r;
  });
  if (!why.empty()) fail("the agent is not on NRI with the v2/systemd layout: " + why);

  std::string beAnnotations = "{";
  for (const auto& [k, v] : koord::test::kBeBatchAnnotations) {
    beAnnotations += "\"" + k + "\": '" + v + "'";
  }
  beAnnotations += "}";
  const std::string batch = koord::test::kBatchResources.dump();
  tmp.write("be.yaml",
            manifest("be-static", "{koordinator.sh/qosClass: BE}", beAnnotations, "koord-batch",
                     5000, "{requests: " + batch + ", limits: " + batch + "}"));
  tmp.write("ls.yaml",
            manifest("ls-static", "{koordinator.sh/qosClass: LS}", "{}", "koord-prod", 9000,
                     "{requests: {cpu: '1', memory: 64Mi}, limits: {cpu: '2', memory: 128Mi}}"));
  for (const char* f : {"be.yaml", "ls.yaml"}) {
    std::filesystem::copy_file(tmp.path(f), kManifests + "/" + f,
                               std::filesystem::copy_options::overwrite_existing);
  }
  const std::string beName = "be-static-" + kNode, lsName = "ls-static-" + kNode;
  Listed be, ls;
  why = waitFor(kLimit, [&]() -> std::string {
    auto b = listed(beName), l = listed(lsName);
    if (!b || !l || b->containerId.empty() || l->containerId.empty()) {
      std::string seen = "pods not running yet:";
      const json pods = json::parse(body(kReadOnlyPort, "/pods/"), nullptr, false);
      for (const auto& p : pods.is_object() ? pods.value("items", json::array()) : json::array()) {
        seen += " " + p["metadata"].value("name", "") + " " +
                p.value("status", json::object()).dump().substr(0, 600);
      }
      return seen;
    }
    be = *b;
    ls = *l;
    return "";
  });
  if (!why.empty()) fail(why);
  const std::string beDir = podDir("besteffort", be.uid), lsDir = podDir("burstable", ls.uid);
  const std::string beContainer = beDir + "/cri-containerd-" + be.containerId + ".scope";
  const std::string lsContainer = lsDir + "/cri-containerd-" + ls.containerId + ".scope";
  // What the BE container printed at its start: only NRI can have set it then.
  std::string printed;
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string log = "/var/log/pods/default_" + beName + "_" + be.uid + "/stress/0.log";
    const std::string text = readTextFile(log);
    const auto at = text.find(" stdout F ");
    if (at == std::string::npos) return "nothing in " + log;
    printed = trimmed(text.substr(at + 10, text.find('\n', at) - at - 10));
    return "";
  });
  if (!why.empty()) fail(why);
  CHECK(printed == kBatchValues);
  WARN("v2-node kubelet: the BE container started with '" << printed << "' (the kubelet's "
                                                          << kKubeletBeValues << ")");
  // The BE pod's own slice, which the kubelet's systemd driver made (its weight 1, no
  // limit) before RunPodSandbox: the agent's sandbox values by the time the container
  // has printed (issue 46).
  const std::string podValues = "weight=" + knob(beDir, "cpu.weight") +
                                " max=" + knob(beDir, "cpu.max") +
                                " memory=" + knob(beDir, "memory.max");
  INFO("the BE pod's own slice: " << podValues);
  CHECK(knob(beDir, "memory.max") == "67108864");
  CHECK(knob(beDir, "cpu.weight") != "1");
  WARN("v2-node kubelet: the BE pod's own slice at its container's start: " << podValues);

  // 3. The kubelet's pods and cgroups, as the agent sees them.
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string m = body(*port, "/metrics");
    for (const std::string& pod : {beName, lsName}) {
      const std::string label = "pod_name=\"" + pod + "\"";
      if (!sample(m, "koordlet_pod_memory_usage_bytes", {label})) return "no memory of " + pod;
      if (!sample(m, "koordlet_container_cpu_usage_cores", {label})) return "no cpu of " + pod;
      if (!sample(m, "koordlet_pod_psi", {label})) return "no PSI of " + pod;
    }
    return "";
  });
  if (!why.empty()) fail("usage of the kubelet's pods: " + why);
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string got = knob(lsContainer, "memory.min") + " " +
                            knob(lsContainer, "memory.low") + " " +
                            knob(lsContainer, "memory.high") +
                            (burst ? " burst " + knob(lsContainer, "cpu.max.burst") : "");
    return got == std::string("33554432 50331648 100663296") + (burst ? " burst 100000" : "") ? ""
                                                                                              : got;
  });
  if (!why.empty()) fail("memory QoS / burst on the kubelet's LS container: " + why);
  why = waitFor(kLimit, [&]() -> std::string {
    const std::string q = knob(beSlice, "cpu.max");
    return q.rfind("max", 0) != 0 ? "" : q;
  });
  if (!why.empty()) fail("suppress left the kubelet's besteffort slice at " + why);
  CHECK(knob(beContainer, "cpu.weight") == kBatchWeight);

  // 4. 75 s of the kubelet's own updates (its QoS manager runs every minute and on pod
  //    syncs): every reset of the agent's values, and the time it stood.
  struct Watched {
    std::string dir, file;
    bool reset(const std::string& v) const {
      if (file == "memory.max") return v != "67108864";
      return file == "cpu.max" ? v.rfind("max", 0) == 0 : v != kBatchWeight;
    }
    int resets = 0;
    double longestMs = 0;
    bool down = false;
    Clock::time_point since{};
  };
  std::vector<Watched> watched = {
      {beSlice, "cpu.max"}, {beContainer, "cpu.weight"}, {beDir, "memory.max"}};
  const auto end = Clock::now() + 75s;
  while (Clock::now() < end) {
    for (auto& w : watched) {
      const bool r = w.reset(knob(w.dir, w.file));
      if (r && !w.down) {
        w.down = true;
        w.since = Clock::now();
        ++w.resets;
      } else if (!r && w.down) {
        w.down = false;
        w.longestMs = std::max(w.longestMs, msSince(w.since));
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  for (const auto& w : watched) {
    WARN("v2-node kubelet: 75 s of the kubelet's updates: "
         << w.dir << "/" << w.file << " reset " << w.resets << " times, longest " << w.longestMs
         << " ms" << (w.down ? ", still reset" : ""));
    CHECK(!w.down);
  }
  CHECK(knob(beSlice, "cpu.weight") == "1");  // the kubelet's own knob, left to it

  // 5. The pods gone: the kubelet removes them, the agent forgets them.
  for (const char* f : {"be.yaml", "ls.yaml"}) std::filesystem::remove(kManifests + "/" + f);
  why = waitFor(kLimit, [&]() -> std::string {
    if (listed(beName) || listed(lsName)) return "the kubelet still lists the pods";
    if (std::filesystem::exists(beDir) || std::filesystem::exists(lsDir)) {
      return "the pods' slices are still there";
    }
    const std::string m = body(*port, "/metrics");
    return m.find("pod_name=\"" + beName + "\"") != std::string::npos
               ? "the agent still exports " + beName
               : "";
  });
  if (!why.empty()) fail("after the manifests went: " + why);
  CHECK(agent->terminate(30s) == 0);
  agent.reset();
  sh("kill " + kubeletPid + "; sleep 2; systemctl stop kubepods.slice");
}

}  // namespace test_rig_v2_node_kubelet
