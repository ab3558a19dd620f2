#include "gpu/gpu_topology.h"

#include <cctype>

#include "base/host_paths.h"
#include "base/read_file.h"

namespace koord {

int parseSysfsIndex(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  if (text.empty() || text.size() > 9) return -1;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

int firstCpuOf(std::string_view cpuList) {
  size_t end = 0;
  while (end < cpuList.size() && cpuList[end] >= '0' && cpuList[end] <= '9') ++end;
  return end == 0 ? -1 : parseSysfsIndex(cpuList.substr(0, end));
}

GpuPlace readGpuPlace(const std::string& sysRoot, const std::string& busId) {
  GpuPlace place;
  if (busId.empty() || busId.find('/') != std::string::npos) return place;
  const std::string device = HostPaths::join(sysRoot, "bus/pci/devices/" + busId);
  if (auto numa = readFile(device + "/numa_node", 64)) place.numaNode = parseSysfsIndex(*numa);
  if (auto cpus = readFile(device + "/local_cpulist", 4096)) {
    if (const int cpu = firstCpuOf(*cpus); cpu >= 0) {
      const std::string package =
          HostPaths::join(sysRoot, "devices/system/cpu/cpu" + std::to_string(cpu) +
                                       "/topology/physical_package_id");
      if (auto id = readFile(package, 64)) place.socket = parseSysfsIndex(*id);
    }
  }
  return place;
}

}  // namespace koord
