// QosSnapshot: everything a QoS strategy decides from, gathered by the QoS manager
// from the pod list, the metric cache, the CPU topology and the node's reservation.
// Strategies are pure functions of a snapshot, the config, the current knob values
// (CurrentValues) and their own small state: tests build snapshots by hand and
// assert on the intended writes, with no filesystem.
//
// Usage samples carry their timestamps so each strategy applies koordlet's
// freshness rule itself (a sample older than the limit counts as missing).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "cgroupfs/knob.h"
#include "kube/pod.h"
#include "metrics/cpu_topology.h"

namespace koord {

struct Sample {
  double value = 0;
  Clock::Monotonic at{};
};

// The value when it is no older than maxAge at `now`.
std::optional<double> freshValue(const std::optional<Sample>& s, Clock::Monotonic now,
                                 std::chrono::nanoseconds maxAge);

struct ContainerView {
  const Container* container = nullptr;
  std::string id;   // "<runtime>://<id>", koordlet's container_id label
  std::string dir;  // cgroup dir relative to the hierarchy root; "" when not created yet
  std::optional<Sample> cpuCores;        // last sample
  std::optional<Sample> throttledRatio;  // last sample
};

struct PodView {
  const Pod* pod = nullptr;
  KoordQos qos = KoordQos::kNone;     // pod->qosWithDefault()
  std::string dir;                    // pod cgroup dir
  std::optional<Sample> cpuCores;     // last sample
  std::optional<Sample> memoryBytes;  // last sample (without page cache)
  // scheduling.koordinator.sh/resource-status {"cpuset": "..."} (LSE/LSR pods bound
  // by the scheduler); empty when absent or unparsable.
  std::vector<int> pinnedCpus;
  std::vector<ContainerView> containers;
};

// What the node keeps for itself (koordlet: node.koordinator.sh/reservation and
// capacity − allocatable; this agent has no Node object, so --node-reservation
// carries the same JSON as the annotation).
struct NodeReservation {
  int64_t cpuMilli = 0;                  // resources.cpu
  std::vector<int> reservedCpus;         // reservedCPUs
  std::vector<int> systemExclusiveCpus;  // node.koordinator.sh/system-qos-resource, exclusive
};

// {"resources":{"cpu":"2","memory":"4Gi"},"reservedCPUs":"0-1"}; "" = nothing reserved.
// Errors name the field.
Result<NodeReservation> parseNodeReservation(std::string_view json);

// The node.koordinator.sh/system-qos-resource annotation's JSON
// ({"cpuset":"0-1","cpusetExclusive":true}): the CPUs of SYSTEM-QoS pods. When
// exclusive (koordinator's default when the field is absent), no other pod may
// use them: CPU suppress keeps them from BE. Returns those exclusive CPUs (empty
// when not exclusive, or "" = none). Errors name the field.
Result<std::vector<int>> parseSystemQosExclusiveCpus(std::string_view json);

// The CPU the node keeps for itself, in milli-cores, as koordlet counts it when
// it computes system usage: reservedCPUs, when set, replace resources.cpu by
// their count (koordinator pkg/util/node.go GetNodeReservationResources).
int64_t reservedCpuMilli(const NodeReservation& r);

// A CPU list as koordinator writes it in annotations: "0-3,8", "" = none. As k8s
// cpuset.Parse: elements "a" or "a-b" (a <= b) of decimal digits, in any order,
// overlaps allowed; no blanks. Ascending, without duplicates.
Result<std::vector<int>> parseAnnotationCpuList(std::string_view list);

// scheduling.koordinator.sh/resource-status {"cpuset":"0-3"}: the CPU list, or an
// error naming the annotation.
Result<std::vector<int>> parseResourceStatusCpuset(std::string_view json);

enum class CpuManagerPolicy { kNone, kStatic };

struct QosSnapshot {
  Clock::Monotonic at{};
  CpuTopology topology;  // capacity = topology.count() cores
  NodeReservation reservation;
  CpuManagerPolicy cpuManagerPolicy = CpuManagerPolicy::kNone;
  std::optional<Sample> nodeCpuCores;     // last node usage sample
  std::optional<Sample> nodeMemoryBytes;  // last node memory usage (MemTotal - MemAvailable)
  // Node usage averaged over CPU burst's window (min(5 × interval, 10 s)); nullopt
  // when the window holds no sample.
  std::optional<double> nodeCpuAvgCores;
  std::vector<PodView> pods;  // every pod of the kubelet's list
  std::string besteffortDir;  // the BestEffort kube-QoS dir
  // Every cgroup found on disk under the besteffort dir in the cpuset hierarchy:
  // depth 1 (pod dirs) and depth 2 (container dirs, the sandbox's pause container
  // and leftovers of deleted pods included). On cgroup v1 a parent's cpuset.cpus
  // cannot shrink below a child's (EBUSY), so suppress must narrow every one of
  // them, not only the containers the pod list names.
  std::vector<std::string> besteffortPodDirs;
  std::vector<std::string> besteffortContainerDirs;
  int64_t capacityMilli() const { return static_cast<int64_t>(topology.count()) * 1000; }
};

// The knob values the files hold now, read by the manager (or a map in tests).
// nullopt: unknown (file missing or unreadable).
class CurrentValues {
 public:
  virtual ~CurrentValues() = default;
  virtual std::optional<KnobValue> get(const std::string& dir, Knob knob) const = 0;
};

// For tests and for the manager's read-through cache.
class MapValues final : public CurrentValues {
 public:
  void set(const std::string& dir, Knob knob, KnobValue v) { values_[{dir, knob}] = std::move(v); }
  std::optional<KnobValue> get(const std::string& dir, Knob knob) const override {
    auto it = values_.find({dir, knob});
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<std::pair<std::string, Knob>, KnobValue> values_;
};

}  // namespace koord
