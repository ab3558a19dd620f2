// Tests for kube/node_info: the real Node of the rig's kube-apiserver 1.32
// (tests/fixtures/kube-api/node-get.body), then hand-made variations of it.
#include <catch2/catch.hpp>

#include <string>

#include "base/read_file.h"
#include "kube/node_info.h"
#include "tests/support/temp_tree.h"

namespace test_kube_node_info {  // this file's own names: tests build as unity chunks

using namespace koord;
using Json = nlohmann::json;

namespace {

Json realNode() {
  auto body = readFile(test::fixturePath("kube-api/node-get.body"));
  REQUIRE(body.ok());
  return Json::parse(*body);
}

NodeInfo withAddresses(std::vector<NodeAddress> addresses) {
  NodeInfo n;
  n.name = std::string("n");  // not = "n": GCC 12 -O3 warns falsely (-Wrestrict)
  n.addresses = std::move(addresses);
  return n;
}

std::string errorOf(const Json& node) {
  auto r = parseNode(node);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

}  // namespace

TEST_CASE("the real Node gives its name, addresses, resources and reservation annotation") {
  auto n = parseNode(realNode());
  REQUIRE(n.ok());
  CHECK(n->name == "rig-node");
  CHECK(n->resourceVersion == "226");
  REQUIRE(n->addresses.size() == 2);
  CHECK(n->addresses[0] == NodeAddress{"InternalIP", "127.0.0.1"});
  CHECK(n->addresses[1] == NodeAddress{"Hostname", "rig-node"});
  // The capture's kubeletEndpoint.Port is 0: the kubelet never reported it.
  CHECK_FALSE(n->kubeletPort.has_value());
  CHECK(n->allocatable.cpuMilli == 8000);
  CHECK(n->allocatable.memoryBytes == int64_t{16} << 30);
  CHECK(n->capacity.cpuMilli == 8000);
  CHECK(n->capacity.memoryBytes == int64_t{16} << 30);
  REQUIRE(n->reservationAnnotation.has_value());
  CHECK(*n->reservationAnnotation == R"({"resources":{"cpu":"1"}})");
  CHECK_FALSE(n->systemQosResourceAnnotation.has_value());
}

TEST_CASE("a reported kubelet port is read and an allocatable different from capacity is kept") {
  Json node = realNode();
  node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] = 10250;
  node["status"]["allocatable"]["memory"] = "15Gi";
  node["status"]["allocatable"]["cpu"] = "7500m";
  node["metadata"]["annotations"]["node.koordinator.sh/system-qos-resource"] =
      R"({"cpuset":"0-1"})";
  auto n = parseNode(node);
  REQUIRE(n.ok());
  CHECK(n->kubeletPort == 10250);
  CHECK(n->allocatable.memoryBytes == int64_t{15} << 30);
  CHECK(n->allocatable.cpuMilli == 7500);
  CHECK(n->capacity.memoryBytes == int64_t{16} << 30);
  CHECK(n->systemQosResourceAnnotation == std::optional<std::string>(R"({"cpuset":"0-1"})"));
}

TEST_CASE("a Node without status or daemonEndpoints leaves the port and resources unknown") {
  Json node = realNode();
  node["status"].erase("daemonEndpoints");
  auto noEndpoints = parseNode(node);
  REQUIRE(noEndpoints.ok());
  CHECK_FALSE(noEndpoints->kubeletPort.has_value());
  CHECK(noEndpoints->allocatable.memoryBytes.has_value());

  node.erase("status");
  node["metadata"].erase("annotations");
  auto bare = parseNode(node);
  REQUIRE(bare.ok());
  CHECK(bare->addresses.empty());
  CHECK_FALSE(bare->allocatable.memoryBytes.has_value());
  CHECK_FALSE(bare->capacity.cpuMilli.has_value());
  CHECK_FALSE(bare->reservationAnnotation.has_value());
}

TEST_CASE("a bad quantity is an error naming the node and the field") {
  Json node = realNode();
  node["status"]["allocatable"]["memory"] = "lots";
  const std::string bad = errorOf(node);
  CHECK_THAT(bad, Catch::StartsWith("Node rig-node: status.allocatable.memory: "));

  node = realNode();
  node["status"]["capacity"]["cpu"] = true;
  CHECK_THAT(errorOf(node),
             Catch::StartsWith("Node rig-node: status.capacity.cpu: expected a quantity string"));

  node = realNode();
  node["status"]["allocatable"]["memory"] = "-1Gi";
  CHECK_THAT(errorOf(node), Catch::Contains("status.allocatable.memory: must not be negative"));
}

TEST_CASE("malformed addresses, port, annotations and name are errors naming the field") {
  Json node = realNode();
  node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] = "10250";
  CHECK(errorOf(node) ==
        "Node rig-node: status.daemonEndpoints.kubeletEndpoint.Port: expected an integer, got a "
        "string");
  node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] = 70000;
  CHECK_THAT(errorOf(node), Catch::Contains("70000 is not a port"));

  node = realNode();
  node["status"]["addresses"][1].erase("address");
  CHECK(errorOf(node) == "Node rig-node: status.addresses[1].address: missing");

  node = realNode();
  node["metadata"]["annotations"]["node.koordinator.sh/reservation"] = Json::object();
  CHECK(errorOf(node) ==
        "Node rig-node: metadata.annotations[node.koordinator.sh/reservation]: expected a string, "
        "got an object");

  node = realNode();
  node["metadata"].erase("name");
  CHECK(errorOf(node) == "Node: metadata.name: missing");
  CHECK_THAT(errorOf(Json::array()), Catch::Contains("expected an object"));
}

TEST_CASE("the kubelet address is the preferred type's, an unknown type meaning InternalIP") {
  auto n = parseNode(realNode());
  REQUIRE(n.ok());
  CHECK(kubeletAddress(*n, "InternalIP") == std::optional<std::string>("127.0.0.1"));
  CHECK(kubeletAddress(*n, "Hostname") == std::optional<std::string>("rig-node"));
  CHECK(kubeletAddress(*n, "internalip") == std::optional<std::string>("127.0.0.1"));
  CHECK(kubeletAddress(*n, "") == std::optional<std::string>("127.0.0.1"));
  CHECK(isNodeAddressType("ExternalDNS"));
  CHECK_FALSE(isNodeAddressType("hostname"));

  // An unknown type falls to InternalIP, not to the node's first address.
  NodeInfo hostFirst = withAddresses({{"Hostname", "h"}, {"InternalIP", "10.0.0.1"}});
  CHECK(kubeletAddress(hostFirst, "Bogus") == std::optional<std::string>("10.0.0.1"));
}

TEST_CASE("without the preferred type the address falls back InternalIP, Hostname, then others") {
  NodeInfo n = withAddresses({{"ExternalIP", "1.2.3.4"},
                              {"Hostname", "h"},
                              {"InternalIP", ""},
                              {"InternalIP", "10.0.0.2"}});
  // The first non-empty InternalIP.
  CHECK(kubeletAddress(n, "InternalDNS") == std::optional<std::string>("10.0.0.2"));
  auto picked = pickKubeletAddress(n, "ExternalDNS");
  REQUIRE(picked.has_value());
  CHECK(picked->type == "InternalIP");

  NodeInfo noInternal = withAddresses({{"ExternalIP", "1.2.3.4"}, {"Hostname", "h"}});
  CHECK(kubeletAddress(noInternal, "InternalIP") == std::optional<std::string>("h"));
  CHECK(kubeletAddress(noInternal, "ExternalIP") == std::optional<std::string>("1.2.3.4"));

  NodeInfo externalOnly = withAddresses({{"ExternalDNS", "e.example"}, {"ExternalIP", "1.2.3.4"}});
  CHECK(kubeletAddress(externalOnly, "Hostname") == std::optional<std::string>("1.2.3.4"));

  CHECK_FALSE(kubeletAddress(withAddresses({}), "InternalIP").has_value());
  CHECK_FALSE(kubeletAddress(withAddresses({{"Custom", "x"}}), "InternalIP").has_value());
}

TEST_CASE("a raw-allocatable annotation that parses is read, anything else reads as absent") {
  Json node = realNode();
  CHECK_FALSE(parseNode(node)->rawAllocatable);
  node["metadata"]["annotations"]["node.koordinator.sh/raw-allocatable"] =
      R"({"cpu":"7500m","memory":"30Gi","pods":"110"})";
  auto info = parseNode(node);
  REQUIRE(info.ok());
  REQUIRE(info->rawAllocatable);
  CHECK(info->rawAllocatable->cpuMilli == 7500);
  CHECK(info->rawAllocatable->memoryBytes == int64_t{30} << 30);
  for (const char* bad : {"not json", "[]", R"({"cpu":"lots"})"}) {
    INFO(bad);
    node["metadata"]["annotations"]["node.koordinator.sh/raw-allocatable"] = bad;
    info = parseNode(node);
    REQUIRE(info.ok());  // koordlet falls back to status.allocatable
    CHECK_FALSE(info->rawAllocatable);
  }
}

TEST_CASE("the cpu normalization ratio is a positive finite number, as koordlet parses it") {
  CHECK(parseCpuNormalizationRatio("1.20").value() == Approx(1.2));
  CHECK(parseCpuNormalizationRatio("2").value() == Approx(2.0));
  CHECK(parseCpuNormalizationRatio("1e0").value() == Approx(1.0));
  for (const char* bad : {"", "abc", "1.2x", " 1.2", "0", "-1.5", "inf", "nan", "1e999"}) {
    INFO(bad);
    CHECK_FALSE(parseCpuNormalizationRatio(bad).ok());
  }
  CHECK(parseCpuNormalizationRatio("-1.5").error().message == "must be > 0, got \"-1.5\"");
  Json node = realNode();
  node["metadata"]["annotations"]["node.koordinator.sh/cpu-normalization-ratio"] = "1.25";
  CHECK(parseNode(node)->cpuNormalizationRatioAnnotation == "1.25");
}

}  // namespace test_kube_node_info
