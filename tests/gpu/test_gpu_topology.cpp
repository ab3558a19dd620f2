#include <catch2/catch.hpp>

#include "gpu/gpu_topology.h"
#include "gpu/nvml_library.h"
#include "tests/support/temp_tree.h"

namespace test_gpu_gpu_topology {  // this file's own names: tests build as unity chunks

using namespace koord;

TEST_CASE("a GPU's NUMA node and socket are read from sysfs by its PCI address", "[gpu]") {
  // The layout of a two-socket H100 node: the GPU's numa_node and local_cpulist, the
  // socket of the first CPU near it.
  test::TempTree sys({{"bus/pci/devices/0000:9a:00.0/numa_node", "1\n"},
                      {"bus/pci/devices/0000:9a:00.0/local_cpulist", "56-111,168-223\n"},
                      {"devices/system/cpu/cpu56/topology/physical_package_id", "1\n"},
                      {"bus/pci/devices/0000:18:00.0/numa_node", "-1\n"}});
  CHECK(readGpuPlace(sys.path(), "0000:9a:00.0") == GpuPlace{1, 1});
  // The platform names no node and no CPU list: both unknown, not 0.
  CHECK(readGpuPlace(sys.path(), "0000:18:00.0") == GpuPlace{-1, -1});
  // Absent device, and an address that would leave the directory.
  CHECK(readGpuPlace(sys.path(), "0000:00:00.0") == GpuPlace{-1, -1});
  CHECK(readGpuPlace(sys.path(), "../../etc") == GpuPlace{-1, -1});
}

TEST_CASE("sysfs index and CPU list text is parsed strictly", "[gpu]") {
  CHECK(parseSysfsIndex("0\n") == 0);
  CHECK(parseSysfsIndex("3") == 3);
  CHECK(parseSysfsIndex("-1\n") == -1);
  CHECK(parseSysfsIndex("") == -1);
  CHECK(parseSysfsIndex("1x") == -1);
  CHECK(firstCpuOf("28-55,84-111\n") == 28);
  CHECK(firstCpuOf("7") == 7);
  CHECK(firstCpuOf("\n") == -1);
}

TEST_CASE("NVML's bus id and CUDA version are put in the forms the node shows", "[gpu]") {
  CHECK(sysfsBusId("00000000:3B:00.0") == "0000:3b:00.0");
  CHECK(sysfsBusId("0000:3B:00.0") == "0000:3b:00.0");
  CHECK(cudaVersionString(12020) == "12.2");
  CHECK(cudaVersionString(11080) == "11.8");
  CHECK(cudaVersionString(0) == "");
}

TEST_CASE("without the NVML library the loader says why and loads nothing", "[gpu]") {
  auto absent = loadNvml("libnvidia-ml-absent-for-this-test.so.1");
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.error().message ==
        "cannot load libnvidia-ml-absent-for-this-test.so.1: not found (no NVIDIA driver library "
        "on this node, or not mounted into the agent's container)");
  // A library that is not NVML (the C math library is on every machine): the first
  // function missing is named.
  auto notNvml = loadNvml("libm.so.6");
  REQUIRE_FALSE(notNvml.ok());
  CHECK(notNvml.error().message ==
        "libm.so.6 has no nvmlInit_v2 (a driver older than the agent reads)");
}

}  // namespace test_gpu_gpu_topology
