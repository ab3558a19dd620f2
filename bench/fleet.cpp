// Fleet benchmark (issue 34; not a test): N real koordlet binaries as N nodes of one
// cluster, against one API server stand-in (HTTPS, bearer token). Each agent has its
// own NODE_NAME and its own Node, NodeSLO and NodeMetric (koord-manager's defaults:
// report every 60 s over 300 s); they share one kubelet stand-in (the capture's pods)
// and one fake cgroup v1 tree, run --dry-run on a real 128-CPU sysfs capture (so each
// keeps a NodeResourceTopology too), and no root is needed.
//
// Phases: start all N and wait until every node has reported once and has its
// NodeResourceTopology; then SECONDS of steady state, over which it reports per node
// per hour the requests by verb and resource and the bytes each way, the watches held
// per node, and each agent's CPU and RSS; then one NodeSLO change for all nodes (as
// koord-manager renders after one slo-controller-config edit: N NodeSLO updates, back
// to back) and the time until every agent's /config shows it, with the requests that
// change cost.
//   fleet AGENT_BINARY FIXTURES_DIR N [SECONDS]   (default 600)
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
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
#include "tests/support/http_get.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver.h"
#include "tests/support/test_kubelet.h"

using namespace koord;
using namespace std::chrono_literals;
using json = nlohmann::json;
using Steady = std::chrono::steady_clock;

namespace {

std::string fixtures;

std::string fixture(const std::string& rel) {
  auto text = readFile(fixtures + "/" + rel);
  if (!text) {
    std::cerr << "fixture " << rel << ": " << text.error().message << "\n";
    std::exit(2);
  }
  return *text;
}

std::string nodeName(size_t i) { return "fleet-" + std::to_string(i); }

json nodeSlo(const std::string& node, int percent) {
  return {{"apiVersion", "slo.koordinator.sh/v1alpha1"},
          {"kind", "NodeSLO"},
          {"metadata", {{"name", node}}},
          {"spec",
           {{"resourceUsedThresholdWithBE",
             {{"enable", true}, {"cpuSuppressThresholdPercent", percent}}}}}};
}

std::optional<int> thresholdOf(uint16_t port) {
  auto r = test::httpGet(port, "/config");
  if (!r || r->status != 200) return std::nullopt;
  auto c = json::parse(r->body, nullptr, false);
  const auto ptr = "/spec/resourceUsedThresholdWithBE/cpuSuppressThresholdPercent"_json_pointer;
  if (!c.is_object() || !c.contains(ptr)) return std::nullopt;
  return c[ptr].get<int>();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Requests of the log from `from` on, by (verb, resource).
std::map<std::pair<std::string, std::string>, size_t> byVerb(
    const std::vector<test::TestApiServer::LoggedRequest>& log, size_t from) {
  std::map<std::pair<std::string, std::string>, size_t> n;
  for (size_t i = from; i < log.size(); ++i) ++n[{log[i].verb, log[i].resource}];
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: fleet AGENT_BINARY FIXTURES_DIR N [SECONDS]\n";
    return 2;
  }
  const std::string agentBinary = argv[1];
  fixtures = argv[2];
  const size_t n = std::stoul(argv[3]);
  const int seconds = argc > 4 ? std::atoi(argv[4]) : 600;
  if (seconds < 10) {
    std::cerr << "fleet: SECONDS must be at least 10\n";
    return 2;
  }
  // Every agent keeps ~5 connections to the stand-ins (4 watches, the kubelet): this
  // process holds them all.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &files) != 0) getrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < n * 8 + 256) {
    std::cerr << "fleet: RLIMIT_NOFILE " << files.rlim_cur << " is too low for " << n
              << " agents\n";
    return 2;
  }

  // The pods and their cgroups (the capture's running pods, the EKS files), shared.
  const std::string podList = fixture("kubelet/k8s-1.35/pods.json");
  auto pods = parsePodList(podList);
  if (!pods) return 2;
  test::TempTree work;
  const std::string cgroupRoot = work.path("cgroup");
  bench::writeCaptureCgroups(work, cgroupRoot, *pods, fixture);
  std::filesystem::create_directories(work.path("sys-fs"));

  test::TestKubelet kubelet;
  kubelet.setBody(podList);
  test::TestApiServer api(test::TestApiServer::Options{"fleet-token", 60000ms, true});
  const json nodeBase = json::parse(fixture("kube-api/node-get.body"));
  const json metricBase = json::parse(fixture("kube-api/nodemetric-get.body"));
  for (size_t i = 0; i < n; ++i) {
    json node = nodeBase;
    node["metadata"] = {{"name", nodeName(i)}};
    api.put("nodes", node);
    api.put("nodeslos", nodeSlo(nodeName(i), 60));
    json nm = metricBase;
    nm["metadata"] = {{"name", nodeName(i)}};
    nm.erase("status");
    nm["spec"]["metricCollectPolicy"]["aggregateDurationSeconds"] = 300;
    nm["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] = 60;
    api.put("nodemetrics", nm);
  }
  work.write("kubeconfig",
             "apiVersion: v1\nkind: Config\ncurrent-context: f\nclusters:\n"
             "- name: c\n  cluster:\n    server: " +
                 api.url() + "\n    certificate-authority: " + api.caFile() +
                 "\ncontexts:\n- name: f\n  context: {cluster: c, user: u}\n"
                 "users:\n- name: u\n  user:\n    token: fleet-token\n");

  // Start them all (as a DaemonSet created at once would), then wait for each.
  const auto t0 = Steady::now();
  std::vector<std::unique_ptr<test::AgentProcess>> agents;
  std::vector<uint16_t> ports(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const std::string dir = work.path("agent-" + std::to_string(i));
    std::filesystem::create_directories(dir + "/checkpoints");
    agents.push_back(std::make_unique<test::AgentProcess>(
        agentBinary,
        std::vector<std::string>{"--addr=127.0.0.1:0", "--cgroup-root-dir=" + cgroupRoot,
                                 "--proc-root-dir=/proc/", "--kubelet-insecure-tls=true",
                                 "--kubelet-addr=127.0.0.1",
                                 "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
                                 "--dry-run", "--sys-fs-root-dir=" + work.path("sys-fs"),
                                 "--sys-root-dir=" + fixtures + "/sysfs/arm-128cpu-2socket-4numa",
                                 "--kubeconfig=" + work.path("kubeconfig"),
                                 "--prediction-checkpoint-filepath=" + dir + "/checkpoints"},
        dir + "/agent.log", nodeName(i)));
  }
  for (size_t i = 0; i < n; ++i) {
    auto port = agents[i]->waitForServingPort(120s);
    if (!port) {
      std::cerr << "fleet: agent " << i << " did not start:\n" << agents[i]->log();
      return 1;
    }
    ports[i] = *port;
  }
  const double startedIn = std::chrono::duration<double>(Steady::now() - t0).count();
  // Every node reported once and keeps its topology.
  size_t settled = 0;
  while (settled < n && Steady::now() - t0 < 300s) {
    settled = 0;
    for (size_t i = 0; i < n; ++i) {
      auto nm = api.get("nodemetrics", nodeName(i));
      if (nm && nm->contains("status") && api.get("noderesourcetopologies", nodeName(i))) {
        ++settled;
      }
    }
    if (settled < n) std::this_thread::sleep_for(1s);
  }
  const double settledIn = std::chrono::duration<double>(Steady::now() - t0).count();
  const size_t startRequests = api.requests().size();
  std::printf(
      "%zu agents: all serving after %.1f s, %zu of %zu reported and topology kept after "
      "%.1f s; %zu requests to get there (%.1f per node)\n",
      n, startedIn, settled, n, settledIn, startRequests,
      static_cast<double>(startRequests) / static_cast<double>(n));
  for (const auto& [key, count] : byVerb(api.requests(), 0)) {
    std::printf("  start  %-7s %-24s %6zu  (%.2f per node)\n", key.first.c_str(),
                key.second.c_str(), count, static_cast<double>(count) / static_cast<double>(n));
  }
  if (settled < n) return 1;

  // Steady state.
  std::vector<double> cpu0(n);
  for (size_t i = 0; i < n; ++i) cpu0[i] = bench::cpuSeconds(agents[i]->pid());
  const double selfCpu0 = bench::cpuSeconds(::getpid());
  const size_t log0 = api.requests().size();
  const uint64_t sent0 = api.bytesSent(), received0 = api.bytesReceived();
  std::vector<double> watches;
  const auto steady0 = Steady::now();
  while (Steady::now() - steady0 < std::chrono::seconds(seconds)) {
    std::this_thread::sleep_for(10s);
    watches.push_back(static_cast<double>(api.activeWatches()));
  }
  const double span = std::chrono::duration<double>(Steady::now() - steady0).count();
  const double perNodeHour = 3600.0 / span / static_cast<double>(n);
  std::vector<double> cpu(n), rss(n);
  for (size_t i = 0; i < n; ++i) {
    cpu[i] = (bench::cpuSeconds(agents[i]->pid()) - cpu0[i]) * 1000.0 / span;
    rss[i] = bench::rssMiB(agents[i]->pid());
  }
  const double selfCpu = (bench::cpuSeconds(::getpid()) - selfCpu0) * 1000.0 / span;
  const auto log = api.requests();
  std::printf("steady state, %.0f s: requests per node per hour\n", span);
  size_t total = 0;
  for (const auto& [key, count] : byVerb(log, log0)) {
    total += count;
    std::printf("  %-7s %-24s %6zu  (%.1f per node per hour)\n", key.first.c_str(),
                key.second.c_str(), count, static_cast<double>(count) * perNodeHour);
  }
  std::printf("  all: %.1f per node per hour, %.3f per second for the fleet\n",
              static_cast<double>(total) * perNodeHour, static_cast<double>(total) / span);
  std::printf("bytes per node per hour: %.0f KB from the server, %.0f KB to it\n",
              static_cast<double>(api.bytesSent() - sent0) * perNodeHour / 1000.0,
              static_cast<double>(api.bytesReceived() - received0) * perNodeHour / 1000.0);
  std::printf("watches held per node: min %.2f, mean %.2f\n",
              *std::min_element(watches.begin(), watches.end()) / static_cast<double>(n),
              std::accumulate(watches.begin(), watches.end(), 0.0) /
                  static_cast<double>(watches.size()) / static_cast<double>(n));
  std::printf("agent CPU ms/s: mean %.2f, p50 %.2f, max %.2f; RSS MiB: mean %.1f, max %.1f\n",
              std::accumulate(cpu.begin(), cpu.end(), 0.0) / static_cast<double>(n),
              percentile(cpu, 0.5), *std::max_element(cpu.begin(), cpu.end()),
              std::accumulate(rss.begin(), rss.end(), 0.0) / static_cast<double>(n),
              *std::max_element(rss.begin(), rss.end()));
  std::printf("the stand-ins' process (API server, kubelet, this benchmark): %.1f ms of CPU/s\n",
              selfCpu);

  // One NodeSLO change for every node, back to back; until every agent shows it.
  const size_t log1 = api.requests().size();
  const uint64_t sent1 = api.bytesSent();
  const auto edit0 = Steady::now();
  for (size_t i = 0; i < n; ++i) api.put("nodeslos", nodeSlo(nodeName(i), 61));
  const double putAll = std::chrono::duration<double, std::milli>(Steady::now() - edit0).count();
  std::vector<double> applied(n, -1);
  size_t left = n;
  while (left > 0 && Steady::now() - edit0 < 120s) {
    for (size_t i = 0; i < n; ++i) {
      if (applied[i] >= 0 || thresholdOf(ports[i]) != 61) continue;
      applied[i] = std::chrono::duration<double, std::milli>(Steady::now() - edit0).count();
      --left;
    }
    if (left > 0) std::this_thread::sleep_for(5ms);
  }
  std::erase_if(applied, [](double ms) { return ms < 0; });  // nodes that never applied
  if (applied.empty()) applied.push_back(-1);
  std::printf(
      "NodeSLO change for %zu nodes: stored in %.0f ms; applied by %zu nodes, p50 %.0f ms, "
      "last %.0f ms after the first update (polling every node's /config in turn)\n",
      n, putAll, n - left, percentile(applied, 0.5),
      *std::max_element(applied.begin(), applied.end()));
  const auto after = api.requests();
  std::printf("  requests the agents made meanwhile: %zu; watch events sent: %.0f KB\n",
              after.size() - log1, static_cast<double>(api.bytesSent() - sent1) / 1000.0);
  for (const auto& [key, count] : byVerb(after, log1)) {
    std::printf("    %-7s %-24s %6zu\n", key.first.c_str(), key.second.c_str(), count);
  }

  for (auto& a : agents) ::kill(a->pid(), SIGTERM);
  int clean = 0;
  for (auto& a : agents) {
    auto exit = a->terminate(20s);
    if (exit && WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0) ++clean;
  }
  std::printf("%d of %zu agents exited 0 on SIGTERM\n", clean, n);
  return left == 0 && clean == static_cast<int>(n) ? 0 : 1;
}
