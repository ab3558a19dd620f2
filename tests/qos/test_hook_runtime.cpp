// What the two hook paths share (qos/hook_runtime.h): stages, the runtime's
// resources as requests and limits, and the one-decision memo's time and size
// bounds (an injected clock: time points passed in, no sleep).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "qos/hook_runtime.h"

namespace test_qos_hook_runtime {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

TEST_CASE("hook stages parse by koordlet's names and carry the hooks koordlet runs there",
          "[hook-runtime]") {
  for (HookStage s : kAllStages) CHECK(parseHookStage(toString(s)) == s);
  CHECK_FALSE(parseHookStage("PreCreate").has_value());
  // GPUEnvInject: create only; OOMScoreAdj: at create (ours), then the reconciler
  CHECK(hooksAt(HookStage::kPreCreateContainer).size() == 8);
  CHECK(hooksAt(HookStage::kPreRunPodSandbox).size() == 6);
  CHECK(hooksAt(HookStage::kPreUpdateContainerResources).size() == 3);
  CHECK(hooksAt(HookStage::kPreRemoveRunPodSandbox).size() == 1);
  CHECK(hooksAt(HookStage::kPostStopContainer).empty());
  CHECK(hooksAt(HookStage::kPreStartContainer).empty());
}

TEST_CASE("a runtime's resources become requests and limits; overflowing ones are refused",
          "[hook-runtime]") {
  std::vector<std::string> refused;
  RuntimeResources r;
  r.cpuShares = 2048;
  r.cpuQuota = 150000;
  r.cpuPeriod = 100000;
  r.memoryLimit = 1 << 30;
  const RuntimeFieldNames names{"x.cpu.shares", "x.cpu.quota", "cpu.period"};
  HookContainer c = containerFromRuntime("app", "id1", r, names, refused);
  CHECK(refused.empty());
  CHECK(c.requests.cpuMilli == 2000);
  CHECK(c.limits.cpuMilli == 1500);
  CHECK(c.limits.memoryBytes == 1 << 30);
  r.cpuShares = UINT64_MAX;
  r.cpuQuota = INT64_MAX;
  HookContainer bad = containerFromRuntime("app", "", r, names, refused);
  REQUIRE(refused.size() == 2);
  CHECK(refused[0] ==
        "container app: x.cpu.shares 18446744073709551615 overflows milli-cores "
        "(cpu request not read)");
  CHECK(refused[1] ==
        "container app: x.cpu.quota 9223372036854775807 / cpu.period 100000 "
        "overflows milli-cores (cpu limit not read)");
  CHECK_FALSE(bad.requests.cpuMilli.has_value());
  CHECK_FALSE(bad.limits.cpuMilli.has_value());
}

TEST_CASE(
    "the kubelet's pod wins over the runtime's description, the runtime's container id "
    "is kept",
    "[hook-runtime]") {
  Pod known;
  known.uid = "u";
  known.name = "from-kubelet";
  known.koordQos = KoordQos::kLS;
  known.kubeQos = KubeQos::kBurstable;
  Container kc;
  kc.name = "main";
  kc.requests.cpuMilli = 500;
  known.containers.push_back(kc);
  RuntimePod rp;
  rp.uid = "u";
  rp.name = "from-runtime";
  rp.labels = {{"koordinator.sh/qosClass", "BE"}};
  rp.cgroupParent = "/kubepods/besteffort/podu";
  HookContainer rc;
  rc.name = "main";
  rc.id = "cid";
  rc.requests.cpuMilli = 9000;
  auto withKubelet = hookPodFromRuntime(rp, &rc, &known);
  REQUIRE(withKubelet.ok());
  CHECK(withKubelet->name == "from-kubelet");
  CHECK(withKubelet->rawQos == KoordQos::kLS);
  REQUIRE(withKubelet->containers.size() == 1);
  CHECK(withKubelet->containers[0].id == "cid");
  CHECK(withKubelet->containers[0].requests.cpuMilli == 500);
  auto alone = hookPodFromRuntime(rp, &rc, nullptr);
  REQUIRE(alone.ok());
  CHECK(alone->rawQos == KoordQos::kBE);
  CHECK(alone->kubeQos == KubeQos::kBestEffort);
  CHECK(alone->containers.at(0).requests.cpuMilli == 9000);
}

TEST_CASE("a decision is taken once, by the other path, only within its time to live",
          "[hook-decisions]") {
  HookDecisions d(8, 5s);
  const auto t0 = HookDecisions::TimePoint{} + 1h;
  HookIntent i;
  i.cpuShares = 1024;
  const std::string key = HookDecisions::key("u", "main", "PreCreateContainer");
  d.record(key, HookPath::kProxy, i, t0);
  CHECK_FALSE(d.take(HookDecisions::key("u", "main", "PreUpdateContainerResources"), HookPath::kNri,
                     t0 + 1s)
                  .has_value());
  // The path that decided does not get its own decision back.
  CHECK_FALSE(d.take(key, HookPath::kProxy, t0 + 1s).has_value());
  auto taken = d.take(key, HookPath::kNri, t0 + 4s);
  REQUIRE(taken.has_value());
  CHECK(taken->cpuShares == 1024);
  CHECK_FALSE(d.take(key, HookPath::kNri, t0 + 4s).has_value());  // taken out
  d.record(key, HookPath::kNri, i, t0);
  CHECK_FALSE(d.take(key, HookPath::kProxy, t0 + 5s).has_value());  // expired
  CHECK(d.size() == 0);
}

TEST_CASE("the decision memo holds at most its capacity, dropping the oldest", "[hook-decisions]") {
  HookDecisions d(4, 5s);
  const auto t0 = HookDecisions::TimePoint{} + 1h;
  HookIntent i;
  auto keyOf = [](int n) {
    std::string uid = "u";  // not "u" + to_string: g++ 12's false -Wrestrict
    uid += std::to_string(n);
    return HookDecisions::key(uid, "c", "PreCreateContainer");
  };
  for (int n = 0; n < 100; ++n) {
    d.record(keyOf(n), HookPath::kProxy, i, t0);
    CHECK(d.size() <= 4);
  }
  CHECK(d.size() == 4);
  CHECK_FALSE(d.take(keyOf(95), HookPath::kNri, t0));
  CHECK(d.take(keyOf(96), HookPath::kNri, t0));
  CHECK(d.take(keyOf(99), HookPath::kNri, t0));
  // Re-recording one key many times keeps one entry and the bound.
  const std::string same = HookDecisions::key("same", "c", "PreCreateContainer");
  for (int n = 0; n < 100; ++n) d.record(same, HookPath::kProxy, i, t0);
  CHECK(d.size() <= 4);
  CHECK(d.take(same, HookPath::kNri, t0));
}

TEST_CASE(
    "a runner on one path decides afresh what it asks twice, and takes the other path's "
    "decision, on the injected clock",
    "[hook-decisions]") {
  ManualClock clock;
  HookDecisions d(8, 5s);
  HookState state;
  state.spec = defaultNodeSlo();
  state.context.spec = &state.spec;
  HookPod pod;
  pod.uid = "u";
  pod.ns = "default";
  pod.name = "be";
  pod.rawQos = KoordQos::kBE;
  pod.kubeQos = KubeQos::kBestEffort;
  HookContainer c;
  c.name = "main";
  c.requests.batchCpuMilli = 1000;
  pod.containers.push_back(c);
  HookRunner proxy(nullptr, FailurePolicy::kIgnore, HookPath::kProxy, &d, &clock);
  HookRunner nri(nullptr, FailurePolicy::kIgnore, HookPath::kNri, &d, &clock);
  auto first = proxy.run(state, pod, &pod.containers[0], HookStage::kPreCreateContainer, true);
  REQUIRE(first.ok());
  CHECK(first->cpuShares == 1024);
  // The same path again (a retried create) with other resources: decided afresh.
  pod.containers[0].requests.batchCpuMilli = 2000;
  auto again = proxy.run(state, pod, &pod.containers[0], HookStage::kPreCreateContainer, true);
  REQUIRE(again.ok());
  CHECK(again->cpuShares == 2048);
  CHECK(proxy.sharedDecisions() == 0);
  // NRI within the time to live: the proxy's latest decision, whatever it would compute.
  pod.containers[0].requests.batchCpuMilli = 3000;
  clock.advance(4s);
  auto viaNri = nri.run(state, pod, &pod.containers[0], HookStage::kPreCreateContainer, true);
  REQUIRE(viaNri.ok());
  CHECK(viaNri->cpuShares == 2048);
  CHECK(nri.sharedDecisions() == 1);
  // Past it: decided afresh.
  (void)proxy.run(state, pod, &pod.containers[0], HookStage::kPreCreateContainer, true);
  clock.advance(5s);
  auto late = nri.run(state, pod, &pod.containers[0], HookStage::kPreCreateContainer, true);
  REQUIRE(late.ok());
  CHECK(late->cpuShares == 3072);
}

TEST_CASE(
    "at a sandbox the runner hands the pod's own values to the sink, from the "
    "extended-resource-spec annotation when the kubelet has not listed the pod",
    "[hook-runtime]") {
  HookState state;
  state.spec = defaultNodeSlo();
  state.context.spec = &state.spec;
  RuntimePod rp;
  rp.uid = "u1";
  rp.ns = "default";
  rp.name = "be";
  rp.labels = {{"koordinator.sh/qosClass", "BE"}};
  rp.cgroupParent = "kubepods-besteffort-podu1.slice";  // the systemd driver's form
  // Two containers as koord-manager's webhook writes them: 1000 + 500 milli of
  // batch-cpu requested and limited, 64Mi + 32Mi of batch-memory limited.
  rp.annotations = {
      {"node.koordinator.sh/extended-resource-spec",
       R"({"containers":{"a":{"requests":{"kubernetes.io/batch-cpu":"1k"},)"
       R"("limits":{"kubernetes.io/batch-cpu":"1k","kubernetes.io/batch-memory":"64Mi"}},)"
       R"("b":{"requests":{"kubernetes.io/batch-cpu":"500"},)"
       R"("limits":{"kubernetes.io/batch-cpu":"500","kubernetes.io/batch-memory":"32Mi"}}}})"}};
  std::vector<std::pair<std::string, HookIntent>> sunk;
  HookRunner runner(nullptr, FailurePolicy::kIgnore, HookPath::kNri);
  runner.setSandboxSink(
      [&](const HookPod& p, const HookIntent& i) { sunk.emplace_back(p.uid, i); });
  auto pod = hookPodFromRuntime(rp, nullptr, nullptr);
  REQUIRE(pod.ok());
  CHECK(pod->kubeQos == KubeQos::kBestEffort);
  auto intent = runner.decide(state, pod, std::nullopt, HookStage::kPreRunPodSandbox, false);
  REQUIRE(intent.ok());
  REQUIRE(sunk.size() == 1);
  CHECK(sunk[0].first == "u1");
  CHECK(sunk[0].second.cpuShares == 1536);   // 1500 milli * 1024 / 1000
  CHECK(sunk[0].second.cfsQuota == 150000);  // 1500 milli of a 100 ms period
  CHECK(sunk[0].second.memoryLimit == 96 * 1024 * 1024);
  // A container's stage, or a pod with nothing to write, sinks nothing.
  (void)runner.decide(state, pod, "a", HookStage::kPreCreateContainer, false);
  rp.labels.clear();
  rp.annotations.clear();
  auto ls = hookPodFromRuntime(rp, nullptr, nullptr);
  (void)runner.decide(state, ls, std::nullopt, HookStage::kPreRunPodSandbox, false);
  CHECK(sunk.size() == 1);
}

}  // namespace test_qos_hook_runtime
