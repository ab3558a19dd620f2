// The wake-up on pod cgroups (issue 46) on the real cgroup v1 kernel (root), the agent
// at koordlet's defaults (--kubelet-sync-interval 10 s, the hooks' reconciler every
// 10 s) on a private tree, NRI off, so only the wake-up can be quick:
//   burst  N BE pods listed by the kubelet stand-in and their pod cgroups made at once,
//          as a node taking a batch job's pods: the kubelet requests, wake-ups and
//          reconciler rounds that cost, and the time until every pod holds its batch
//          values (shares 1024, quota 100000, memory 64 MiB);
//   idle   M BE pods running and nothing changing for S seconds: the agent's CPU
//          (utime + stime) with the wake-up on inotify, with it polling (inotify refused:
//          fs.inotify.max_user_instances 0 while the agent starts) and, given one, an
//          agent built before issue 46 (no wake-up); the watch's events meanwhile.
//
//   build/bench/pod_watch_bench <koordlet-before|-> <koordlet> [burst=100] [idle-pods=500]
//       [idle-seconds=60]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/inotify_refusal.h"
#include "bench/proc_stats.h"
#include "tests/support/agent_process.h"
#include "tests/support/batch_pod.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace {

using koord::test::AgentProcess;
using koord::test::CgroupV1Tree;
using koord::test::TempTree;
using koord::test::TestKubelet;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kLimit = 60s;
koord::bench::InotifyRefusal gInotify;  // restored before any exit

std::string watchUid(int i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "6b00%04d-cccc-4ddd-8eee-ffffffffffff", i);
  return buf;
}
std::string podRel(int i) { return "kubepods/besteffort/pod" + watchUid(i); }

std::string podList(int from, int to, const char* phase) {
  json items = json::array();
  // One LS pod always listed: an empty list reads as a kubelet restart.
  items.push_back({{"metadata", {{"name", "ls"}, {"namespace", "default"}, {"uid", "ls-uid"}}},
                   {"spec", {{"containers", {{{"name", "app"}}}}}},
                   {"status", {{"phase", "Running"}, {"qosClass", "Burstable"}}}});
  const json& batch = koord::test::kBatchResources;
  for (int i = from; i < to; ++i) {
    items.push_back(
        {{"metadata",
          {{"name", "be-" + std::to_string(i)},
           {"namespace", "default"},
           {"uid", watchUid(i)},
           {"labels", koord::test::kBeLabels},
           {"annotations", koord::test::kBeBatchAnnotations}}},
         {"spec",
          {{"priorityClassName", "koord-batch"},
           {"containers",
            {{{"name", "stress"}, {"resources", {{"limits", batch}, {"requests", batch}}}}}}}},
         {"status", {{"phase", phase}, {"qosClass", "BestEffort"}}}});
  }
  return json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}}.dump();
}

std::string knob(const CgroupV1Tree& tree, const char* c, const std::string& dir, const char* f) {
  std::ifstream in(tree.kernelPath(c, dir, f));
  std::string s;
  std::getline(in, s);
  return s;
}

bool batchValues(const CgroupV1Tree& tree, int i) {
  return knob(tree, "cpu", podRel(i), "cpu.shares") == "1024" &&
         knob(tree, "cpu", podRel(i), "cpu.cfs_quota_us") == "100000" &&
         knob(tree, "memory", podRel(i), "memory.limit_in_bytes") == "67108864";
}

void makePod(CgroupV1Tree& tree, int i) {
  tree.mkdirs(podRel(i));
  std::ofstream(tree.kernelPath("cpu", podRel(i), "cpu.shares")) << "2";
}

// One agent at the defaults on `tree`, served pods by `kubelet`.
struct Agent {
  std::unique_ptr<AgentProcess> process;
  uint16_t port = 0;

  Agent(const std::string& bin, const CgroupV1Tree& tree, const TestKubelet& kubelet,
        const TempTree& tmp, const std::string& tag) {
    process = std::make_unique<AgentProcess>(
        bin,
        std::vector<std::string>{
            "--addr=127.0.0.1:0", "--cgroup-root-dir=" + tree.linkDir(), "--proc-root-dir=/proc/",
            "--var-run-root-dir=" + tmp.path("run-" + tag), "--kubelet-insecure-tls=true",
            "--kubelet-addr=127.0.0.1",
            "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
            "--enable-nri-runtime-hook=false", "--enable-runtime-hook-server=false",
            "--audit-log-dir=" + tmp.path("audit-" + tag)},
        tmp.path("agent-" + tag + ".log"), "bench-node");
    auto p = process->waitForServingPort(kLimit);
    if (!p) die("the agent did not start serving");
    port = *p;
    std::string why = koord::test::waitFor(kLimit, [&]() -> std::string {
      auto r = koord::test::httpGet(port, "/readyz");
      return r && r->status == 200 ? "" : "not ready";
    });
    if (!why.empty()) die(why);
  }
  [[noreturn]] void die(const std::string& what) const {
    gInotify.restore();
    const std::string l = process->log();
    std::fprintf(stderr, "pod_watch_bench: %s\n--- agent log (tail) ---\n%s\n", what.c_str(),
                 l.substr(l.size() > 6000 ? l.size() - 6000 : 0).c_str());
    std::exit(1);
  }
  json config() const {
    auto c = koord::test::httpGet(port, "/config");
    if (!c || c->status != 200) die("no /config");
    return json::parse(c->body);
  }
};

int hookRuns(const json& config) { return config["strategyRuns"].value("runtime_hooks", 0); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s <koordlet-before|-> <koordlet> [burst=100] [idle-pods=500] "
                 "[idle-seconds=60]\n",
                 argv[0]);
    return 2;
  }
  const std::string before = argv[1], koordlet = argv[2];
  const int burst = argc > 3 ? std::atoi(argv[3]) : 100;
  const int idlePods = argc > 4 ? std::atoi(argv[4]) : 500;
  const int idleSeconds = argc > 5 ? std::atoi(argv[5]) : 60;
  if (burst < 1 || idlePods < 1 || idleSeconds < 1) {
    std::fprintf(stderr, "pod_watch_bench: every count must be at least 1\n");
    return 2;
  }
  if (std::string why = CgroupV1Tree::unavailableReason(); !why.empty()) {
    std::fprintf(stderr, "pod_watch_bench: %s\n", why.c_str());
    return 77;
  }
  TempTree tmp;
  CgroupV1Tree tree("watch-bench", tmp.path("cgroup"));
  tree.mkdirs("kubepods/besteffort");
  tree.mkdirs("kubepods/burstable");
  TestKubelet kubelet;
  kubelet.setBody(podList(0, 0, "Running"));

  // 1. The burst.
  {
    Agent agent(koordlet, tree, kubelet, tmp, "burst");
    std::this_thread::sleep_for(3s);  // two pod rounds, as the QoS loop waits for
    const json c0 = agent.config();
    const size_t requests0 = kubelet.requestCount();
    kubelet.setBody(podList(0, burst, "Pending"));
    const auto t0 = Clock::now();
    for (int i = 0; i < burst; ++i) makePod(tree, i);
    const double madeMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::string why = koord::test::waitFor(
        kLimit,
        [&]() -> std::string {
          for (int i = 0; i < burst; ++i) {
            if (!batchValues(tree, i)) return "pod " + std::to_string(i) + " not yet";
          }
          return "";
        },
        5ms);
    if (!why.empty()) agent.die("the burst: " + why);
    const double allMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    std::this_thread::sleep_for(1s);  // a trailing sync, if any, has come
    const json c1 = agent.config();
    const json& w0 = c0["podCgroupWatch"];
    const json& w1 = c1["podCgroupWatch"];
    std::printf(
        "burst of %d pods (their cgroups made in %.0f ms): every pod's batch values after "
        "%.0f ms; kubelet requests %zu (started by the wake-up %d), wake-ups %d, pod dir "
        "events %d, the hooks' reconciler ran %d times\n",
        burst, madeMs, allMs, kubelet.requestCount() - requests0,
        w1["kubeletSyncsWoken"].get<int>() - w0["kubeletSyncsWoken"].get<int>(),
        w1["wakeUps"].get<int>() - w0["wakeUps"].get<int>(),
        w1["podDirEvents"].get<int>() - w0["podDirEvents"].get<int>(), hookRuns(c1) - hookRuns(c0));
    std::fflush(stdout);
    if (agent.process->terminate(20s) != 0) agent.die("did not stop cleanly");
  }
  for (int i = 0; i < burst; ++i) tree.removeDirs(podRel(i));

  // 2. Idle at M pods.
  kubelet.setBody(podList(0, idlePods, "Running"));
  for (int i = 0; i < idlePods; ++i) makePod(tree, i);
  struct Run {
    std::string name, bin;
    bool refuseInotify;
  };
  std::vector<Run> runs = {{"inotify", koordlet, false},
                           {"polling (inotify refused)", koordlet, true}};
  if (before != "-") runs.push_back({"before issue 46 (no wake-up)", before, false});
  std::printf("idle: %d BE pods, %d s a run, the agent's CPU (millicores of one core)\n", idlePods,
              idleSeconds);
  for (size_t r = 0; r < runs.size(); ++r) {
    if (runs[r].refuseInotify) {
      gInotify.refuse();
    }
    std::optional<Agent> agent;
    agent.emplace(runs[r].bin, tree, kubelet, tmp, "idle-" + std::to_string(r));
    if (runs[r].refuseInotify) {
      std::string why = koord::test::waitFor(kLimit, [&]() -> std::string {
        return agent->process->log().find("inotify refused") != std::string::npos ? "" : "not said";
      });
      if (!why.empty()) agent->die("the agent never said inotify was refused");
      gInotify.restore();  // the host's limit back at once
    }
    std::this_thread::sleep_for(15s);  // every pod's values written, the first rounds done
    const json c0 = agent->config();
    const double cpu0 = koord::bench::cpuSeconds(agent->process->pid());
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(idleSeconds));
    const double cpu1 = koord::bench::cpuSeconds(agent->process->pid());
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    const json c1 = agent->config();
    const json w0 = c0.value("podCgroupWatch", json::object());
    const json w1 = c1.value("podCgroupWatch", json::object());
    std::printf("  %-30s %7.1f mcores; RSS %.1f MiB; watch %s, pod dir events %d, wake-ups %d\n",
                runs[r].name.c_str(), (cpu1 - cpu0) / wall * 1000,
                koord::bench::rssMiB(agent->process->pid()),
                w1.value("mode", std::string("absent")).c_str(),
                w1.value("podDirEvents", 0) - w0.value("podDirEvents", 0),
                w1.value("wakeUps", 0) - w0.value("wakeUps", 0));
    std::fflush(stdout);
    if (agent->process->terminate(20s) != 0) agent->die("did not stop cleanly");
  }
  return 0;
}
