// Tests for kube/pod_resources: a pod's requests and limits as the kubelet counts
// them with sidecars (restartable init containers), worked by hand from the rules in
// Kubernetes' component-helpers PodRequests / PodLimits (KEP-753), and the Pod
// model's figures built on them.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/pod.h"
#include "kube/pod_resources.h"
#include "tests/kube/pod_test_helpers.h"

namespace test_kube_pod_resources {

using namespace koord;
using namespace koord::podtest;
using K = ContainerKind;

TEST_CASE("app containers alone are summed, requests and limits alike", "[pod_resources]") {
  const std::vector<ContainerAmount> c = {{"a", K::kApp, 300}, {"b", K::kApp, 700}};
  CHECK(podRequests(c).value() == 1000);
  CHECK(podLimits(c).value() == std::optional<int64_t>{1000});
  CHECK(podRequests({}).value() == 0);
  CHECK_FALSE(podLimits({}).value());
}

TEST_CASE("a regular init container raises the pod to its own request when larger",
          "[pod_resources]") {
  // app 1000 + 500 = 1500; the init container alone 2000: the pod needs 2000.
  const std::vector<ContainerAmount> c = {
      {"init", K::kInit, 2000}, {"a", K::kApp, 1000}, {"b", K::kApp, 500}};
  CHECK(podRequests(c).value() == 2000);
  // A smaller one changes nothing.
  const std::vector<ContainerAmount> small = {{"init", K::kInit, 100}, {"a", K::kApp, 1000}};
  CHECK(podRequests(small).value() == 1000);
}

TEST_CASE("sidecars add to the app containers and run beside every later init container",
          "[pod_resources]") {
  // KEP-753's order: sidecar s1 (1000), init i1 (2000), sidecar s2 (3000), init i2
  // (1500); app 1000.
  //   running: app 1000 + s1 1000 + s2 3000 = 5000
  //   i1 runs beside s1: 3000; i2 beside s1 and s2: 1000 + 3000 + 1500 = 5500
  //   the pod: max(5000, 5500) = 5500
  const std::vector<ContainerAmount> c = {{"s1", K::kSidecar, 1000},
                                          {"i1", K::kInit, 2000},
                                          {"s2", K::kSidecar, 3000},
                                          {"i2", K::kInit, 1500},
                                          {"app", K::kApp, 1000}};
  CHECK(podRequests(c).value() == 5500);
  CHECK(podLimits(c).value() == std::optional<int64_t>{5500});
  // An init container before a sidecar does not run beside it: i0 (4000) then s1
  // (1000), app 1000: running 2000, i0 alone 4000.
  const std::vector<ContainerAmount> before = {
      {"i0", K::kInit, 4000}, {"s1", K::kSidecar, 1000}, {"app", K::kApp, 1000}};
  CHECK(podRequests(before).value() == 4000);
}

TEST_CASE("the overhead is added to requests, and to a limit only when there is one",
          "[pod_resources]") {
  const std::vector<ContainerAmount> c = {{"a", K::kApp, 1000}, {"s", K::kSidecar, 250}};
  CHECK(podRequests(c, 100).value() == 1350);
  CHECK(podLimits(c, 100).value() == std::optional<int64_t>{1350});
  const std::vector<ContainerAmount> open = {{"a", K::kApp, 1000}, {"s", K::kSidecar, {}}};
  CHECK_FALSE(podLimits(open, 100).value());
}

TEST_CASE("one container without a limit, of any kind, leaves the pod unlimited",
          "[pod_resources]") {
  for (K kind : {K::kApp, K::kSidecar, K::kInit}) {
    const std::vector<ContainerAmount> c = {{"a", K::kApp, 1000}, {"x", kind, {}}};
    CHECK_FALSE(podLimits(c).value());
    // 0 is how the kubelet reads "no limit" for cpu and memory.
    const std::vector<ContainerAmount> zero = {{"a", K::kApp, 1000}, {"x", kind, 0}};
    CHECK_FALSE(podLimits(zero).value());
  }
  // Requests count an absent value as 0.
  const std::vector<ContainerAmount> c = {{"a", K::kApp, 1000}, {"s", K::kSidecar, {}}};
  CHECK(podRequests(c).value() == 1000);
}

TEST_CASE("a negative value or a sum past int64 is refused, naming the container",
          "[pod_resources]") {
  const std::vector<ContainerAmount> negative = {{"a", K::kApp, 1000}, {"mesh", K::kSidecar, -1}};
  auto r = podRequests(negative);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("sidecar mesh") && Catch::Contains("-1"));
  REQUIRE_FALSE(podLimits(negative));
  const int64_t big = std::numeric_limits<int64_t>::max();
  const std::vector<ContainerAmount> past = {{"a", K::kApp, big}, {"s", K::kSidecar, 1}};
  REQUIRE_FALSE(podRequests(past));
  CHECK_THAT(podRequests(past).error().message, Catch::Contains("overflows"));
  const std::vector<ContainerAmount> withOverhead = {{"a", K::kApp, big}};
  CHECK_FALSE(podRequests(withOverhead, 1));
}

TEST_CASE(
    "the pod list's restartPolicy Always makes an init container a sidecar, counted "
    "as the kubelet counts it",
    "[pod_resources]") {
  Json pod =
      makePod("u1", Json::array({container("app", {{"cpu", "1"}, {"memory", "1Gi"}}, nullptr)}));
  Json sidecar = container("mesh", {{"cpu", "500m"}, {"kubernetes.io/batch-cpu", "500"}}, nullptr);
  sidecar["restartPolicy"] = "Always";
  Json init = container("setup", {{"cpu", "2"}, {"kubernetes.io/batch-cpu", "3000"}}, nullptr);
  pod["spec"]["initContainers"] = Json::array({sidecar, init});
  const Pod p = parseOne(pod);
  REQUIRE(p.initContainers.size() == 2);
  CHECK(p.initContainers[0].kind() == K::kSidecar);
  CHECK(p.initContainers[1].kind() == K::kInit);
  CHECK(p.containers[0].kind() == K::kApp);
  // cpu: running 1000 + 500 = 1500; setup beside mesh 2000 + 500 = 2500.
  CHECK(p.requestCpuMilli() == 2500);
  // batch-cpu of the running pod: app none + mesh 500; setup has finished.
  CHECK(p.batchCpuRequestMilli() == 500);
}

}  // namespace test_kube_pod_resources
