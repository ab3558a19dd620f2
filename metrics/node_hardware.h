// What the node's NodeResourceTopology says about its hardware besides the CPU
// list (metrics/cpu_topology.h): koordlet's CPU basic info and the memory of each
// NUMA node (reference koordlet.md §5.3; koordlet's cpuinfo and NUMA collectors).
// Read at start and every 60 s with the kubelet's /configz (resctrl may be mounted
// later); all under the injected roots:
//   <proc>/cpuinfo                                   first "model name" / "Model Name",
//                                                    first "vendor_id"
//   <sys>/devices/system/cpu/smt/active              "1": hyper-threading on
//   <sys>/devices/system/cpu/intel_pstate/no_turbo   "0": turbo on (absent: off)
//   <sys-fs>/resctrl/info/L3/cbm_mask                the L3 cache way mask
//   <sys>/devices/system/node/nodeN/meminfo          "Node N MemTotal: X kB"
// A file that is absent leaves its field empty / false ("unknown" for the model and
// vendor), as koordlet (which also asks lscpu when smt/active is absent: we count
// the CPUs per core instead).
// Parsers take text; the read* functions do the I/O. Errors name the file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/host_paths.h"
#include "base/result.h"
#include "metrics/cpu_topology.h"

namespace koord {

struct CpuBasicInfo {
  std::string cpuModel;
  bool hyperThreadEnabled = false;
  bool turboEnabled = false;
  std::string catL3CbmMask;
  std::string vendorId;
  bool operator==(const CpuBasicInfo&) const = default;
};

// /proc/cpuinfo's first "model name" (x86) or "Model Name" (some arm64 kernels)
// and first "vendor_id"; either may be absent (arm64 has neither: "").
struct CpuInfoText {
  std::string model;
  std::string vendorId;
};
CpuInfoText parseCpuInfo(std::string_view text);

// "Node 0 MemTotal:       131732940 kB" in a node's meminfo: bytes. Errors name
// what is wrong ("no MemTotal line", "MemTotal: cannot parse ...").
Result<int64_t> parseNodeMemTotal(std::string_view text);

// The basic info; `topo` gives hyper-threading when smt/active is absent (more
// than one CPU on some core). Never fails: what cannot be read stays empty.
CpuBasicInfo readCpuBasicInfo(const HostPaths& paths, const CpuTopology& topo);

// NUMA node id -> MemTotal bytes, for each nodeN directory with a readable
// meminfo. Empty when the kernel has no node directories (no NUMA sysfs). An error
// names the file when a meminfo exists but cannot be parsed.
Result<std::map<int, int64_t>> readNumaMemory(const HostPaths& paths);

}  // namespace koord
