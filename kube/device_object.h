// The node's Device (scheduling.koordinator.sh/v1alpha1, cluster-scoped, named after
// the node, owned by the Node) as koordlet writes it (gate Accelerators; facts:
// koordlet v1.8.0 statesinformer's device report and the Device API type): what the
// agent manages in it (DeviceContent), the object it creates, the update it sends,
// and whether the server's copy already says it.
//
// Each device is one spec.devices entry of type "gpu" (koordlet's type for every
// accelerator, NPUs and MLUs included):
//   {"type": "gpu", "id": <UUID>, "minor": <n>, "health": <bool>,
//    "resources": {<name>: <quantity>, ...},
//    "topology": {"socketID": <s>, "nodeID": <numa>, "pcieID": "pci0000:3a",
//                 "busID": "0000:3b:00.0"},
//    "conditions": [{"type": "Healthy", "status": "True"|"False", "reason": ...,
//                    "message": ..., "lastTransitionTime": <RFC 3339>}]}
// Two sources fill it (gpu/): koord-device-daemon's device-info files (resources
// as the file names them, topology and the Healthy condition when the file has
// them) or NVML (gpuFromNvml below: the three koordinator.sh/gpu-* resources,
// topology when the PCI root and bus id are known, no condition).
//
// What the agent manages, and nothing else (deliberately narrower than koordlet,
// which replaces spec.devices, labels and annotations wholesale and so removes what
// another writer put there): the "gpu" entries of spec.devices (entries of other
// types are kept, in place), the four node.koordinator.sh/gpu-* labels and the
// scheduling.koordinator.sh/gpu-partitions annotation (one the content does not
// carry is removed). Entries are written in minor order. Changed: a gpu entry
// added, removed or different in id, health, a resource (compared as quantities:
// "80Gi" equals "81920Mi"), topology or condition (its time aside); or a managed
// label or annotation. A condition's lastTransitionTime is the server's while its
// status, reason and message stay, the content's time when they change.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace koord {

inline constexpr std::string_view kDeviceResource = "devices";
inline constexpr std::string_view kDeviceCollectionPath =
    "/apis/scheduling.koordinator.sh/v1alpha1/devices";
inline constexpr const char* kGpuVendorLabel = "node.koordinator.sh/gpu-vendor";
inline constexpr const char* kGpuModelLabel = "node.koordinator.sh/gpu-model";
inline constexpr const char* kGpuDriverVersionLabel = "node.koordinator.sh/gpu-driver-version";
inline constexpr const char* kGpuPartitionPolicyLabel = "node.koordinator.sh/gpu-partition-policy";
inline constexpr const char* kGpuPartitionsAnnotation = "scheduling.koordinator.sh/gpu-partitions";
inline constexpr const char* kGpuCoreResource = "koordinator.sh/gpu-core";
inline constexpr const char* kGpuMemoryResource = "koordinator.sh/gpu-memory";
inline constexpr const char* kGpuMemoryRatioResource = "koordinator.sh/gpu-memory-ratio";

struct DeviceTopology {
  int socket = -1;
  int numaNode = -1;
  std::string pcieId;  // "pci0000:3a"
  std::string busId;   // "0000:3b:00.0"; "" is left out of the object
  bool operator==(const DeviceTopology&) const = default;
};

// The one condition koordlet writes, of type Healthy.
struct DeviceCondition {
  bool healthy = true;
  std::string reason;
  std::string message;
  bool operator==(const DeviceCondition&) const = default;
};

struct DeviceGpu {
  std::string uuid;
  int minor = 0;
  bool health = true;
  std::map<std::string, std::string> resources;  // name -> quantity text
  std::optional<DeviceTopology> topology;
  std::optional<DeviceCondition> condition;
  bool operator==(const DeviceGpu&) const = default;
};

struct DeviceContent {
  std::map<std::string, std::string> labels;       // of the four managed keys
  std::map<std::string, std::string> annotations;  // of the one managed key
  std::vector<DeviceGpu> gpus;                     // sorted by minor
  std::string conditionTime;  // RFC 3339: a changed condition's lastTransitionTime
  // The time aside: content read again at another time is the same content.
  bool operator==(const DeviceContent& o) const {
    return labels == o.labels && annotations == o.annotations && gpus == o.gpus;
  }
};

// An NVML GPU as koordlet writes it: gpu-core 100, gpu-memory the total (BinarySI
// text, "80Gi"), gpu-memory-ratio 100; topology when the PCI root and bus id are
// known, the NUMA node -1 ("none") written 0 as koordlet does; socket is the socket
// sysfs names for the GPU's CPUs (koordlet always writes -1; the scheduler reads it
// only for its joint allocation, where a right value serves better than none).
DeviceGpu gpuFromNvml(std::string uuid, int minor, bool health, std::string memory, int numaNode,
                      int socket, std::string pcieId, std::string busId);

// "NVIDIA H100 80GB HBM3" -> "H100-80GB-HBM3"; "Tesla T4" -> "Tesla-T4".
std::string gpuModelLabel(std::string_view model);
// The labels for NVML GPUs reporting these models and this driver version:
// gpu-vendor "nvidia", gpu-model (the one model every GPU reports; none when the
// GPUs differ) and gpu-driver-version (none with the model).
std::map<std::string, std::string> gpuLabels(const std::vector<std::string>& models,
                                             const std::string& driverVersion);

nlohmann::json deviceGpuJson(const DeviceGpu& gpu, std::string_view conditionTime);
nlohmann::json newDeviceObject(std::string_view nodeName, std::string_view nodeUid,
                               const DeviceContent& content);
nlohmann::json applyDeviceContent(const nlohmann::json& current, const DeviceContent& content);
std::optional<std::string> deviceDiffers(const nlohmann::json& current,
                                         const DeviceContent& content);

}  // namespace koord
