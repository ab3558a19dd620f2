// The cgroup files the collectors read, by meaning rather than by name: one row
// per file with its v1 controller and name and its v2 name. Readers name a
// CgroupFile; only this table spells file names (STYLE.md habit 4). The QoS
// milestone's writable knob table builds on the same idea.
#pragma once

#include <string>
#include <string_view>

#include "cgroupfs/layout.h"

namespace koord {

enum class CgroupFile {
  kCpuUsage,        // v1 cpuacct.usage (ns); v2 cpu.stat usage_usec
  kCpuStat,         // throttling counters: v1 cpu/cpu.stat; v2 cpu.stat
  kMemoryStat,      // memory.stat on both
  kCpuQuota,        // v1 cpu.cfs_quota_us; v2 cpu.max (quota field)
  kCpuPeriod,       // v1 cpu.cfs_period_us; v2 cpu.max (period field)
  kCpusetCpus,      // v1 cpuset.cpus; v2 cpuset.cpus.effective
  kCpuPressure,     // v1 cpuacct/cpu.pressure (Anolis kernels only); v2 cpu.pressure
  kMemoryPressure,  // v1 cpuacct/memory.pressure (Anolis); v2 memory.pressure
  kIoPressure,      // v1 cpuacct/io.pressure (Anolis); v2 io.pressure
  kThreads,         // thread ids, one a line: v1 cpu/tasks; v2 cgroup.threads
};

struct CgroupFileSpec {
  const char* v1Subsystem;
  const char* v1File;
  const char* v2File;
};

const CgroupFileSpec& cgroupFileSpec(CgroupFile file);

// The path of `file` for the cgroup directory `dir` (relative to the hierarchy).
std::string cgroupFilePath(const CgroupLayout& layout, const std::string& cgroupRoot,
                           std::string_view dir, CgroupFile file);

}  // namespace koord
