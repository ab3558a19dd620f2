// Pod model: what the agent knows of each pod on the node, from the kubelet's
// /pods/ PodList. Classification follows koordlet (reference koordlet.md §2.2,
// §2.3): kube QoS from status.qosClass (else computed as kubectl does), the
// Koordinator QoS label koordinator.sh/qosClass with its kube-QoS default, the
// priority class, and batch resources (kubernetes.io/batch-cpu in milli-cores,
// kubernetes.io/batch-memory in bytes).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "kube/pod_resources.h"
#include "kube/qos_class.h"

namespace koord {

// Koordinator's scheduler writes a pod's assigned CPUs here, {"cpuset": "0-3"}
// (LSE/LSR pods); qos/snapshot.h parses it.
inline constexpr const char* kResourceStatusAnnotation =
    "scheduling.koordinator.sh/resource-status";
// A pod's own CPU burst config ({"policy": "auto", ...}) over the NodeSLO's.
inline constexpr const char* kCpuBurstAnnotation = "koordinator.sh/cpuBurst";
// A pod with its own resctrl group (koordlet-<uid>), not the LSR/LS/BE ones.
inline constexpr const char* kPodResctrlAnnotation = "node.koordinator.sh/resctrl";
// Koordinator's batch extended resources: milli-cores (the quantity's value is
// already milli-cores) and bytes.
inline constexpr const char* kBatchCpuResource = "kubernetes.io/batch-cpu";
inline constexpr const char* kBatchMemoryResource = "kubernetes.io/batch-memory";
// Its mid resources (koord-mid pods), the same units.
inline constexpr const char* kMidCpuResource = "kubernetes.io/mid-cpu";
inline constexpr const char* kMidMemoryResource = "kubernetes.io/mid-memory";

// Requests or limits of one container. Absent fields were not set in the spec.
struct ResourceList {
  std::optional<int64_t> cpuMilli;          // cpu, in milli-cores (rounded up, as k8s)
  std::optional<int64_t> memoryBytes;       // memory
  std::optional<int64_t> batchCpuMilli;     // kubernetes.io/batch-cpu (its value is milli-cores)
  std::optional<int64_t> batchMemoryBytes;  // kubernetes.io/batch-memory
  std::optional<int64_t> midCpuMilli;       // kubernetes.io/mid-cpu (milli-cores, as batch-cpu)
  std::optional<int64_t> midMemoryBytes;    // kubernetes.io/mid-memory
};

struct Container {
  std::string name;
  bool init = false;
  // An init container with restartPolicy Always (Kubernetes 1.29+): a sidecar, which
  // runs beside the app containers and counts in the pod as the kubelet counts it
  // (kube/pod_resources.h).
  bool restartable = false;
  ContainerKind kind() const {
    return !init         ? ContainerKind::kApp
           : restartable ? ContainerKind::kSidecar
                         : ContainerKind::kInit;
  }
  // From status.(init)containerStatuses[].containerID "<runtime>://<id>"; both
  // empty until the runtime has created the container.
  std::string runtime;  // "containerd", "docker", "cri-o", "pouch"
  std::string id;
  ResourceList requests;
  ResourceList limits;
};

struct Pod {
  std::string uid;
  std::string ns;
  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  // metadata.deletionTimestamp is set: the pod is being deleted (evicted, or its
  // owner scaled down) and only waits for its grace period.
  bool terminating = false;
  // metadata.creationTimestamp; nullopt when absent (the kubelet always sends it).
  std::optional<Clock::Wall> created;
  KubeQos kubeQos = KubeQos::kBestEffort;
  KoordQos koordQos = KoordQos::kNone;                 // the label only ("raw" in koordlet)
  std::optional<int32_t> priority;                     // spec.priority
  PriorityClass priorityClass = PriorityClass::kNone;  // label, else from priority ranges
  std::vector<Container> containers;
  std::vector<Container> initContainers;
  ResourceList overhead;  // spec.overhead (RuntimeClass), cpu and memory

  // The label, else the kube QoS default: Guaranteed->LSR, Burstable->LS, BestEffort->BE.
  KoordQos qosWithDefault() const;
  // koordinator's GetPodPriorityClassWithDefault: the class (label, else the
  // spec.priority range), else from the QoS with its default: SYSTEM/LSE/LSR/LS ->
  // koord-prod, BE -> koord-batch.
  PriorityClass priorityWithDefault() const;
  // Pending or Running: koordlet's !IsPodInactive, the pods its QoS strategies act on.
  bool active() const { return phase == "Pending" || phase == "Running"; }
  // kubernetes.io/batch-cpu requests of the running pod: app containers and sidecars
  // summed (regular init containers have finished); 0 when unset.
  int64_t batchCpuRequestMilli() const;
  // The same rule for any field: what the running pod requests of it (app containers
  // and sidecars summed; negative values count 0, a sum past int64 saturates).
  int64_t runningRequest(std::optional<int64_t> ResourceList::*field) const;
  // koordinator's GetPodRequest (the kubelet's PodRequests) for cpu and memory: app
  // containers and sidecars summed, raised to each init container's beside the
  // sidecars before it, plus spec.overhead; 0 when none is set.
  int64_t requestCpuMilli() const;
  int64_t requestMemoryBytes() const;
  // Succeeded or Failed (koordinator's IsPodTerminated).
  bool terminated() const { return phase == "Succeeded" || phase == "Failed"; }
};

// One field of every container of `pod` (requests or limits), init containers first
// in spec order, as kube/pod_resources.h takes them. Names point into `pod`.
std::vector<ContainerAmount> containerAmounts(const Pod& pod,
                                              std::optional<int64_t> ResourceList::*field,
                                              bool limits);

// Parses a v1 PodList (the kubelet's GET /pods/ reply). Errors name the JSON path
// at fault ("items[3].metadata.uid: missing"). A PodList with zero items is valid
// here; the caller decides (koordlet treats it as a kubelet restart).
Result<std::vector<Pod>> parsePodList(std::string_view json);

// Kubernetes resource.Quantity: "100m", "1", "0.5", "1e3", "128Mi", "1G", "1k".
// milli: the value × 1000, rounded up (CPU); plain: the value rounded up (bytes).
Result<int64_t> parseQuantityMilli(std::string_view text);
Result<int64_t> parseQuantity(std::string_view text);

}  // namespace koord
