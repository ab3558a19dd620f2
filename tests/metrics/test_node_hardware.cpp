// Tests for metrics/node_hardware: the parsers on literal text and the readers on
// the real captures under tests/fixtures/sysfs (an arm64 node with four NUMA nodes,
// an Intel hybrid laptop).
#include <catch2/catch.hpp>

#include <string>

#include "metrics/node_hardware.h"
#include "tests/support/temp_tree.h"

namespace test_metrics_node_hardware {  // this file's own names: tests build as unity chunks

using namespace koord;

TEST_CASE("a node's meminfo gives its MemTotal in bytes; bad text is named", "[node_hardware]") {
  CHECK(*parseNodeMemTotal("Node 0 MemTotal:       131732940 kB\nNode 0 MemFree: 1 kB\n") ==
        131732940LL * 1024);
  auto unit = parseNodeMemTotal("Node 0 MemTotal: 12 MB\n");
  REQUIRE_FALSE(unit.ok());
  CHECK(unit.error().message == "MemTotal: cannot parse \"12 MB\" (want \"<n> kB\")");
  CHECK_FALSE(parseNodeMemTotal("Node 0 MemTotal: -1 kB\n").ok());
  CHECK_FALSE(parseNodeMemTotal("Node 0 MemTotal: 99999999999999999999 kB\n").ok());
  CHECK(parseNodeMemTotal("Node 0 MemFree: 1 kB\n").error().message == "no MemTotal line");
}

TEST_CASE("cpuinfo gives the first model name and vendor, arm64's spelling too",
          "[node_hardware]") {
  auto x86 = parseCpuInfo(
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon X\n"
      "processor\t: 1\nmodel name\t: Other\n");
  CHECK(x86.model == "Xeon X");
  CHECK(x86.vendorId == "GenuineIntel");
  CHECK(parseCpuInfo("Model Name\t: Kunpeng\n").model == "Kunpeng");
  CHECK(parseCpuInfo("CPU implementer\t: 0x48\n").model.empty());
}

TEST_CASE("the captures' NUMA memory and basic info", "[node_hardware]") {
  auto arm = readNumaMemory(test::sysfsCapture("arm-128cpu-2socket-4numa"));
  REQUIRE(arm.ok());
  REQUIRE(arm->size() == 4);
  CHECK(arm->at(0) == 131732940LL * 1024);
  auto topo = readCpuTopology(test::sysfsCapture("arm-128cpu-2socket-4numa"));
  REQUIRE(topo.ok());
  const CpuBasicInfo armInfo =
      readCpuBasicInfo(test::sysfsCapture("arm-128cpu-2socket-4numa"), *topo);
  CHECK(armInfo.cpuModel == "unknown");  // arm64's cpuinfo names no model: koordlet's word
  CHECK(armInfo.vendorId == "unknown");
  CHECK_FALSE(armInfo.hyperThreadEnabled);
  CHECK_FALSE(armInfo.turboEnabled);
  // No node directory at all: empty, the caller uses /proc/meminfo.
  auto none = readNumaMemory(test::sysfsCapture("aws-graviton2"));
  REQUIRE(none.ok());
  CHECK(none->empty());
}

}  // namespace test_metrics_node_hardware
