// API steady-state benchmark (not a test): the real koordlet binary on a node of the
// kubelet capture's pods (a fake cgroup v1 tree in a temp dir, --dry-run, no root),
// run twice for the same time: standalone, then with the API server stand-in holding
// its Node, NodeSLO and NodeMetric (koord-manager's defaults: report every 60 s over
// 300 s), on a real 128-CPU sysfs capture, so the NodeResourceTopology is reported too. Reports,
// per run, the agent's CPU seconds and RSS after the same warm-up; for the cluster run the requests
// the stand-in saw by verb and resource, scaled to an hour; then 20 NodeSLO edits and the time each
// took to reach /config.
//   api_steady AGENT_BINARY FIXTURES_DIR [SECONDS]   (default 600 per run)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/read_file.h"
#include "bench/capture_tree.h"
#include "bench/proc_stats.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"
#include "tests/support/agent_process.h"
#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver.h"
#include "tests/support/test_kubelet.h"

using namespace koord;
using namespace std::chrono_literals;
using json = nlohmann::json;
using Steady = std::chrono::steady_clock;
using bench::cpuSeconds;
using bench::rssMiB;

namespace {

const std::string kNode = "bench-node";
std::string fixtures;

std::string fixture(const std::string& rel) {
  auto text = readFile(fixtures + "/" + rel);
  if (!text) {
    std::cerr << "fixture " << rel << ": " << text.error().message << "\n";
    std::exit(2);
  }
  return *text;
}

struct Run {
  double cpu = 0;
  double rss = 0;
  double cacheBytes = 0;
};

std::optional<int> thresholdOf(uint16_t port) {
  auto r = test::httpGet(port, "/config");
  if (!r || r->status != 200) return std::nullopt;
  auto c = json::parse(r->body, nullptr, false);
  const auto ptr = "/spec/resourceUsedThresholdWithBE/cpuSuppressThresholdPercent"_json_pointer;
  if (!c.is_object() || !c.contains(ptr)) return std::nullopt;
  return c[ptr].get<int>();
}

json nodeSlo(int percent) {
  return {{"apiVersion", "slo.koordinator.sh/v1alpha1"},
          {"kind", "NodeSLO"},
          {"metadata", {{"name", kNode}}},
          {"spec",
           {{"resourceUsedThresholdWithBE",
             {{"enable", true}, {"cpuSuppressThresholdPercent", percent}}}}}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: api_steady AGENT_BINARY FIXTURES_DIR [SECONDS]\n";
    return 2;
  }
  const std::string agentBinary = argv[1];
  fixtures = argv[2];
  const int seconds = argc > 3 ? std::atoi(argv[3]) : 600;
  constexpr auto kWarmup = 15s;

  // The pods and their cgroups (the capture's running pods, the EKS files).
  const std::string podList = fixture("kubelet/k8s-1.35/pods.json");
  auto pods = parsePodList(podList);
  if (!pods) return 2;
  test::TempTree work;
  const std::string cgroupRoot = work.path("cgroup");
  const size_t running = bench::writeCaptureCgroups(work, cgroupRoot, *pods, fixture);
  std::filesystem::create_directories(work.path("sys-fs"));

  test::TestKubelet kubelet;
  kubelet.setBody(podList);
  test::TestApiServer api(test::TestApiServer::Options{"bench-token", 60000ms, true});
  json node = json::parse(fixture("kube-api/node-get.body"));
  node["metadata"] = {{"name", kNode}};
  api.put("nodes", node);
  api.put("nodeslos", nodeSlo(60));
  json nodeMetric = json::parse(fixture("kube-api/nodemetric-get.body"));
  nodeMetric["metadata"] = {{"name", kNode}};
  nodeMetric["spec"]["metricCollectPolicy"]["aggregateDurationSeconds"] = 300;
  nodeMetric["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] = 60;
  api.put("nodemetrics", nodeMetric);
  work.write("kubeconfig",
             "apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n"
             "- name: c\n  cluster:\n    server: " +
                 api.url() + "\n    certificate-authority: " + api.caFile() +
                 "\ncontexts:\n- name: b\n  context: {cluster: c, user: u}\n"
                 "users:\n- name: u\n  user:\n    token: bench-token\n");

  const std::vector<std::string> common = {
      "--addr=127.0.0.1:0", "--cgroup-root-dir=" + cgroupRoot, "--proc-root-dir=/proc/",
      "--kubelet-insecure-tls=true", "--kubelet-addr=127.0.0.1",
      "--kubelet-read-only-port=" + std::to_string(kubelet.port()), "--dry-run",
      "--sys-fs-root-dir=" + work.path("sys-fs"),
      // A real 128-CPU, 4-NUMA-node capture: the node topology is computed (and in the
      // cluster run reported as a NodeResourceTopology) from it.
      "--sys-root-dir=" + fixtures + "/sysfs/arm-128cpu-2socket-4numa"};

  auto measure = [&](bool cluster, Run& out) -> uint16_t {
    auto flags = common;
    if (cluster) flags.push_back("--kubeconfig=" + work.path("kubeconfig"));
    auto agent = std::make_unique<test::AgentProcess>(
        agentBinary, flags, work.path(cluster ? "cluster.log" : "standalone.log"), kNode);
    auto port = agent->waitForServingPort(10s);
    if (!port) {
      std::cerr << "agent did not start:\n" << agent->log();
      std::exit(1);
    }
    std::this_thread::sleep_for(kWarmup);
    const size_t requestsBefore = api.requests().size();
    const double cpu0 = cpuSeconds(agent->pid());
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    out.cpu = cpuSeconds(agent->pid()) - cpu0;
    out.rss = rssMiB(agent->pid());
    if (auto m = test::httpGet(*port, "/metrics")) {
      test::Scrape s(m->body);
      out.cacheBytes = s.value("koordlet_metric_cache_bytes").value_or(0);
    }
    if (cluster) {
      std::map<std::pair<std::string, std::string>, size_t> byVerb;
      const auto log = api.requests();
      for (size_t i = requestsBefore; i < log.size(); ++i) {
        ++byVerb[{log[i].verb, log[i].resource}];
      }
      std::printf("requests in %d s of steady state (per hour):\n", seconds);
      for (const auto& [key, n] : byVerb) {
        std::printf("  %-6s %-20s %4zu  (%.1f/h)\n", key.first.c_str(), key.second.c_str(), n,
                    static_cast<double>(n) * 3600.0 / seconds);
      }
      // NodeSLO edits to /config.
      std::vector<double> ms;
      for (int i = 0; i < 20; ++i) {
        const int want = 61 + i;
        api.put("nodeslos", nodeSlo(want));
        const auto t0 = Steady::now();
        while (thresholdOf(*port) != want && Steady::now() - t0 < 10s) {
          std::this_thread::sleep_for(2ms);
        }
        ms.push_back(std::chrono::duration<double, std::milli>(Steady::now() - t0).count());
        std::this_thread::sleep_for(200ms);
      }
      std::sort(ms.begin(), ms.end());
      std::printf("NodeSLO edit -> /config: p50 %.1f ms, max %.1f ms (20 edits)\n", ms[10],
                  ms.back());
      if (auto nm = api.get("nodemetrics", kNode); nm && nm->contains("status")) {
        std::printf("NodeMetric status: %zu bytes, %zu pods\n", (*nm)["status"].dump().size(),
                    (*nm)["status"]["podsMetric"].size());
      }
    }
    agent->terminate(10s);
    return *port;
  };

  Run standalone, cluster;
  measure(false, standalone);
  measure(true, cluster);
  std::printf("pods %zu (running %zu), %d s per run after %lld s warm-up\n", pods->size(), running,
              seconds, static_cast<long long>(kWarmup.count()));
  std::printf("%-11s %10s %12s %10s %14s\n", "run", "cpu s", "cpu ms/s", "rss MiB", "cache bytes");
  for (const auto& [name, r] :
       {std::pair{"standalone", standalone}, std::pair{"cluster", cluster}}) {
    std::printf("%-11s %10.2f %12.2f %10.1f %14.0f\n", name, r.cpu, r.cpu * 1000.0 / seconds, r.rss,
                r.cacheBytes);
  }
  std::printf("added by the API: %.2f ms of CPU per second, %.1f MiB RSS\n",
              (cluster.cpu - standalone.cpu) * 1000.0 / seconds, cluster.rss - standalone.rss);
  return 0;
}
