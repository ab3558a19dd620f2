// Tests for qos/node_overrides: the flags against the Node's annotations and
// allocatable memory, each choice with its source, bad annotations named.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "qos/node_overrides.h"

namespace test_qos_node_overrides {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

const std::optional<std::string> kNone;
const std::optional<std::string> kAnnotationTwoCpus{R"({"resources":{"cpu":"2"}})"};

}  // namespace

TEST_CASE("the Node's reservation annotation is used when the flag is not set") {
  auto r = chooseReservation("", kAnnotationTwoCpus, "rig-node");
  REQUIRE(r.ok());
  CHECK(r->value.cpuMilli == 2000);
  CHECK(r->source == "Node annotation node.koordinator.sh/reservation");
}

TEST_CASE("--node-reservation wins over the Node's annotation, even a malformed one") {
  auto r = chooseReservation(R"({"reservedCPUs":"0-1"})", kAnnotationTwoCpus, "rig-node");
  REQUIRE(r.ok());
  CHECK(r->value.cpuMilli == 0);
  CHECK(r->value.reservedCpus == std::vector<int>{0, 1});
  CHECK(r->source == "flag --node-reservation");

  auto overBad = chooseReservation(R"({"resources":{"cpu":"1"}})",
                                   std::optional<std::string>("{not json"), "rig-node");
  REQUIRE(overBad.ok());
  CHECK(overBad->value.cpuMilli == 1000);
}

TEST_CASE("neither flag nor annotation reserves nothing, source none") {
  auto r = chooseReservation("", kNone, "rig-node");
  REQUIRE(r.ok());
  CHECK(r->value.cpuMilli == 0);
  CHECK(r->value.reservedCpus.empty());
  CHECK(r->source == "none");
  auto cpus = chooseSystemQosExclusiveCpus("", kNone, "rig-node");
  REQUIRE(cpus.ok());
  CHECK(cpus->value.empty());
  CHECK(cpus->source == "none");
}

TEST_CASE("a malformed annotation is an error naming the node, the annotation and the field") {
  auto r = chooseReservation("", std::optional<std::string>(R"({"resources":{"cpu":"lots"}})"),
                             "rig-node");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message,
             Catch::StartsWith(
                 "Node rig-node: annotation node.koordinator.sh/reservation: resources.cpu"));

  auto cpus = chooseSystemQosExclusiveCpus("", std::optional<std::string>(R"({"cpuset":"3-1"})"),
                                           "rig-node");
  REQUIRE_FALSE(cpus.ok());
  CHECK_THAT(cpus.error().message,
             Catch::StartsWith(
                 "Node rig-node: annotation node.koordinator.sh/system-qos-resource: cpuset"));
}

TEST_CASE("a malformed flag is an error naming the flag") {
  auto r = chooseReservation("[]", kAnnotationTwoCpus, "rig-node");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::StartsWith("--node-reservation: "));
  auto cpus = chooseSystemQosExclusiveCpus("{", kNone, "rig-node");
  REQUIRE_FALSE(cpus.ok());
  CHECK_THAT(cpus.error().message, Catch::StartsWith("--node-system-qos-resource: "));
}

TEST_CASE("the effective reservation combines both choices with their sources") {
  NodeReservationInputs in;
  in.nodeName = "rig-node";
  in.reservationAnnotation = kAnnotationTwoCpus;
  in.systemQosResourceAnnotation = R"({"cpuset":"2-3","cpusetExclusive":true})";
  auto both = effectiveNodeReservation(in);
  REQUIRE(both.ok());
  CHECK(both->reservation.cpuMilli == 2000);
  CHECK(both->reservation.systemExclusiveCpus == std::vector<int>{2, 3});
  CHECK(both->reservationSource == "Node annotation node.koordinator.sh/reservation");
  CHECK(both->systemQosSource == "Node annotation node.koordinator.sh/system-qos-resource");

  in.flagSystemQosResource = R"({"cpuset":"5","cpusetExclusive":true})";
  auto flagged = effectiveNodeReservation(in);
  REQUIRE(flagged.ok());
  CHECK(flagged->reservation.systemExclusiveCpus == std::vector<int>{5});
  CHECK(flagged->systemQosSource == "flag --node-system-qos-resource");
  CHECK(flagged->reservationSource == "Node annotation node.koordinator.sh/reservation");

  in.reservationAnnotation = "{bad";
  auto bad = effectiveNodeReservation(in);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message,
             Catch::Contains("annotation node.koordinator.sh/reservation: not valid JSON"));
}

TEST_CASE("allocatable memory: the flag, else the Node's allocatable, else MemTotal") {
  const int64_t gi = int64_t{1} << 30;
  auto flag = chooseAllocatableMemory(8 * gi, 15 * gi, 16 * gi);
  CHECK(flag.value == 8 * gi);
  CHECK(flag.source == "flag --node-allocatable-memory");

  auto node = chooseAllocatableMemory(0, 15 * gi, 16 * gi);
  CHECK(node.value == 15 * gi);
  CHECK(node.source == "Node status.allocatable.memory");

  auto total = chooseAllocatableMemory(0, std::nullopt, 16 * gi);
  CHECK(total.value == 16 * gi);
  CHECK(total.source == "MemTotal");
  CHECK(chooseAllocatableMemory(0, int64_t{0}, 16 * gi).source == "MemTotal");
}

}  // namespace test_qos_node_overrides
