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

// A critical error the driver raised on a GPU: an Xid event (the driver's error
// codes, NVIDIA's "Xid Errors" list), a double-bit ECC error, or a GPU gone from
// the bus.
struct GpuHealthEvent {
  std::string uuid;  // the GPU's; "" when the driver cannot say which (all of them)
  uint64_t xid = 0;  // the Xid of an Xid event; 0 otherwise
  std::string what;  // "Xid 79", "double-bit ECC error", "GPU lost"
  bool operator==(const GpuHealthEvent&) const = default;
};

// The driver's critical-error events for the node's GPUs, read by one thread (the
// wait blocks; the driver allows it beside the other calls).
class GpuEventWatch {
 public:
  virtual ~GpuEventWatch() = default;
  // The next event within timeoutMs; nullopt when none came. An error when the
  // driver cannot wait (the caller pauses before it tries again).
  virtual Result<std::optional<GpuHealthEvent>> wait(unsigned timeoutMs) = 0;
};

// A GPU whose critical errors are not watched.
struct GpuUnwatched {
  std::string uuid;
  std::string why;
  // The driver says the GPU cannot report them (too old a GPU): koordlet, and
  // NVIDIA's device plugin, take such a GPU as unhealthy.
  bool unsupported = false;
  bool operator==(const GpuUnwatched&) const = default;
};

struct GpuWatchStart {
  std::unique_ptr<GpuEventWatch> watch;
  std::vector<GpuUnwatched> unwatched;
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
  // Starts watching every GPU for critical errors (an error when the driver offers
  // no events at all). The watch must go before the library.
  virtual Result<GpuWatchStart> watchHealth() = 0;
};

}  // namespace koord
