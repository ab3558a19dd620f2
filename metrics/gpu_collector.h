// GpuCollector: the node's GPUs through the GpuLibrary seam (gpu/gpu_library.h):
// their facts once at start (the driver's list does not change while the node
// runs; koordlet reads it once too), their place from sysfs, and each round their
// use by the node, each pod and each container.
//
// Node use per GPU is the driver's own figure: core = the utilisation rate (percent
// of the time a kernel ran), memory = the device's memory in use. koordlet sums its
// processes' samples instead, which leaves out a process the driver sampled no core
// use for (its memory too); the driver's figure holds everything.
// Pod and container use: the GPU's processes, each placed by its /proc/<pid>/cgroup
// (a kubepods path: pod uid and container id), summed per GPU: core = the
// processes' sampled share of the cores (percent of one GPU), memory = their memory.
// A process outside any pod (a host daemon, the driver's own) counts for the node
// only. Parsing apart from I/O; paths under the injected --proc-root-dir and
// --sys-root-dir.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "gpu/gpu_library.h"
#include "gpu/gpu_topology.h"

namespace koord {

// A GPU as the agent reports it: the driver's facts and its place on the node.
struct GpuInventory {
  GpuDeviceInfo info;
  GpuPlace place;
  std::string pcieId;  // the PCI root it hangs from, "pci0000:3a"; "" unknown
};

struct GpuUse {
  double core = 0;      // percent of one GPU
  uint64_t memory = 0;  // bytes
  bool operator==(const GpuUse&) const = default;
};

// One round: use per GPU minor, by the node, per pod uid and per container id.
struct GpuRound {
  std::map<unsigned, GpuUse> node;
  std::map<std::string, std::map<unsigned, GpuUse>> pods;
  std::map<std::string, std::map<unsigned, GpuUse>> containers;
  std::vector<std::string> errors;  // a GPU whose use could not be read, with why
};

// The pod uid (dashes) and container id (the runtime's hex id) a process's
// /proc/<pid>/cgroup puts it in; nullopt outside the kubepods hierarchy. Both
// drivers: ".../kubepods/burstable/pod<uid>/<id>" and
// ".../kubepods-burstable-pod<uid_with_underscores>.slice/cri-containerd-<id>.scope"
// (also docker-, crio-); a pod-level process has an empty container id.
struct ProcessOwner {
  std::string podUid;
  std::string containerId;
  bool operator==(const ProcessOwner&) const = default;
};
std::optional<ProcessOwner> parseProcessOwner(std::string_view procCgroup);

// "pci0000:3a" from the resolved sysfs path of a PCI device
// ("/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"); "" when none.
std::string pcieRootOf(std::string_view resolvedPath);

class GpuCollector {
 public:
  GpuCollector(std::unique_ptr<GpuLibrary> library, std::string procRoot, std::string sysRoot);
  // Reads the driver's facts and each GPU's place. An error leaves no GPU.
  Status start();
  const GpuSystemInfo& system() const { return system_; }
  const std::vector<GpuInventory>& inventory() const { return inventory_; }
  // One round. nowMicros: the wall clock, for the driver's per-process samples since
  // the last round.
  // Each GPU process's cgroup is read each round (a handful of processes; a pid
  // reused between rounds cannot be mistaken for the one before).
  GpuRound collect(uint64_t nowMicros);

  // The driver's critical-error events for these GPUs (metrics/gpu_health.h watches
  // them); the watch goes before this collector.
  Result<GpuWatchStart> watchHealth() { return library_->watchHealth(); }
  // Marks the GPU with this uuid unhealthy, or every GPU for "", with why; returns
  // the minors that were healthy until now.
  std::vector<unsigned> markUnhealthy(const std::string& uuid, const std::string& why);

 private:
  std::optional<ProcessOwner> ownerOf(int pid);

  std::unique_ptr<GpuLibrary> library_;
  std::string procRoot_;
  std::string sysRoot_;
  GpuSystemInfo system_;
  std::vector<GpuInventory> inventory_;
  uint64_t lastMicros_ = 0;
};

}  // namespace koord
