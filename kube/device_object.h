// The node's Device (scheduling.koordinator.sh/v1alpha1, cluster-scoped, named after
// the node, owned by the Node) as koordlet writes it for its GPUs (gate
// Accelerators; facts: koordlet v1.7.0 statesinformer's device report and the
// Device API type): what the agent manages in it (DeviceContent), the object it
// creates, the update it sends, and whether the server's copy already says it.
//
// Each GPU is one spec.devices entry:
//   {"type": "gpu", "id": <UUID>, "minor": <n>, "health": <bool>,
//    "resources": {"koordinator.sh/gpu-core": "100",
//                  "koordinator.sh/gpu-memory": <total, BinarySI: "80Gi">,
//                  "koordinator.sh/gpu-memory-ratio": "100"},
//    "topology": {"socketID": <s>, "nodeID": <numa>, "pcieID": "pci0000:3a",
//                 "busID": "0000:3b:00.0"}}
// topology only when the PCI root and bus id are known (koordlet's rule); the NUMA
// node -1 ("none") is written 0, as koordlet does; socketID is the socket sysfs
// names for the GPU's CPUs (koordlet always writes -1; the scheduler reads it only
// for its joint allocation, where a right value serves better than none).
// The labels koord-manager copies onto the Node: node.koordinator.sh/gpu-vendor
// "nvidia", gpu-model (the one model every GPU reports, one leading "NVIDIA " cut,
// spaces made "-"; none when the GPUs differ) and gpu-driver-version (none with the
// model).
//
// What the agent manages, and nothing else (deliberately narrower than koordlet,
// which replaces spec.devices, labels and annotations wholesale and so removes what
// another writer put there): the "gpu" entries of spec.devices (entries of other
// types are kept, in place) and the three labels (one the content does not carry
// is removed). Entries are written in minor order. Changed: a gpu entry added,
// removed or different in id, health, a resource (compared as quantities: "80Gi"
// equals "81920Mi") or topology; or a managed label.
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
inline constexpr const char* kGpuCoreResource = "koordinator.sh/gpu-core";
inline constexpr const char* kGpuMemoryResource = "koordinator.sh/gpu-memory";
inline constexpr const char* kGpuMemoryRatioResource = "koordinator.sh/gpu-memory-ratio";

struct DeviceGpu {
  std::string uuid;
  int minor = 0;
  bool health = true;
  std::string memory;  // the gpu-memory quantity, BinarySI ("80Gi")
  int numaNode = 0;
  int socket = -1;
  std::string pcieId;  // "pci0000:3a"; "" unknown
  std::string busId;   // "0000:3b:00.0"; "" unknown
  bool operator==(const DeviceGpu&) const = default;
};

struct DeviceContent {
  std::map<std::string, std::string> labels;  // of the three managed keys
  std::vector<DeviceGpu> gpus;                // sorted by minor
  bool operator==(const DeviceContent&) const = default;
};

// "NVIDIA H100 80GB HBM3" -> "H100-80GB-HBM3"; "Tesla T4" -> "Tesla-T4".
std::string gpuModelLabel(std::string_view model);
// The labels for GPUs reporting these models and this driver version (see above).
std::map<std::string, std::string> gpuLabels(const std::vector<std::string>& models,
                                             const std::string& driverVersion);

nlohmann::json deviceGpuJson(const DeviceGpu& gpu);
nlohmann::json newDeviceObject(std::string_view nodeName, std::string_view nodeUid,
                               const DeviceContent& content);
nlohmann::json applyDeviceContent(const nlohmann::json& current, const DeviceContent& content);
std::optional<std::string> deviceDiffers(const nlohmann::json& current,
                                         const DeviceContent& content);

}  // namespace koord
