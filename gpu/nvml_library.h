// NVML as a GpuLibrary: libnvidia-ml.so.1 loaded with dlopen when the agent starts
// (no build-time dependency; the driver installs the library on a GPU node, the NVIDIA
// container toolkit mounts it into the agent's container). On a node without it,
// loadNvml() says why and the agent has no GPU; nothing else degrades.
#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "gpu/gpu_library.h"

namespace koord {

// The library's name as the dynamic loader finds it (LD_LIBRARY_PATH, ld.so.cache).
constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

// Loads and initialises NVML from `path` (a name the loader searches, or a path).
// An error when the library is absent, lacks a function the agent needs, or its
// nvmlInit fails (no driver loaded, no device); the message says which.
Result<std::unique_ptr<GpuLibrary>> loadNvml(const std::string& path = kNvmlLibrary);

// "12.2" from NVML's CUDA driver version integer 12020; "" for 0 or less.
std::string cudaVersionString(int version);
// "0000:3b:00.0" from NVML's "00000000:3B:00.0" (NVML pads the domain to 8 digits;
// sysfs names it with 4, lower case).
std::string sysfsBusId(const std::string& nvmlBusId);

}  // namespace koord
