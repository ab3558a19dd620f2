// CPU topology: each online logical CPU with its core, socket and NUMA node, as
// koordlet's node info collector reports it and CPU suppress picks CPUs by it
// (reference koordlet.md §4.1). Read from sysfs under the injected --sys-root-dir:
//   devices/system/cpu/online                          which CPUs exist (absent: every cpuN dir)
//   devices/system/cpu/cpuN/topology/core_id            core within the package
//   devices/system/cpu/cpuN/topology/physical_package_id socket
//   devices/system/node/nodeM/cpulist                  NUMA node (absent: all on node 0)
// Parsers take text; readCpuTopology does the I/O. Errors name the file.
#pragma once

#include <string>
#include <vector>

#include "agent/host_paths.h"
#include "agent/result.h"

namespace koord {

struct CpuInfo {
  int id = 0;
  int core = 0;    // core_id (unique only within a socket)
  int socket = 0;  // physical_package_id
  int node = 0;    // NUMA node
  bool operator==(const CpuInfo&) const = default;
};

struct CpuTopology {
  std::vector<CpuInfo> cpus;  // online CPUs, sorted by id
  size_t count() const { return cpus.size(); }
  std::vector<int> ids() const;
};

Result<CpuTopology> readCpuTopology(const HostPaths& paths);

}  // namespace koord
