// Churn soak (issues 19 and 34; not a unit test): the real koordlet binary on a node
// whose pods are replaced continuously, one a second, each with real cgroup v1
// directories made and removed in a private subtree of this machine's cgroupfs, with
// everything on: every QoS strategy (bench/nodeslo-all-on.yaml, served as the node's
// NodeSLO by the API server stand-in), CgroupReconcile and the runtime-hooks
// reconciler, writes for real into the subtree, and the cluster side: the API client's
// informers (Node, NodeSLO, NodeMetric), NodeMetric reports every kReportSeconds,
// the NodeResourceTopology, and evictions. The Node's memory capacity is this
// machine's MemTotal, so the NodeSLO's 70 % is not reached (a build beside the soak
// may use a few GiB); every kCrossEvery the soak lowers memoryEvictThresholdPercent
// to the node's use for a few seconds (a NodeSLO update), BEMemoryEvict evicts the BE pods through
// the API (the stand-in deletes them) and the soak replaces each evicted pod, as a ReplicaSet
// would. BECPUEvict stays off: on a loaded two-CPU machine the suppressed BE quota falls under one
// core, which koordlet counts as BE starving whatever BE uses, and its waves would come at random
// rather than when the soak chooses.
//
// It samples the agent's RSS, open fds, /metrics series, metric-cache bytes and per-pod
// state (koordlet_state_entries: executor owners, failure-log keys, hook state, the
// eviction ledger, the evictor's queue, ...) every few seconds, prints them at 1, 5,
// 10, 30, 60 and 120 minutes (and at the end), and judges them flat after warm-up: the
// 30 s that begin kAfterCross after the last crossing against the 30 s that follow the
// warm-up, which begin as long after a crossing (the same phase of the eviction cycle),
// within a small tolerance (medians of each window). The churn replaces each pod by one of its
// class, so both windows hold the same mix. The per-pod eviction series (koordlet keeps each 5
// minutes) are judged apart: at every sample no more of them than pods evicted within that time. It
// also judges the cluster side: NodeMetric reports kept coming at their interval, one
// NodeResourceTopology create, every threshold crossing evicted, no pod asked twice.
// Exit 0 when all hold, 1 when something grew or failed, 2 on a usage or set-up
// error, 77 (a skip) without root or cgroup v1.
//   soak AGENT_BINARY SECONDS NODESLO [PODS]   (root, cgroup v1 cpu,cpuacct,cpuset,memory)
// Default in `make bench`: 1800 s; a release runs it for 24 h (86400); `make test`
// runs 210 s (the meson test soak-short).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/read_file.h"
#include "cgroupfs/layout.h"
#include "metrics/exporter.h"
#include "qos/yaml_json.h"
#include "tests/support/agent_process.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/synthetic_pods.h"
#include "tests/support/test_apiserver.h"
#include "tests/support/test_kubelet.h"

namespace fs = std::filesystem;
using namespace koord;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

namespace {

constexpr auto kSampleEvery = 5s;
constexpr double kWindowSeconds = 30;  // the reference and the end windows
constexpr int kReportSeconds = 30;     // the NodeMetric's reportIntervalSeconds (its least)
constexpr double kCrossEvery = 120;    // seconds between memory threshold crossings
constexpr auto kCrossFor = 5s;         // how long the threshold stays under the use
// Both judged windows begin this long after a crossing: the same phase of the
// eviction cycle (pods replaced, per-pod eviction series kept 300 s), so the two
// windows compare like with like.
constexpr double kAfterCross = 50;
constexpr double kFirstCross = 10;  // no crossing before the agent has settled
const std::string kNode = "soak-node";

using json = nlohmann::json;

std::string fixture(const std::string& rel) {
  auto text = readFile(std::string(KOORDLET_FIXTURES_DIR) + "/" + rel);
  if (!text) {
    std::cerr << "soak: fixture " << rel << ": " << text.error().message << "\n";
    std::exit(2);
  }
  return *text;
}

// This machine's memory in use (MemTotal - MemAvailable), bytes: what the agent reads.
int64_t hostMemoryUsed() {
  const std::string meminfo = test::readTextFile("/proc/meminfo");
  auto kib = [&](const char* key) -> int64_t {
    const auto at = meminfo.find(key);
    return at == std::string::npos ? 0 : std::atoll(meminfo.c_str() + at + std::strlen(key));
  };
  return (kib("MemTotal:") - kib("MemAvailable:")) * 1024;
}

int64_t hostMemoryTotal() {
  const std::string meminfo = test::readTextFile("/proc/meminfo");
  const auto at = meminfo.find("MemTotal:");
  return at == std::string::npos ? 0 : std::atoll(meminfo.c_str() + at + 9) * 1024;
}

// The pod name of an eviction's target: /api/v1/namespaces/<ns>/pods/<name>/eviction.
std::string evictedName(const std::string& target) {
  const auto end = target.rfind("/eviction");
  const auto begin = target.rfind('/', end - 1);
  return end == std::string::npos || begin == std::string::npos
             ? target
             : target.substr(begin + 1, end - begin - 1);
}

struct Sample {
  double at = 0;  // seconds since the churn began
  std::map<std::string, double> values;
};

long statusKiB(pid_t pid, const char* key) {
  const std::string status = test::readTextFile("/proc/" + std::to_string(pid) + "/status");
  const auto at = status.find(key);
  return at == std::string::npos ? -1 : std::atol(status.c_str() + at + std::strlen(key));
}

double openFds(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  double n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    ++n;
  }
  return n;
}

std::optional<Sample> sample(pid_t pid, uint16_t port, double at) {
  auto reply = test::httpGet(port, "/metrics");
  if (!reply || reply->status != 200) return std::nullopt;
  test::Scrape scrape(reply->body);
  Sample s;
  s.at = at;
  s.values["rss_kib"] = static_cast<double>(statusKiB(pid, "VmRSS:"));
  s.values["fds"] = openFds(pid);
  // Series, the per-pod eviction series apart: they live kEvictionDetailTtl after an
  // eviction, so their number follows the eviction waves; judged by their own bound.
  double series = 0, details = 0;
  const std::string_view body = reply->body;
  for (size_t i = 0; i < body.size();) {
    const size_t eol = std::min(body.find('\n', i), body.size());
    const std::string_view line = body.substr(i, eol - i);
    if (line.starts_with("koordlet_pod_eviction_detail{")) {
      ++details;
    } else if (!line.empty() && line[0] != '#') {
      ++series;
    }
    i = eol + 1;
  }
  s.values["series"] = series;
  s.values["eviction_detail_series"] = details;
  s.values["cache_bytes"] = scrape.value("koordlet_metric_cache_bytes").value_or(-1);
  s.values["cache_series"] = scrape.value("koordlet_metric_cache_series").value_or(-1);
  for (const auto* found : scrape.find("koordlet_state_entries")) {
    s.values["state:" + found->labels.at("state")] = found->value;
  }
  return s;
}

// How much a value may grow from the reference window to the end window and still
// be flat: RSS 2 MiB (allocator noise), fds 2, everything else 5 % plus 3 (the pod
// being replaced at the moment of a sample).
double tolerance(const std::string& key, double reference) {
  if (key == "rss_kib") return 2048;
  if (key == "fds") return 2;
  return reference * 0.05 + 3;
}

// A window's median: a leak moves every sample, while time-bounded state (the
// executor's known texts, kept 10 s; a pod being replaced at the moment of a sample)
// swings from one sample to the next and would make a maximum judge the noise.
double medianIn(const std::vector<Sample>& samples, const std::string& key, double from,
                double to) {
  std::vector<double> in;
  for (const Sample& s : samples) {
    if (s.at < from || s.at > to) continue;
    if (auto it = s.values.find(key); it != s.values.end()) in.push_back(it->second);
  }
  if (in.empty()) return -1;
  std::sort(in.begin(), in.end());
  return in.size() % 2 == 1 ? in[in.size() / 2] : (in[in.size() / 2 - 1] + in[in.size() / 2]) / 2;
}

void print(const Sample& s) {
  std::cout << "  t=" << static_cast<int>(s.at) << "s";
  for (const auto& [k, v] : s.values) std::cout << " " << k << "=" << v;
  std::cout << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::cerr << "usage: soak AGENT_BINARY SECONDS NODESLO [PODS]\n";
    return 2;
  }
  const std::string agentBinary = argv[1];
  const double seconds = std::atof(argv[2]);
  const std::string nodeSloPath = fs::absolute(argv[3]).string();
  const size_t podCount = argc > 4 ? std::stoul(argv[4]) : 50;
  // Warm-up: a fifth of the run, at least a minute (every pod of the first set has
  // been replaced by then at 50 pods, and every strategy has run).
  const double warmup = std::max(60.0, seconds / 5);
  if (seconds < warmup + 2 * kWindowSeconds) {
    std::cerr << "soak: SECONDS must be at least " << warmup + 2 * kWindowSeconds << "\n";
    return 2;
  }
  auto sloText = readFile(nodeSloPath);
  auto sloDoc = sloText ? parseYaml(*sloText, nodeSloPath) : Result<YamlDocument>(sloText.error());
  if (!sloDoc || !sloDoc->value.is_object()) {
    std::cerr << "soak: " << (sloDoc ? nodeSloPath + ": not a mapping" : sloDoc.error().message)
              << "\n";
    return 2;
  }
  if (auto why = test::CgroupV1Tree::unavailableReason(); !why.empty()) {
    // meson's skip (77), which CI's KOORDLET_REQUIRE_ALL=1 makes a failure.
    const char* all = std::getenv("KOORDLET_REQUIRE_ALL");
    std::cerr << "soak: cannot run here: " << why << "\n";
    return all != nullptr && std::string(all) == "1" ? 1 : 77;
  }

  const fs::path work = fs::temp_directory_path() / ("koordlet-soak-" + std::to_string(::getpid()));
  fs::create_directories(work / "audit");
  fs::create_directories(work / "checkpoints");
  int status = 0;
  {
    test::CgroupV1Tree tree("soak", (work / "cgroup").string());
    const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
    tree.mkdirs(layout.qosDir(KubeQos::kBurstable));
    tree.mkdirs(layout.qosDir(KubeQos::kBestEffort));

    // The cluster: the Node (memory capacity this machine's MemTotal), its
    // NodeSLO (the file's spec), its NodeMetric (reports every kReportSeconds).
    test::TestApiServer api(test::TestApiServer::Options{"soak-token", 60000ms, false});
    json node = json::parse(fixture("kube-api/node-get.body"));
    node["metadata"] = {{"name", kNode}};
    const int64_t capacity = hostMemoryTotal();
    node["status"]["capacity"]["memory"] = std::to_string(capacity);
    node["status"]["allocatable"]["memory"] = std::to_string(capacity);
    api.put("nodes", node);
    json slo = {{"metadata", {{"name", kNode}}}, {"spec", sloDoc->value}};
    const int normalThreshold =
        slo["spec"]["resourceUsedThresholdWithBE"].value("memoryEvictThresholdPercent", 70);
    api.put("nodeslos", slo);
    json nodeMetric = json::parse(fixture("kube-api/nodemetric-get.body"));
    nodeMetric["metadata"] = {{"name", kNode}};
    nodeMetric.erase("status");
    nodeMetric["spec"]["metricCollectPolicy"]["aggregateDurationSeconds"] = 60;
    nodeMetric["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] = kReportSeconds;
    api.put("nodemetrics", nodeMetric);
    const std::string kubeconfig = (work / "kubeconfig").string();
    std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: s\nclusters:\n"
                                 "- name: c\n  cluster:\n    server: "
                              << api.url()
                              << "\ncontexts:\n- name: s\n  context: {cluster: c, user: u}\n"
                                 "users:\n- name: u\n  user:\n    token: soak-token\n";

    std::deque<test::SyntheticPod> pods;
    size_t next = 0;
    // A pod of the given class (an evicted pod's replacement keeps the node's mix).
    auto addPod = [&](std::optional<KubeQos> qos = std::nullopt) {
      while (qos && test::syntheticPod(next).qos != *qos) ++next;
      pods.push_back(test::syntheticPod(next++));
      for (const auto& d : test::syntheticPodDirs(layout, pods.back())) tree.mkdirs(d);
      api.put("pods", test::syntheticPodJson(pods.back()));
    };
    // The runtime tears down first (cgroups), then the kubelet and the API forget it.
    auto dropPod = [&](std::deque<test::SyntheticPod>::iterator it) {
      for (const auto& d : test::syntheticPodDirs(layout, *it)) tree.removeDirs(d);
      api.remove("pods", it->name, test::kSyntheticNamespace);
      return pods.erase(it);
    };
    for (size_t i = 0; i < podCount; ++i) addPod();
    test::TestKubelet kubelet;
    auto publish = [&] { kubelet.setBody(test::syntheticPodListJson({pods.begin(), pods.end()})); };
    publish();

    test::AgentProcess agent(
        agentBinary,
        {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + tree.linkDir(), "--kubelet-insecure-tls=true",
         "--kubelet-addr=127.0.0.1", "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
         "--kubelet-sync-interval=1s", "--collect-res-used-interval=1s",
         "--reconcile-interval-seconds=1", "--config=" + nodeSloPath, "--kubeconfig=" + kubeconfig,
         "--feature-gates=CgroupReconcile=true,BEMemoryEvict=true",
         "--audit-log-dir=" + (work / "audit").string(), "--sys-root-dir=/sys/",
         "--prediction-checkpoint-filepath=" + (work / "checkpoints").string()},
        (work / "agent.log").string(), kNode);
    const auto port = agent.waitForServingPort(30s);
    if (!port) {
      std::cerr << "soak: the agent did not start:\n" << agent.log();
      return 2;
    }

    std::cout << "soak: " << podCount << " pods, one replaced a second, " << seconds
              << " s, warm-up " << warmup << " s; NodeMetric every " << kReportSeconds
              << " s; memory threshold crossed every " << kCrossEvery << " s\n";
    std::vector<Sample> samples;
    const bool verbose = std::getenv("SOAK_VERBOSE") != nullptr;  // every sample printed
    const auto start = Steady::now();
    auto nextSample = start;
    auto nextChurn = start + 1s;
    // Crossings every kCrossEvery on a grid with one kAfterCross before the reference
    // window and the last one kAfterCross before the end window (which then ends the
    // judgement). The grid starts early (the first crossing in the first kCrossEvery)
    // so that, in a run long enough, the reference window holds the per-pod eviction
    // series of as many waves as any later window does.
    double nextCross = warmup - kAfterCross;
    while (nextCross - kCrossEvery >= kFirstCross) nextCross -= kCrossEvery;
    double lastCross = warmup - kAfterCross;
    while (lastCross + kCrossEvery + kAfterCross + kWindowSeconds <= seconds) {
      lastCross += kCrossEvery;
    }
    const double endWindow = lastCross + kAfterCross;
    bool crossing = false;  // the threshold is under the use until restoreAt
    auto restoreAt = start;
    size_t replaced = 0, evicted = 0, crossings = 0;
    std::vector<size_t> evictedAtCross;  // `evicted` when each crossing began
    std::vector<double> marks = {60, 300, 600, 1800, 3600, 7200};
    // percent 0: the file's threshold and lower percent again.
    auto setThreshold = [&](int percent) {
      json& t = slo["spec"]["resourceUsedThresholdWithBE"];
      if (percent > 0) {
        t["memoryEvictThresholdPercent"] = percent;
        t["memoryEvictLowerPercent"] = percent - 1;
      } else {
        t["memoryEvictThresholdPercent"] = normalThreshold;
        t.erase("memoryEvictLowerPercent");
      }
      api.put("nodeslos", slo);
    };
    while (true) {
      const auto now = Steady::now();
      const double at = std::chrono::duration<double>(now - start).count();
      if (at >= seconds) break;
      if (!agent.running()) {
        std::cerr << "soak: the agent exited at t=" << at << " s:\n" << agent.log();
        return 1;
      }
      if (!crossing && at >= nextCross && nextCross <= lastCross) {
        // A quarter of the node's use now (whole percent, as the agent computes it),
        // lower one under that: every BE pod is a victim (their cgroups hold no
        // memory), and a build beside the soak freeing GiBs in the moment cannot take
        // the node under it (its use without the build is more than a quarter).
        setThreshold(std::max<int>(1, static_cast<int>(hostMemoryUsed() * 100 / capacity) / 4));
        restoreAt = now + kCrossFor;
        crossing = true;
        ++crossings;
        evictedAtCross.push_back(evicted);
        nextCross += kCrossEvery;
      }
      if (crossing && now >= restoreAt) {
        setThreshold(0);
        crossing = false;
      }
      if (now >= nextChurn) {
        // Evicted pods (gone from the API) are replaced, then the oldest pod goes and
        // a new one of its class comes: the node's mix of classes stays the same, so
        // the per-pod state the judgement compares is for the same pods' kinds.
        std::vector<KubeQos> evictedNow;  // (adding to a deque invalidates its iterators)
        for (auto it = pods.begin(); it != pods.end();) {
          if (api.get("pods", it->name, test::kSyntheticNamespace)) {
            ++it;
          } else {
            evictedNow.push_back(it->qos);
            it = dropPod(it);
          }
        }
        for (KubeQos qos : evictedNow) addPod(qos);
        evicted += evictedNow.size();
        const KubeQos oldest = pods.front().qos;
        dropPod(pods.begin());
        addPod(oldest);
        publish();
        ++replaced;
        nextChurn += 1s;
      }
      if (now >= nextSample) {
        if (auto s = sample(agent.pid(), *port, at)) {
          samples.push_back(*s);
          if (verbose) print(*s);
          if (!marks.empty() && at >= marks.front()) {
            print(*s);
            marks.erase(marks.begin());
          }
        }
        nextSample += kSampleEvery;
      }
      auto wake = std::min(nextChurn, nextSample);
      if (crossing) wake = std::min(wake, restoreAt);
      std::this_thread::sleep_until(wake);
    }
    if (samples.empty()) {
      std::cerr << "soak: no sample\n";
      return 1;
    }
    std::cout << "end:\n";
    print(samples.back());
    std::cout << "replaced " << replaced << " pods, " << evicted << " evicted and replaced\n";

    // Flat after warm-up: the end window's median within tolerance of the reference
    // window's median.
    const double end = endWindow + kWindowSeconds;
    std::cout << "flatness (reference " << warmup << ".." << warmup + kWindowSeconds << " s, end "
              << end - kWindowSeconds << ".." << end << " s):\n";
    for (const auto& [key, ignored] : samples.back().values) {
      if (key == "eviction_detail_series") continue;  // judged below, by their bound
      const double ref = medianIn(samples, key, warmup, warmup + kWindowSeconds);
      const double last = medianIn(samples, key, end - kWindowSeconds, end);
      const bool flat = ref >= 0 && last <= ref + tolerance(key, ref);
      std::cout << "  " << key << ": " << ref << " -> " << last << (flat ? " flat" : " GREW")
                << "\n";
      if (!flat) status = 1;
    }

    // The cluster side: reports kept coming, one topology object, every crossing
    // evicted, no pod asked twice.
    size_t reports = 0, topologyCreates = 0, evictionRequests = 0;
    std::map<std::string, size_t> evictionsOf;
    for (const auto& r : api.requests()) {
      if (r.resource == "nodemetrics/status" && (r.verb == "update" || r.verb == "patch") &&
          r.status == 200) {
        ++reports;
      }
      if (r.resource == "noderesourcetopologies" && r.verb == "create") ++topologyCreates;
      if (r.resource == "pods/eviction" && r.verb == "create") {
        ++evictionRequests;
        ++evictionsOf[evictedName(r.target)];
      }
    }
    size_t twice = 0;
    for (const auto& [name, n] : evictionsOf) twice += n > 1 ? 1 : 0;

    // The per-pod eviction series: at every sample no more than the pods evicted
    // within their lifetime (a round's slack at the old end, the scrape's at the new),
    // so they go when they expire and never pile up.
    std::vector<std::pair<double, std::string>> accepted;  // (t, pod) of each evicted pod
    for (const auto& r : api.requests()) {
      if (r.resource == "pods/eviction" && r.verb == "create" && r.status >= 200 &&
          r.status < 300) {
        accepted.emplace_back(std::chrono::duration<double>(r.at - start).count(),
                              evictedName(r.target));
      }
    }
    size_t overBound = 0;
    double maxDetails = 0;
    for (const Sample& s : samples) {
      const double details = s.values.at("eviction_detail_series");
      std::set<std::string> live;
      for (const auto& [t, name] : accepted) {
        if (t >= s.at - Exporter::kEvictionDetailTtl - 5 && t <= s.at + 2) live.insert(name);
      }
      maxDetails = std::max(maxDetails, details);
      if (details > static_cast<double>(live.size())) {
        if (overBound++ == 0) {
          std::cout << "t=" << s.at << " s: " << details << " per-pod eviction series, "
                    << live.size() << " pods evicted within their lifetime\n";
        }
      }
    }
    std::cout << "per-pod eviction series: at most " << maxDetails << ", over their bound in "
              << overBound << " of " << samples.size() << " samples\n";
    if (overBound > 0) status = 1;
    // Stored reports: the first at once, then one an interval; allow for the set-up
    // and one late tick.
    const size_t expectedReports = static_cast<size_t>(seconds / kReportSeconds) - 2;
    std::cout << "cluster: " << reports << " NodeMetric reports (at least " << expectedReports
              << "), " << topologyCreates << " NodeResourceTopology create(s), " << crossings
              << " threshold crossings, " << evictionRequests << " eviction requests for "
              << evictionsOf.size() << " pods, " << twice << " pods asked more than once\n";
    if (reports < expectedReports) {
      std::cout << "NodeMetric reports stopped or slowed\n";
      status = 1;
    }
    if (topologyCreates != 1) {
      std::cout << "expected one NodeResourceTopology create\n";
      status = 1;
    }
    // Each crossing evicted (the pods it freed were replaced before the next one).
    size_t idleCrossings = 0;
    for (size_t i = 0; i < evictedAtCross.size(); ++i) {
      const size_t until = i + 1 < evictedAtCross.size() ? evictedAtCross[i + 1] : evicted;
      if (until == evictedAtCross[i]) ++idleCrossings;
    }
    if (idleCrossings > 0) {
      std::cout << "a threshold crossing evicted nothing\n";
      status = 1;
    }
    if (twice > 0) {
      std::cout << "a pod was asked for eviction twice\n";
      status = 1;
    }

    const std::string log = agent.log();
    const auto lines = std::count(log.begin(), log.end(), '\n');
    std::cout << "agent log: " << lines << " lines for " << replaced << " pods replaced, "
              << evictionRequests << " evictions\n";
    // Churn is normal: it must not be said per pod. An eviction is said (request, answer).
    if (static_cast<size_t>(lines) > replaced / 10 + 2 * evictionRequests + 50) {
      std::cout << "the agent's log grew with the churn:\n"
                << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
      status = 1;
    }
    auto exit = agent.terminate(10s);
    if (!exit || !WIFEXITED(*exit) || WEXITSTATUS(*exit) != 0) {
      std::cout << "the agent did not exit 0 on SIGTERM\n";
      status = 1;
    }
    if (status != 0) {
      const std::string all = agent.log();
      std::cout << "the agent's log (end):\n"
                << all.substr(all.size() > 6000 ? all.size() - 6000 : 0);
    }
  }
  fs::remove_all(work);
  std::cout << (status == 0 ? "soak: flat\n" : "soak: NOT flat\n");
  return status;
}
