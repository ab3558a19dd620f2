// Tests for qos/node_topology: the NodeResourceTopology content and the CPU share
// pools, from the real sysfs captures under tests/fixtures/sysfs. The cpu-topology
// annotation is checked against what util-linux lscpu printed for the same captures
// (tests/fixtures/sysfs/<capture>.lscpu, how they were made: tests/fixtures/SOURCES.md),
// since koordlet builds that annotation from `lscpu -e`.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/read_file.h"
#include "metrics/node_hardware.h"
#include "qos/node_topology.h"
#include "tests/support/temp_tree.h"

namespace test_qos_node_topology {  // this file's own names: tests build as unity chunks

using namespace koord;
using nlohmann::json;

namespace {

CpuTopology readTopology(const std::string& name) {
  auto topo = readCpuTopology(test::sysfsCapture(name));
  INFO((topo ? std::string() : topo.error().message));
  REQUIRE(topo.ok());
  return *topo;
}

struct LscpuRow {
  int id;
  std::string node, socket, core, online;
};

std::vector<LscpuRow> readLscpu(const std::string& name) {
  auto text = readFile(test::fixturePath("sysfs/" + name + ".lscpu"));
  REQUIRE(text.ok());
  std::istringstream in(*text);
  std::string header;
  std::getline(in, header);
  REQUIRE(header.find("CPU NODE SOCKET CORE ONLINE") != std::string::npos);
  std::vector<LscpuRow> rows;
  LscpuRow r;
  while (in >> r.id >> r.node >> r.socket >> r.core >> r.online) rows.push_back(r);
  REQUIRE(!rows.empty());
  return rows;
}

NodeTopologyInputs inputsFor(const CpuTopology& topo) {
  NodeTopologyInputs in;
  in.topology = &topo;
  in.memTotalBytes = 64LL << 30;
  in.kubelet.cpuManagerPolicy = "none";
  return in;
}

Pod podWith(const std::string& uid, KoordQos qos, const std::string& cpuset) {
  Pod p;
  p.uid = uid;
  p.ns = "colo";
  p.name = "pod-" + uid;
  p.phase = "Running";
  p.koordQos = qos;
  p.kubeQos = KubeQos::kGuaranteed;
  if (!cpuset.empty()) {
    p.annotations[kResourceStatusAnnotation] = R"({"cpuset":")" + cpuset + R"("})";
  }
  return p;
}

json anno(const NodeTopology& t, const char* key) {
  return json::parse(t.content.annotations.at(key));
}

}  // namespace

TEST_CASE("the cpu-topology annotation numbers cores and sockets as lscpu does on every capture",
          "[node_topology]") {
  for (const std::string name :
       {"amd-epyc7402-2socket", "intel-xeon5218-2socket-noht", "aws-graviton2",
        "arm-128cpu-2socket-4numa", "intel-hybrid-i7-1370p"}) {
    INFO(name);
    const CpuTopology topo = readTopology(name);
    auto nrt = computeNodeTopology(inputsFor(topo));
    REQUIRE(nrt.ok());
    const json detail = anno(*nrt, kAnnoCpuTopology).at("detail");
    REQUIRE(detail.size() == topo.cpus.size());
    std::map<int, LscpuRow> lscpu;
    for (const LscpuRow& r : readLscpu(name)) lscpu[r.id] = r;
    size_t checked = 0;
    for (const json& cpu : detail) {
      const LscpuRow& r = lscpu.at(cpu.at("id").get<int>());
      INFO("cpu " << r.id);
      CHECK(r.online != "no");
      CHECK(std::to_string(cpu.at("core").get<int>()) == r.core);
      CHECK(std::to_string(cpu.at("socket").get<int>()) == r.socket);
      // lscpu prints '-' without NUMA sysfs; koordlet reads that as node 0.
      CHECK(std::to_string(cpu.at("node").get<int>()) == (r.node == "-" ? "0" : r.node));
      ++checked;
    }
    // Every CPU lscpu shows online with a topology is in the annotation.
    size_t usable = 0;
    for (const auto& [id, r] : lscpu) usable += r.online != "no" && r.core != "-";
    CHECK(checked == usable);
  }
}

TEST_CASE("annotations are Go's json.Marshal text: field order, omitted empties and null lists",
          "[node_topology]") {
  const CpuTopology topo = readTopology("aws-graviton2");  // CPUs 1 and 3 usable
  NodeTopologyInputs in = inputsFor(topo);
  in.basicInfo = readCpuBasicInfo(test::sysfsCapture("aws-graviton2"), topo);
  auto nrt = computeNodeTopology(in);
  REQUIRE(nrt.ok());
  const auto& a = nrt->content.annotations;
  CHECK(
      a.at(kAnnoCpuTopology) ==
      R"({"detail":[{"id":1,"core":1,"socket":0,"node":0},{"id":3,"core":2,"socket":0,"node":0}]})");
  CHECK(a.at(kAnnoCpuSharedPools) == R"([{"socket":0,"node":0,"cpuset":"1,3"}])");
  CHECK(a.at(kAnnoBeCpuSharedPools) == R"([{"socket":0,"node":0,"cpuset":"1,3"}])");
  CHECK(a.at(kAnnoCpuManagerPolicy) == R"({"policy":"none"})");
  CHECK(a.at(kAnnoPodCpuAllocs) == "null");
  CHECK(a.at(kAnnoNodeReservation) == "{}");
  CHECK(a.at(kAnnoSystemQosResource) == "{}");
  // No cpuinfo, smt or resctrl in this capture: koordlet's "unknown" model and vendor.
  CHECK(a.at(kAnnoCpuBasicInfo) == R"({"cpuModel":"unknown","vendorID":"unknown"})");
  CHECK(nrt->content.topologyPolicy == "None");
}

TEST_CASE("the hybrid capture's basic info has its model, vendor, SMT and turbo",
          "[node_topology]") {
  const CpuTopology topo = readTopology("intel-hybrid-i7-1370p");
  NodeTopologyInputs in = inputsFor(topo);
  in.basicInfo = readCpuBasicInfo(test::sysfsCapture("intel-hybrid-i7-1370p"), topo);
  auto nrt = computeNodeTopology(in);
  REQUIRE(nrt.ok());
  CHECK(nrt->content.annotations.at(kAnnoCpuBasicInfo) ==
        R"({"cpuModel":"13th Gen Intel(R) Core(TM) i7-1370P","hyperThreadEnabled":true,)"
        R"("turboEnabled":true,"vendorID":"GenuineIntel"})");
}

TEST_CASE("the 128-CPU capture has one zone per NUMA node with its CPUs and MemTotal",
          "[node_topology]") {
  const HostPaths paths = test::sysfsCapture("arm-128cpu-2socket-4numa");
  const CpuTopology topo = readTopology("arm-128cpu-2socket-4numa");
  NodeTopologyInputs in = inputsFor(topo);
  auto mem = readNumaMemory(paths);
  REQUIRE(mem.ok());
  REQUIRE(mem->size() == 4);
  in.numaMemoryBytes = *mem;
  auto nrt = computeNodeTopology(in);
  REQUIRE(nrt.ok());
  REQUIRE(nrt->content.zones.size() == 4);
  CHECK(nrt->content.zones[0].name == "node-0");
  CHECK(nrt->content.zones[0].resources == std::vector<NrtZoneResource>{{"cpu", "32"},
                                                                        {"hugepages-1Gi", "0"},
                                                                        {"hugepages-2Mi", "0"},
                                                                        {"memory", "131732940Ki"}});
  // Sockets are lscpu's 0 and 1 (the packages are 36 and 8442), pools per node.
  CHECK(nrt->content.annotations.at(kAnnoCpuSharedPools) ==
        R"([{"socket":0,"node":0,"cpuset":"0-31"},{"socket":0,"node":1,"cpuset":"32-63"},)"
        R"({"socket":1,"node":2,"cpuset":"64-95"},{"socket":1,"node":3,"cpuset":"96-127"}])");
}

TEST_CASE("share pools shrink when a pod is pinned and grow back when it leaves",
          "[node_topology]") {
  const CpuTopology topo = readTopology("arm-128cpu-2socket-4numa");
  Pod lsr = podWith("lsr", KoordQos::kLSR, "2-5");
  Pod lse = podWith("lse", KoordQos::kLSE, "64-65");
  NodeTopologyInputs in = inputsFor(topo);
  in.pods = {&lsr, &lse};
  auto pinned = computeNodeTopology(in);
  REQUIRE(pinned.ok());
  CHECK(pinned->rule.sharePools[0].cpus.size() == 28);
  CHECK(pinned->rule.sharePools[2].cpus.size() == 30);
  // BE pools lose only LSE CPUs.
  CHECK(pinned->rule.beSharePools[0].cpus.size() == 32);
  CHECK(pinned->rule.beSharePools[2].cpus.size() == 30);
  CHECK(anno(*pinned, kAnnoCpuSharedPools)[0].at("cpuset") == "0-1,6-31");

  lsr.phase = "Succeeded";  // a finished pod holds nothing
  in.pods = {&lse};
  auto gone = computeNodeTopology(in);
  REQUIRE(gone.ok());
  CHECK(anno(*gone, kAnnoCpuSharedPools)[0].at("cpuset") == "0-31");
  CHECK(anno(*gone, kAnnoCpuSharedPools)[2].at("cpuset") == "66-95");
}

TEST_CASE("reserved and exclusive SYSTEM CPUs leave both pools; a bad pod annotation is skipped",
          "[node_topology]") {
  const CpuTopology topo = readTopology("amd-epyc7402-2socket");
  Pod bad = podWith("bad", KoordQos::kLSR, "");
  bad.annotations[kResourceStatusAnnotation] = "{not json";
  NodeTopologyInputs in = inputsFor(topo);
  in.pods = {&bad};
  in.reservationJson = R"({"resources":{"cpu":"2"}})";  // CPUs chosen by topology
  in.systemQosResourceJson = R"({"cpuset":"10-11"})";   // exclusive by default
  auto nrt = computeNodeTopology(in);
  REQUIRE(nrt.ok());
  REQUIRE(nrt->warnings.size() == 1);
  CHECK(nrt->warnings[0].find("colo/pod-bad") != std::string::npos);
  // 2 CPUs: a whole core first. CPUs 24-26, the siblings of 0-2, are offline, so
  // the first core with both threads online is 3 and 27.
  CHECK(nrt->content.annotations.at(kAnnoNodeReservation) ==
        R"({"resources":{"cpu":"2"},"reservedCPUs":"3,27"})");
  CHECK(nrt->content.annotations.at(kAnnoSystemQosResource) == R"({"cpuset":"10-11"})");
  const std::string pool = anno(*nrt, kAnnoCpuSharedPools)[0].at("cpuset");
  CHECK(pool == "0-2,4-9,12-23,28-40,42,44,46-47");
  CHECK(anno(*nrt, kAnnoBeCpuSharedPools)[0].at("cpuset") == pool);
  CHECK(nrt->rule.systemQosCpus == std::vector<int>{10, 11});

  // A reservation that empties a pool keeps it, without a cpuset, as koordlet prints it.
  in.reservationJson = R"({"reservedCPUs":"0-47"})";
  auto emptied = computeNodeTopology(in);
  REQUIRE(emptied.ok());
  CHECK(emptied->content.annotations.at(kAnnoCpuSharedPools) == R"([{"socket":0,"node":0}])");
  CHECK(emptied->rule.allShareCpus().empty());
  in.reservationJson = R"({"resources":{"cpu":"2"}})";

  // A SYSTEM cpuset naming CPUs the node lacks is held to the node's, with a warning.
  in.systemQosResourceJson = R"({"cpuset":"46-50"})";
  auto beyond = computeNodeTopology(in);
  REQUIRE(beyond.ok());
  CHECK(beyond->rule.systemQosCpus == std::vector<int>{46, 47});
  REQUIRE(beyond->warnings.size() == 2);
  CHECK(beyond->warnings[0] ==
        "system-qos-resource: cpuset: CPUs 48-50 are not online on this node, left out");

  in.systemQosResourceJson = R"({"cpuset":"10-11","cpusetExclusive":false})";
  auto shared = computeNodeTopology(in);
  REQUIRE(shared.ok());
  CHECK(anno(*shared, kAnnoCpuSharedPools)[0].at("cpuset") == "0-2,4-23,28-40,42,44,46-47");

  in.reservationJson = R"({"reservedCPUs":"oops"})";
  auto broken = computeNodeTopology(in);
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().message.find("reservation") != std::string::npos);
}

TEST_CASE("a static kubelet's pinned CPUs become pod-cpu-allocs and leave the pools",
          "[node_topology]") {
  const CpuTopology topo = readTopology("intel-xeon5218-2socket-noht");
  Pod guaranteed = podWith("g-1", KoordQos::kNone, "");
  Pod lsr = podWith("lsr-1", KoordQos::kLSR, "8-9");  // koordinator's: not the kubelet's
  auto checkpoint = parseCpuManagerCheckpoint(
      R"({"policyName":"static","defaultCpuSet":"0-5,8-31",)"
      R"("entries":{"g-1":{"app":"6-7"},"lsr-1":{"app":"8-9"},"orphan":{"x":"30"}},"checksum":1})",
      "cpu_manager_state");
  REQUIRE(checkpoint.ok());
  NodeTopologyInputs in = inputsFor(topo);
  in.pods = {&guaranteed, &lsr};
  in.kubelet.cpuManagerPolicy = "static";
  in.kubelet.cpuManagerPolicyOptions = {{"full-pcpus-only", "true"}};
  in.kubelet.reservedCpuMilli = 1500;  // 2 CPUs, by topology
  in.kubelet.topologyManagerPolicy = "single-numa-node";
  in.kubelet.topologyManagerScope = "pod";
  in.kubeletConfigKnown = true;
  in.checkpoint = &*checkpoint;
  auto nrt = computeNodeTopology(in);
  REQUIRE(nrt.ok());
  const auto& a = nrt->content.annotations;
  CHECK(
      a.at(kAnnoPodCpuAllocs) ==
      R"([{"namespace":"colo","name":"pod-g-1","uid":"g-1","cpuset":"6-7","managedByKubelet":true},)"
      R"({"uid":"orphan","cpuset":"30","managedByKubelet":true}])");
  // The kubelet's reserved CPUs are reported but stay in the pools (koordlet's note:
  // burstable pods need somewhere to run).
  CHECK(a.at(kAnnoCpuManagerPolicy) ==
        R"({"policy":"static","options":{"full-pcpus-only":"true"},"reservedCPUs":"0,2"})");
  const json pools = anno(*nrt, kAnnoCpuSharedPools);
  REQUIRE(pools.size() == 1);  // no NUMA sysfs: node 0 (socket of CPU 0)
  CHECK(pools[0].at("cpuset") == "0-5,10-29,31");
  CHECK(nrt->content.topologyPolicy == "SingleNUMANodePodLevel");
  CHECK(nrt->rule.kubeletPolicy == "static");
}

TEST_CASE("the kubelet's topology policy and scope name the NRT policy", "[node_topology]") {
  CHECK(nrtTopologyPolicy("single-numa-node", "container") == "SingleNUMANodeContainerLevel");
  CHECK(nrtTopologyPolicy("restricted", "pod") == "RestrictedPodLevel");
  CHECK(nrtTopologyPolicy("best-effort", "container") == "BestEffortContainerLevel");
  CHECK(nrtTopologyPolicy("none", "pod") == "None");
  CHECK(nrtTopologyPolicy("", "") == "None");
  CHECK(nrtTopologyPolicy("restricted", "") == "None");
}

TEST_CASE("CPUs are taken by topology as the kubelet reserves them", "[node_topology]") {
  const CpuTopology hybrid = readTopology("intel-hybrid-i7-1370p");  // P-core pairs 0-1, ...
  CHECK(takeCpusByTopology(hybrid, 1) == std::vector<int>{0});
  CHECK(takeCpusByTopology(hybrid, 2) == std::vector<int>{0, 1});  // a whole core
  CHECK(takeCpusByTopology(hybrid, 4) == std::vector<int>{0, 1, 2, 3});
  const CpuTopology xeon = readTopology("intel-xeon5218-2socket-noht");  // sockets alternate
  CHECK(takeCpusByTopology(xeon, 2) == std::vector<int>{0, 2});          // packed into socket 0
  const CpuTopology arm = readTopology("arm-128cpu-2socket-4numa");      // 64 per socket
  auto socket = takeCpusByTopology(arm, 65);
  REQUIRE(socket.size() == 65);
  CHECK(socket.front() == 0);
  CHECK(socket[63] == 63);
  CHECK(socket[64] == 64);
  CHECK(takeCpusByTopology(arm, 0).empty());
  CHECK(takeCpusByTopology(arm, 500).size() == 128);
}

TEST_CASE("without a placement topology nothing is computed", "[node_topology]") {
  auto ids = cpuTopologyFromIds({0, 1});
  REQUIRE(ids.ok());
  NodeTopologyInputs in = inputsFor(*ids);
  auto nrt = computeNodeTopology(in);
  REQUIRE_FALSE(nrt.ok());
  CHECK(nrt.error().message.find("sysfs") != std::string::npos);
}

}  // namespace test_qos_node_topology
