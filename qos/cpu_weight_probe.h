// Reads the node runtime's shares -> cpu.weight conversion (cgroupfs/cpu_weight.h) off
// the containers it made: a container the agent never writes cpu.weight for (not BE)
// holds the runtime's conversion of the shares the kubelet asked, its CPU request as
// MilliCPUToShares makes it. The first whose two conversions differ decides. Used by
// the agent (each QoS round until known) and by `koordlet restore` (once).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cgroupfs/cpu_weight.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"

namespace koord {

struct CpuWeightEvidence {
  CpuWeightConversion conversion;
  std::string dir;  // the container's cgroup, relative to the root
  std::string pod;  // "ns/name container"
  int64_t shares = 0;
  int64_t weight = 0;
};

// At most `maxReads` cpu.weight files read; nullopt when none decided (v1, no such
// container yet, or every weight read was someone else's).
std::optional<CpuWeightEvidence> probeCpuWeightConversion(const std::vector<Pod>& pods,
                                                          const CgroupLayout& layout,
                                                          const std::string& cgroupRoot,
                                                          int maxReads);

}  // namespace koord
