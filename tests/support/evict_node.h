// EvictNode: a three-pod node on this machine's real cgroup v1 kernel, with the real
// koordlet binary running BEMemoryEvict over it against the API server stand-in. The
// scene shared by the memory eviction end-to-end test (tests/e2e/evict_memory_test.cpp)
// and the eviction latency benchmark (bench/evict_latency.cpp):
//
//   be-big    BE (label), a MemoryHog of kHogBytes started by startBigHog()
//   be-small  BE (label), a small hog
//   ls        Burstable (LS by default), a hog bigger than be-small's
//
// In the step scene (EvictScene::kMemory) the capacity is chosen so that with the
// big hog the node uses 80 % of it: under the NodeSLO's first threshold (90 %), over
// the one crossThreshold() sets from the node's use at that moment (lower percent =
// use less half the hog, threshold one above: a release of about half the hog, which
// be-big alone covers, whatever the host's own use). The threshold moves, not the memory,
// so every sample the agent decides from is steady. In the ramp scene (memory growing
// through the threshold in about 0.4 s) the agent asked for be-small too in 2 of 18
// benchmark runs (bench/RESULTS.md); until that is understood, the test that counts
// victims exactly uses the step.
//
// The pods come from a real kubelet capture (tests/fixtures/kubelet/k8s-1.35/pods.json),
// renamed; the kubelet stand-in lists them and the API server stand-in stores them
// (same namespace, names and uids) with the Node and the NodeSLO. The node's memory
// use is this host's (MemTotal - MemAvailable); the Node's status.capacity.memory is
// chosen from it at construction. In the ramp scene (EvictScene::kMemoryRamp) the big
// hog alone takes the node over the threshold (lower percent kLowerPercent, threshold
// one above) as it faults in, and the release koordlet computes is about half the
// hog: one victim (be-big, the most memory) is enough if its memory.stat is current.
// The host's other memory use may move by a hundred MiB either way without changing
// either scene.
//
// The CPU scene (EvictScene::kCpu) is the same three pods for BECPUEvict (reference
// §4.4): be-big and be-small ask for kubernetes.io/batch-cpu (kBigBatchMilli,
// kSmallBatchMilli); be-big runs a Burner, and startCpuPressure() starts one in the LS
// pod, so that CPU suppress (policy cfsQuota, threshold kCpuSuppressPercent) holds
// the besteffort quota at its floor (20 milli-cores) while the BE batch request
// stays. On two CPUs: before the LS load BE may use about half the node less what the
// rest uses (~900 m of 1500 m requested: satisfaction ~60 %, over the lower 30 %);
// with the LS burner's core the allowance is gone, the quota is at the floor, the
// satisfaction ~1 % over the window, and the release (1500 × (50 % − 1 %) ≈ 730 m)
// is below be-big's request: one victim, be-big (the most CPU for its request).
//
// The allocatable scene (EvictScene::kAllocatable) is the same three pods for
// CPUAllocatableEvict and MemoryAllocatableEvict: be-big and be-small koord-batch
// (priority 5500 by their class), labelled koordinator.sh/eviction-enabled, asking
// for the CPU scene's batch-cpu and kBigBatchMemory / kSmallBatchMemory of
// batch-memory; the LS pod koord-prod (over allocatableEvictPriorityThreshold 5999).
// No hogs or burners: what matters is what the pods request against the Node's
// allocatable, which setBatchAllocatable() moves as koord-manager would.
//
// Set-up failures throw; the destructor stops the agent, then the hogs and burners,
// then removes the cgroups.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/agent_process.h"
#include "tests/support/burner.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/exposition.h"
#include "tests/support/memory_hog.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver.h"
#include "tests/support/test_kubelet.h"

namespace koord::test {

// kMemory: the NodeSLO's threshold is lowered under the node's use (crossThreshold());
// kMemoryRamp: be-big's hog takes the node over the threshold as it faults in;
// kCpu: below.
// kAllocatable: the pods' batch requests against the Node's batch allocatable.
enum class EvictScene { kMemory, kMemoryRamp, kCpu, kAllocatable };

class EvictNode {
 public:
  static constexpr const char* kNodeName = "evict-node";
  static constexpr const char* kNamespace = "colo";
  static constexpr const char* kBig = "be-big";
  static constexpr const char* kSmall = "be-small";
  static constexpr const char* kLs = "ls";
  static constexpr size_t kHogBytes = size_t{800} << 20;
  static constexpr int kLowerPercent = 90;
  // The CPU scene's NodeSLO and requests.
  static constexpr int64_t kBigBatchMilli = 1000;
  static constexpr int64_t kSmallBatchMilli = 500;
  static constexpr int kCpuSuppressPercent = 50;
  static constexpr int kSatisfactionLowerPercent = 30;
  static constexpr int kSatisfactionUpperPercent = 50;
  static constexpr int kCpuWindowSeconds = 5;
  static constexpr int kCpuCoolSeconds = 5;
  // The allocatable scene's batch-memory requests and thresholds.
  static constexpr int64_t kBigBatchMemory = int64_t{256} << 20;
  static constexpr int64_t kSmallBatchMemory = int64_t{64} << 20;
  static constexpr int kAllocatableThresholdPercent = 110;
  static constexpr int kAllocatableLowerPercent = 100;
  // cpu.cfs_quota_us of the besteffort dir at suppress's floor (koordlet's 2000).
  static constexpr int64_t kQuotaFloor = 2000;

  // One eviction request the stand-in got.
  struct Seen {
    std::string pod;
    unsigned status = 0;
    nlohmann::json body;
    std::chrono::steady_clock::time_point at;  // when the test saw it in the log
  };

  // "" when this machine can host the node (root, cgroup v1); otherwise why not.
  static std::string unavailableReason();

  // "" when this machine can host the CPU scene (as above, and 2 CPUs).
  static std::string cpuUnavailableReason();

  // Builds the tree, the pods, the small hogs (memory) or be-big's burner (CPU), the
  // stand-ins, and starts the agent with `extraFlags`: BEMemoryEvict on, suppress and
  // burst off (memory); BECPUEvict and suppress on, burst off, a kCpuCoolSeconds
  // cool-down (CPU).
  EvictNode(const std::string& agentBinary, const std::vector<std::string>& extraFlags,
            EvictScene scene = EvictScene::kMemory);
  ~EvictNode();
  EvictNode(const EvictNode&) = delete;
  EvictNode& operator=(const EvictNode&) = delete;

  // Waits until /readyz lists the three pods and says eviction is on: "" or why not.
  std::string waitReady(std::chrono::milliseconds limit);
  // This host's MemTotal − MemAvailable, as the agent reads it.
  static int64_t hostMemoryUsedBytes();
  // Whether the host's memory use is at or over the NodeSLO's threshold of the
  // Node's capacity, as the agent decides it (whole percent).
  bool overMemoryThreshold() const;
  // Step scene: the NodeSLO's memory threshold goes under the node's use; returns the
  // moment before the stand-in stored it.
  std::chrono::steady_clock::time_point crossThreshold();
  // be-big's hog faults in its memory; returns when it has. In the ramp scene this
  // crosses the threshold, in the step scene it does not.
  std::chrono::steady_clock::time_point startBigHog();
  // The kubelet kills be-big: its memory back (or its burner gone), the pod gone
  // from the kubelet's list.
  void killBig();
  // CPU scene: the LS pod's burner starts spinning; returns when it has.
  std::chrono::steady_clock::time_point startCpuPressure();
  // The Node's status.allocatable kubernetes.io/batch-cpu (milli-cores) and
  // batch-memory (bytes) in the API server stand-in, as koord-manager updates them.
  void setBatchAllocatable(int64_t cpuMilli, int64_t memoryBytes);
  // CPU scene: the besteffort cpu.cfs_quota_us as the kernel holds it.
  std::optional<int64_t> beQuota() const;
  // Writes the besteffort cpu.cfs_quota_us behind the agent's back.
  void writeBeQuota(int64_t quota) const;

  // Stops the agent, by SIGKILL (kill true: a crash, an OOM kill, mid-round) or
  // SIGTERM (a rolling update; it must exit 0, else this throws), and starts it again
  // at once with the same flags:
  // from `binary` when given (a new version), else the binary it ran. Its log is
  // agent-<n>.log; waits until it serves. The API's and kubelet's state stay.
  void restartAgent(bool kill, const std::string& binary = "");
  // The kubelet lists `pod` as being deleted (metadata.deletionTimestamp set), as it
  // does through the graceful termination that follows an accepted eviction; the
  // pod's processes keep running meanwhile.
  void markBeingDeleted(const std::string& pod);
  // The API server stand-in's NodeResourceTopology creates so far.
  size_t topologyCreates() const;

  // The eviction requests the stand-in logged so far, oldest first.
  const std::vector<Seen>& evictions();
  // How many of them were for `pod` ("" = any) with `status` (0 = any).
  size_t count(const std::string& pod, unsigned status = 0);
  // A sample of the agent's /metrics; nullopt when absent or no reply.
  std::optional<double> metric(const std::string& name, const Labels& labels);
  // The Events the stand-in got for `pod` (by its uid), oldest first.
  std::vector<nlohmann::json> events(const std::string& pod) const;
  // GET /config, parsed; nullopt when no reply.
  std::optional<nlohmann::json> config();
  // The agent's audit log (--audit-log-dir): cgroup writes and evictions.
  std::string auditLog() const;
  // Occurrences of `needle` in the agent's log.
  size_t logCount(const std::string& needle) const;
  // `what`, then the agent's log: a failure message.
  std::string fail(const std::string& what) const;

  static std::string uid(const std::string& pod);
  TestApiServer& api() { return *api_; }
  AgentProcess& agent() { return *agent_; }

 private:
  std::string containerDir(const std::string& pod) const;
  void listPods();

  TempTree work_;
  std::unique_ptr<CgroupV1Tree> tree_;
  std::unique_ptr<TestKubelet> kubelet_;
  std::unique_ptr<TestApiServer> api_;
  EvictScene scene_;
  std::unique_ptr<MemoryHog> smallHog_, lsHog_, bigHog_;
  std::unique_ptr<Burner> bigBurner_, lsBurner_;
  std::unique_ptr<AgentProcess> agent_;
  std::string binary_;
  std::vector<std::string> flags_;
  int starts_ = 1;
  uint16_t port_ = 0;
  int64_t capacityBytes_ = 1;   // the Node's status.capacity.memory
  int thresholdPercent_ = 100;  // the NodeSLO's memoryEvictThresholdPercent now
  void putNodeSlo(const nlohmann::json& threshold);
  std::vector<nlohmann::json> pods_;
  nlohmann::json node_;      // the Node as the stand-in has it
  size_t seenRequests_ = 0;  // api_->requests() already looked at
  std::vector<Seen> evictions_;
};

}  // namespace koord::test
