// Tests for qos/oom_score_adj (the OOMScoreAdj rule) and its place in the hooks'
// reconciler: values worked from koordlet's rule (spec annotation per container,
// else the pod's; [-1000, 1000]; a bad annotation refused, no fallback).
#include <catch2/catch.hpp>

#include "qos/hook_reconcile.h"
#include "qos/oom_score_adj.h"

namespace test_qos_oom_score_adj {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

using Annotations = std::map<std::string, std::string>;

std::optional<int64_t> valueFor(const Annotations& a, const char* container) {
  auto r = oomScoreAdjFor(a, container);
  REQUIRE(r.ok());
  return *r;
}

std::string errorFor(const Annotations& a, const char* container) {
  auto r = oomScoreAdjFor(a, container);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

}  // namespace

TEST_CASE("a container's oom_score_adj comes from the spec annotation, else the pod's",
          "[oom_score_adj]") {
  const Annotations both = {{kOomScoreAdjAnnotation, "-200"},
                            {kOomScoreAdjSpecAnnotation, R"({"sidecar": 800, "main": -1000})"}};
  CHECK(valueFor(both, "main") == -1000);
  CHECK(valueFor(both, "sidecar") == 800);
  CHECK(valueFor(both, "other") == -200);  // not named: the pod's
  CHECK(valueFor({{kOomScoreAdjAnnotation, "+7"}}, "x") == 7);
  CHECK(valueFor({{kOomScoreAdjAnnotation, "1000"}}, "x") == 1000);
  CHECK_FALSE(valueFor({}, "x"));
  CHECK_FALSE(valueFor({{kOomScoreAdjAnnotation, ""}, {kOomScoreAdjSpecAnnotation, ""}}, "x"));
  CHECK_FALSE(valueFor({{kOomScoreAdjSpecAnnotation, R"({"main": 5})"}}, "other"));
}

TEST_CASE("an oom_score_adj annotation that cannot be right is refused, naming it",
          "[oom_score_adj]") {
  CHECK(errorFor({{kOomScoreAdjAnnotation, "1001"}}, "x") ==
        "annotation koordinator.sh/oom-score-adj: 1001 is outside [-1000, 1000]");
  CHECK(errorFor({{kOomScoreAdjAnnotation, "-5x"}}, "x") ==
        "annotation koordinator.sh/oom-score-adj: \"-5x\" is not an integer");
  CHECK(errorFor({{kOomScoreAdjAnnotation, "+"}}, "x") ==
        "annotation koordinator.sh/oom-score-adj: \"+\" is not an integer");
  CHECK(errorFor({{kOomScoreAdjSpecAnnotation, R"({"main": -2000})"}}, "main") ==
        "annotation koordinator.sh/oom-score-adj-spec: -2000 is outside [-1000, 1000]");
  // A bad spec is refused for every container, even one it does not name, and the
  // pod's value is not used instead (koordlet).
  const Annotations badSpec = {{kOomScoreAdjAnnotation, "10"},
                               {kOomScoreAdjSpecAnnotation, R"({"main": "100"})"}};
  CHECK(errorFor(badSpec, "other") ==
        "annotation koordinator.sh/oom-score-adj-spec: \"main\": \"100\" is not an integer");
  CHECK(errorFor({{kOomScoreAdjSpecAnnotation, "[1]"}}, "x") ==
        "annotation koordinator.sh/oom-score-adj-spec: not a JSON object of container name to "
        "integer");
}

TEST_CASE(
    "the hooks' reconciler asks for each container's oom_score_adj with the gate on, and "
    "for none with it off",
    "[oom_score_adj]") {
  Pod pod;
  pod.uid = "u1";
  pod.ns = "default";
  pod.name = "web";
  pod.phase = "Running";
  pod.kubeQos = KubeQos::kBurstable;
  pod.annotations = {{kOomScoreAdjAnnotation, "-300"},
                     {kOomScoreAdjSpecAnnotation, R"({"log": 500})"}};
  for (const char* name : {"main", "log"}) {
    Container c;
    c.name = name;
    c.runtime = "containerd";
    c.id = std::string(name) + "-id";
    pod.containers.push_back(c);
  }
  QosSnapshot snap;
  PodView view;
  view.pod = &pod;
  view.dir = "kubepods/burstable/podu1";
  for (const Container& c : pod.containers) {
    ContainerView cv;
    cv.container = &c;
    cv.dir = view.dir + "/" + c.id;
    view.containers.push_back(cv);
  }
  snap.pods.push_back(view);
  const NodeSloSpec spec = defaultNodeSlo();
  HookGates gates;
  gates.batchResource = gates.cpusetAllocator = false;
  gates.oomScoreAdj = true;
  HookContext ctx = baseHookContext(gates, spec, 4096, 0);
  HookReconcileResult r = reconcileHooks(snap, ctx);
  CHECK(r.errors.empty());
  CHECK(r.writes.empty());  // not a cgroup file
  REQUIRE(r.oomScoreAdj.size() == 2);
  CHECK(r.oomScoreAdj[0].dir == "kubepods/burstable/podu1/main-id");
  CHECK(r.oomScoreAdj[0].container == "main");
  CHECK(r.oomScoreAdj[0].value == -300);
  CHECK(r.oomScoreAdj[1].container == "log");
  CHECK(r.oomScoreAdj[1].value == 500);
  CHECK(r.oomScoreAdj[1].podUid == "u1");

  gates.oomScoreAdj = false;
  CHECK(reconcileHooks(snap, baseHookContext(gates, spec, 4096, 0)).oomScoreAdj.empty());
  CHECK_FALSE(HookReconcileStrategy(std::chrono::seconds(10), gates).enabled(spec));
  gates.oomScoreAdj = true;
  CHECK(HookReconcileStrategy(std::chrono::seconds(10), gates).enabled(spec));

  // A value out of range: an error naming the container and annotation, no write.
  pod.annotations = {{kOomScoreAdjAnnotation, "4000"}};
  r = reconcileHooks(snap, baseHookContext(gates, spec, 4096, 0));
  CHECK(r.oomScoreAdj.empty());
  REQUIRE_FALSE(r.errors.empty());
  CHECK(r.errors[0].find("container main: annotation koordinator.sh/oom-score-adj: 4000 is "
                         "outside [-1000, 1000]") != std::string::npos);
  // Timed as a failed oom_score_adj reconcile, and nothing else as failed.
  int oomFailed = 0, otherFailed = 0;
  for (const HookReconcileTiming& t : r.timings) {
    if (t.ok) continue;
    (t.resourceType == "oom_score_adj" ? oomFailed : otherFailed)++;
  }
  CHECK(oomFailed == 2);  // both containers
  CHECK(otherFailed == 0);
}

}  // namespace test_qos_oom_score_adj
