// NodeInfo: what the agent takes from its own Node object (issue 16): where its
// kubelet listens (status.addresses and status.daemonEndpoints.kubeletEndpoint.Port,
// used when NODE_IP and the flags do not say), the node's allocatable and capacity
// CPU and memory (allocatable memory feeds memory QoS), and the raw text of the two
// koordinator annotations that feed CPU suppress (node.koordinator.sh/reservation and
// node.koordinator.sh/system-qos-resource; qos/node_overrides.h decides between them
// and the --node-reservation / --node-system-qos-resource flags).
//
// Parsing only: the informer hands the decoded object in. Errors name the node and
// the field: "Node rig-node: status.allocatable.memory: cannot parse \"lots\"".
//
// Decisions:
// - Only metadata.name is required. A Node just registered may have no status yet:
//   no addresses, no port, no allocatable (each optional, absent = not known).
// - status.daemonEndpoints.kubeletEndpoint.Port 0 is Go's zero value (the kubelet
//   has not reported it; the real rig capture has 0): read as "not known", so the
//   caller keeps its flag or default (10250).
// - Addresses keep the API's order and unknown types (the API allows any string).
// - Annotations: only the two above are kept, as their raw strings (a non-string
//   annotation value is an error: the API types them map[string]string).
// - Quantities are read as the Pod model reads them (kube/json_quantity.h, a string
//   or a bare number); negative ones are an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace koord {

inline constexpr std::string_view kNodeReservationAnnotation = "node.koordinator.sh/reservation";
inline constexpr std::string_view kSystemQosResourceAnnotation =
    "node.koordinator.sh/system-qos-resource";
// koord-manager's record of the allocatable before its own amplification (a JSON
// ResourceList); the peak predictor reads it before status.allocatable.
inline constexpr std::string_view kRawAllocatableAnnotation = "node.koordinator.sh/raw-allocatable";
// koord-manager's CPU normalization ratio for this node ("1.20"): quotas are divided
// by it (qos/runtime_hooks.h).
inline constexpr std::string_view kCpuNormalizationRatioAnnotation =
    "node.koordinator.sh/cpu-normalization-ratio";

struct NodeAddress {
  std::string type;  // "InternalIP", "Hostname", ...
  std::string address;
  bool operator==(const NodeAddress&) const = default;
};

struct NodeResources {
  std::optional<int64_t> cpuMilli;     // "cpu", milli-cores
  std::optional<int64_t> memoryBytes;  // "memory", bytes
  // "kubernetes.io/batch-cpu" (koord-manager's batch allocatable; its value is
  // milli-cores): BECPUEvict's limit under cpuEvictPolicy evictByAllocatable.
  std::optional<int64_t> batchCpuMilli;
  // koord-manager's other extended resources, as koordlet's allocatable gauge reads
  // them: kubernetes.io/batch-memory and mid-memory in bytes, mid-cpu (an integer of
  // milli-cores, as batch-cpu).
  std::optional<int64_t> batchMemoryBytes;
  std::optional<int64_t> midCpuMilli;
  std::optional<int64_t> midMemoryBytes;
};

struct NodeInfo {
  std::string name;
  std::string uid;                                   // metadata.uid ("" when absent)
  std::string resourceVersion;                       // metadata.resourceVersion ("" when absent)
  std::vector<NodeAddress> addresses;                // status.addresses, in the API's order
  std::optional<int> kubeletPort;                    // 1..65535; nullopt when absent or 0
  NodeResources allocatable;                         // status.allocatable
  NodeResources capacity;                            // status.capacity
  std::optional<std::string> reservationAnnotation;  // node.koordinator.sh/reservation
  std::optional<std::string> systemQosResourceAnnotation;  // ...system-qos-resource
  // node.koordinator.sh/raw-allocatable when it parses as a ResourceList (koordlet
  // falls back to status.allocatable otherwise, and so does the predictor); cpu and
  // memory only.
  std::optional<NodeResources> rawAllocatable;
  std::optional<std::string> cpuNormalizationRatioAnnotation;  // raw text
};

// A v1 Node object (as a GET or a watch event's "object" carries it).
Result<NodeInfo> parseNode(const nlohmann::json& node);

// The ratio annotation's text as koordlet reads it (strconv.ParseFloat): a finite
// number > 0, else an error saying the value.
Result<double> parseCpuNormalizationRatio(std::string_view text);

// The address types --kubelet-preferred-address-type accepts (koordlet.md §1.3).
bool isNodeAddressType(std::string_view type);

// The address koordlet would reach the kubelet at: the first address of the
// preferred type (an unknown preferred type is read as InternalIP, as koordlet
// does). The reference states no fallback when the node has no address of that
// type; ours (a decision, so a node still reaches its kubelet) is the first present
// of InternalIP, Hostname, InternalDNS, ExternalIP, ExternalDNS: the node's own
// addresses before the ones meant for outside. Empty addresses are skipped.
// nullopt when the node lists no non-empty address of those five types.
std::optional<NodeAddress> pickKubeletAddress(const NodeInfo& node, std::string_view preferredType);
std::optional<std::string> kubeletAddress(const NodeInfo& node, std::string_view preferredType);

}  // namespace koord
