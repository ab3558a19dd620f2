// Pods benchmark (not a test): a synthetic node of N pods × 3 containers as real
// cgroup v1 directories on this machine, their PodList served by the test kubelet,
// and the real koordlet binary collecting them every second. Reports the agent's
// CPU time per collection cycle, its RSS, and the ratio of its cycle cost to the
// bare cost of reading the same files once (open/read/close, no parsing), measured
// in this process.
//   pods_bench AGENT_BINARY PODS SECONDS [NODESLO]   (needs root and cgroup v1 cpu,cpuacct,memory)
// With NODESLO (a --config file; bench/nodeslo-all-on.yaml turns every strategy on) the
// agent runs with it, the gates CgroupReconcile, BEMemoryEvict and BECPUEvict, without
// --dry-run (the QoS rounds write for real, into the private subtree only), and
// against the API server stand-in (its Node and NodeMetric, reported every 20 s):
// the whole loop, NodeMetric aggregation and the API client's memory included.
//
// Two windows of SECONDS each. The first has no scrapes: the agent's CPU per
// collection round (koordlet_collect_rounds_total) against the bare read of the same
// files, one pass a second in this process during that window. The second scrapes
// the agent and, beside it, node_exporter (NODE_EXPORTER=path, default Debian's
// /usr/bin/prometheus-node-exporter; NODE_EXPORTER= turns it off) once a second
// each: CPU per second and RSS of both, and their ratios.
// MAX_RATIO=x: exit 3 when the cycle costs more than x times the bare read.
//
// KOORDLET_BENCH_CGROUP picks the tree (default v1):
//   v1           cgroupfs driver, <controller>/koordlet-bench-<pid>/kubepods/... under
//                /sys/fs/cgroup's v1 mounts (cpu, cpuacct, memory), the agent's root a
//                temp dir of symlinks to them;
//   v2           systemd driver (kubepods.slice/...), in a private cgroup2 dir
//                /sys/fs/cgroup/koordlet-bench-<pid> that is the agent's
//                --cgroup-root-dir (it holds cgroup.controllers, so the agent detects
//                v2 and the driver as on a node), +cpu +cpuset +memory enabled in every
//                non-leaf dir's cgroup.subtree_control;
//   v2-cgroupfs  the same with the cgroupfs driver (kubepods/...).
// On v2 the bare-read list is cycleFiles' v2 names (cpu.stat once per dir: the agent
// reads usage and throttling from one read). This host has no v2: bench/pods-v2.sh runs
// the v2 mode (and, for comparison, v1) in the QEMU rig (tests/rig), where these help:
//   KOORDLET_BENCH_EMULATED=1 (default on v2): the agent is SIGSTOPped during each bare
//     pass (under TCG both vCPUs share one host thread, so a busy agent would inflate
//     the pass's CPU time, and the pass the agent's); the rounds and the cgroup writes
//     by outcome in the first window are printed on stderr;
//   KOORDLET_BENCH_READY_SECONDS (default 10): the wait for /readyz to list every pod;
//   KOORDLET_BENCH_SETTLE_SECONDS (default 3): the wait after it;
//   KOORDLET_BENCH_HTTP_SECONDS (default 5): the bound on one GET (/readyz, /metrics);
//   KOORDLET_BENCH_AGENT_STDERR=1: the agent's log on stderr (default: dropped);
//   KOORDLET_FIXTURES: the fixtures dir (default: the source tree's tests/fixtures).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/layout.h"
#include "tests/support/http_get.h"
#include "tests/support/synthetic_pods.h"
#include "tests/support/test_apiserver.h"
#include "tests/support/test_kubelet.h"

namespace fs = std::filesystem;
using namespace koord;

namespace {

const std::string kCgroupRoot = "/sys/fs/cgroup";
const char* const kControllers[] = {"cpu", "cpuacct", "memory"};

using BenchPod = test::SyntheticPod;

std::vector<BenchPod> makePods(size_t n) {
  std::vector<BenchPod> pods;
  for (size_t i = 0; i < n; ++i) pods.push_back(test::syntheticPod(i));
  return pods;
}

// Every file the agent's collectors read in one cycle, in the same order.
std::vector<std::string> cycleFiles(const CgroupLayout& layout, const std::string& root,
                                    const std::vector<BenchPod>& pods) {
  std::vector<std::string> files = {
      "/proc/stat",         "/proc/meminfo",         "/proc/loadavg",
      "/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io"};
  auto cgroup = [&](const std::string& dir) {
    const std::string usage = cgroupFilePath(layout, root, dir, CgroupFile::kCpuUsage);
    for (CgroupFile f : {CgroupFile::kCpuUsage, CgroupFile::kMemoryStat, CgroupFile::kCpuStat}) {
      std::string path = cgroupFilePath(layout, root, dir, f);
      // v2: usage and throttling are both in cpu.stat, which the agent reads once.
      if (f == CgroupFile::kCpuStat && path == usage) continue;
      files.push_back(std::move(path));
    }
  };
  for (const auto& p : pods) {
    std::string podDir = layout.podDir(p.qos, p.uid);
    cgroup(podDir);
    for (const auto& id : p.containerIds) cgroup(*layout.containerDir(podDir, "containerd", id));
  }
  std::string be = layout.qosDir(KubeQos::kBestEffort);
  files.push_back(cgroupFilePath(layout, root, be, CgroupFile::kCpuUsage));
  files.push_back(cgroupFilePath(layout, root, be, CgroupFile::kCpusetCpusEffective));
  for (const auto& p : pods) {
    if (p.qos != KubeQos::kBestEffort) continue;
    std::string podDir = layout.podDir(p.qos, p.uid);
    for (const auto& id : p.containerIds) {
      files.push_back(cgroupFilePath(layout, root, *layout.containerDir(podDir, "containerd", id),
                                     CgroupFile::kCpusetCpusEffective));
    }
  }
  files.push_back(cgroupFilePath(layout, root, be, CgroupFile::kCpuQuota));
  return files;
}

// This thread's CPU time (user + system), in nanosecond resolution.
double cpuSecondsThread() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double cpuSecondsOf(pid_t pid) {
  auto text = readFile("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return -1;
  auto close = text->rfind(')');
  std::istringstream in(text->substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

long statusKb(pid_t pid, const char* key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::strlen(key) + 1));
  }
  return -1;
}

long envLong(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::stol(v) : fallback;
}

std::string httpGet(uint16_t port, const std::string& path) {
  static const long seconds = envLong("KOORDLET_BENCH_HTTP_SECONDS", 5);
  auto reply = test::httpGet(port, path, std::chrono::seconds(seconds));
  return reply ? reply->body : "";
}

// The path of this benchmark's fixtures (the API objects).
std::string fixture(const std::string& rel) {
  const char* dir = std::getenv("KOORDLET_FIXTURES");
  auto text = readFile(std::string(dir && *dir ? dir : KOORDLET_FIXTURES_DIR) + "/" + rel);
  if (!text) throw std::runtime_error(text.error().message);
  return *text;
}

// A free TCP port on loopback, from the kernel.
uint16_t freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

pid_t spawn(std::vector<std::string> args) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// koordlet_collect_rounds_total of the pod collector in a /metrics page (0 if absent).
double podRounds(const std::string& metrics) {
  std::istringstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("koordlet_collect_rounds_total{", 0) == 0 &&
        line.find("collector=\"pod\"") != std::string::npos) {
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return 0;
}

// The cgroup tree for the agent, by KOORDLET_BENCH_CGROUP (see the header).
struct BenchTree {
  CgroupLayout layout{CgroupVersion::kV1, CgroupDriver::kCgroupfs};
  std::string agentRoot;          // --cgroup-root-dir
  std::vector<fs::path> created;  // removed in reverse order
  std::vector<fs::path> tops;     // the private top dirs, removed last
  fs::path scratch;               // a temp dir (v1: the agent root, its symlinks)
};

CgroupLayout benchLayout() {
  const char* v = std::getenv("KOORDLET_BENCH_CGROUP");
  const std::string mode = v && *v ? v : "v1";
  if (mode == "v1") return CgroupLayout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  if (mode == "v2") return CgroupLayout(CgroupVersion::kV2, CgroupDriver::kSystemd);
  if (mode == "v2-cgroupfs") return CgroupLayout(CgroupVersion::kV2, CgroupDriver::kCgroupfs);
  throw std::runtime_error("KOORDLET_BENCH_CGROUP=" + mode + ": not one of v1, v2, v2-cgroupfs");
}

// v2: lets dir's children have the cpu, cpuset and memory files (cpu.stat's usage is
// there without +cpu, but cpu.max, cpu.weight, memory.* and cpuset.* are not).
void enableControllers(const fs::path& dir) {
  for (const char* c : {"+cpu", "+cpuset", "+memory"}) {
    const fs::path file = dir / "cgroup.subtree_control";
    std::ofstream out(file);
    out << c << std::flush;
    if (!out) {
      throw std::runtime_error(file.string() + ": cannot write " + c + ": " + std::strerror(errno));
    }
  }
}

BenchTree makeTree(const std::string& prefix, const std::vector<BenchPod>& pods) {
  BenchTree t;
  t.layout = benchLayout();
  t.scratch = fs::temp_directory_path() / prefix;
  fs::create_directories(t.scratch);
  const CgroupLayout& layout = t.layout;
  if (layout.version() == CgroupVersion::kV1) {
    // The agent sees <tmp>/<controller> -> /sys/fs/cgroup/<controller>/<prefix>, so
    // its kubepods tree is the private one built here, in the real kernel.
    t.agentRoot = t.scratch.string();
    for (const char* c : kControllers) {
      fs::path top = fs::path(kCgroupRoot) / c / prefix;
      fs::create_directories(top);
      t.tops.push_back(top);
      fs::create_symlink(top, t.scratch / c);
      auto mk = [&](const std::string& dir) {
        fs::create_directories(top / dir);
        t.created.push_back(top / dir);
      };
      mk(layout.kubeRootDir());
      mk(layout.qosDir(KubeQos::kBurstable));
      mk(layout.qosDir(KubeQos::kBestEffort));
      for (const auto& p : pods) {
        std::string podDir = layout.podDir(p.qos, p.uid);
        mk(podDir);
        for (const auto& id : p.containerIds) mk(*layout.containerDir(podDir, "containerd", id));
      }
    }
    return t;
  }
  if (!fs::is_regular_file(fs::path(kCgroupRoot) / "cgroup.controllers")) {
    throw std::runtime_error("no cgroup2 mounted at " + kCgroupRoot);
  }
  enableControllers(kCgroupRoot);
  const fs::path top = fs::path(kCgroupRoot) / prefix;
  t.agentRoot = top.string();
  fs::create_directory(top);
  t.tops.push_back(top);
  enableControllers(top);
  // Parents before children, each non-leaf dir delegating the controllers.
  auto mk = [&](const std::string& dir, bool leaf) {
    fs::create_directory(top / dir);
    t.created.push_back(top / dir);
    if (!leaf) enableControllers(top / dir);
  };
  mk(layout.kubeRootDir(), false);
  mk(layout.qosDir(KubeQos::kBurstable), false);
  mk(layout.qosDir(KubeQos::kBestEffort), false);
  for (const auto& p : pods) {
    std::string podDir = layout.podDir(p.qos, p.uid);
    mk(podDir, false);
    for (const auto& id : p.containerIds) mk(*layout.containerDir(podDir, "containerd", id), true);
  }
  return t;
}

void removeTree(const BenchTree& t) {
  for (auto it = t.created.rbegin(); it != t.created.rend(); ++it) ::rmdir(it->c_str());
  for (const auto& top : t.tops) ::rmdir(top.c_str());
  fs::remove_all(t.scratch);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: pods_bench AGENT_BINARY PODS SECONDS [NODESLO]\n";
    return 2;
  }
  const std::string agent = argv[1];
  const size_t n = std::stoul(argv[2]);
  const int seconds = std::stoi(argv[3]);
  const std::string nodeSlo = argc > 4 ? fs::absolute(argv[4]).string() : "";
  if (::geteuid() != 0) {
    std::cerr << "pods_bench: needs root to create cgroups under " << kCgroupRoot << "\n";
    return 1;
  }

  const std::string prefix = "koordlet-bench-" + std::to_string(::getpid());
  const auto pods = makePods(n);
  const BenchTree tree = makeTree(prefix, pods);
  const CgroupLayout& layout = tree.layout;
  const bool emulated =
      envLong("KOORDLET_BENCH_EMULATED", layout.version() == CgroupVersion::kV2 ? 1 : 0) == 1;

  test::TestKubelet kubelet;
  kubelet.setBody(test::syntheticPodListJson(pods));

  // Every strategy on: the cluster side too, from the API server stand-in (no
  // NodeSLO object there, so the --config file is the NodeSLO in force).
  std::unique_ptr<test::TestApiServer> api;
  const std::string kubeconfig = (tree.scratch / "kubeconfig").string();
  if (!nodeSlo.empty()) {
    using nlohmann::json;
    api = std::make_unique<test::TestApiServer>(
        test::TestApiServer::Options{"bench-token", std::chrono::milliseconds(60000), true});
    json node = json::parse(fixture("kube-api/node-get.body"));
    node["metadata"] = {{"name", "bench"}};
    api->put("nodes", node);
    json nodeMetric = json::parse(fixture("kube-api/nodemetric-get.body"));
    nodeMetric["metadata"] = {{"name", "bench"}};
    nodeMetric["spec"]["metricCollectPolicy"]["aggregateDurationSeconds"] = 300;
    nodeMetric["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] = 20;
    api->put("nodemetrics", nodeMetric);
    std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n"
                                 "- name: c\n  cluster:\n    server: "
                              << api->url() << "\n    certificate-authority: " << api->caFile()
                              << "\ncontexts:\n- name: b\n  context: {cluster: c, user: u}\n"
                                 "users:\n- name: u\n  user:\n    token: bench-token\n";
  }

  const uint16_t agentPort = static_cast<uint16_t>(30000 + ::getpid() % 20000);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("NODE_NAME", "bench", 1);
    std::string root = "--cgroup-root-dir=" + tree.agentRoot;
    std::string kport = "--kubelet-read-only-port=" + std::to_string(kubelet.port());
    std::string addr = "--addr=127.0.0.1:" + std::to_string(agentPort);
    if (envLong("KOORDLET_BENCH_AGENT_STDERR", 0) == 0) {  // 1: keep the agent's log
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 2);
    }
    std::vector<std::string> args = {agent,
                                     root,
                                     "--proc-root-dir=/proc/",
                                     "--kubelet-insecure-tls=true",
                                     "--kubelet-addr=127.0.0.1",
                                     kport,
                                     addr,
                                     "--collect-res-used-interval=1s"};
    if (nodeSlo.empty()) {
      args.push_back("--dry-run");
    } else {
      args.push_back("--config=" + nodeSlo);
      args.push_back("--feature-gates=CgroupReconcile=true,BEMemoryEvict=true,BECPUEvict=true");
      args.push_back("--kubeconfig=" + kubeconfig);
    }
    std::vector<char*> argv2;
    for (std::string& a : args) argv2.push_back(a.data());
    argv2.push_back(nullptr);
    ::execv(agent.c_str(), argv2.data());
    ::_exit(127);
  }

  // Warm-up: the pod list arrives and every rate has its first sample.
  bool synced = false;
  const long readyTicks = envLong("KOORDLET_BENCH_READY_SECONDS", 10) * 10;
  for (long i = 0; i < readyTicks && !synced; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    synced =
        httpGet(agentPort, "/readyz").find(", " + std::to_string(n) + " pods") != std::string::npos;
  }
  std::this_thread::sleep_for(std::chrono::seconds(envLong("KOORDLET_BENCH_SETTLE_SECONDS", 3)));

  // The bare cost of the same files (open, read, close, nothing else), one pass a
  // second during the agent's own window, so both meet the same machine: a build or
  // a VM elsewhere slows both alike, and the ratio stays comparable.
  const auto files = cycleFiles(layout, tree.agentRoot, pods);
  size_t bytes = 0;
  double bareTotal = 0;
  int passes = 0;
  const std::string metrics0 = httpGet(agentPort, "/metrics");
  const double rounds0 = podRounds(metrics0);
  const double cpu0 = cpuSecondsOf(pid);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < seconds; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds(1000 * i + 500));
    if (emulated) ::kill(pid, SIGSTOP);
    const double b0 = cpuSecondsThread();
    for (const auto& f : files) {
      auto t = readFile(f);
      if (t) bytes += t->size();
    }
    bareTotal += cpuSecondsThread() - b0;
    if (emulated) ::kill(pid, SIGCONT);
    ++passes;
  }
  std::this_thread::sleep_until(t0 + std::chrono::seconds(seconds));
  const double cpu1 = cpuSecondsOf(pid);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long rss = statusKb(pid, "VmRSS:");
  const long hwm = statusKb(pid, "VmHWM:");
  const std::string metrics = httpGet(agentPort, "/metrics");
  const double rounds1 = podRounds(metrics);
  const double bare = passes > 0 ? bareTotal / passes : 0;

  // GET /explain (issue 33): one pod's knobs, and one knob in every cgroup (the
  // biggest answer an operator asks for), each the median of several asks.
  {
    auto timed = [&](const std::string& path, int times, size_t* bytesOut) {
      std::vector<double> ms;
      for (int i = 0; i < times; ++i) {
        const auto a = std::chrono::steady_clock::now();
        const std::string body = httpGet(agentPort, path);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a)
                         .count());
        *bytesOut = body.size();
      }
      std::sort(ms.begin(), ms.end());
      return ms[ms.size() / 2];
    };
    size_t podBytes = 0, knobBytes = 0;
    const double podMs = timed("/explain?uid=" + pods[n / 2].uid, 21, &podBytes);
    const double knobMs = timed("/explain?knob=cpu.cfs_quota_us", 5, &knobBytes);
    std::fprintf(stderr,
                 "pods_bench: %zu pods: GET /explain one pod %.2f ms (%zu bytes), "
                 "knob=cpu.cfs_quota_us on the whole node %.1f ms (%zu bytes)\n",
                 n, podMs, podBytes, knobMs, knobBytes);
  }

  // Second window: the agent and node_exporter side by side, each scraped once a
  // second, as a Prometheus server would.
  const char* neEnv = std::getenv("NODE_EXPORTER");
  const std::string nePath = neEnv ? neEnv : "/usr/bin/prometheus-node-exporter";
  pid_t ne = -1;
  uint16_t nePort = 0;
  if (!nePath.empty() && ::access(nePath.c_str(), X_OK) == 0) {
    nePort = freePort();
    ne = spawn({nePath, "--web.listen-address=127.0.0.1:" + std::to_string(nePort)});
    for (int i = 0; i < 50 && httpGet(nePort, "/metrics").empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  double scrapedCpu = 0, neCpu = 0;
  long scrapedRss = 0, neRss = 0;
  {
    httpGet(agentPort, "/metrics");
    if (ne > 0) httpGet(nePort, "/metrics");
    const double a0 = cpuSecondsOf(pid);
    const double n0 = ne > 0 ? cpuSecondsOf(ne) : 0;
    const auto s0 = std::chrono::steady_clock::now();
    for (int i = 1; i <= seconds; ++i) {
      std::this_thread::sleep_until(s0 + std::chrono::seconds(i));
      httpGet(agentPort, "/metrics");
      if (ne > 0) httpGet(nePort, "/metrics");
    }
    const double span =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    scrapedCpu = (cpuSecondsOf(pid) - a0) / span;
    scrapedRss = statusKb(pid, "VmRSS:");
    if (ne > 0) {
      neCpu = (cpuSecondsOf(ne) - n0) / span;
      neRss = statusKb(ne, "VmRSS:");
      ::kill(ne, SIGTERM);
      ::waitpid(ne, nullptr, 0);
    }
  }

  // `koordlet restore` (issue 33) with the agent's flags, beside the live agent it
  // pauses: every knob back to the kubelet's value, then a second run that finds
  // nothing to change. Wall time of each; with every strategy on only (NODESLO).
  if (!nodeSlo.empty()) {
    std::string cmd = agent + " restore --cgroup-root-dir=" + tree.agentRoot +
                      " --proc-root-dir=/proc/ --kubelet-insecure-tls=true"
                      " --kubelet-addr=127.0.0.1 --kubelet-read-only-port=" +
                      std::to_string(kubelet.port()) +
                      " --addr=127.0.0.1:" + std::to_string(agentPort) + " --config=" + nodeSlo +
                      " --feature-gates=CgroupReconcile=true,BEMemoryEvict=true,BECPUEvict=true"
                      " --kubeconfig=" +
                      kubeconfig + " 2>&1 | tail -n 1";
    for (const char* run : {"first", "second"}) {
      const auto a = std::chrono::steady_clock::now();
      std::string last;
      if (FILE* f = ::popen(cmd.c_str(), "r")) {
        char buf[512];
        while (std::fgets(buf, sizeof buf, f)) last = buf;
        ::pclose(f);
      }
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
      if (!last.empty() && last.back() == '\n') last.pop_back();
      std::fprintf(stderr, "pods_bench: %zu pods: koordlet restore (%s run) %.0f ms: %s\n", n, run,
                   ms, last.c_str());
    }
  }
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  removeTree(tree);

  // The pod collection rounds the agent counted in the window (each round runs the
  // QoS strategies due with it); the wall time in seconds if it did not say.
  const double cycles = rounds1 > rounds0 ? rounds1 - rounds0 : wall;
  const double perCycle = (cpu1 - cpu0) / cycles;
  size_t series = 0;
  double writes = 0;  // cgroup writes attempted by the QoS rounds (any outcome)
  {
    std::istringstream in(metrics);
    std::string line;
    const std::string kWrites = "koordlet_resource_update_duration_milliseconds_count{";
    while (std::getline(in, line)) {
      series += (!line.empty() && line[0] != '#');
      if (line.rfind(kWrites, 0) == 0) writes += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  const double ratio = bare > 0 ? perCycle / bare : 0;
  if (emulated) {
    std::fprintf(stderr,
                 "pods_bench: %zu pods, %s %s: %.0f pod collector rounds in %.1f s, %zu files a "
                 "bare pass (%zu bytes)\n",
                 n, toString(layout.version()), toString(layout.driver()), rounds1 - rounds0, wall,
                 files.size(), passes > 0 ? bytes / passes : 0);
    // The cgroup writes by outcome in the first window (and since start); each
    // collector's and QoS strategy's last round, wall time (where a round goes when
    // there is no profiler in the guest).
    std::istringstream in(metrics);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("koordlet_collector_duration_seconds{", 0) == 0 ||
          line.rfind("koordlet_qos_strategy_duration_seconds{", 0) == 0) {
        std::fprintf(stderr, "pods_bench: last round: %s\n", line.c_str());
        continue;
      }
      if (line.rfind("koordlet_resource_update_duration_milliseconds_count{", 0) != 0) continue;
      const std::string series = line.substr(0, line.rfind(' ') + 1);
      const size_t at = metrics0.find("\n" + series);
      const double before =
          at == std::string::npos ? 0 : std::stod(metrics0.substr(at + 1 + series.size()));
      const double now = std::stod(line.substr(series.size()));
      std::fprintf(stderr, "pods_bench: %s: %.0f in the window, %.0f since start\n", series.c_str(),
                   now - before, now);
    }
  }
  auto neRatio = [&](double agentValue, double neValue) {
    return neValue > 0 ? std::to_string(agentValue / neValue).substr(0, 4) + "x" : "-";
  };
  std::printf(
      "| %zu | %zu | %s | %.2f | %.1f | %.1f | %.2f | %.2f | %.2fx | %zu | %.0f | %.1f | %s | %s | "
      "%.2f | %s | %s |\n",
      n, n * 3, synced ? "yes" : "NO", (cpu1 - cpu0), perCycle * 1000, bare * 1000, rss / 1024.0,
      hwm / 1024.0, ratio, series, writes, scrapedCpu * 1000,
      ne > 0 ? (std::to_string(neCpu * 1000).substr(0, 5)).c_str() : "-",
      neRatio(scrapedCpu, neCpu).c_str(), scrapedRss / 1024.0,
      ne > 0 ? std::to_string(neRss / 1024.0).substr(0, 5).c_str() : "-",
      neRatio(static_cast<double>(scrapedRss), static_cast<double>(neRss)).c_str());
  if (!synced) return 1;
  if (const char* max = std::getenv("MAX_RATIO"); max && ratio > std::stod(max)) {
    std::fprintf(stderr,
                 "pods_bench: %zu pods: the cycle costs %.2fx the bare read, over MAX_RATIO %s\n",
                 n, ratio, max);
    return 3;
  }
  return 0;
}
