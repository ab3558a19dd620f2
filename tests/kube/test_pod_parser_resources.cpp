// Tests for kube/pod_parser's resource lists: quantities as the kubelet sends them,
// the resources the agent reads (cpu, memory, Koordinator's batch and mid ones) and
// those it ignores. The rest of the parser's tests: test_pod_parser.cpp.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "kube/pod.h"
#include "tests/kube/pod_test_helpers.h"

namespace test_kube_pod_parser_resources {  // this file's own names: unity chunks

using namespace koord;
using namespace koord::podtest;

TEST_CASE("quantities given as JSON numbers or with surrounding spaces read like strings",
          "[pod]") {
  // Quantity.UnmarshalJSON accepts a bare number and trims spaces.
  Json pod = makePod(
      "u1", Json::array({container(
                "c", {{"cpu", 2}, {"memory", 1048576}, {"kubernetes.io/batch-cpu", 1000}},
                {{"cpu", 0.5}, {"memory", " 128Mi "}, {"kubernetes.io/batch-memory", 1e3}})}));
  const Pod p = parseOne(pod);
  const Container& c = p.containers.at(0);
  CHECK(c.requests.cpuMilli == 2000);
  CHECK(c.requests.memoryBytes == kMi);
  CHECK(c.requests.batchCpuMilli == 1000);
  CHECK(c.limits.cpuMilli == 500);
  CHECK(c.limits.memoryBytes == 128 * kMi);
  CHECK(c.limits.batchMemoryBytes == 1000);
  pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] = -2;
  CHECK(parseOne(pod).containers.at(0).limits.cpuMilli == -2000);
  pod["spec"]["containers"][0]["resources"]["limits"]["cpu"] = 1e300;
  Json list = {{"items", Json::array({pod})}};
  CHECK(parseError(list.dump()).find("overflows int64") != std::string::npos);
}

TEST_CASE("resources the agent does not use are ignored, even when malformed", "[pod]") {
  Json pod = makePod(
      "u1", Json::array({container(
                "c", {{"ephemeral-storage", "garbage"}, {"nvidia.com/gpu", true}, {"cpu", "1"}},
                {{"hugepages-2Mi", Json::array()}, {"example.com/dongle", "x"}})}));
  const Pod p = parseOne(pod);
  CHECK(p.containers.at(0).requests.cpuMilli == 1000);
  CHECK_FALSE(p.containers.at(0).limits.cpuMilli);
}

TEST_CASE(
    "Koordinator's mid resources are read like its batch ones (mid-cpu already in "
    "milli-cores), and a malformed one is an error naming it",
    "[pod]") {
  Json pod = makePod(
      "u1", Json::array({container(
                "c", {{"kubernetes.io/mid-cpu", "1500"}, {"kubernetes.io/mid-memory", "64Mi"}},
                {{"kubernetes.io/mid-cpu", 2000}})}));
  const Pod parsed = parseOne(pod);
  const Container& c = parsed.containers.at(0);
  CHECK(c.requests.midCpuMilli == 1500);
  CHECK(c.requests.midMemoryBytes == 64 * kMi);
  CHECK(c.limits.midCpuMilli == 2000);
  CHECK_FALSE(c.limits.midMemoryBytes);
  pod["spec"]["containers"][0]["resources"]["limits"]["kubernetes.io/mid-cpu"] = "x";
  Json list = {{"items", Json::array({pod})}};
  CHECK(parseError(list.dump()) ==
        "items[0].spec.containers[0].resources.limits[\"kubernetes.io/mid-cpu\"]: invalid "
        "quantity \"x\"");
}

}  // namespace test_kube_pod_parser_resources
