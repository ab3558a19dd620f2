// Tests for metrics/cpu_topology: the sysfs parsers on literal text, and the
// reader on three real captures under tests/fixtures/sysfs (EPYC 7402 with SMT
// and six offline CPUs, Xeon 5218 without HT or an online file, Graviton2 with a
// CPU listed online but without a topology dir), a NUMA tree built here, and
// broken trees.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "metrics/cpu_topology.h"
#include "tests/support/temp_tree.h"

namespace test_metrics_cpu_topology {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

HostPaths sysAt(const std::string& root) {
  HostPaths paths;
  paths.sysRoot = root;
  return paths;
}

CpuTopology readCapture(const std::string& name) {
  auto topo = readCpuTopology(sysAt(test::fixturePath("sysfs/" + name)));
  INFO((topo ? std::string() : topo.error().message));
  REQUIRE(topo.ok());
  return *topo;
}

CpuInfo cpu(const CpuTopology& topo, int id) {
  for (const CpuInfo& c : topo.cpus) {
    if (c.id == id) return c;
  }
  FAIL("cpu " << id << " not in topology");
  return {};
}

bool hasCpu(const CpuTopology& topo, int id) {
  for (const CpuInfo& c : topo.cpus) {
    if (c.id == id) return true;
  }
  return false;
}

std::vector<int> range(int lo, int hi) {
  std::vector<int> out;
  for (int i = lo; i <= hi; ++i) out.push_back(i);
  return out;
}

// cpuN/topology files of a hand-made tree.
void addCpu(const test::TempTree& tree, int id, const std::string& core, const std::string& pkg) {
  const std::string dir = "devices/system/cpu/cpu" + std::to_string(id) + "/topology/";
  tree.write(dir + "core_id", core);
  tree.write(dir + "physical_package_id", pkg);
}

}  // namespace

TEST_CASE("sysfs ids parse with or without the final newline, -1 included", "[cpu_topology]") {
  CHECK(*parseSysfsId("5\n") == 5);
  CHECK(*parseSysfsId("60") == 60);
  CHECK(*parseSysfsId("-1\n") == -1);
  for (const char* bad : {"", "\n", "-2\n", "x\n", "1 2\n", "3\n\n", " 3\n", "99999999999\n"}) {
    INFO(bad);
    auto r = parseSysfsId(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("is not an integer >= -1") != std::string::npos);
  }
}

TEST_CASE("sysfs cpu lists parse with or without the final newline", "[cpu_topology]") {
  CHECK(*parseSysfsCpuList("0-3,8\n") == std::vector<int>{0, 1, 2, 3, 8});
  CHECK(*parseSysfsCpuList("0-2,5") == std::vector<int>{0, 1, 2, 5});
  CHECK(parseSysfsCpuList("\n")->empty());  // a memory-only NUMA node
  CHECK(parseSysfsCpuList("")->empty());
  CHECK_FALSE(parseSysfsCpuList("3,1\n").ok());  // not as the kernel prints
  CHECK_FALSE(parseSysfsCpuList("0-x\n").ok());
}

TEST_CASE("the EPYC 7402 capture gives its 42 online CPUs with SMT siblings on one core",
          "[cpu_topology]") {
  const CpuTopology topo = readCapture("amd-epyc7402-2socket");
  // online: 0-23,27-40,42,44,46-47 (no final newline in the capture).
  std::vector<int> online = range(0, 23);
  for (int id : range(27, 40)) online.push_back(id);
  for (int id : {42, 44, 46, 47}) online.push_back(id);
  CHECK(topo.ids() == online);
  CHECK(topo.count() == 42);
  // The capture holds one package of the two: every CPU is on socket 0, node 0.
  for (const CpuInfo& c : topo.cpus) {
    CHECK(c.socket == 0);
    CHECK(c.node == 0);
  }
  // thread_siblings_list 3,27 -> one core (4); 24 (sibling of 0) is offline.
  CHECK(cpu(topo, 3) == CpuInfo{3, 4, 0, 0});
  CHECK(cpu(topo, 27) == CpuInfo{27, 4, 0, 0});
  CHECK(cpu(topo, 0).core == 0);
  CHECK(cpu(topo, 47).core == 30);
  CHECK_FALSE(hasCpu(topo, 24));
  CHECK_FALSE(hasCpu(topo, 41));
}

TEST_CASE("without an online file every cpuN dir counts: the Xeon 5218 capture", "[cpu_topology]") {
  const CpuTopology topo = readCapture("intel-xeon5218-2socket-noht");
  CHECK(topo.ids() == range(0, 31));
  // Even CPUs on package 0, odd on package 1, core ids shuffled as captured.
  CHECK(cpu(topo, 0) == CpuInfo{0, 0, 0, 0});
  CHECK(cpu(topo, 1) == CpuInfo{1, 0, 1, 0});
  CHECK(cpu(topo, 2) == CpuInfo{2, 7, 0, 0});
  CHECK(cpu(topo, 31) == CpuInfo{31, 12, 1, 0});
  size_t onSocket1 = 0;
  for (const CpuInfo& c : topo.cpus) onSocket1 += c.socket == 1 ? 1 : 0;
  CHECK(onSocket1 == 16);
}

TEST_CASE("without an online file only cpuN entries are CPUs", "[cpu_topology]") {
  test::TempTree tree({{"devices/system/cpu/cpufreq/policy0/scaling_governor", "performance\n"},
                       {"devices/system/cpu/cpuidle/current_driver", "intel_idle\n"},
                       {"devices/system/cpu/kernel_max", "8191\n"},
                       {"devices/system/cpu/cpux/topology/core_id", "9\n"}});
  addCpu(tree, 10, "1\n", "0\n");
  addCpu(tree, 2, "0\n", "0\n");
  auto topo = readCpuTopology(sysAt(tree.path()));
  REQUIRE(topo.ok());
  CHECK(topo->ids() == std::vector<int>{2, 10});
}

TEST_CASE("a CPU listed online without a topology dir is skipped as offline: Graviton2",
          "[cpu_topology]") {
  // online is "1-3"; cpu2 has no topology/ (offline), cpu0 is not listed.
  const CpuTopology topo = readCapture("aws-graviton2");
  CHECK(topo.ids() == std::vector<int>{1, 3});
  CHECK(cpu(topo, 1) == CpuInfo{1, 1, 60, 0});
  CHECK(cpu(topo, 3) == CpuInfo{3, 3, 60, 0});
}

TEST_CASE("NUMA nodes come from devices/system/node/nodeM/cpulist", "[cpu_topology]") {
  // Two sockets of two cores with two threads, one node per socket, numbered as
  // Linux numbers them on Intel: first threads 0-3, their siblings 4-7.
  test::TempTree tree({{"devices/system/cpu/online", "0-7\n"},
                       {"devices/system/cpu/possible", "0-7\n"},
                       {"devices/system/node/node0/cpulist", "0-1,4-5\n"},
                       {"devices/system/node/node1/cpulist", "2-3,6-7\n"},
                       {"devices/system/node/online", "0-1\n"},
                       {"devices/system/node/has_cpu", "0-1\n"}});
  for (int id = 0; id < 8; ++id) {
    addCpu(tree, id, std::to_string(id % 2) + "\n", std::to_string((id / 2) % 2) + "\n");
  }
  auto topo = readCpuTopology(sysAt(tree.path()));
  REQUIRE(topo.ok());
  CHECK(topo->cpus == std::vector<CpuInfo>{{0, 0, 0, 0},
                                           {1, 1, 0, 0},
                                           {2, 0, 1, 1},
                                           {3, 1, 1, 1},
                                           {4, 0, 0, 0},
                                           {5, 1, 0, 0},
                                           {6, 0, 1, 1},
                                           {7, 1, 1, 1}});
}

TEST_CASE("a CPU no node lists, or a kernel without node dirs, is on node 0", "[cpu_topology]") {
  test::TempTree tree({{"devices/system/cpu/online", "0-2\n"},
                       {"devices/system/node/node1/cpulist", "1\n"},
                       {"devices/system/node/node2/cpulist", "\n"}});
  for (int id = 0; id < 3; ++id) addCpu(tree, id, std::to_string(id) + "\n", "0\n");
  auto topo = readCpuTopology(sysAt(tree.path()));
  REQUIRE(topo.ok());
  CHECK(topo->cpus[0].node == 0);
  CHECK(topo->cpus[1].node == 1);
  CHECK(topo->cpus[2].node == 0);

  tree.remove("devices/system/node");
  topo = readCpuTopology(sysAt(tree.path()));
  REQUIRE(topo.ok());
  CHECK(topo->cpus[1].node == 0);
}

TEST_CASE("a malformed or missing topology file is an error naming the file", "[cpu_topology]") {
  test::TempTree tree({{"devices/system/cpu/online", "0-1\n"}});
  addCpu(tree, 0, "0\n", "0\n");
  addCpu(tree, 1, "1\n", "0\n");
  REQUIRE(readCpuTopology(sysAt(tree.path())).ok());

  auto failsNaming = [&](const std::string& rel) {
    auto topo = readCpuTopology(sysAt(tree.path()));
    REQUIRE_FALSE(topo.ok());
    INFO(topo.error().message);
    CHECK(topo.error().message.find(tree.path(rel)) != std::string::npos);
  };

  SECTION("core_id not a number") {
    tree.write("devices/system/cpu/cpu1/topology/core_id", "one\n");
    failsNaming("devices/system/cpu/cpu1/topology/core_id");
  }
  SECTION("physical_package_id missing while topology/ exists") {
    tree.remove("devices/system/cpu/cpu1/topology/physical_package_id");
    failsNaming("devices/system/cpu/cpu1/topology/physical_package_id");
  }
  SECTION("core_id missing while topology/ exists") {
    tree.remove("devices/system/cpu/cpu0/topology/core_id");
    failsNaming("devices/system/cpu/cpu0/topology/core_id");
  }
  SECTION("online list not as the kernel prints it") {
    tree.write("devices/system/cpu/online", "1,0\n");
    failsNaming("devices/system/cpu/online");
  }
  SECTION("a node cpulist that is garbage") {
    tree.write("devices/system/node/node0/cpulist", "0-\n");
    failsNaming("devices/system/node/node0/cpulist");
  }
  SECTION("no online CPU has a topology") {
    tree.remove("devices/system/cpu/cpu0");
    tree.remove("devices/system/cpu/cpu1");
    failsNaming("devices/system/cpu/online");
  }
  SECTION("neither an online file nor a cpu dir") {
    tree.remove("devices/system/cpu");
    failsNaming("devices/system/cpu");
  }
}

TEST_CASE("the /proc/stat fallback gives ids and count only, marked without placement",
          "[cpu_topology]") {
  auto topo = cpuTopologyFromIds({3, 0, 2, 1, 2});
  REQUIRE(topo.ok());
  CHECK_FALSE(topo->placement);
  CHECK(topo->ids() == std::vector<int>{0, 1, 2, 3});
  CHECK(topo->cpus[2] == CpuInfo{2, 2, 0, 0});
  CHECK_FALSE(cpuTopologyFromIds({}).ok());
  CHECK(readCapture("amd-epyc7402-2socket").placement);
}

TEST_CASE("an arm64 capture's node cpulists end in a NUL byte and still read", "[cpu_topology]") {
  const CpuTopology topo = readCapture("arm-128cpu-2socket-4numa");
  REQUIRE(topo.count() == 128);
  CHECK(cpu(topo, 31).node == 0);
  CHECK(cpu(topo, 32).node == 1);
  CHECK(cpu(topo, 127).node == 3);
  CHECK(cpu(topo, 127).socket == 8442);  // physical_package_id as sysfs has it
  CHECK(*parseSysfsCpuList(std::string("0-3\n\0\0", 7)) == range(0, 3));
}

TEST_CASE("offline CPUs with a readable topology are kept apart from the online ones",
          "[cpu_topology]") {
  const CpuTopology epyc = readCapture("amd-epyc7402-2socket");
  std::vector<int> offline;
  for (const CpuInfo& c : epyc.offline) offline.push_back(c.id);
  CHECK(offline == std::vector<int>{24, 25, 26, 41, 43, 45});
  for (int id : offline) CHECK_FALSE(hasCpu(epyc, id));
  const CpuTopology graviton = readCapture("aws-graviton2");  // cpu0 offline, cpu2 no topology
  REQUIRE(graviton.offline.size() == 1);
  CHECK(graviton.offline[0].id == 0);
}

}  // namespace test_metrics_cpu_topology
