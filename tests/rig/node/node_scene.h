// What the v2-node scenes share (test_v2_node.cpp: the kubelet and API server as
// stand-ins; test_v2_node_kubelet.cpp: the real kubelet): the guest's paths and names,
// a shell, cgroup files, the NodeSLO, the agent's flags, the exposition text. Test code.
#pragma once

#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/agent_process.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"

namespace koord::test::node {

using json = nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

inline constexpr auto kLimit = 90s;  // TCG: an agent round or a CRI call can take seconds
inline const std::string kNode = "koordlet-node";
inline const std::string kImage = "docker.io/koordlet-test/busybox:1";
inline const std::string kCgroup = "/sys/fs/cgroup/";

inline std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

struct Command {
  int rc = -1;
  std::string output;
};

// `cmd` through sh, stdout and stderr together.
inline Command sh(const std::string& cmd) {
  Command c;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return c;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) c.output.append(buf.data(), n);
  const int status = ::pclose(p);
  c.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return c;
}

inline std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A cgroup file's content without its newline; "<absent>" when it cannot be read.
inline std::string knob(const std::string& dir, const std::string& file) {
  std::ifstream in(dir + "/" + file);
  if (!in) return "<absent>";
  std::stringstream ss;
  ss << in.rdbuf();
  return trimmed(ss.str());
}

// The kubelet's systemd driver: the pod's slice under its QoS slice, the uid's dashes
// written as '_' (a '-' separates slice levels).
inline std::string sliceUid(std::string uid) {
  for (char& c : uid) {
    if (c == '-') c = '_';
  }
  return uid;
}
inline std::string podSlice(const std::string& qos, const std::string& uid) {
  return "kubepods-" + qos + "-pod" + sliceUid(uid) + ".slice";
}

// What the container prints the moment it starts: its own cgroup's files (containerd
// gives each container a private cgroup namespace on v2, so /sys/fs/cgroup is its own).
inline const std::vector<std::string> kShowCgroup = {
    "/bin/sh", "-c",
    "echo weight=$(cat /sys/fs/cgroup/cpu.weight) max=$(cat /sys/fs/cgroup/cpu.max) "
    "memory=$(cat /sys/fs/cgroup/memory.max); exec sleep 2147483647"};

// batch-cpu 1k, batch-memory 64Mi as the agent sets them with suppress's cfsQuota policy
// (the container's quota -1: the besteffort slice's cpu.max governs): shares 1024, which
// runc's systemd driver hands PID 1 as a CPUWeight by its own conversion (runc 1.3:
// ceil(10^((l^2 + 125 l) / 612 - 7/34)), l = log2(shares): 100; before it the linear
// 1 + (s - 2) x 9999 / 262142: 39), no quota, 64 MiB. The reconciler writing cpu.weight
// itself must use the same conversion, or the pods it repairs differ from those runc made.
inline const std::string kBatchWeight = "100";
inline const std::string kBatchValues =
    "weight=" + kBatchWeight + " max=max 100000 memory=67108864";
inline const std::string kKubeletBeValues = "weight=1 max=max 100000 memory=max";

inline std::string body(uint16_t port, const std::string& path) {
  auto r = httpGet(port, path);
  return r ? r->body : "no reply";
}

// The first sample line of `metric` with every label of `labels` (exposition text).
inline std::optional<double> sample(const std::string& metrics, const std::string& metric,
                                    const std::vector<std::string>& labels) {
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(metric + "{", 0) != 0) continue;
    bool all = true;
    for (const auto& l : labels) all = all && line.find(l) != std::string::npos;
    if (all) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return std::nullopt;
}

inline int64_t memInfoKiB(const std::string& field) {
  std::istringstream in(readTextFile("/proc/meminfo"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return 0;
}

inline json nodeSlo(const json& threshold) {
  return {
      {"apiVersion", "slo.koordinator.sh/v1alpha1"},
      {"kind", "NodeSLO"},
      {"metadata", {{"name", kNode}}},
      {"spec",
       {{"resourceUsedThresholdWithBE", threshold},
        {"cpuBurstStrategy",
         {{"policy", "cpuBurstOnly"}, {"cpuBurstPercent", 50}, {"sharePoolThresholdPercent", 100}}},
        {"resourceQOSStrategy",
         {{"lsClass",
           {{"memoryQOS",
             {{"enable", true},
              {"minLimitPercent", 50},
              {"lowLimitPercent", 75},
              {"throttlingPercent", 50}}}}}}}}}};
}

inline const json kSuppressOnly = {{"enable", true},
                                   {"cpuSuppressPolicy", "cfsQuota"},
                                   {"cpuSuppressThresholdPercent", 65},
                                   {"memoryEvictThresholdPercent", 99}};

inline double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The node's Node object as the API stand-in serves it: 2 CPUs and the guest's memory.
inline json nodeObject() {
  const std::string memory = std::to_string(memInfoKiB("MemTotal") * 1024);
  const json resources = {{"cpu", "2"}, {"memory", memory}, {"pods", "110"}};
  return {{"metadata", {{"name", kNode}}},
          {"status", {{"capacity", resources}, {"allocatable", resources}}}};
}

// The agent's flags in every scene: fast intervals for TCG, the kubelet at
// 127.0.0.1:<kubeletPort> (read-only port, plain HTTP), the API server through the
// kubeconfig written to <tmp>/kubeconfig.
inline std::vector<std::string> agentFlags(const TempTree& tmp, uint16_t kubeletPort,
                                           const std::string& apiUrl) {
  tmp.write("kubeconfig",
            "apiVersion: v1\nkind: Config\ncurrent-context: n\nclusters:\n- name: c\n"
            "  cluster:\n    server: " +
                apiUrl +
                "\ncontexts:\n- name: n\n  context: {cluster: c, user: u}\n"
                "users:\n- name: u\n  user:\n    token: t\n");
  return {
      "--addr=127.0.0.1:0",
      "--kubeconfig=" + tmp.path("kubeconfig"),
      "--kubelet-addr=127.0.0.1",
      "--kubelet-read-only-port=" + std::to_string(kubeletPort),
      "--kubelet-insecure-tls=true",
      "--kubelet-sync-interval=1s",
      "--collect-res-used-interval=1s",
      "--reconcile-interval-seconds=1",
      "--runtime-hooks-reconcile-interval=1s",
      "--cpu-suppress-interval-seconds=1",
      "--resource-verify-seconds=2",
      "--psi-collector-interval=1s",
      "--runtime-hooks-nri-backoff-duration=200ms",
      "--feature-gates=BEMemoryEvict=true,PSICollector=true,CgroupReconcile=true,OOMScoreAdj=true",
      "--sys-root-dir=/sys/",
      "--proc-root-dir=/proc/",
      "--var-run-root-dir=/var/run/",
      "--audit-log-dir=" + tmp.path("audit"),
      "--v=4"};
}

}  // namespace koord::test::node
