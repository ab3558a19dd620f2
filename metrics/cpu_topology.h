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
#include <string_view>
#include <vector>

#include "base/host_paths.h"
#include "base/result.h"

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
  // Offline CPUs whose topology files are readable, sorted by id: lscpu numbers
  // cores and sockets over them too (qos/node_topology.h). Nothing else uses them.
  std::vector<CpuInfo> offline;
  // True when core, socket and node come from sysfs. False for the fallback from
  // /proc/stat's cpuN lines (ids and count only: each CPU its own core, socket 0),
  // which is all CPU burst and cfsQuota suppress need; suppress's cpuset policy
  // picks CPUs by core and socket, and is off without it.
  bool placement = true;
  size_t count() const { return cpus.size(); }
  std::vector<int> ids() const;
};

// The ids-only topology (placement false) of the given online CPU ids (/proc/stat's
// cpuN lines), for when sysfs is unreadable. Empty ids: an error.
Result<CpuTopology> cpuTopologyFromIds(std::vector<int> ids);

// Reads the topology of the online CPUs. A CPU listed online whose topology/
// directory is absent is skipped as offline: the kernel removes that directory
// when a CPU goes down, so the online list and the per-CPU directories can
// disagree for an instant around a hotplug (and do in the Graviton2 capture).
// An error names the file; no online CPU with a topology is an error too.
Result<CpuTopology> readCpuTopology(const HostPaths& paths);

// Parsers for the sysfs files above. The kernel ends each with '\n'; text
// without it is accepted (hand-made trees and some captures drop it, and a
// sysfs attribute is produced in one read, so a missing '\n' is not a cut read).
// A cpu list ("0-3,8\n"; "\n" = none) must ascend as the kernel prints it;
// trailing NUL bytes are dropped (seen after the '\n' in a real arm64 capture).
Result<std::vector<int>> parseSysfsCpuList(std::string_view text);
// core_id, physical_package_id: one decimal integer; -1 is allowed (the kernel's
// "unknown", which some arm64 firmware tables leave the package at).
Result<int> parseSysfsId(std::string_view text);

}  // namespace koord
