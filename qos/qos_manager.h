// QosManager: runs the registered QoS strategies (strategy.h) on their intervals
// and hands their intended writes to the one executor, tagged with the strategy's
// owner. It gathers the strategies' snapshot from the pod list, the metric cache
// (the newest samples, with their times), the CPU topology and the node's
// reservation, and reads the current knob values a strategy steps from through the
// executor. It knows no strategy by name: the agent registers them (add()), and
// reads each one's own outcome back from the round.
//
// Scheduling: the agent calls runDue() right after each collection round, and an
// enabled strategy runs when its interval has elapsed since its last run (within a
// quarter interval of jitter), in the order registered. A strategy therefore never
// runs more often than new samples arrive, and acts on samples at most one
// collection old: an LS load step reaches the BE cgroups within two collection
// intervals. A strategy that runs on pod changes (the hooks' reconciler) also runs
// in the first round after podsChanged(), and its interval restarts from there.
//
// One owner per knob per cgroup, so two strategies can never fight over a value
// (the strategies the agent registers, and what each owns):
//   cpu-suppress  besteffort dir: cpu.cfs_quota_us, cpuset.cpus;
//                 BE pod and container dirs: cpuset.cpus
//   cpu-burst     pod and container dirs of pods that are not LSE/LSR/BE and have
//                 no resource-status cpuset: cpu.cfs_burst_us, cpu.cfs_quota_us
//   runtime-hooks pod and container dirs of raw-QoS BE pods: cpu.shares,
//                 cpu.cfs_quota_us, memory limit; of pods with a resource-status
//                 cpuset: cpu.cfs_quota_us and (not BE / kube BestEffort) the
//                 containers' cpuset.cpus (hook_reconcile.h)
//   memory-qos    kube-QoS, pod and container dirs: memory.min, memory.low,
//                 memory.high, the wmark/priority/oom knobs and (opt-in, v1 without
//                 memory.low) BE's memory.soft_limit_in_bytes
// The sets are disjoint by construction (the besteffort dir and BE pods' cpusets
// belong to suppress, BE pods' and pinned pods' quotas to the hooks, every other
// pod's quota to burst); the executor refuses a second owner, so a
// future overlap shows as refused writes, not as a tug of war. Ownership is held
// while a strategy keeps asking for a knob: one not asked for in two force periods
// (a pod gone, a recovery done, a quota left as it is) is let go, so the record
// follows the live cgroups; the disjoint sets above, not the record, are what keep
// strategies apart over long pauses.
#pragma once

#include <any>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "cgroupfs/executor.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"
#include "metrics/cpu_topology.h"
#include "metrics/metric_cache.h"
#include "qos/slo_config.h"
#include "qos/snapshot.h"
#include "qos/strategy.h"

namespace koord {

struct QosManagerConfig {
  std::string cgroupRoot;  // --cgroup-root-dir: where the besteffort tree is listed
  // The node's page size and allocatable memory as known at start: NodeFacts'
  // first values (strategy.h).
  int64_t pageSize = 4096;
  int64_t nodeAllocatableMemory = 0;
  NodeReservation reservation;
  CpuManagerPolicy cpuManagerPolicy = CpuManagerPolicy::kNone;
  // The window of the snapshot's average node usage (QosSnapshot::nodeCpuAvgCores):
  // the agent gives min(5 × reconcile interval, 10 s), koordlet's share-pool window.
  std::chrono::nanoseconds nodeCpuAvgWindow = std::chrono::seconds(5);
};

// The cgroups on disk under the besteffort dir in the cpuset hierarchy: depth 1 (pod
// dirs) and depth 2 (container dirs), relative to the hierarchy root. What CPU
// suppress narrows every round, and what `koordlet restore` widens again.
struct BesteffortDirs {
  std::vector<std::string> pods;
  std::vector<std::string> containers;  // sorted
};
BesteffortDirs listBesteffortDirs(const CgroupLayout& layout, const std::string& cgroupRoot);

// CurrentValues through the executor's reader, memoised for one round: a strategy
// may ask for the same file twice, and nothing writes between its reads.
class ExecutorValues final : public CurrentValues {
 public:
  explicit ExecutorValues(const Executor& executor) : executor_(&executor) {}
  std::optional<KnobValue> get(const std::string& dir, Knob knob) const override {
    auto key = std::make_pair(dir, knob);
    auto it = memo_.find(key);
    if (it == memo_.end()) {
      auto v = executor_->read(dir, knob);
      it = memo_.emplace(std::move(key), v ? std::optional<KnobValue>(*v) : std::nullopt).first;
    }
    return it->second;
  }

 private:
  const Executor* executor_;
  mutable std::map<std::pair<std::string, Knob>, std::optional<KnobValue>> memo_;
};

// One strategy's run in a round.
struct StrategyReport {
  std::string name;      // QosStrategy::name()
  double seconds = 0;    // run and write, by the manager's clock
  ExecutorStats writes;  // what the executor did with this strategy's writes
  std::vector<std::string> errors;
  std::vector<EvictionRequest> evictions;  // what it asked to evict
  std::any result;                         // the strategy's own result type
};

struct QosRound {
  std::vector<StrategyReport> ran;  // the strategies that ran, in registration order
  ExecutorStats writes;             // what the executor did with this round's writes
  // Every strategy's evictions, in order; the agent hands them to the evictor (or,
  // in dry-run, logs them).
  std::vector<EvictionRequest> evictions;

  // The report of the strategy named `name`, when it ran this round.
  const StrategyReport* report(std::string_view name) const {
    for (const StrategyReport& r : ran) {
      if (r.name == name) return &r;
    }
    return nullptr;
  }
  // Its own result, when it ran and its result is a T.
  template <class T>
  const T* result(std::string_view name) const {
    const StrategyReport* r = report(name);
    return r ? std::any_cast<T>(&r->result) : nullptr;
  }
};

class QosManager {
 public:
  QosManager(QosManagerConfig config, CgroupLayout layout, CpuTopology topology, Executor& executor,
             const Clock& clock);

  // Registers a strategy; they run in the order added. Returns it, for a caller
  // that wants to keep a view of it (tests). Names must be unique.
  template <class S>
  S& add(std::unique_ptr<S> strategy) {
    S& ref = *strategy;
    addStrategy(std::move(strategy));
    return ref;
  }

  // The pod list changed (the agent's kubelet sync): the strategies that run on a
  // change (QosStrategy::runsOnPodsChange) are due in the next runDue.
  void podsChanged() { podsChanged_ = true; }

  // Runs the strategies that are enabled and due, hands their writes to the executor.
  // `evictions`: the evictor's ledger, which the eviction strategies read.
  QosRound runDue(const std::vector<Pod>& pods, const MetricCache& cache, const NodeSloSpec& spec,
                  const EvictionLedger* evictions = nullptr);

  // The snapshot a strategy would see now (tests, and GET /config's diagnostics).
  QosSnapshot snapshot(const std::vector<Pod>& pods, const MetricCache& cache) const;

  const QosManagerConfig& config() const { return config_; }
  // What strategies (and the runtime hooks' context) know of the node.
  const NodeFacts& node() const { return node_; }
  // MemTotal from the node collector when no --node-allocatable-memory was given.
  void setNodeAllocatableMemory(int64_t bytes) { node_.nodeAllocatableMemory = bytes; }
  // The Node's reservation annotations (or the flags) changed.
  void setReservation(NodeReservation r) { config_.reservation = std::move(r); }
  // The kubelet's CPU manager policy once its /configz has said (the flag's until then).
  void setCpuManagerPolicy(CpuManagerPolicy p) { config_.cpuManagerPolicy = p; }
  // Resctrl detected and mounted (the resctrl manager knows; default false).
  void setResctrlReady(bool ready) { node_.resctrlReady = ready; }
  // The Node's capacity and batch allocatable (eviction), and the collection interval.
  NodeFacts& mutableNode() { return node_; }
  // Whether the kernel has memory.min/low/high; defaults to the executor's probe.
  void setMemoryQosSupported(bool supported) { node_.memoryQosKernel = supported; }
  // Per-pod entries it keeps between rounds (the pinned CPUs of each pod).
  // Per-pod state held: resource-status parses, pod paths and container paths.
  size_t stateEntries() const {
    size_t n = pinned_.size() + podDirs_.size();
    for (const auto& [uid, paths] : podDirs_) n += paths.containers.size();
    return n;
  }

 private:
  struct Entry {
    std::unique_ptr<QosStrategy> strategy;
    std::optional<Clock::Monotonic> last;  // its last run
  };
  void addStrategy(std::unique_ptr<QosStrategy> strategy);
  bool due(Entry& entry, Clock::Monotonic now) const;
  bool podsChanged_ = false;
  const std::vector<int>& pinnedCpus(const Pod& pod) const;
  // The cgroups under the besteffort dir in the cpuset hierarchy, depth 1 and 2.
  void listBesteffort(QosSnapshot& snap) const;

  QosManagerConfig config_;
  CgroupLayout layout_;
  CpuTopology topology_;
  Executor* executor_;
  const Clock* clock_;
  NodeFacts node_;
  std::vector<Entry> strategies_;
  // resource-status annotation text -> its CPUs, per pod uid (the pod list changes
  // every sync, the annotation almost never; parse once).
  mutable std::map<std::string, std::pair<std::string, std::vector<int>>> pinned_;
  // Each listed pod's cgroup paths, by uid, made once rather than every round: a
  // pod gone from the list has its executor owners let go at once
  // (Executor::forgetUnder) and its entry freed.
  struct ContainerPaths {
    std::string runtime;
    std::string id;   // "<runtime>://<id>"
    std::string dir;  // "" when the id or runtime cannot make one
  };
  struct PodPaths {
    KubeQos kubeQos = KubeQos::kGuaranteed;
    std::string dir;
    std::unordered_map<std::string, ContainerPaths> containers;  // by container id
  };
  mutable std::unordered_map<std::string, PodPaths> podDirs_;
  PodPaths& podPaths(const Pod& pod) const;
  void forgetGonePods(const std::vector<Pod>& pods);
};

}  // namespace koord
