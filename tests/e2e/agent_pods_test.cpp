// End-to-end test of the real koordlet binary with pods. Its inputs are real
// captures: the kubelet's GET /pods reply of a k8s 1.35 node (served by
// TestKubelet) and the cgroup v1 files of an EKS container (copied into a fake
// cgroupfs-driver tree, one directory per pod and container). One container's
// CPU counter and the besteffort QoS counter grow at known rates while the agent
// runs. The test checks what an operator scraping the agent sees: per-pod and
// per-container usage, requests and limits, the kubelet client's series, a
// lint-clean exposition; then that a pod leaving the kubelet's list leaves
// /metrics, that a failing kubelet keeps the last good list, and that SIGTERM
// ends the agent with status 0 and no error line in its log.
//
// A process, its timers and a counter-writing thread run in real time, so every
// wait is a poll with a deadline wide enough for a loaded 2-core machine.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"
#include "tests/support/agent_process.h"
#include "tests/support/e2e_cluster.h"
#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/promtool.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_agent_pods {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::CgroupFile;
using koord::KubeQos;
using koord::Pod;
using koord::test::AgentProcess;
using koord::test::describe;
using koord::test::httpGet;
using koord::test::Labels;
using koord::test::readFixture;
using koord::test::Scrape;
using koord::test::TempTree;
using koord::test::TestKubelet;
using koord::test::waitFor;
using SteadyClock = std::chrono::steady_clock;
using namespace std::chrono_literals;

const std::string kNode = "e2e-node";
// Every phase settles within a few kubelet syncs (1 s) and collections (300 ms);
// 20 s leaves room for a loaded 2-core machine and sanitizer builds.
constexpr auto kPhaseLimit = 20s;
// Rates the counter writer gives the chosen container (and its pod) and the
// besteffort QoS cgroup, in CPU-seconds per real second.
constexpr double kContainerCores = 0.5;
constexpr double kBestEffortCores = 0.25;

// The EKS capture's container directory, the same under each controller mount.
const std::string kEksRoot = "cgroup/v1/elastic-amzn2-eks-node/sys/fs/cgroup";
const std::string kEksContainer =
    "kubepods.slice/kubepods-burstable.slice/"
    "kubepods-burstable-pod7a96c459_d529_44ae_9f99_90d3798d6426.slice/"
    "cri-containerd-1d3d308a7d48a27814a68bf33a44acf4441c9c02463ca0bc1cdfdc8c0b4a8496.scope";

// A file of the EKS capture by meaning: the capture mounts cpu and cpuacct together.
std::string eksFile(CgroupFile file) {
  const koord::CgroupFileSpec& spec = koord::cgroupFileSpec(file);
  const std::string mount = file == CgroupFile::kMemoryStat ? "memory" : "cpu,cpuacct";
  return readFixture(kEksRoot + "/" + mount + "/" + kEksContainer + "/" + spec.v1File);
}

// The value of `key` in a flat-keyed file ("key value" lines); the test's own
// reading, independent of the agent's parser.
uint64_t flatKeyed(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  FAIL("no " << key << " in:\n" << text);
  return 0;
}

// Replaces a file by renaming a complete copy over it, so a concurrent reader
// sees the old or the new content, never a truncated one (a torn read would be a
// parse error: an 'E' line in the agent's log).
void replaceFile(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out.flush()) return;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);  // fails only at teardown: ignored
}

// Keeps cpuacct.usage counters growing at fixed rates from when it starts. It
// rewrites them every 20 ms, far more often than the agent's 300 ms collection,
// so each interval the agent measures is off by at most one write period at
// either end (±0.035 cores at 0.5 cores); writing at the collection period itself
// would alias to rates of 0 or 2×. Stops and joins when destroyed.
class CpuCounterWriter {
 public:
  struct Counter {
    std::string path;
    uint64_t startNs;
    double cores;
  };
  explicit CpuCounterWriter(std::vector<Counter> counters)
      : thread_([counters = std::move(counters)](std::stop_token stop) {
          const auto start = SteadyClock::now();
          while (!stop.stop_requested()) {
            const double elapsed =
                std::chrono::duration<double>(SteadyClock::now() - start).count();
            for (const Counter& c : counters) {
              const auto grown = static_cast<uint64_t>(c.cores * elapsed * 1e9);
              replaceFile(c.path, std::to_string(c.startNs + grown) + "\n");
            }
            std::this_thread::sleep_for(20ms);
          }
        }) {}

 private:
  std::jthread thread_;
};

// What the test knows of one pod of the capture.
struct PodCase {
  const Pod* pod;
  bool hasCgroup;  // phase Running: the kubelet keeps cgroups of live pods only
};

}  // namespace

TEST_CASE(
    "the agent exports every pod of a real kubelet capture, drops a pod that leaves the list, "
    "keeps the last good list while the kubelet fails, and stops cleanly on SIGTERM") {
  const auto testStart = SteadyClock::now();
  const char* agentBinary = std::getenv("KOORDLET_BIN");
  if (agentBinary == nullptr || *agentBinary == '\0') {
    FAIL("KOORDLET_BIN is not set (tests/e2e/meson.build sets it to the koordlet binary)");
  }

  // 1. The capture: 24 pods, their uids, kube QoS and containers.
  const std::string podListBody = readFixture("kubelet/k8s-1.35/pods.json");
  auto parsed = koord::parsePodList(podListBody);
  if (!parsed) FAIL("parsePodList: " << parsed.error().message);
  const std::vector<Pod>& pods = *parsed;
  REQUIRE(pods.size() == 24);

  std::vector<PodCase> cases;
  for (const Pod& pod : pods) cases.push_back({&pod, pod.phase == "Running"});

  // The container whose CPU grows: the first running one with a cpu request and limit.
  const Pod* chosenPod = nullptr;
  const koord::Container* chosen = nullptr;
  for (const Pod& pod : pods) {
    if (pod.phase != "Running" || chosen != nullptr) continue;
    for (const koord::Container& c : pod.containers) {
      if (!c.id.empty() && c.requests.cpuMilli && c.limits.cpuMilli) {
        chosenPod = &pod;
        chosen = &c;
        break;
      }
    }
  }
  REQUIRE(chosen != nullptr);
  const std::string chosenId = chosen->runtime + "://" + chosen->id;
  const double chosenRequestCores = static_cast<double>(*chosen->requests.cpuMilli) / 1000.0;
  const double chosenLimitCores = static_cast<double>(*chosen->limits.cpuMilli) / 1000.0;
  // The pod that later leaves the list: the last running one, not the chosen one's.
  const Pod* removed = nullptr;
  for (const PodCase& pc : cases) {
    if (pc.hasCgroup && pc.pod != chosenPod) removed = pc.pod;
  }
  REQUIRE(removed != nullptr);

  // 2. The EKS files every pod and container gets, and the memory they mean:
  // anon + unevictable (no page cache), 1119498240 in this capture.
  const std::string memoryStat = eksFile(CgroupFile::kMemoryStat);
  const std::string cpuStat = eksFile(CgroupFile::kCpuStat);
  const std::string usageText = eksFile(CgroupFile::kCpuUsage);
  const uint64_t startUsageNs = std::strtoull(usageText.c_str(), nullptr, 10);
  REQUIRE(startUsageNs > 0);
  const uint64_t expectedMemory = flatKeyed(memoryStat, "total_inactive_anon") +
                                  flatKeyed(memoryStat, "total_active_anon") +
                                  flatKeyed(memoryStat, "total_unevictable");
  REQUIRE(expectedMemory == 1119498240u);

  // The fake cgroup v1 tree, cgroupfs driver: <root>/<controller>/kubepods/...
  TempTree work;
  const std::string cgroupRoot = work.path("cgroup");
  const std::string logPath = work.path("agent.log");
  const koord::CgroupLayout layout(koord::CgroupVersion::kV1, koord::CgroupDriver::kCgroupfs);
  auto rel = [&](const std::string& dir, CgroupFile file) {
    return std::filesystem::relative(koord::cgroupFilePath(layout, cgroupRoot, dir, file),
                                     work.path())
        .string();
  };
  auto writeCgroup = [&](const std::string& dir) {
    work.write(rel(dir, CgroupFile::kCpuUsage), usageText);
    work.write(rel(dir, CgroupFile::kMemoryStat), memoryStat);
    work.write(rel(dir, CgroupFile::kCpuStat), cpuStat);
  };
  std::string chosenPodDir;
  std::string chosenDir;
  for (const PodCase& pc : cases) {
    if (!pc.hasCgroup) continue;
    const std::string podDir = layout.podDir(pc.pod->kubeQos, pc.pod->uid);
    writeCgroup(podDir);
    for (const koord::Container& c : pc.pod->containers) {
      if (c.id.empty()) continue;  // not created: no cgroup yet
      auto dir = layout.containerDir(podDir, c.runtime, c.id);
      if (!dir) FAIL("containerDir: " << dir.error().message);
      writeCgroup(*dir);
      if (&c == chosen) {
        chosenPodDir = podDir;
        chosenDir = *dir;
      }
    }
  }
  const std::string beDir = layout.qosDir(KubeQos::kBestEffort);
  work.write(rel(beDir, CgroupFile::kCpuUsage), usageText);
  REQUIRE(!chosenDir.empty());

  // The chosen pod grows with its container, as a pod's counter sums its containers'.
  CpuCounterWriter writer({
      {koord::cgroupFilePath(layout, cgroupRoot, chosenDir, CgroupFile::kCpuUsage), startUsageNs,
       kContainerCores},
      {koord::cgroupFilePath(layout, cgroupRoot, chosenPodDir, CgroupFile::kCpuUsage), startUsageNs,
       kContainerCores},
      {koord::cgroupFilePath(layout, cgroupRoot, beDir, CgroupFile::kCpuUsage), startUsageNs,
       kBestEffortCores},
  });

  // 3. The kubelet stand-in and the agent.
  const std::string sysFsRoot = work.path("sys-fs");
  std::filesystem::create_directories(sysFsRoot);
  // What this host's CPU says about RDT decides what the agent must report.
  const bool hostRdt = [] {
    auto text = koord::readFile("/proc/cpuinfo");
    return text && text->find(" cat_l3") != std::string::npos &&
           text->find(" mba") != std::string::npos;
  }();
  TestKubelet kubelet;
  kubelet.setBody(podListBody);
  AgentProcess agent(
      agentBinary,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + cgroupRoot, "--proc-root-dir=/proc/",
       "--kubelet-insecure-tls=true", "--kubelet-addr=127.0.0.1",
       "--kubelet-read-only-port=" + std::to_string(kubelet.port()), "--kubelet-sync-interval=1s",
       "--collect-res-used-interval=300ms", "--dry-run",
       // Memory QoS on, over a tree without memory.min/low/high (as a vanilla v1
       // kernel); resctrl pointed at an empty sys-fs: both must say so and go on.
       "--feature-gates=CgroupReconcile=true", "--sys-fs-root-dir=" + sysFsRoot},
      logPath, kNode);
  auto failWith = [&](const std::string& what, const std::string& why) {
    FAIL(what << ": " << why << "\n--- agent log ---\n" << agent.log());
  };

  const auto servedOn = agent.waitForServingPort(10s);
  if (!servedOn) {
    failWith("agent start",
             agent.running() ? "no 'serving on ... (port N)' line in 10 s" : "the agent exited");
  }
  const uint16_t port = *servedOn;

  // Scrapes /readyz and /metrics; a reason when either did not answer 200. An agent
  // that has exited fails the test at once rather than at the end of the wait.
  std::string readyz;
  std::optional<Scrape> metrics;
  auto scrape = [&]() -> std::string {
    if (!agent.running()) failWith("scrape", "the agent exited");
    auto r = httpGet(port, "/readyz");
    if (!r) return "/readyz: no reply";
    readyz = r->body;
    if (r->status != 200) return "/readyz: status " + std::to_string(r->status) + ": " + readyz;
    auto m = httpGet(port, "/metrics");
    if (!m) return "/metrics: no reply";
    if (m->status != 200) return "/metrics: status " + std::to_string(m->status);
    metrics.emplace(std::move(m->body));
    return "";
  };
  // Every pod that has a cgroup and is in the list must show its memory series.
  auto podsWithCgroupShown = [&](const Pod* except) -> std::string {
    for (const PodCase& pc : cases) {
      if (!pc.hasCgroup || pc.pod == except) continue;
      auto v = metrics->value("koordlet_pod_memory_usage_bytes", {{"pod_uid", pc.pod->uid}});
      if (!v) return "no koordlet_pod_memory_usage_bytes for pod " + pc.pod->name;
      if (*v != static_cast<double>(expectedMemory)) {
        return "koordlet_pod_memory_usage_bytes of " + pc.pod->name + " is " + describe(v);
      }
    }
    return "";
  };
  const std::string podCount = std::to_string(pods.size());
  const Labels node{{"node", kNode}};

  // 4. Everything of the capture is exported.
  {
    std::string why = waitFor(kPhaseLimit, [&]() -> std::string {
      if (auto s = scrape(); !s.empty()) return s;
      if (readyz.find("ok, " + podCount + " pods") == std::string::npos) {
        return "/readyz lacks 'ok, " + podCount + " pods':\n" + readyz;
      }
      auto cpu = metrics->value("koordlet_container_cpu_usage_cores", {{"container_id", chosenId}});
      if (!cpu || *cpu < 0.3 || *cpu > 0.7) {
        return "koordlet_container_cpu_usage_cores of " + chosenId + " is " + describe(cpu) +
               ", want 0.3..0.7";
      }
      auto podCpu = metrics->value("koordlet_pod_cpu_usage_cores", {{"pod_uid", chosenPod->uid}});
      if (!podCpu || *podCpu < 0.3 || *podCpu > 0.7) {
        return "koordlet_pod_cpu_usage_cores of " + chosenPod->name + " is " + describe(podCpu) +
               ", want 0.3..0.7";
      }
      if (auto s = podsWithCgroupShown(nullptr); !s.empty()) return s;
      for (const PodCase& pc : cases) {
        if (!pc.hasCgroup) continue;
        for (const koord::Container& c : pc.pod->containers) {
          const std::string id = c.runtime + "://" + c.id;
          auto mem = metrics->value("koordlet_container_memory_usage_bytes",
                                    {{"container_id", id}, {"pod_uid", pc.pod->uid}});
          if (mem != static_cast<double>(expectedMemory)) {
            return "koordlet_container_memory_usage_bytes of " + id + " is " + describe(mem) +
                   ", want " + std::to_string(expectedMemory);
          }
          // Counters that stand still are 0 cores: no rate leaks between cgroups.
          if (&c == chosen) continue;
          auto idle = metrics->value("koordlet_container_cpu_usage_cores", {{"container_id", id}});
          if (idle != 0.0) {
            return "koordlet_container_cpu_usage_cores of idle " + id + " is " + describe(idle);
          }
        }
      }
      const Labels cpuResource{{"container_id", chosenId}, {"resource", "cpu"}, {"unit", "core"}};
      auto request = metrics->value("koordlet_container_resource_requests", cpuResource);
      if (!request || *request != Approx(chosenRequestCores)) {
        return "cpu request of " + chosenId + " is " + describe(request);
      }
      auto limit = metrics->value("koordlet_container_resource_limits", cpuResource);
      if (!limit || *limit != Approx(chosenLimitCores)) {
        return "cpu limit of " + chosenId + " is " + describe(limit);
      }
      auto count = metrics->value("koordlet_kubelet_pods", node);
      if (count != static_cast<double>(pods.size())) {
        return "koordlet_kubelet_pods is " + describe(count);
      }
      auto requests = metrics->value("koordlet_kubelet_request_duration_seconds_count",
                                     {{"code", "200"}, {"path", "/pods/"}, {"verb", "GET"}});
      if (!requests || *requests <= 0) {
        return "koordlet_kubelet_request_duration_seconds_count{code=200} is " + describe(requests);
      }
      auto be = metrics->value("koordlet_be_cpu_cores", {{"kind", "usage"}, {"node", kNode}});
      if (!be || *be < 0.1 || *be > 0.4) {
        return "koordlet_be_cpu_cores{kind=usage} is " + describe(be) + ", want 0.1..0.4";
      }
      return "";
    });
    if (!why.empty()) failWith("pods exported", why);
  }
  // Pods that are over (Failed, Succeeded) have no cgroup: no series, and no error.
  for (const PodCase& pc : cases) {
    if (pc.hasCgroup) continue;
    INFO("pod " << pc.pod->name << " (" << pc.pod->phase << ")");
    CHECK_FALSE(metrics->anyLabelled("pod_uid", pc.pod->uid));
  }
  CHECK(metrics->value("koordlet_collector_errors_total", {{"collector", "pod"}}).value_or(-1) ==
        0.0);

  // 4b. Features this node lacks are said once, exported, and skipped: memory QoS
  // (no memory.min/low/high in the tree) and resctrl (no RDT, or no tree mounted).
  {
    const std::string wantResctrl = hostRdt ? "resctrl: not-mounted" : "resctrl: no-cpu-support";
    std::string why = waitFor(kPhaseLimit, [&]() -> std::string {
      if (auto s = scrape(); !s.empty()) return s;
      if (readyz.find("memory qos: kernel lacks memory.min/low/high: nothing applied") ==
          std::string::npos) {
        return "/readyz lacks the memory qos state:\n" + readyz;
      }
      if (readyz.find(wantResctrl) == std::string::npos) {
        return "/readyz lacks '" + wantResctrl + "':\n" + readyz;
      }
      auto mem = metrics->value("koordlet_feature_supported", {{"feature", "memory_qos"}});
      if (!mem || *mem != 0) return "koordlet_feature_supported{memory_qos} is " + describe(mem);
      auto rdt = metrics->value("koordlet_feature_supported", {{"feature", "resctrl"}});
      if (!rdt || *rdt != (hostRdt ? 1 : 0)) {
        return "koordlet_feature_supported{resctrl} is " + describe(rdt);
      }
      return "";
    });
    if (!why.empty()) failWith("degraded features", why);
  }

  // 5. The exposition is lint-clean. (A lambda, so a skip skips only this part.)
  [&] {
    const auto lint = koord::test::promtoolCheck(metrics->text());
    if (!lint.ran) {
      KOORDLET_SKIP("promtool not installed (Debian package prometheus; make test installs it)");
    }
    INFO("promtool check metrics said:\n" << lint.output);
    CHECK(lint.problems.empty());
  }();

  // 6. One pod leaves the kubelet's list; its cgroup stays, so only the list can
  // make its series go.
  {
    nlohmann::json list = nlohmann::json::parse(podListBody);
    auto& items = list.at("items");
    const size_t before = items.size();
    for (auto it = items.begin(); it != items.end(); ++it) {
      if (it->at("metadata").at("uid") == removed->uid) {
        items.erase(it);
        break;
      }
    }
    REQUIRE(items.size() + 1 == before);
    kubelet.setBody(list.dump());
  }
  const std::string fewerPods = std::to_string(pods.size() - 1);
  {
    std::string why = waitFor(kPhaseLimit, [&]() -> std::string {
      if (auto s = scrape(); !s.empty()) return s;
      if (readyz.find("ok, " + fewerPods + " pods") == std::string::npos) {
        return "/readyz lacks 'ok, " + fewerPods + " pods':\n" + readyz;
      }
      if (metrics->anyLabelled("pod_uid", removed->uid)) {
        return "series of removed pod " + removed->name + " are still exported";
      }
      if (auto count = metrics->value("koordlet_kubelet_pods", node);
          count != static_cast<double>(pods.size() - 1)) {
        return "koordlet_kubelet_pods is " + describe(count);
      }
      return podsWithCgroupShown(removed);
    });
    if (!why.empty()) failWith("pod removed", why);
  }

  // 7. The kubelet goes bad: the agent keeps the last good list and says so.
  kubelet.setBehaviour(TestKubelet::Behaviour::kNotJson);
  {
    std::string why = waitFor(kPhaseLimit, [&]() -> std::string {
      if (auto s = scrape(); !s.empty()) return s;
      if (readyz.find("failing") == std::string::npos ||
          readyz.find("keeping " + fewerPods + " pods") == std::string::npos) {
        return "/readyz lacks 'failing' and 'keeping " + fewerPods + " pods':\n" + readyz;
      }
      auto invalid =
          metrics->value("koordlet_kubelet_request_errors_total", {{"reason", "invalid"}});
      if (!invalid || *invalid < 1) {
        return "koordlet_kubelet_request_errors_total{reason=invalid} is " + describe(invalid);
      }
      if (auto up = metrics->value("koordlet_kubelet_up", node); up != 0.0) {
        return "koordlet_kubelet_up is " + describe(up);
      }
      if (auto count = metrics->value("koordlet_kubelet_pods", node);
          count != static_cast<double>(pods.size() - 1)) {
        return "koordlet_kubelet_pods is " + describe(count);
      }
      if (metrics->anyLabelled("pod_uid", removed->uid)) {
        return "series of removed pod " + removed->name + " came back";
      }
      if (!metrics->value("koordlet_container_cpu_usage_cores", {{"container_id", chosenId}})) {
        return "koordlet_container_cpu_usage_cores of " + chosenId + " is gone";
      }
      return podsWithCgroupShown(removed);
    });
    if (!why.empty()) failWith("kubelet failing", why);
  }

  // 8. SIGTERM: exit 0 within 2 s, and not one error line in the whole run.
  const auto status = agent.terminate(2000ms);
  const std::string log = agent.log();
  INFO("--- agent log ---\n" << log);
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK(log.find("shutting down") != std::string::npos);
  // UBSan reports and goes on by default, so its lines are looked for by name
  // (ASan and LSan end the process with a non-zero status, checked above).
  CHECK(log.find("runtime error:") == std::string::npos);
  std::string errorLines;  // klog severity E: "E1122 04:25:52.530889 ..."
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("E")) errorLines += line + "\n";
  }
  CHECK(errorLines == "");
  // Said once each, however many rounds ran.
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("memory QoS (CgroupReconcile) is on but this kernel has no") == 1);
  CHECK(count(hostRdt ? "resctrl: not-mounted" : "resctrl: not supported on this host") == 1);
  std::cout << "e2e-agent-pods ran in "
            << std::chrono::duration<double>(SteadyClock::now() - testStart).count() << " s\n";
}

}  // namespace test_e2e_agent_pods
