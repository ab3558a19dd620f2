// Tests for qos/snapshot: the freshness rule for "last" samples, and the two
// annotations the QoS strategies read, node.koordinator.sh/reservation (also the
// --node-reservation flag) and scheduling.koordinator.sh/resource-status.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "qos/snapshot.h"

namespace test_qos_snapshot {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

const Clock::Monotonic kNow{std::chrono::seconds(1000)};

void failsNaming(const Result<NodeReservation>& r, const std::string& field) {
  REQUIRE_FALSE(r.ok());
  INFO(r.error().message);
  CHECK(r.error().message.rfind(field + ":", 0) == 0);
}

}  // namespace

TEST_CASE("a sample counts while it is at most maxAge old", "[snapshot]") {
  CHECK_FALSE(freshValue(std::nullopt, kNow, 2s));
  CHECK(freshValue(Sample{1.5, kNow}, kNow, 2s) == 1.5);
  CHECK(freshValue(Sample{1.5, kNow - 2s}, kNow, 2s) == 1.5);
  CHECK_FALSE(freshValue(Sample{1.5, kNow - 2s - 1ns}, kNow, 2s));
  CHECK_FALSE(freshValue(Sample{1.5, kNow - 1h}, kNow, 2s));
  // Taken after the snapshot's clock reading: fresh.
  CHECK(freshValue(Sample{0.25, kNow + 10ms}, kNow, 2s) == 0.25);
}

TEST_CASE("the node reservation gives resources.cpu in milli-cores and reservedCPUs",
          "[snapshot]") {
  auto r = parseNodeReservation(R"({"resources":{"cpu":"2","memory":"4Gi"},"reservedCPUs":"0-1"})");
  REQUIRE(r.ok());
  CHECK(r->cpuMilli == 2000);
  CHECK(r->reservedCpus == std::vector<int>{0, 1});
  CHECK(r->systemExclusiveCpus.empty());

  CHECK(parseNodeReservation(R"({"resources":{"cpu":"500m"}})")->cpuMilli == 500);
  CHECK(parseNodeReservation(R"({"resources":{"cpu":1.5}})")->cpuMilli == 1500);  // a number
  CHECK(parseNodeReservation(R"({"resources":{"cpu":3}})")->cpuMilli == 3000);
  CHECK(parseNodeReservation(R"({"resources":{"cpu":" 1 "}})")->cpuMilli == 1000);
  CHECK(parseNodeReservation(R"({"resources":{"cpu":null}})")->cpuMilli == 0);
  // As k8s cpuset.Parse: any order, overlaps allowed, result sorted and unique.
  CHECK(parseNodeReservation(R"({"reservedCPUs":"6,2-4,3"})")->reservedCpus ==
        std::vector<int>{2, 3, 4, 6});
  // koord-scheduler's field and unknown fields are accepted and ignored.
  auto withPolicy = parseNodeReservation(
      R"({"reservedCPUs":"1","applyPolicy":"ReservedCPUsOnly","future":{"x":1}})");
  REQUIRE(withPolicy.ok());
  CHECK(withPolicy->reservedCpus == std::vector<int>{1});
}

TEST_CASE("an empty, null or empty-object reservation reserves nothing", "[snapshot]") {
  for (const char* text : {"", "null", "{}", R"({"resources":{},"reservedCPUs":""})",
                           R"({"resources":null,"reservedCPUs":null})"}) {
    INFO(text);
    auto r = parseNodeReservation(text);
    REQUIRE(r.ok());
    CHECK(r->cpuMilli == 0);
    CHECK(r->reservedCpus.empty());
  }
}

TEST_CASE("a bad node reservation is an error naming the field", "[snapshot]") {
  failsNaming(parseNodeReservation(R"({"resources":{"cpu":"two"}})"), "resources.cpu");
  failsNaming(parseNodeReservation(R"({"resources":{"cpu":"-1"}})"), "resources.cpu");
  failsNaming(parseNodeReservation(R"({"resources":{"cpu":true}})"), "resources.cpu");
  // koordlet's unmarshal fails on any bad quantity, so every one is checked.
  failsNaming(parseNodeReservation(R"({"resources":{"cpu":"1","memory":"4GB"}})"),
              "resources.memory");
  failsNaming(parseNodeReservation(R"({"resources":[]})"), "resources");
  failsNaming(parseNodeReservation(R"({"reservedCPUs":3})"), "reservedCPUs");
  failsNaming(parseNodeReservation(R"({"reservedCPUs":"3-1"})"), "reservedCPUs");
  failsNaming(parseNodeReservation(R"({"reservedCPUs":"0,,2"})"), "reservedCPUs");
  failsNaming(parseNodeReservation(R"({"reservedCPUs":" 1"})"), "reservedCPUs");
  failsNaming(parseNodeReservation(R"({"reservedCPUs":"0-100000"})"), "reservedCPUs");
  failsNaming(parseNodeReservation(R"({"applyPolicy":1})"), "applyPolicy");
  failsNaming(parseNodeReservation(R"(["0-1"])"), "reservation");
  auto notJson = parseNodeReservation(R"({"reservedCPUs":"0-1")");
  REQUIRE_FALSE(notJson.ok());
  CHECK(notJson.error().message.find("not valid JSON") != std::string::npos);
  CHECK_FALSE(parseNodeReservation(" ").ok());
}

TEST_CASE("reservedCPUs, when set, count instead of resources.cpu", "[snapshot]") {
  // koordinator pkg/util/node.go GetNodeReservationResources.
  NodeReservation r;
  r.cpuMilli = 2500;
  CHECK(reservedCpuMilli(r) == 2500);
  r.reservedCpus = {0, 1, 2};
  CHECK(reservedCpuMilli(r) == 3000);
  r.cpuMilli = 0;
  CHECK(reservedCpuMilli(r) == 3000);
}

TEST_CASE("resource-status gives the pod's cpuset, empty when it has none", "[snapshot]") {
  CHECK(*parseResourceStatusCpuset(R"({"cpuset":"0-3"})") == std::vector<int>{0, 1, 2, 3});
  CHECK(*parseResourceStatusCpuset(
            R"({"cpuset":"2,10-11","numaNodeResources":[{"node":0,"resources":{"cpu":"3"}}]})") ==
        std::vector<int>{2, 10, 11});
  CHECK(parseResourceStatusCpuset("{}")->empty());
  CHECK(parseResourceStatusCpuset(R"({"cpuset":""})")->empty());
  CHECK(parseResourceStatusCpuset(R"({"numaNodeResources":[{"node":1}]})")->empty());
}

TEST_CASE("a bad resource-status is an error naming the annotation", "[snapshot]") {
  const std::string kName = "scheduling.koordinator.sh/resource-status: ";
  for (const char* text :
       {"", "{", "[]", R"({"cpuset":3})", R"({"cpuset":"a-b"})", R"({"cpuset":"5-1"})"}) {
    INFO(text);
    auto r = parseResourceStatusCpuset(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.rfind(kName, 0) == 0);
  }
  CHECK(parseResourceStatusCpuset(R"({"cpuset":"a-b"})")
            .error()
            .message.rfind(kName + "cpuset: ", 0) == 0);
}

TEST_CASE("system-qos-resource gives its CPUs as exclusive unless cpusetExclusive is false",
          "[snapshot]") {
  auto r = parseSystemQosExclusiveCpus(R"({"cpuset":"0-1,6"})");  // absent: exclusive
  REQUIRE(r.ok());
  CHECK(*r == std::vector<int>{0, 1, 6});
  r = parseSystemQosExclusiveCpus(R"({"cpuset":"2-3","cpusetExclusive":true})");
  REQUIRE(r.ok());
  CHECK(*r == std::vector<int>{2, 3});
  r = parseSystemQosExclusiveCpus(R"({"cpuset":"2-3","cpusetExclusive":false})");
  REQUIRE(r.ok());
  CHECK(r->empty());  // shared with other pods: nothing kept from BE
  CHECK(parseSystemQosExclusiveCpus("")->empty());
  CHECK(parseSystemQosExclusiveCpus("{}")->empty());
  auto bad = parseSystemQosExclusiveCpus(R"({"cpuset":"0-x"})");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::StartsWith("cpuset: "));
  bad = parseSystemQosExclusiveCpus(R"({"cpuset":"1","cpusetExclusive":"yes"})");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("cpusetExclusive"));
  CHECK_FALSE(parseSystemQosExclusiveCpus("[1]").ok());
}

}  // namespace test_qos_snapshot
