// The one table of cgroup files (STYLE.md habit 4): every file the agent reads or
// writes, by meaning rather than by name, one row each naming its v1 controller and
// file and its v2 file. Collectors name a CgroupFile; the knob table (knob.h) adds
// the write-side facts of the writable rows (range, conversion, ordering) and
// refers to them by CgroupFile. Only this table spells file names.
//
// Reading a v2 cpuset. v2 has two lists where v1 has one:
//   - cpuset.cpus, the list asked for: what a write changes; empty means "the
//     parent's";
//   - cpuset.cpus.effective, the list in force: the asked list clipped to the
//     parent's effective list (the parent's whole list when none of the asked CPUs
//     is in it, and when the asked list is empty).
// v1 refuses both differences (a cpuset outside its parent's: EACCES; a parent
// shrinking under its child: EBUSY), so there cpuset.cpus is both. The rule:
//   - what a cgroup's tasks can run on (the collector's BE CPU limit) is read from
//     the list in force, row kCpusetCpusEffective;
//   - a cpuset the agent writes is compared with the list asked for, row
//     kCpusetCpus (knob kCpusetCpus), because a write changes that file and no
//     other: compared with the effective list, a target the parent clips would
//     never read back equal (rewritten every round), and a target that merely
//     equals what the parent grants today would be skipped, leaving the cgroup to
//     follow the parent's next change. When the asked list is empty (inherited),
//     the value a strategy steps from (Executor::read) is the list in force: the
//     row's v2Fallback.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cgroupfs/layout.h"

namespace koord {

enum class CgroupFile : uint8_t {
  // Read by collectors.
  kCpuUsage,    // CPU time: v1 cpuacct.usage (ns); v2 cpu.stat usage_usec
  kCpuStat,     // throttling counters
  kMemoryStat,  // memory.stat on both
  kCpuPeriod,   // v1 cfs period; v2 cpu.max's period field (same file as kCpuQuota)
  // The CPUs in force (see "Reading a v2 cpuset" above).
  kCpusetCpusEffective,
  kCpuPressure,     // PSI; v1 only on Anolis kernels (under cpuacct)
  kMemoryPressure,  // PSI; v1 only on Anolis kernels
  kIoPressure,      // PSI; v1 only on Anolis kernels
  kThreads,         // thread ids, one a line
  // Written through the knob table (knob.h); kCpuQuota is read by collectors too.
  kCpuShares,    // v2 takes a weight (knob.h converts)
  kCpuQuota,     // v2 cpu.max's quota field
  kCpuBurst,     // v2 cpu.max.burst: absent before 5.14
  kCpusetCpus,   // the CPUs asked for (see "Reading a v2 cpuset" above)
  kMemoryLimit,  // v1 limit_in_bytes; v2 memory.max
  // v2 memory protection and throttling; v1 only on Anolis kernels (same names).
  kMemoryMin,
  kMemoryLow,
  kMemoryHigh,
  // Alibaba Cloud Linux / Anolis extensions, same names on v1 and v2; vanilla
  // kernels have none of them.
  kMemoryWmarkRatio,
  kMemoryWmarkScaleFactor,
  kMemoryWmarkMinAdj,
  kMemoryPriority,
  kMemoryUsePriorityOom,
  // Vanilla v2 since 4.19; on v1 only Anolis kernels.
  kMemoryOomGroup,
  // v1 only: v2's nearest relative, memory.low, is a different contract.
  kMemorySoftLimit,
  // Read by the host application collector: memory with page cache.
  kMemoryUsage,  // v1 memory.usage_in_bytes; v2 memory.current
  // GroupIdentity (bvt): Alibaba Cloud Linux / Anolis only, same name on v1 and v2.
  kCpuBvtWarpNs,
  // The processes of a cgroup (the OOMScoreAdj hook's hot update sets each one's
  // oom_score_adj); v1 under the cpu controller.
  kProcs,
};
inline constexpr size_t kCgroupFileCount = 27;

struct CgroupFileSpec {
  CgroupFile file;
  const char* v1Subsystem;  // the v1 controller mount the file lives under
  const char* v1File;       // nullptr: no such file on v1
  const char* v2File;       // nullptr: no such file on v2
  // v2 only: the file holding the value in force when v2File reads empty (an empty
  // cpuset.cpus means "the parent's"); nullptr: an empty value is the value.
  const char* v2Fallback;
};

// Indexed by CgroupFile. File names of Anolis-only v1 files are listed all the
// same: KnobSupport::probe (knob.h) and the collectors' degraded paths decide
// whether this kernel has them.
inline constexpr std::array<CgroupFileSpec, kCgroupFileCount> kCgroupFiles = {{
    {CgroupFile::kCpuUsage, "cpuacct", "cpuacct.usage", "cpu.stat", nullptr},
    {CgroupFile::kCpuStat, "cpu", "cpu.stat", "cpu.stat", nullptr},
    {CgroupFile::kMemoryStat, "memory", "memory.stat", "memory.stat", nullptr},
    {CgroupFile::kCpuPeriod, "cpu", "cpu.cfs_period_us", "cpu.max", nullptr},
    {CgroupFile::kCpusetCpusEffective, "cpuset", "cpuset.cpus", "cpuset.cpus.effective", nullptr},
    {CgroupFile::kCpuPressure, "cpuacct", "cpu.pressure", "cpu.pressure", nullptr},
    {CgroupFile::kMemoryPressure, "cpuacct", "memory.pressure", "memory.pressure", nullptr},
    {CgroupFile::kIoPressure, "cpuacct", "io.pressure", "io.pressure", nullptr},
    {CgroupFile::kThreads, "cpu", "tasks", "cgroup.threads", nullptr},
    {CgroupFile::kCpuShares, "cpu", "cpu.shares", "cpu.weight", nullptr},
    {CgroupFile::kCpuQuota, "cpu", "cpu.cfs_quota_us", "cpu.max", nullptr},
    {CgroupFile::kCpuBurst, "cpu", "cpu.cfs_burst_us", "cpu.max.burst", nullptr},
    {CgroupFile::kCpusetCpus, "cpuset", "cpuset.cpus", "cpuset.cpus", "cpuset.cpus.effective"},
    {CgroupFile::kMemoryLimit, "memory", "memory.limit_in_bytes", "memory.max", nullptr},
    {CgroupFile::kMemoryMin, "memory", "memory.min", "memory.min", nullptr},
    {CgroupFile::kMemoryLow, "memory", "memory.low", "memory.low", nullptr},
    {CgroupFile::kMemoryHigh, "memory", "memory.high", "memory.high", nullptr},
    {CgroupFile::kMemoryWmarkRatio, "memory", "memory.wmark_ratio", "memory.wmark_ratio", nullptr},
    {CgroupFile::kMemoryWmarkScaleFactor, "memory", "memory.wmark_scale_factor",
     "memory.wmark_scale_factor", nullptr},
    {CgroupFile::kMemoryWmarkMinAdj, "memory", "memory.wmark_min_adj", "memory.wmark_min_adj",
     nullptr},
    {CgroupFile::kMemoryPriority, "memory", "memory.priority", "memory.priority", nullptr},
    {CgroupFile::kMemoryUsePriorityOom, "memory", "memory.use_priority_oom",
     "memory.use_priority_oom", nullptr},
    {CgroupFile::kMemoryOomGroup, "memory", "memory.oom.group", "memory.oom.group", nullptr},
    {CgroupFile::kMemorySoftLimit, "memory", "memory.soft_limit_in_bytes", nullptr, nullptr},
    {CgroupFile::kMemoryUsage, "memory", "memory.usage_in_bytes", "memory.current", nullptr},
    {CgroupFile::kCpuBvtWarpNs, "cpu", "cpu.bvt_warp_ns", "cpu.bvt_warp_ns", nullptr},
    {CgroupFile::kProcs, "cpu", "cgroup.procs", "cgroup.procs", nullptr},
}};

constexpr const CgroupFileSpec& cgroupFileSpec(CgroupFile file) {
  return kCgroupFiles[static_cast<size_t>(file)];
}

// The file's name on this cgroup version; nullptr when that version has none.
constexpr const char* cgroupFileName(CgroupFile file, CgroupVersion version) {
  const CgroupFileSpec& s = cgroupFileSpec(file);
  return version == CgroupVersion::kV1 ? s.v1File : s.v2File;
}

// The path of `file` for the cgroup directory `dir` (relative to the hierarchy);
// "" when this cgroup version has no such file (reading "" fails as a missing file).
std::string cgroupFilePath(const CgroupLayout& layout, const std::string& cgroupRoot,
                           std::string_view dir, CgroupFile file);

// The path of the file that holds `file`'s value in force when `file` reads empty
// (v2 cpuset.cpus -> cpuset.cpus.effective); "" when there is none on this version.
std::string cgroupFallbackPath(const CgroupLayout& layout, const std::string& cgroupRoot,
                               std::string_view dir, CgroupFile file);

}  // namespace koord
