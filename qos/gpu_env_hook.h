// The GPUEnvInject hook (gate GPUEnvInject; koordlet's "gpu env inject", at
// PreCreateContainer only): a container of a pod koord-scheduler gave GPUs gets
// NVIDIA_VISIBLE_DEVICES with their minors, so the NVIDIA container runtime exposes
// those GPUs and no others.
//
// Input: the pod's scheduling.koordinator.sh/device-allocated annotation, written by
// koord-scheduler at bind: a JSON object by device type, each an array of
// {"minor": <int>, "resources": {...}, "id": "<uuid>", ...}. Only "gpu" is read
// (rdma, fpga and the rest belong to other hooks). Output: the minors in the
// annotation's order, decimal, joined by "," ("0,1"), as koordlet writes them (not
// UUIDs, not NVML indexes: the two coincide on nearly every host; koordlet's choice
// kept, so a pod behaves the same under either agent).
// No annotation or no "gpu" entry: nothing. Not JSON, not an object, "gpu" not an
// array, an entry without an integer minor or with a negative one: an error naming
// the annotation and the field; nothing is injected (the failure policy decides
// whether the container starts).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord {

inline constexpr const char* kDeviceAllocatedAnnotation =
    "scheduling.koordinator.sh/device-allocated";
inline constexpr const char* kNvidiaVisibleDevicesEnv = "NVIDIA_VISIBLE_DEVICES";

// The GPU minors of the annotation's "gpu" entries, in order (empty: none).
Result<std::vector<int>> gpuMinorsAllocated(std::string_view annotation);

// The env the hook sets for a pod with these annotations: {} or
// {"NVIDIA_VISIBLE_DEVICES": "0,1"}.
Result<std::map<std::string, std::string>> gpuEnv(
    const std::map<std::string, std::string>& podAnnotations);

}  // namespace koord
