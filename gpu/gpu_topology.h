// Where a GPU sits on the node, from sysfs by its PCI address, under the injected
// --sys-root-dir:
//   bus/pci/devices/<busId>/numa_node        the NUMA node ("-1": the platform says none)
//   bus/pci/devices/<busId>/local_cpulist    the CPUs near it; the first one's
//   devices/system/cpu/cpu<N>/topology/physical_package_id   is the socket
// Parsing apart from reading; a file that is absent or says nothing leaves the
// field unknown (-1), as koordlet reports an unknown place.
#pragma once

#include <string>
#include <string_view>

namespace koord {

struct GpuPlace {
  int numaNode = -1;
  int socket = -1;
  bool operator==(const GpuPlace&) const = default;
};

// "1\n" -> 1; "-1", empty or not a number -> -1.
int parseSysfsIndex(std::string_view text);
// The first CPU of a sysfs CPU list ("28-55,84-111" -> 28); -1 when none.
int firstCpuOf(std::string_view cpuList);

// sysRoot: the directory holding bus/ and devices/ ("/sys/"). busId: "0000:3b:00.0".
GpuPlace readGpuPlace(const std::string& sysRoot, const std::string& busId);

}  // namespace koord
