// The one seam between the agent and a GPU driver: what the agent reads of each GPU
// (facts that do not change while the node runs, and usage each round). The real
// one is NVML loaded at run time (gpu/nvml_library.h); unit tests give a double.
// Nothing here knows a pod, a cgroup or the API server.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace koord {

// A GPU as the driver names it.
struct GpuDeviceInfo {
  unsigned index = 0;        // the driver's enumeration index
  std::string uuid;          // "GPU-7b3c..."
  unsigned minor = 0;        // /dev/nvidia<minor>
  std::string model;         // "NVIDIA H100 80GB HBM3"
  uint64_t memoryTotal = 0;  // bytes
  std::string busId;         // PCI address, lower case: "0000:3b:00.0"
  bool healthy = true;
  std::string unhealthyReason;  // why not, when not
  bool operator==(const GpuDeviceInfo&) const = default;
};

struct GpuSystemInfo {
  std::string driverVersion;  // "535.104.05"
  std::string cudaVersion;    // "12.2" ("" when the driver does not say)
  bool operator==(const GpuSystemInfo&) const = default;
};

// One process's use of one GPU.
struct GpuProcessUsage {
  int pid = 0;
  uint64_t memoryUsed = 0;         // bytes
  std::optional<unsigned> smUtil;  // percent of the GPU's cores, when sampled
  bool operator==(const GpuProcessUsage&) const = default;
};

struct GpuDeviceUsage {
  unsigned coreUtil = 0;    // percent of the time a kernel ran, over the driver's sample period
  uint64_t memoryUsed = 0;  // bytes
  uint64_t memoryTotal = 0;
  std::vector<GpuProcessUsage> processes;
};

class GpuLibrary {
 public:
  virtual ~GpuLibrary() = default;
  virtual Result<GpuSystemInfo> system() = 0;
  virtual Result<std::vector<GpuDeviceInfo>> devices() = 0;
  // Usage of the device with this index. sinceMicros: per-process core samples newer
  // than this CPU timestamp (0: whatever the driver holds); the caller passes the time
  // of its last call.
  virtual Result<GpuDeviceUsage> usage(unsigned index, uint64_t sinceMicros) = 0;
};

}  // namespace koord
