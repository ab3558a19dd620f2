// What an NRI plugin adds to CRI CreateContainer on a real containerd: the time of the
// kubelet's CreateContainer call (tests/support/cri_client.h) with (a) no plugin, (b) a
// Go plugin built on containerd/nri's stub (its plugins/template, which answers every
// event with nothing; pass "-" to leave it out) and (c) the real agent, on one containerd
// and one BE pod (batch-cpu 1k, batch-memory 64Mi, so the agent's answer carries its
// batch adjustment).
//
// Interleaved: each round runs a, b, c as episodes. An episode starts its plugin and waits
// until it is registered (the Go plugin's "Synchronized state" log line, the agent's
// /readyz "nri: connected"), settles 1 s, creates one container (reported apart: the
// first call after a connect) and then <per-episode> measured ones, each removed at once,
// and stops the plugin. "paired" is the median over rounds of (the plugin's round median
// minus the no-plugin round median): it cancels a loaded machine's drift between rounds.
//
// Two places:
//   build/bench/nri_create_latency <koordlet> <containerd-root> <runc> <image.tar>
//       <go-plugin|-> [rounds=30] [per-episode=10]      (one command line)
// starts its own containerd from an unpacked package root (usr/bin/containerd, its shim,
// ctr: tests/runtime/fetch-runtime.sh's) on a private cgroup v1 tree (root), with
// tests/runtime/make-image.sh's image;
//   nri_create_latency <koordlet> system - - <go-plugin|-> [rounds] [per-episode]
// uses the node's own containerd (/run/containerd/containerd.sock, NRI on at
// /var/run/nri/nri.sock, the image imported, runc's systemd cgroup driver and the
// kubelet's kubepods-besteffort.slice started): the v2-node guest, bench/nri_create_guest.sh.
// The Go plugin runs as `<go-plugin> -name gotemplate -idx 10 -socket <nri socket> -events
// runpodsandbox,removepodsandbox,createcontainer,updatecontainer` (the agent's mask, 0x8d).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_runtime.h"
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
using namespace std::chrono_literals;

constexpr auto kLimit = 30s;
const std::string kPodUid = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b";
using koord::test::kBeLabels;
const auto& kBeAnnotations = koord::test::kBeBatchAnnotations;  // tests/support/batch_pod.h

json bePodList() {
  const json& batch = koord::test::kBatchResources;
  json pod = {{"metadata",
               {{"name", "be-bench"},
                {"namespace", "default"},
                {"uid", kPodUid},
                {"labels", kBeLabels},
                {"annotations", kBeAnnotations}}},
              {"spec",
               {{"priorityClassName", "koord-batch"},
                {"priority", 5000},
                {"containers",
                 {{{"name", "stress"},
                   {"image", ContainerdNode::kImage},
                   {"resources", {{"limits", batch}, {"requests", batch}}}}}}}},
              {"status", {{"phase", "Running"}, {"qosClass", "BestEffort"}}}};
  return {{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", json::array({pod})}};
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

std::string loadavg() {
  std::string s = koord::test::readTextFile("/proc/loadavg");
  return s.substr(0, s.find('\n'));
}

[[noreturn]] void die(const std::string& what, const ContainerdNode* node,
                      const AgentProcess* plugin) {
  std::fprintf(stderr, "nri_create_latency: %s\n", what.c_str());
  if (plugin != nullptr) std::fprintf(stderr, "--- plugin log ---\n%s\n", plugin->log().c_str());
  if (node != nullptr) {
    const std::string log = node->log();
    std::fprintf(stderr, "--- containerd log (tail) ---\n%s\n",
                 log.substr(log.size() > 6000 ? log.size() - 6000 : 0).c_str());
  }
  std::exit(1);
}

enum class Mode { kNone, kGo, kAgent };
const char* name(Mode m) {
  switch (m) {
    case Mode::kNone:
      return "no plugin";
    case Mode::kGo:
      return "Go stub (template)";
    case Mode::kAgent:
      return "koordlet";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: %s <koordlet> <containerd-root|system> <runc|-> <image.tar|-> "
                 "<go-plugin|-> [rounds=30] [per-episode=10]\n",
                 argv[0]);
    return 2;
  }
  const std::string koordlet = argv[1], runtimeRoot = argv[2], runc = argv[3], image = argv[4],
                    goPlugin = argv[5];
  const int rounds = argc > 6 ? std::atoi(argv[6]) : 30;
  const int perEpisode = argc > 7 ? std::atoi(argv[7]) : 10;
  if (rounds < 1 || perEpisode < 1) {
    std::fprintf(stderr, "nri_create_latency: rounds and per-episode must be at least 1\n");
    return 2;
  }
  if (std::string why = koord::bench::benchRuntimeUnavailable(runtimeRoot, runc); !why.empty()) {
    std::fprintf(stderr, "nri_create_latency: %s\n", why.c_str());
    return 77;
  }

  TempTree tmp;
  koord::bench::BenchRuntime rt =
      koord::bench::startBenchRuntime("nri-bench", tmp, runtimeRoot, runc, image);
  const ContainerdNode* node = rt.node.get();
  const std::string criSocket = rt.criSocket();
  const std::string nriSocket = rt.nriSocket();
  CriClient cri(criSocket, std::chrono::seconds(120));
  const auto v = cri.version();
  const std::string runtime = v.runtime_name() + " " + v.runtime_version() +
                              (node ? "; " + node->version() : " (the node's)");
  std::printf("runtime: %s; load %s\n", runtime.c_str(), loadavg().c_str());

  TestKubelet kubelet;
  kubelet.setBody(bePodList().dump());
  const std::string logDir = tmp.path("pods/default_be-bench_" + kPodUid);
  std::filesystem::create_directories(logDir);
  std::string sliceUid = kPodUid;  // the kubelet's systemd driver writes '-' as '_'
  std::replace(sliceUid.begin(), sliceUid.end(), '-', '_');
  const auto sandbox = koord::test::kubeletSandbox(
      "be-bench", "default", kPodUid,
      node ? "/" + rt.tree->prefix() + "/kubepods/besteffort/pod" + kPodUid
           : "kubepods-besteffort-pod" + sliceUid + ".slice",
      logDir, kBeLabels, kBeAnnotations);
  std::string podId;
  try {
    podId = cri.runPodSandbox(sandbox);
  } catch (const std::exception& e) {
    die(e.what(), node, nullptr);
  }
  runtime::v1::LinuxContainerResources kubeletResources;  // a BestEffort container's
  kubeletResources.set_cpu_period(100000);
  kubeletResources.set_cpu_shares(2);
  kubeletResources.set_oom_score_adj(1000);
  const auto container = koord::test::kubeletContainer("stress", ContainerdNode::kImage,
                                                       {"/bin/sh", "-c", "exec sleep 2147483647"},
                                                       sandbox, kubeletResources);
  const std::vector<std::string> where = rt.agentFlags(tmp);

  std::vector<Mode> modes = {Mode::kNone};
  if (goPlugin != "-") modes.push_back(Mode::kGo);
  modes.push_back(Mode::kAgent);
  std::map<Mode, std::vector<double>> measured, first;
  std::map<Mode, std::vector<double>> roundMedians;
  int episode = 0;
  for (int r = 0; r < rounds; ++r) {
    for (Mode m : modes) {
      ++episode;
      std::unique_ptr<AgentProcess> plugin;
      const std::string log = tmp.path("plugin-" + std::to_string(episode) + ".log");
      if (m == Mode::kGo) {
        plugin = std::make_unique<AgentProcess>(
            goPlugin,
            std::vector<std::string>{"-name", "gotemplate", "-idx", "10", "-socket", nriSocket,
                                     "-events",
                                     "runpodsandbox,removepodsandbox,createcontainer,"
                                     "updatecontainer"},
            log, "bench-node");
        std::string why = koord::test::waitFor(kLimit, [&]() -> std::string {
          if (!plugin->running()) die("the Go plugin exited", node, plugin.get());
          return plugin->log().find("Synchronized state") != std::string::npos ? ""
                                                                               : "not synchronized";
        });
        if (!why.empty()) die("the Go plugin never registered", node, plugin.get());
      } else if (m == Mode::kAgent) {
        std::vector<std::string> flags = {
            "--addr=127.0.0.1:0",
            "--runtime-hooks-nri-backoff-duration=100ms",
            "--runtime-hooks-nri-backoff-cap=400ms",
            "--kubelet-insecure-tls=true",
            "--kubelet-addr=127.0.0.1",
            "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
            "--kubelet-sync-interval=1s",
            "--collect-res-used-interval=500ms",
            "--reconcile-interval-seconds=1",
            "--runtime-hooks-reconcile-interval=1s",
            "--cpu-suppress-interval-seconds=0",
            "--audit-log-dir=" + tmp.path("audit"),
            "--v=4"};
        flags.insert(flags.end(), where.begin(), where.end());
        plugin = std::make_unique<AgentProcess>(koordlet, flags, log, "bench-node");
        const auto port = plugin->waitForServingPort(kLimit);
        if (!port) die("the agent did not start serving", node, plugin.get());
        std::string why = koord::test::waitFor(kLimit, [&]() -> std::string {
          auto reply = koord::test::httpGet(*port, "/readyz");
          const std::string body = reply ? reply->body : "no reply";
          return body.find("nri: connected to containerd") != std::string::npos ? "" : body;
        });
        if (!why.empty()) die("the agent never registered: " + why, node, plugin.get());
      }
      std::this_thread::sleep_for(1s);
      std::vector<double> thisRound;
      for (int i = 0; i <= perEpisode; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        std::string id;
        try {
          id = cri.createContainer(podId, container, sandbox);
        } catch (const std::exception& e) {
          die(std::string(name(m)) + ": " + e.what(), node, plugin.get());
        }
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (i == 0) {
          first[m].push_back(ms);
        } else {
          measured[m].push_back(ms);
          thisRound.push_back(ms);
        }
        cri.removeContainer(id);
      }
      roundMedians[m].push_back(percentile(thisRound, 0.5));
      if (plugin) {
        if (!plugin->terminate(20s)) die(std::string(name(m)) + " did not stop", node, nullptr);
        std::this_thread::sleep_for(500ms);  // containerd sees the connection go
      }
    }
  }
  cri.stopPodSandbox(podId);
  cri.removePodSandbox(podId);

  std::printf("CRI CreateContainer, ms (%d interleaved rounds of %d; %s)\n", rounds, perEpisode,
              runtime.c_str());
  std::printf("  %-20s %5s %8s %8s %8s %10s %14s\n", "plugin", "n", "median", "p90", "max",
              "paired", "first: median");
  const double base = percentile(measured[Mode::kNone], 0.5);
  for (Mode m : modes) {
    const auto& all = measured[m];
    std::vector<double> paired;
    for (size_t r = 0; r < roundMedians[m].size(); ++r) {
      paired.push_back(roundMedians[m][r] - roundMedians[Mode::kNone][r]);
    }
    std::printf("  %-20s %5zu %8.2f %8.2f %8.2f %+10.2f %14.2f   (x%.3f of no plugin)\n", name(m),
                all.size(), percentile(all, 0.5), percentile(all, 0.9),
                *std::max_element(all.begin(), all.end()), percentile(paired, 0.5),
                percentile(first[m], 0.5), percentile(all, 0.5) / base);
  }
  std::printf("load at the end: %s\n", loadavg().c_str());
  return 0;
}
