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
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
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
    for (CgroupFile f : {CgroupFile::kCpuUsage, CgroupFile::kMemoryStat, CgroupFile::kCpuStat}) {
      files.push_back(cgroupFilePath(layout, root, dir, f));
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

std::string httpGet(uint16_t port, const std::string& path) {
  auto reply = test::httpGet(port, path);
  return reply ? reply->body : "";
}

// The path of this benchmark's fixtures (the API objects).
std::string fixture(const std::string& rel) {
  auto text = readFile(std::string(KOORDLET_FIXTURES_DIR) + "/" + rel);
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
  CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  const auto pods = makePods(n);

  // The agent sees <tmp>/<controller> -> /sys/fs/cgroup/<controller>/<prefix>, so
  // its kubepods tree is the private one built here, in the real kernel.
  const fs::path agentRoot = fs::temp_directory_path() / prefix;
  fs::create_directories(agentRoot);
  std::vector<fs::path> created;
  for (const char* c : kControllers) {
    fs::path top = fs::path(kCgroupRoot) / c / prefix;
    fs::create_directories(top);
    fs::create_symlink(top, agentRoot / c);
    auto mk = [&](const std::string& dir) {
      fs::create_directories(top / dir);
      created.push_back(top / dir);
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

  test::TestKubelet kubelet;
  kubelet.setBody(test::syntheticPodListJson(pods));

  // Every strategy on: the cluster side too, from the API server stand-in (no
  // NodeSLO object there, so the --config file is the NodeSLO in force).
  std::unique_ptr<test::TestApiServer> api;
  const std::string kubeconfig = (agentRoot / "kubeconfig").string();
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
    std::string root = "--cgroup-root-dir=" + agentRoot.string();
    std::string kport = "--kubelet-read-only-port=" + std::to_string(kubelet.port());
    std::string addr = "--addr=127.0.0.1:" + std::to_string(agentPort);
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 2);
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
  for (int i = 0; i < 100 && !synced; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    synced =
        httpGet(agentPort, "/readyz").find(", " + std::to_string(n) + " pods") != std::string::npos;
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));

  // The bare cost of the same files (open, read, close, nothing else), one pass a
  // second during the agent's own window, so both meet the same machine: a build or
  // a VM elsewhere slows both alike, and the ratio stays comparable.
  const auto files = cycleFiles(layout, agentRoot.string(), pods);
  size_t bytes = 0;
  double bareTotal = 0;
  int passes = 0;
  const double rounds0 = podRounds(httpGet(agentPort, "/metrics"));
  const double cpu0 = cpuSecondsOf(pid);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < seconds; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds(1000 * i + 500));
    const double b0 = cpuSecondsThread();
    for (const auto& f : files) {
      auto t = readFile(f);
      if (t) bytes += t->size();
    }
    bareTotal += cpuSecondsThread() - b0;
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

  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  for (auto it = created.rbegin(); it != created.rend(); ++it) ::rmdir(it->c_str());
  for (const char* c : kControllers) ::rmdir((fs::path(kCgroupRoot) / c / prefix).c_str());
  fs::remove_all(agentRoot);

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
