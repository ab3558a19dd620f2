// A BE pod's own limits from its first instant (issue 46): the time from the kubelet's
// RunPodSandbox call to the pod cgroup holding the agent's batch values (its shares or
// weight, its CFS quota, its 64 MiB memory limit) on a real containerd, p50/p99 over N
// pods, in up to three scenes, each a fresh agent at koordlet's defaults
// (--kubelet-sync-interval 10 s and the rest):
//   before     an agent built before issue 46 (NRI on; it wrote a pod's own values only
//              in the reconciler's round after the kubelet poll that listed the pod);
//   wake-up    this agent with NRI off: the inotify wake-up on the pod's cgroup alone;
//   hooks on   this agent with NRI on: the sandbox's values written at RunPodSandbox
//              (or by the wake-up, whichever comes first);
//   hooks on, inotify refused   the same with the wake-up polling every second (the
//              agent starts with fs.inotify.max_user_instances 0): the NRI write alone.
//
// Each pod as the kubelet makes it: listed by the kubelet stand-in (Pending, its batch
// resources in the spec and the extended-resource-spec annotation, as koord-manager's
// webhook leaves them), its pod cgroup made first (cgroupfs driver, with the kubelet's
// BestEffort shares 2; with the systemd driver runc's scope makes the slice), then
// RunPodSandbox. Pods start `gap` ms apart (or when the previous call returned); a
// watcher thread reads every waiting pod's files every 2 ms, so a pod's figure is its
// own, whatever the calls around it do. The sandboxes are removed after each scene.
//
//   build/bench/sandbox_latency <koordlet-before|-> <koordlet> <containerd-root> <runc>
//       <image.tar> [pods=50] [gap-ms=250]
// starts its own containerd on a private cgroup v1 tree (root), as nri_create_latency;
//   sandbox_latency <koordlet-before|-> <koordlet> system - - [pods] [gap-ms]
// uses the node's containerd, cgroup v2 and the systemd driver: the v2-node guest
// (bench/sandbox_latency_guest.sh).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_runtime.h"
#include "bench/inotify_refusal.h"
#include "tests/support/agent_process.h"
#include "tests/support/batch_pod.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/containerd_node.h"
#include "tests/support/cri_client.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace {

using koord::test::AgentProcess;
using koord::test::CgroupV1Tree;
using koord::test::ContainerdNode;
using koord::test::CriClient;
using koord::test::TempTree;
using koord::test::TestKubelet;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kLimit = 60s;
constexpr auto kPodLimit = 40s;  // a pod's values: up to a poll (10 s) and a round, loaded

std::string uidOf(int scene, int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "5a%02d%04d-bbbb-4ccc-8ddd-eeeeeeeeeeee", scene, i);
  return buf;
}

json podJson(const std::string& name, const std::string& uid) {
  const json& batch = koord::test::kBatchResources;
  return {{"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"uid", uid},
            {"labels", koord::test::kBeLabels},
            {"annotations", koord::test::kBeBatchAnnotations}}},
          {"spec",
           {{"priorityClassName", "koord-batch"},
            {"priority", 5000},
            {"containers",
             {{{"name", "stress"},
               {"image", ContainerdNode::kImage},
               {"resources", {{"limits", batch}, {"requests", batch}}}}}}}},
          {"status", {{"phase", "Pending"}, {"qosClass", "BestEffort"}}}};
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string readKnob(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "<absent>";
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return trimmed(s);
}

// Where one pod's cgroup files are, and whether they hold the batch values yet.
struct Place {
  CgroupV1Tree* tree = nullptr;  // null: the node's own v2 tree, systemd driver

  std::string podRel(const std::string& uid) const { return "kubepods/besteffort/pod" + uid; }
  std::string sliceDir(const std::string& uid) const {
    std::string u = uid;
    std::replace(u.begin(), u.end(), '-', '_');
    return "/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + u +
           ".slice";
  }
  std::string cgroupParent(const std::string& uid) const {
    if (tree) return "/" + tree->prefix() + "/" + podRel(uid);
    std::string u = uid;
    std::replace(u.begin(), u.end(), '-', '_');
    return "kubepods-besteffort-pod" + u + ".slice";
  }
  // The kubelet's cgroupfs driver makes the pod's cgroup before the sandbox.
  void makePod(const std::string& uid) const {
    if (!tree) return;
    tree->mkdirs(podRel(uid));
    std::ofstream(tree->kernelPath("cpu", podRel(uid), "cpu.shares")) << "2";
  }
  std::string values(const std::string& uid) const {
    if (tree) {
      return "shares=" + readKnob(tree->kernelPath("cpu", podRel(uid), "cpu.shares")) +
             " quota=" + readKnob(tree->kernelPath("cpu", podRel(uid), "cpu.cfs_quota_us")) +
             " memory=" +
             readKnob(tree->kernelPath("memory", podRel(uid), "memory.limit_in_bytes"));
    }
    const std::string d = sliceDir(uid);
    return "weight=" + readKnob(d + "/cpu.weight") + " max=" + readKnob(d + "/cpu.max") +
           " memory=" + readKnob(d + "/memory.max");
  }
  // The batch values: 1k batch-cpu as shares 1024 (v1; on v2 a weight other than the
  // kubelet's 1), a quota of one CPU (v1; on v2 cpu.max is reported, not required: the
  // suppress policy decides whether a BE pod keeps its own quota), the 64 MiB limit.
  bool done(const std::string& uid) const {
    const std::string v = values(uid);
    if (tree) return v == "shares=1024 quota=100000 memory=67108864";
    return v.rfind("weight=1 ", 0) != 0 && v.rfind("weight=<absent>", 0) != 0 &&
           v.find("memory=67108864") != std::string::npos;
  }
};

struct Scene {
  std::string name, binary;
  bool nri;
  bool refuseInotify = false;  // fs.inotify.max_user_instances 0 while the agent starts
};

koord::bench::InotifyRefusal gInotify;  // restored before any exit

struct Figures {
  std::vector<double> fromCall, fromReturn, callMs;
  int missed = 0;
  std::string sample;  // one pod's values at the end
  json watch, strategyRuns, sandboxWrites;
  size_t kubeletRequests = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: %s <koordlet-before|-> <koordlet> <containerd-root|system> <runc|-> "
                 "<image.tar|-> [pods=50] [gap-ms=250]\n",
                 argv[0]);
    return 2;
  }
  const std::string before = argv[1], koordlet = argv[2], runtimeRoot = argv[3], runc = argv[4],
                    image = argv[5];
  const int pods = argc > 6 ? std::atoi(argv[6]) : 50;
  const int gapMs = argc > 7 ? std::atoi(argv[7]) : 250;
  if (pods < 1 || gapMs < 0) {
    std::fprintf(stderr, "sandbox_latency: pods must be at least 1, gap-ms not negative\n");
    return 2;
  }
  if (std::string why = koord::bench::benchRuntimeUnavailable(runtimeRoot, runc); !why.empty()) {
    std::fprintf(stderr, "sandbox_latency: %s\n", why.c_str());
    return 77;
  }
  TempTree tmp;
  koord::bench::BenchRuntime rt =
      koord::bench::startBenchRuntime("sandbox-bench", tmp, runtimeRoot, runc, image);
  CgroupV1Tree* tree = rt.tree.get();
  const ContainerdNode* node = rt.node.get();
  const Place place{tree};
  CriClient cri(rt.criSocket(), 120s);
  const auto v = cri.version();
  const std::string runtime = v.runtime_name() + " " + v.runtime_version() +
                              (node ? "; " + node->version() : " (the node's)");
  std::printf("runtime: %s; %d pods, %d ms apart\n", runtime.c_str(), pods, gapMs);
  std::fflush(stdout);

  std::vector<Scene> scenes;
  if (before != "-") scenes.push_back({"before (issue 46's parent)", before, true});
  scenes.push_back({"wake-up alone (NRI off)", koordlet, false});
  scenes.push_back({"hooks on (NRI)", koordlet, true});
  // The NRI write alone: the wake-up falls back to polling every second, so the sandbox
  // event is what comes first.
  scenes.push_back({"hooks on, inotify refused", koordlet, true, true});
  std::vector<Figures> results;

  for (size_t s = 0; s < scenes.size(); ++s) {
    const Scene& scene = scenes[s];
    TestKubelet kubelet;
    json items = json::array();
    // One LS pod always listed: an empty list reads as a kubelet restart.
    items.push_back({{"metadata", {{"name", "ls"}, {"namespace", "default"}, {"uid", "ls-uid"}}},
                     {"spec", {{"containers", {{{"name", "app"}}}}}},
                     {"status", {{"phase", "Running"}, {"qosClass", "Burstable"}}}});
    kubelet.setBody(json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}}.dump());
    std::vector<std::string> flags = {
        "--addr=127.0.0.1:0",
        "--proc-root-dir=/proc/",
        "--kubelet-insecure-tls=true",
        "--kubelet-addr=127.0.0.1",
        "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
        "--enable-runtime-hook-server=false",
        "--audit-log-dir=" + tmp.path("audit-" + std::to_string(s)),
        std::string("--enable-nri-runtime-hook=") + (scene.nri ? "true" : "false")};
    for (const std::string& f : rt.agentFlags(tmp)) {
      if (f != "--proc-root-dir=/proc/") flags.push_back(f);
    }
    if (scene.refuseInotify) {
      gInotify.refuse();
    }
    AgentProcess agent(scene.binary, flags, tmp.path("agent-" + std::to_string(s) + ".log"),
                       "bench-node");
    auto die = [&](const std::string& what) {
      gInotify.restore();
      std::fprintf(stderr, "sandbox_latency: %s: %s\n--- agent log (tail) ---\n%s\n",
                   scene.name.c_str(), what.c_str(),
                   [&] {
                     std::string l = agent.log();
                     return l.substr(l.size() > 6000 ? l.size() - 6000 : 0);
                   }()
                       .c_str());
      std::exit(1);
    };
    const auto port = agent.waitForServingPort(kLimit);
    if (!port) die("the agent did not start serving");
    std::string why = koord::test::waitFor(kLimit, [&]() -> std::string {
      auto r = koord::test::httpGet(*port, "/readyz");
      const std::string b = r ? r->body : "no reply";
      if (r && r->status != 200) return b;
      if (scene.nri && b.find("nri: connected to containerd") == std::string::npos) return b;
      return "";
    });
    if (!why.empty()) die("not ready: " + why);
    if (scene.refuseInotify) {
      why = koord::test::waitFor(kLimit, [&]() -> std::string {
        return agent.log().find("inotify refused") != std::string::npos ? "" : "not said";
      });
      if (!why.empty()) die("the agent never said inotify was refused");
      gInotify.restore();  // the host's limit back at once
    }
    std::this_thread::sleep_for(3s);  // two pod rounds, as the QoS loop waits for

    // The watcher: every waiting pod's files every 2 ms.
    std::vector<std::string> uids(pods);  // fixed before the watcher starts: it reads them
    for (int i = 0; i < pods; ++i) uids[i] = uidOf(static_cast<int>(s), i);
    std::vector<Clock::time_point> called(pods), returned(pods);
    std::vector<std::optional<Clock::time_point>> seen(pods);
    std::mutex mu;
    int launched = 0;
    std::atomic<bool> stop{false};
    std::thread watcher([&] {
      while (!stop) {
        int n;
        {
          std::lock_guard<std::mutex> lock(mu);
          n = launched;
        }
        for (int i = 0; i < n; ++i) {
          if (seen[i]) continue;
          if (place.done(uids[i])) seen[i] = Clock::now();
        }
        std::this_thread::sleep_for(2ms);
      }
    });
    std::vector<std::string> sandboxIds;
    auto next = Clock::now();
    for (int i = 0; i < pods; ++i) {
      std::this_thread::sleep_until(next);
      next = Clock::now() + std::chrono::milliseconds(gapMs);
      const std::string& uid = uids[i];
      const std::string name = "be-" + std::to_string(s) + "-" + std::to_string(i);
      items.push_back(podJson(name, uid));
      kubelet.setBody(json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}}.dump());
      place.makePod(uid);
      const std::string logDir = tmp.path("pods/default_" + name + "_" + uid);
      std::filesystem::create_directories(logDir);
      const auto sandbox =
          koord::test::kubeletSandbox(name, "default", uid, place.cgroupParent(uid), logDir,
                                      koord::test::kBeLabels, koord::test::kBeBatchAnnotations);
      {
        std::lock_guard<std::mutex> lock(mu);
        called[i] = Clock::now();
        launched = i + 1;
      }
      try {
        sandboxIds.push_back(cri.runPodSandbox(sandbox));
      } catch (const std::exception& e) {
        stop = true;
        watcher.join();
        die(e.what());
      }
      returned[i] = Clock::now();
    }
    const auto deadline = Clock::now() + kPodLimit;
    while (Clock::now() < deadline) {
      bool all = true;
      for (int i = 0; i < pods; ++i) all = all && seen[i].has_value();
      if (all) break;
      std::this_thread::sleep_for(50ms);
    }
    stop = true;
    watcher.join();

    Figures f;
    auto ms = [](Clock::duration d) {
      return std::chrono::duration<double, std::milli>(d).count();
    };
    for (int i = 0; i < pods; ++i) {
      f.callMs.push_back(ms(returned[i] - called[i]));
      if (!seen[i]) {
        ++f.missed;
        continue;
      }
      f.fromCall.push_back(ms(*seen[i] - called[i]));
      f.fromReturn.push_back(ms(*seen[i] - returned[i]));
    }
    f.sample = place.values(uids.back());
    f.kubeletRequests = kubelet.requestCount();
    if (auto c = koord::test::httpGet(*port, "/config"); c && c->status == 200) {
      const json j = json::parse(c->body);
      f.watch = j.value("podCgroupWatch", json());
      f.strategyRuns = j.value("strategyRuns", json());
      f.sandboxWrites = j.value("sandboxWrites", json());
    }
    if (!agent.terminate(20s)) die("did not stop");
    for (const std::string& id : sandboxIds) {
      cri.stopPodSandbox(id);
      cri.removePodSandbox(id);
    }
    if (tree) {
      for (const std::string& uid : uids) tree->removeDirs(place.podRel(uid));
    }
    std::printf("scene %s: done (%d of %d pods within %lld s)\n", scene.name.c_str(),
                pods - f.missed, pods,
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::seconds>(kPodLimit).count()));
    std::fflush(stdout);
    results.push_back(std::move(f));
  }

  std::printf("\nRunPodSandbox to the pod cgroup's batch values, ms (%d pods a scene; %s)\n", pods,
              runtime.c_str());
  std::printf("  %-28s %6s %9s %9s %9s %9s %9s %7s\n", "scene", "pods", "p50", "p99", "max",
              "p50 ret", "call p50", "missed");
  for (size_t s = 0; s < scenes.size(); ++s) {
    const Figures& f = results[s];
    std::printf("  %-28s %6zu %9.1f %9.1f %9.1f %9.1f %9.1f %7d\n", scenes[s].name.c_str(),
                f.fromCall.size(), percentile(f.fromCall, 0.5), percentile(f.fromCall, 0.99),
                f.fromCall.empty() ? -1.0 : *std::max_element(f.fromCall.begin(), f.fromCall.end()),
                percentile(f.fromReturn, 0.5), percentile(f.callMs, 0.5), f.missed);
  }
  std::printf("  (p50 ret: from the call's return, negative when the values came first)\n");
  for (size_t s = 0; s < scenes.size(); ++s) {
    const Figures& f = results[s];
    std::printf("  %s: last pod %s; kubelet requests %zu; watch %s; runs %s; sandboxes %s\n",
                scenes[s].name.c_str(), f.sample.c_str(), f.kubeletRequests, f.watch.dump().c_str(),
                f.strategyRuns.dump().c_str(), f.sandboxWrites.dump().c_str());
  }
  int missed = 0;
  for (const Figures& f : results) missed += f.missed;
  return missed == 0 ? 0 : 1;
}
