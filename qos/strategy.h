// QosStrategy: the interface every QoS strategy plugs into the manager with
// (qos_manager.h). A strategy is a computation: on its interval, from a snapshot,
// the NodeSLO spec, the current knob values and what is known of the node, it
// returns the cgroup writes it intends and its own outcome; the manager times it,
// stamps its owner tag on the writes and hands them to the one executor. The
// manager knows no strategy by name: the agent registers each with one line, and
// reads a strategy's own outcome back from the round by name and type
// (QosRound::result).
//
// Contract:
//   name()     the strategy label of koordlet_qos_strategy_duration_seconds and the
//              key of its report in a round ("cpu_suppress"); unique per manager.
//   owner()    the executor owner tag of every write it returns ("cpu-suppress"):
//              one owner per knob per cgroup, so two strategies never fight.
//   interval() how often it runs; non-positive: never (koordlet: Enabled() needs
//              interval > 0). Runs are scheduled by the manager, within a quarter
//              interval of slack.
//   enabled()  whether it runs at all this round (feature gates, NodeSLO spec). A
//              strategy disabled here neither runs nor writes nor recovers; one that
//              must undo its effects when the spec turns it off stays enabled and
//              recovers in run() (CPU suppress does).
//   run()      the round: never touches a file (CurrentValues reads through the
//              executor, memoised for this run).
//   runsOnPodsChange()  also runs in the first round after the pod list changed,
//              due or not (the hooks' reconciler: a new pod or container is set
//              up within a round of the kubelet listing it, whatever the interval).
#pragma once

#include <any>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cgroupfs/executor.h"
#include "cgroupfs/knob.h"
#include "cgroupfs/layout.h"
#include "kube/eviction_ledger.h"
#include "metrics/metric_cache.h"
#include "qos/node_topology.h"
#include "qos/slo_config.h"
#include "qos/snapshot.h"

namespace koord {

// memory.min, memory.low and memory.high all exist (vanilla v2, Anolis v1): what
// koordlet_feature_supported{feature="memory_qos"} reports.
inline bool memoryQosSupported(const KnobSupport& support) {
  return support.has(Knob::kMemoryMin) && support.has(Knob::kMemoryLow) &&
         support.has(Knob::kMemoryHigh);
}

// What the manager knows of the node besides the snapshot: probed once at start or
// learnt later (the agent sets the allocatable memory from the first node
// collection and resctrl's readiness when the resctrl manager has checked).
struct NodeFacts {
  CgroupVersion version = CgroupVersion::kV1;
  KnobSupport support;  // the executor's probe
  int64_t pageSize = 4096;
  // Bytes: --node-allocatable-memory, else the node's MemTotal. 0: not known yet.
  int64_t nodeAllocatableMemory = 0;
  bool resctrlReady = false;     // resctrl detected and mounted
  bool memoryQosKernel = false;  // memoryQosSupported(support), unless told otherwise
  // The collection interval: "last" samples are fresh within two of them (koordlet's
  // CollectorNodeMetricLast), and the eviction windows count samples in them.
  std::chrono::nanoseconds collectInterval = std::chrono::seconds(1);
  // From the Node object (the evictions need it, as koordlet's do): status.capacity
  // memory and cpu, and status.allocatable kubernetes.io/batch-cpu. nullopt: no Node
  // (or none of that resource on it).
  std::optional<int64_t> capacityMemoryBytes;
  std::optional<int64_t> capacityCpuMilli;
  std::optional<int64_t> batchCpuAllocatableMilli;
  // status.allocatable of koord-manager's other extended resources (the allocatable
  // evictions): batch-memory and mid-memory in bytes, mid-cpu in milli-cores.
  std::optional<int64_t> batchMemoryAllocatableBytes;
  std::optional<int64_t> midCpuAllocatableMilli;
  std::optional<int64_t> midMemoryAllocatableBytes;
  // The share pools and kubelet policy the CPUSetAllocator hook decides from
  // (qos/node_topology.h); nullptr until the node topology is first computed.
  std::shared_ptr<const CpuSetRule> cpusetRule;
  // The Node's cpu-normalization-ratio (-1: none or not known) and the
  // CPUNormalization gate: the hooks divide quotas by it, and CPU burst its base.
  double cpuNormalizationRatio = -1;
  bool cpuNormalization = false;
};

struct StrategyContext {
  const QosSnapshot& snapshot;
  const NodeSloSpec& spec;
  const CurrentValues& current;
  const NodeFacts& node;
  // The samples, for strategies that aggregate over a window (CPU eviction).
  const MetricCache& cache;
  // Evictions asked for in earlier rounds and what became of them; nullptr: none
  // (no eviction executor, tests).
  const EvictionLedger* evictions = nullptr;
};

struct StrategyOutcome {
  std::vector<CgroupWrite> writes;  // the manager stamps the strategy's owner tag
  // One line per problem, naming the pod or file: the agent logs each as a warning,
  // once per streak. The round still writes what it can.
  std::vector<std::string> errors;
  // The strategy's own result type (SuppressResult, BurstResult, ...), for its
  // metrics and tests: QosRound::result<T>(name) reads it back.
  std::any result;
  // Pods to evict, in the order picked; the manager passes them on (QosRound).
  std::vector<EvictionRequest> evictions;
  // What decided this round's writes (GET /explain): the manager gives it to every
  // write that has no reason of its own (a per-pod one).
  WriteReasonPtr why = nullptr;
};

class QosStrategy {
 public:
  virtual ~QosStrategy() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view owner() const = 0;
  virtual std::chrono::nanoseconds interval() const = 0;
  virtual bool enabled(const NodeSloSpec& spec) const = 0;
  virtual StrategyOutcome run(const StrategyContext& ctx) = 0;
  virtual bool runsOnPodsChange() const { return false; }
};

// The common shape: a fixed name and owner, an interval flag and one gate decided
// at start (the four strategies today). A strategy whose enabling depends on the
// NodeSLO overrides enabled().
class GatedStrategy : public QosStrategy {
 public:
  GatedStrategy(std::string_view name, std::string_view owner, std::chrono::nanoseconds interval,
                bool gate)
      : name_(name), owner_(owner), interval_(interval), gate_(gate) {}

  std::string_view name() const override { return name_; }
  std::string_view owner() const override { return owner_; }
  std::chrono::nanoseconds interval() const override { return interval_; }
  bool enabled(const NodeSloSpec&) const override { return gate_; }

 private:
  std::string_view name_;  // static strings (the strategy's kName and owner tag)
  std::string_view owner_;
  std::chrono::nanoseconds interval_;
  bool gate_;
};

}  // namespace koord
