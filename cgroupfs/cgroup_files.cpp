#include "cgroupfs/cgroup_files.h"

namespace koord {

const CgroupFileSpec& cgroupFileSpec(CgroupFile file) {
  static const CgroupFileSpec kTable[] = {
      /* kCpuUsage */ {"cpuacct", "cpuacct.usage", "cpu.stat"},
      /* kCpuStat */ {"cpu", "cpu.stat", "cpu.stat"},
      /* kMemoryStat */ {"memory", "memory.stat", "memory.stat"},
      /* kCpuQuota */ {"cpu", "cpu.cfs_quota_us", "cpu.max"},
      /* kCpuPeriod */ {"cpu", "cpu.cfs_period_us", "cpu.max"},
      /* kCpusetCpus */ {"cpuset", "cpuset.cpus", "cpuset.cpus.effective"},
      /* kCpuPressure */ {"cpuacct", "cpu.pressure", "cpu.pressure"},
      /* kMemoryPressure */ {"cpuacct", "memory.pressure", "memory.pressure"},
      /* kIoPressure */ {"cpuacct", "io.pressure", "io.pressure"},
      /* kThreads */ {"cpu", "tasks", "cgroup.threads"},
  };
  return kTable[static_cast<int>(file)];
}

std::string cgroupFilePath(const CgroupLayout& layout, const std::string& cgroupRoot,
                           std::string_view dir, CgroupFile file) {
  const CgroupFileSpec& s = cgroupFileSpec(file);
  return layout.filePath(cgroupRoot, s.v1Subsystem, dir,
                         layout.version() == CgroupVersion::kV1 ? s.v1File : s.v2File);
}

}  // namespace koord
