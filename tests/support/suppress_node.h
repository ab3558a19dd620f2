// SuppressNode: a two-pod node on this machine's real cgroup v1 kernel, with the
// real koordlet binary running CPU suppress (policy cfsQuota) over it. It is the
// scene shared by the suppress end-to-end test (tests/e2e/suppress_kernel_test.cpp)
// and the suppress latency benchmark (bench/suppress_latency.cpp):
//
//   kubepods/besteffort/pod<BE uid>/<BE id>  BestEffort pod labelled
//                                            koordinator.sh/qosClass=BE: a burner,
//                                            always busy
//   kubepods/burstable/pod<LS uid>/<LS id>   Burstable pod (cpu request 1, limit 2):
//                                            a burner the caller switches
//
// in a CgroupV1Tree (cpu, cpuacct, cpuset, memory). The pods come from a real
// kubelet capture (tests/fixtures/kubelet/k8s-1.35/pods.json), changed only in
// names, uids, container ids, resources and the BE label, and are served by
// TestKubelet on the read-only port. The agent runs with --config (a NodeSLO spec
// the caller can rewrite), its audit log in a temp dir, /proc of this host, and
// the topology of this host's CPUs. Set-up failures throw; the destructor stops
// the agent and the burners and removes every cgroup and file.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/agent_process.h"
#include "tests/support/exposition.h"

namespace koord::test {

struct SuppressNodeConfig {
  std::string agentBinary;
  std::string collectInterval = "1s";  // --collect-res-used-interval
  int suppressIntervalSeconds = 1;     // --cpu-suppress-interval-seconds
  int thresholdPercent = 65;           // cpuSuppressThresholdPercent
  std::vector<std::string> extraFlags;
  std::string extraSpec = "";  // appended to the NodeSLO spec file (YAML, top-level fields)
};

// One line of the executor's audit log about the besteffort cpu.cfs_quota_us.
struct QuotaWrite {
  std::string ts;  // the agent's wall clock, RFC 3339
  int64_t oldValue = 0;
  int64_t newValue = 0;
};

class SuppressNode {
 public:
  static constexpr const char* kNodeName = "e2e-node";

  // "" when this machine can host the node (root, cgroup v1 cpu, cpuacct, cpuset,
  // memory, at least 2 CPUs); otherwise why not.
  static std::string unavailableReason();

  // Builds the tree, starts both burners (LS idle), the kubelet and the agent.
  explicit SuppressNode(SuppressNodeConfig config);
  ~SuppressNode();
  SuppressNode(const SuppressNode&) = delete;
  SuppressNode& operator=(const SuppressNode&) = delete;

  // Waits until the agent serves /readyz with both pods listed: "" or why not.
  std::string waitReady(std::chrono::milliseconds limit);

  // Switches the LS burner; the moment it started spinning or stopped.
  std::chrono::steady_clock::time_point setLsBusy(bool busy);

  // The besteffort cpu.cfs_quota_us as the kernel holds it (read through
  // /sys/fs/cgroup, not the agent's symlinked root); nullopt if unreadable.
  std::optional<int64_t> beQuota() const;

  // GET /metrics; nullopt when the agent did not answer 200.
  std::optional<Scrape> scrape();

  // The audit log's writes of the besteffort cpu.cfs_quota_us, oldest first.
  std::vector<QuotaWrite> quotaWrites() const;
  std::string auditLog() const;

  // Rewrites --config (by rename, so the agent never reads half a file) with
  // resourceUsedThresholdWithBE.enable = enable.
  void setSuppressEnabled(bool enable);

  AgentProcess& agent();
  // The agent's flags (for `koordlet restore`, which takes them as they are).
  const std::vector<std::string>& flags() const;
  // Stops the agent (SIGTERM, as a rolling update does); startAgent() starts it again
  // with the same flags (a new log, agent-<n>.log) and waitReady() finds its port.
  void stopAgent();
  void startAgent();
  // A file of the tree as the kernel holds it (through /sys/fs/cgroup), trimmed; and
  // a write to it behind the agent's back. dir: relative to the hierarchy root.
  std::string kernelFile(const std::string& controller, const std::string& dir,
                         const std::string& file) const;
  void writeKernelFile(const std::string& controller, const std::string& dir,
                       const std::string& file, const std::string& value) const;
  // Cgroup dirs (relative to the hierarchy root) and the BE pod's name.
  const std::string& besteffortDir() const;
  std::string bePodDir() const;
  std::string lsPodDir() const;
  const std::string& beContainerDir() const;
  const std::string& lsContainerDir() const;
  static std::string bePodUid();
  const std::string& configPath() const;
  uint16_t port() const { return port_; }
  // Logical CPUs of this host, the capacity suppress computes from.
  int cpus() const { return cpus_; }
  const std::string& lsContainerId() const;  // "containerd://<id>"
  const std::string& beContainerId() const;

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
  uint16_t port_ = 0;
  int cpus_ = 0;
};

}  // namespace koord::test
