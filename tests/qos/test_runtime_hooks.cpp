// The runtime hooks policy (qos/runtime_hooks.h) without files: pods in, intents
// out, each hook's koordlet formula checked with exact numbers.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "qos/runtime_hooks.h"

namespace test_qos_runtime_hooks {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

constexpr int64_t kGi = 1024LL * 1024 * 1024;

Container batchContainer(std::string name, std::optional<int64_t> reqMilli,
                         std::optional<int64_t> limMilli, std::optional<int64_t> memLimit) {
  Container c;
  c.name = std::move(name);
  c.runtime = "containerd";
  c.id = "id-" + c.name;
  c.requests.batchCpuMilli = reqMilli;
  c.limits.batchCpuMilli = limMilli;
  c.limits.batchMemoryBytes = memLimit;
  return c;
}

Pod bePod(std::vector<Container> containers) {
  Pod p;
  p.uid = "be-uid";
  p.ns = "default";
  p.name = "be-pod";
  p.phase = "Running";
  p.kubeQos = KubeQos::kBestEffort;
  p.koordQos = KoordQos::kBE;
  p.labels["koordinator.sh/qosClass"] = "BE";
  p.containers = std::move(containers);
  return p;
}

Pod lsPod(KubeQos kube, KoordQos koord, int64_t cpuLimitMilli) {
  Pod p;
  p.uid = "ls-uid";
  p.ns = "default";
  p.name = "ls-pod";
  p.phase = "Running";
  p.kubeQos = kube;
  p.koordQos = koord;
  Container c;
  c.name = "app";
  c.runtime = "containerd";
  c.id = "id-app";
  c.requests.cpuMilli = cpuLimitMilli / 2;
  c.limits.cpuMilli = cpuLimitMilli;
  c.requests.memoryBytes = kGi;
  c.limits.memoryBytes = 2 * kGi;
  p.containers.push_back(c);
  return p;
}

HookPod hookPod(const Pod& p) {
  auto hp = hookPodFromKubelet(p);
  REQUIRE(hp.ok());
  return *hp;
}

struct Ctx {
  NodeSloSpec spec = defaultNodeSlo();
  HookContext ctx;
  Ctx() { ctx.spec = &spec; }
};

HookIntent forContainer(const HookPod& hp, const HookContext& ctx, size_t i,
                        std::vector<std::string>* errors = nullptr) {
  return containerIntent(hp, hp.containers.at(i), ctx, errors);
}

}  // namespace

TEST_CASE("a BE batch pod gets shares, quota and memory limit from its batch resources",
          "[hooks]") {
  Ctx c;
  const Pod pod =
      bePod({batchContainer("a", 1000, 2000, 2 * kGi), batchContainer("b", 500, 1000, 1 * kGi)});
  const HookPod hp = hookPod(pod);

  HookIntent p = podIntent(hp, c.ctx, nullptr);
  CHECK(p.cpuShares == 1536);  // (1000 + 500) × 1024 / 1000
  CHECK(p.cfsQuota == 300000);
  CHECK(p.memoryLimit == 3 * kGi);
  CHECK_FALSE(p.cpuset);

  HookIntent a = forContainer(hp, c.ctx, 0);
  CHECK(a.cpuShares == 1024);
  CHECK(a.cfsQuota == 200000);
  CHECK(a.memoryLimit == 2 * kGi);
  CHECK(a.cpuset == "");  // kube BestEffort: cleared, suppress places it
  HookIntent b = forContainer(hp, c.ctx, 1);
  CHECK(b.cpuShares == 512);
  CHECK(b.cfsQuota == 100000);
  CHECK(b.memoryLimit == 1 * kGi);
}

TEST_CASE("a BE container without batch limits makes its and the pod's quota and memory unlimited",
          "[hooks]") {
  Ctx c;
  const HookPod hp = hookPod(bePod({batchContainer("a", 1000, 2000, 2 * kGi),
                                    batchContainer("b", 300, std::nullopt, std::nullopt)}));
  HookIntent p = podIntent(hp, c.ctx, nullptr);
  CHECK(p.cpuShares == 1331);  // 1300 × 1024 / 1000
  CHECK(p.cfsQuota == -1);
  CHECK(p.memoryLimit == -1);
  HookIntent b = forContainer(hp, c.ctx, 1);
  CHECK(b.cpuShares == 307);
  CHECK(b.cfsQuota == -1);
  CHECK(b.memoryLimit == -1);
  // A tiny limit still gets the kernel's minimum quota.
  const HookPod tiny = hookPod(bePod({batchContainer("a", 1, 5, std::nullopt)}));
  CHECK(forContainer(tiny, c.ctx, 0).cfsQuota == 1000);
}

TEST_CASE("cpu shares are clamped to 2..262144 as koordlet's MilliCPUToShares", "[hooks]") {
  CHECK(milliCpuToShares(0) == 2);
  CHECK(milliCpuToShares(1) == 2);
  CHECK(milliCpuToShares(2) == 2);
  CHECK(milliCpuToShares(3) == 3);
  CHECK(milliCpuToShares(1000) == 1024);
  CHECK(milliCpuToShares(256000) == 262144);
  CHECK(milliCpuToShares(300000) == 262144);
  CHECK(milliCpuToShares(INT64_MAX) == 262144);
  Ctx c;
  const HookPod none = hookPod(bePod({batchContainer("a", std::nullopt, 1000, std::nullopt)}));
  CHECK(podIntent(none, c.ctx, nullptr).cpuShares == 2);
}

TEST_CASE("CPU suppress with policy cfsQuota forces BE quotas to -1", "[hooks]") {
  Ctx c;
  c.ctx.suppressCfsQuota = true;
  const HookPod hp = hookPod(bePod({batchContainer("a", 1000, 2000, 2 * kGi)}));
  CHECK(podIntent(hp, c.ctx, nullptr).cfsQuota == -1);
  HookIntent a = forContainer(hp, c.ctx, 0);
  CHECK(a.cfsQuota == -1);
  CHECK(a.cpuShares == 1024);
  CHECK(a.memoryLimit == 2 * kGi);
}

TEST_CASE("a BE-labelled pod without any batch resource keeps the kubelet's values", "[hooks]") {
  Ctx c;
  Pod pod = bePod({batchContainer("a", std::nullopt, std::nullopt, std::nullopt)});
  pod.kubeQos = KubeQos::kBurstable;
  pod.containers[0].limits.memoryBytes = kGi;
  const HookPod hp = hookPod(pod);
  CHECK(podIntent(hp, c.ctx, nullptr).empty());
  CHECK(forContainer(hp, c.ctx, 0).empty());
}

TEST_CASE("the BatchResource gate off and non-BE pods get no batch values", "[hooks]") {
  Ctx c;
  c.ctx.batchResource = false;
  const HookPod hp = hookPod(bePod({batchContainer("a", 1000, 2000, kGi)}));
  CHECK_FALSE(podIntent(hp, c.ctx, nullptr).cpuShares);
  Ctx on;
  Pod ls = bePod({batchContainer("a", 1000, 2000, kGi)});
  ls.koordQos = KoordQos::kLS;
  ls.labels.clear();
  CHECK_FALSE(podIntent(hookPod(ls), on.ctx, nullptr).cpuShares);
}

TEST_CASE("batch resources come from the extended-resource-spec annotation when the spec has none",
          "[hooks]") {
  Ctx c;
  Pod pod = bePod({batchContainer("main", std::nullopt, std::nullopt, std::nullopt),
                   batchContainer("side", 200, 400, std::nullopt)});
  pod.annotations[kExtendedResourceSpecAnnotation] =
      R"({"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"1k","kubernetes.io/batch-memory":"1Gi"},)"
      R"("limits":{"kubernetes.io/batch-cpu":2000,"kubernetes.io/batch-memory":"2Gi"}},)"
      R"("side":{"limits":{"kubernetes.io/batch-cpu":"9000","kubernetes.io/batch-memory":"512Mi"}}}})";
  const HookPod hp = hookPod(pod);
  REQUIRE(hp.extendedResourceError.empty());
  CHECK(hp.containers[0].requests.batchCpuMilli == 1000);
  CHECK(hp.containers[0].limits.batchCpuMilli == 2000);
  CHECK(hp.containers[0].limits.batchMemoryBytes == 2 * kGi);
  CHECK(hp.containers[1].limits.batchCpuMilli == 400);  // the spec wins
  CHECK(hp.containers[1].limits.batchMemoryBytes == 512 * 1024 * 1024);

  HookIntent p = podIntent(hp, c.ctx, nullptr);
  CHECK(p.cpuShares == 1228);  // 1200 × 1024 / 1000
  CHECK(p.cfsQuota == 240000);
  CHECK(p.memoryLimit == 2 * kGi + 512 * 1024 * 1024);
}

TEST_CASE("extended-resource-spec errors name the annotation and the field", "[hooks]") {
  auto bad = [](std::string_view json) {
    auto r = parseExtendedResourceSpec(json);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(bad("{"), Contains("annotation node.koordinator.sh/extended-resource-spec: "));
  CHECK_THAT(bad(R"({"containers":[]})"), Contains("containers: expected an object"));
  CHECK_THAT(bad(R"({"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"x1"}}}})"),
             Contains("containers.main.requests.kubernetes.io/batch-cpu: "));
  CHECK_THAT(bad(R"({"containers":{"main":{"limits":{"kubernetes.io/batch-memory":true}}}})"),
             Contains("containers.main.limits.kubernetes.io/batch-memory: expected a quantity"));
  auto empty = parseExtendedResourceSpec(R"({"containers":{}})");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

TEST_CASE("an extended-resource-spec quantity is trimmed as Go's Quantity.UnmarshalJSON trims it",
          "[hooks]") {
  auto r = parseExtendedResourceSpec(
      R"({"containers":{"main":{"limits":{"kubernetes.io/batch-cpu":" 2000\n"}}}})");
  REQUIRE(r.ok());
  CHECK(r->at("main").limits.batchCpuMilli == 2000);
}

TEST_CASE("a bad extended-resource-spec fails BatchResource only, naming pod and annotation",
          "[hooks]") {
  Ctx c;
  Pod pod = bePod({batchContainer("main", std::nullopt, std::nullopt, std::nullopt)});
  pod.annotations[kExtendedResourceSpecAnnotation] = R"({"containers":{"main":{"limits":5}}})";
  pod.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"2-3"})";
  const HookPod hp = hookPod(pod);
  std::vector<std::string> errors;
  HookIntent a = forContainer(hp, c.ctx, 0, &errors);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "pod default/be-pod: hook BatchResource: annotation "
        "node.koordinator.sh/extended-resource-spec: containers.main.limits: expected an "
        "object, got a number");
  CHECK_FALSE(a.cpuShares);
  CHECK_FALSE(a.memoryLimit);
  CHECK(a.cpuset == "2-3");  // CPUSetAllocator still ran
  CHECK(a.cfsQuota == -1);

  HookIntent direct;
  Status s = runHook(HookName::kBatchResource, hp, nullptr, c.ctx, direct);
  REQUIRE_FALSE(s.ok());
  CHECK(direct.empty());
}

TEST_CASE("a pod with a resource-status cpuset gets it on containers and quota -1 everywhere",
          "[hooks]") {
  Ctx c;
  Pod pod = lsPod(KubeQos::kGuaranteed, KoordQos::kLSR, 4000);
  pod.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"3,0-1"})";
  const HookPod hp = hookPod(pod);
  HookIntent p = podIntent(hp, c.ctx, nullptr);
  CHECK(p.cfsQuota == -1);
  CHECK_FALSE(p.cpuset);
  HookIntent a = forContainer(hp, c.ctx, 0);
  CHECK(a.cpuset == "0-1,3");
  CHECK(a.cfsQuota == -1);
  CHECK_FALSE(a.cpuShares);

  c.ctx.disableUnsetCpuQuota = true;
  CHECK_FALSE(podIntent(hp, c.ctx, nullptr).cfsQuota);
  HookIntent kept = forContainer(hp, c.ctx, 0);
  CHECK(kept.cpuset == "0-1,3");
  CHECK_FALSE(kept.cfsQuota);

  c.ctx.cpusetAllocator = false;
  CHECK(forContainer(hp, c.ctx, 0).empty());
}

TEST_CASE("without share pools BestEffort containers get an empty cpuset, LS pods none",
          "[hooks]") {
  Ctx c;
  Pod be = lsPod(KubeQos::kBestEffort, KoordQos::kNone, 0);
  be.containers[0].limits = {};
  be.containers[0].requests = {};
  CHECK(forContainer(hookPod(be), c.ctx, 0).cpuset == "");
  CHECK_FALSE(podIntent(hookPod(be), c.ctx, nullptr).cpuset);
  const HookPod ls = hookPod(lsPod(KubeQos::kBurstable, KoordQos::kLS, 2000));
  CHECK(forContainer(ls, c.ctx, 0).empty());
  CHECK(podIntent(ls, c.ctx, nullptr).empty());
}

namespace {
// Two NUMA nodes: 0-3 and 8-9 shared on node 0, 4-5 on node 1; SYSTEM pods on 6-7.
std::shared_ptr<const CpuSetRule> poolRule(std::string policy) {
  CpuSetRule r;
  r.sharePools = {CpuSharePool{0, 0, {0, 1, 2, 3, 8, 9}}, CpuSharePool{0, 1, {4, 5}}};
  r.beSharePools = r.sharePools;
  r.kubeletPolicy = std::move(policy);
  r.systemQosCpus = {6, 7};
  return std::make_shared<const CpuSetRule>(std::move(r));
}
}  // namespace

TEST_CASE("with share pools each pod kind gets koordlet's cpuset rule", "[hooks]") {
  Ctx c;
  c.ctx.cpusetRule = poolRule("none");
  // QoS LS: every pool; at pod level nothing.
  const HookPod ls = hookPod(lsPod(KubeQos::kBurstable, KoordQos::kLS, 2000));
  CHECK(forContainer(ls, c.ctx, 0).cpuset == "0-5,8-9");
  CHECK_FALSE(podIntent(ls, c.ctx, nullptr).cpuset);
  // A scheduler cpuset wins over the pools.
  Pod pinned = lsPod(KubeQos::kGuaranteed, KoordQos::kLSR, 2000);
  pinned.annotations[kResourceStatusAnnotation] = R"({"cpuset":"10-11"})";
  CHECK(forContainer(hookPod(pinned), c.ctx, 0).cpuset == "10-11");
  // NUMA-aware: the pools of its nodes (cpu or batch-cpu on the node).
  Pod numa = lsPod(KubeQos::kBurstable, KoordQos::kLS, 2000);
  numa.annotations[kResourceStatusAnnotation] =
      R"({"numaNodeResources":[{"node":1,"resources":{"cpu":"2"}},{"node":0,"resources":{"memory":"1Gi"}}]})";
  CHECK(forContainer(hookPod(numa), c.ctx, 0).cpuset == "4-5");
  // SYSTEM: the system-qos cpuset.
  const HookPod sys = hookPod(lsPod(KubeQos::kBurstable, KoordQos::kSystem, 2000));
  CHECK(forContainer(sys, c.ctx, 0).cpuset == "6-7");
  // Kube BestEffort: cleared, whatever its label (LS too: a pool under a besteffort
  // dir CPU suppress narrowed would be refused on cgroup v1).
  for (KoordQos label : {KoordQos::kBE, KoordQos::kLS, KoordQos::kSystem}) {
    Pod be = lsPod(KubeQos::kBestEffort, label, 0);
    be.containers[0].limits = {};
    be.containers[0].requests = {};
    CHECK(forContainer(hookPod(be), c.ctx, 0).cpuset == "");
  }
  // A BE pod the kubelet runs as Burstable: CPU suppress's, nothing from the hook.
  CHECK_FALSE(
      forContainer(hookPod(lsPod(KubeQos::kBurstable, KoordQos::kBE, 2000)), c.ctx, 0).cpuset);
  // Unlabelled Guaranteed or Burstable pods: every pool under policy none...
  const HookPod plain = hookPod(lsPod(KubeQos::kGuaranteed, KoordQos::kNone, 2000));
  CHECK(forContainer(plain, c.ctx, 0).cpuset == "0-5,8-9");
  // ... and nothing under the static policy (the kubelet's cpuset stays).
  c.ctx.cpusetRule = poolRule("static");
  CHECK_FALSE(forContainer(plain, c.ctx, 0).cpuset);
  CHECK(forContainer(ls, c.ctx, 0).cpuset == "0-5,8-9");  // LS: pools either way
  // The gate off: nothing.
  c.ctx.cpusetAllocator = false;
  CHECK_FALSE(forContainer(ls, c.ctx, 0).cpuset);
}

TEST_CASE("a malformed numaNodeResources fails the CPUSetAllocator hook, naming it", "[hooks]") {
  Ctx c;
  c.ctx.cpusetRule = poolRule("none");
  Pod numa = lsPod(KubeQos::kBurstable, KoordQos::kLS, 2000);
  numa.annotations[kResourceStatusAnnotation] = R"({"numaNodeResources":[{"node":"one"}]})";
  std::vector<std::string> errors;
  CHECK_FALSE(forContainer(hookPod(numa), c.ctx, 0, &errors).cpuset);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("numaNodeResources[0].node") != std::string::npos);
}

TEST_CASE("containers join the resctrl group of their class when it is enabled and ready",
          "[hooks]") {
  Ctx c;
  c.ctx.resctrl = true;
  c.spec.qos.lsr.resctrl.enable = true;
  c.spec.qos.ls.resctrl.enable = true;
  c.spec.qos.be.resctrl.enable = true;
  const HookPod lsr = hookPod(lsPod(KubeQos::kGuaranteed, KoordQos::kLSR, 2000));
  const HookPod lse = hookPod(lsPod(KubeQos::kGuaranteed, KoordQos::kLSE, 2000));
  const HookPod unlabelled = hookPod(lsPod(KubeQos::kBurstable, KoordQos::kNone, 2000));
  const HookPod guaranteed = hookPod(lsPod(KubeQos::kGuaranteed, KoordQos::kNone, 2000));
  const HookPod be = hookPod(bePod({batchContainer("a", 1000, 1000, kGi)}));
  CHECK(forContainer(lsr, c.ctx, 0).rdtClass == "LSR");
  CHECK(forContainer(lse, c.ctx, 0).rdtClass == "LSR");
  CHECK(forContainer(unlabelled, c.ctx, 0).rdtClass == "LS");
  CHECK(forContainer(guaranteed, c.ctx, 0).rdtClass == "LSR");
  CHECK(forContainer(be, c.ctx, 0).rdtClass == "BE");
  CHECK_FALSE(podIntent(lsr, c.ctx, nullptr).rdtClass);  // container level only

  c.spec.qos.ls.resctrl.enable = false;  // class disabled
  CHECK_FALSE(forContainer(unlabelled, c.ctx, 0).rdtClass);
  Pod optOut = lsPod(KubeQos::kGuaranteed, KoordQos::kLSR, 2000);
  optOut.annotations["node.koordinator.sh/resctrl"] = R"({"llc":{}})";
  CHECK_FALSE(forContainer(hookPod(optOut), c.ctx, 0).rdtClass);
  c.ctx.resctrl = false;  // not ready (or gate off)
  CHECK_FALSE(forContainer(lsr, c.ctx, 0).rdtClass);
}

TEST_CASE("on cgroup v2 eligible containers get cpu.max.burst from the static burst; v1 none",
          "[hooks]") {
  Ctx c;
  c.ctx.version = CgroupVersion::kV2;
  c.spec.cpuBurst.policy = CpuBurstPolicy::kCpuBurstOnly;
  const HookPod ls = hookPod(lsPod(KubeQos::kBurstable, KoordQos::kLS, 2000));
  HookIntent a = forContainer(ls, c.ctx, 0);
  // koordlet's 1000 % of 2 cores, held to the 200,000 µs quota containerd writes
  // to cpu.max for that limit (a larger cpu.max.burst fails the container's start).
  CHECK(a.unified == std::map<std::string, std::string>{{"cpu.max.burst", "200000"}});
  CHECK(podIntent(ls, c.ctx, nullptr).unified.empty());

  Pod annotated = lsPod(KubeQos::kBurstable, KoordQos::kNone, 1500);
  annotated.annotations["koordinator.sh/cpuBurst"] = R"({"cpuBurstPercent":80})";
  CHECK(forContainer(hookPod(annotated), c.ctx, 0).unified.at("cpu.max.burst") == "120000");

  CHECK(forContainer(hookPod(lsPod(KubeQos::kGuaranteed, KoordQos::kLSR, 2000)), c.ctx, 0)
            .unified.empty());
  Pod pinned = lsPod(KubeQos::kBurstable, KoordQos::kLS, 2000);
  pinned.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"1"})";
  CHECK(forContainer(hookPod(pinned), c.ctx, 0).unified.empty());

  c.spec.cpuBurst.policy = CpuBurstPolicy::kNone;  // burst 0: nothing to set
  CHECK(forContainer(ls, c.ctx, 0).unified.empty());
  c.spec.cpuBurst.policy = CpuBurstPolicy::kAuto;
  c.ctx.version = CgroupVersion::kV1;
  CHECK(forContainer(ls, c.ctx, 0).empty());
}

TEST_CASE("on cgroup v2 memory QoS gives the container the strategy's min, low and high",
          "[hooks]") {
  Ctx c;
  c.ctx.version = CgroupVersion::kV2;
  c.ctx.memoryQos = true;
  c.ctx.nodeAllocatableMemory = 16 * kGi;
  c.spec.qos.ls.memory.enable = true;
  c.spec.qos.ls.memory.minLimitPercent = 50;
  c.spec.qos.ls.memory.lowLimitPercent = 80;
  c.spec.qos.ls.memory.throttlingPercent = 80;
  const Pod pod = lsPod(KubeQos::kBurstable, KoordQos::kLS, 2000);  // request 1Gi, limit 2Gi
  const HookPod hp = hookPod(pod);
  HookIntent a = forContainer(hp, c.ctx, 0);
  CHECK(a.unified == std::map<std::string, std::string>{{"memory.min", "536870912"},
                                                        {"memory.low", "858993459"},
                                                        {"memory.high", "1932734464"}});
  CHECK(podIntent(hp, c.ctx, nullptr).unified.empty());

  c.spec.qos.ls.memory.enable = false;  // the class's none values, as the strategy resets
  CHECK(forContainer(hp, c.ctx, 0).unified ==
        std::map<std::string, std::string>{
            {"memory.min", "0"}, {"memory.low", "0"}, {"memory.high", "max"}});

  HookPod noKubelet = hp;
  noKubelet.kubelet = nullptr;
  CHECK(forContainer(noKubelet, c.ctx, 0).unified.empty());
  // The reconciler's context asks for no unified values: neither memory QoS nor the
  // CPU burst hook runs, the cgroup fields are the same.
  c.spec.cpuBurst.policy = CpuBurstPolicy::kCpuBurstOnly;
  HookContext reconciler = c.ctx;
  reconciler.unified = false;
  const HookIntent full = forContainer(hp, c.ctx, 0);
  const HookIntent cgroupOnly = forContainer(hp, reconciler, 0);
  CHECK(full.unified.contains("cpu.max.burst"));
  CHECK(full.unified.contains("memory.min"));
  CHECK(cgroupOnly.unified.empty());
  CHECK(cgroupOnly.cpuShares == full.cpuShares);
  CHECK(cgroupOnly.cfsQuota == full.cfsQuota);
  CHECK(cgroupOnly.memoryLimit == full.memoryLimit);
  CHECK(cgroupOnly.cpuset == full.cpuset);
  c.ctx.version = CgroupVersion::kV1;
  CHECK(forContainer(hp, c.ctx, 0).unified.empty());
}

TEST_CASE("pods labelled skip-hookserver get nothing from any hook", "[hooks]") {
  Ctx c;
  c.ctx.resctrl = true;
  c.spec.qos.be.resctrl.enable = true;
  Pod pod = bePod({batchContainer("a", 1000, 2000, kGi)});
  pod.labels[kSkipHookServerLabel] = "true";
  const HookPod hp = hookPod(pod);
  CHECK(skipHooks(hp));
  CHECK(podIntent(hp, c.ctx, nullptr).empty());
  CHECK(forContainer(hp, c.ctx, 0).empty());
  pod.labels[kSkipHookServerLabel] = "false";
  CHECK_FALSE(skipHooks(hookPod(pod)));
}

TEST_CASE("hook names are koordlet's", "[hooks]") {
  std::vector<std::string> names;
  for (HookName h : kAllHooks) names.emplace_back(toString(h));
  CHECK(names == std::vector<std::string>{"BatchResource", "CPUSetAllocator", "Resctrl", "CPUBurst",
                                          "MemoryQoS", "CPUNormalization"});
}

// ------------------------------------------------- values that cannot be right

TEST_CASE("a negative batch memory limit is refused, never written as 0, and the rest is set",
          "[hooks]") {
  Ctx c;
  const HookPod hp = hookPod(bePod({batchContainer("a", 1000, 2000, -1)}));
  std::vector<std::string> errors;
  HookIntent a = forContainer(hp, c.ctx, 0, &errors);
  CHECK_FALSE(a.memoryLimit);
  CHECK(a.cpuShares == 1024);
  CHECK(a.cfsQuota == 200000);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] ==
        "pod default/be-pod: hook BatchResource: container a: kubernetes.io/batch-memory limit -1 "
        "is negative (memory limit not set)");

  errors.clear();
  HookIntent p = podIntent(hp, c.ctx, &errors);
  CHECK_FALSE(p.memoryLimit);
  CHECK(p.cpuShares == 1024);
  CHECK(p.cfsQuota == 200000);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::Contains("pod default/be-pod: hook BatchResource: container a: "
                                        "kubernetes.io/batch-memory limit -1 is negative"));
  CHECK_THAT(errors[0], Catch::Contains("pod memory limit not set"));
}

TEST_CASE("a negative batch cpu limit never becomes the minimum quota", "[hooks]") {
  Ctx c;
  const HookPod hp = hookPod(bePod({batchContainer("a", 1000, -5, kGi)}));
  std::vector<std::string> errors;
  HookIntent a = forContainer(hp, c.ctx, 0, &errors);
  CHECK_FALSE(a.cfsQuota);
  CHECK(a.memoryLimit == kGi);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::Contains("container a: kubernetes.io/batch-cpu limit -5 is "
                                        "negative (cfs quota not set)"));
  errors.clear();
  CHECK_FALSE(podIntent(hp, c.ctx, &errors).cfsQuota);
  CHECK(errors.size() == 1);
}

TEST_CASE("a negative batch cpu request is refused rather than given the minimum shares",
          "[hooks]") {
  Ctx c;
  const HookPod hp =
      hookPod(bePod({batchContainer("a", -1000, 2000, kGi), batchContainer("b", 500, 1000, kGi)}));
  std::vector<std::string> errors;
  HookIntent a = forContainer(hp, c.ctx, 0, &errors);
  CHECK_FALSE(a.cpuShares);
  CHECK(a.cfsQuota == 200000);
  HookIntent p = podIntent(hp, c.ctx, &errors);
  CHECK_FALSE(p.cpuShares);
  CHECK(p.cfsQuota == 300000);
  CHECK(p.memoryLimit == 2 * kGi);
  REQUIRE(errors.size() == 2);
  CHECK_THAT(errors[0], Catch::Contains("kubernetes.io/batch-cpu request -1000 is negative (cpu "
                                        "shares not set)"));
  CHECK_THAT(errors[1], Catch::Contains("(pod cpu shares not set)"));
}

TEST_CASE("INT64_MAX milli-cpu is refused for shares and quota instead of wrapping", "[hooks]") {
  Ctx c;
  const HookPod hp = hookPod(bePod({batchContainer("a", INT64_MAX, INT64_MAX, kGi)}));
  std::vector<std::string> errors;
  HookIntent a = forContainer(hp, c.ctx, 0, &errors);
  CHECK_FALSE(a.cpuShares);
  CHECK_FALSE(a.cfsQuota);
  CHECK(a.memoryLimit == kGi);  // the other field is still set
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0],
             Catch::Contains("container a: kubernetes.io/batch-cpu request 9223372036854775807 "
                             "milli-cores overflows cpu shares (cpu shares not set)"));
  CHECK_THAT(errors[0], Catch::Contains("container a: kubernetes.io/batch-cpu limit "
                                        "9223372036854775807 milli-cores is above the kernel's "
                                        "largest cfs quota (cfs quota not set)"));
  // The largest limit the kernel's quota can hold still goes through.
  const int64_t largest = ((int64_t{1} << 44) - 1) / 100;
  const HookPod ok = hookPod(bePod({batchContainer("a", 1000, largest, kGi)}));
  CHECK(forContainer(ok, c.ctx, 0).cfsQuota == largest * 100);
  const HookPod over = hookPod(bePod({batchContainer("a", 1000, largest + 1, kGi)}));
  CHECK_FALSE(forContainer(over, c.ctx, 0).cfsQuota);
}

TEST_CASE("batch sums past int64 refuse the pod's field, each container keeps its own", "[hooks]") {
  Ctx c;
  const int64_t half = INT64_MAX / 2 + 1;
  const HookPod hp = hookPod(
      bePod({batchContainer("a", half, half, half), batchContainer("b", half, half, half)}));
  std::vector<std::string> errors;
  HookIntent p = podIntent(hp, c.ctx, &errors);
  CHECK_FALSE(p.cpuShares);
  CHECK_FALSE(p.cfsQuota);
  CHECK_FALSE(p.memoryLimit);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::Contains("pod default/be-pod: hook BatchResource: "));
  CHECK_THAT(errors[0], Catch::Contains("kubernetes.io/batch-cpu requests overflow int64 when "
                                        "summed (pod cpu shares not set)"));
  CHECK_THAT(errors[0], Catch::Contains("kubernetes.io/batch-cpu limits overflow int64 when "
                                        "summed (pod cfs quota not set)"));
  CHECK_THAT(errors[0], Catch::Contains("kubernetes.io/batch-memory limits overflow int64 when "
                                        "summed (pod memory limit not set)"));
  // Each container alone fits its memory limit.
  errors.clear();
  CHECK(forContainer(hp, c.ctx, 1, &errors).memoryLimit == half);
}

TEST_CASE("hostile batch values from the extended-resource-spec annotation are refused too",
          "[hooks]") {
  Ctx c;
  Pod pod = bePod({batchContainer("main", std::nullopt, std::nullopt, std::nullopt)});
  pod.annotations[kExtendedResourceSpecAnnotation] =
      R"({"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"1000"},)"
      R"("limits":{"kubernetes.io/batch-cpu":"9223372036854775807",)"
      R"("kubernetes.io/batch-memory":"-2Gi"}}}})";
  const HookPod hp = hookPod(pod);
  REQUIRE(hp.extendedResourceError.empty());
  std::vector<std::string> errors;
  HookIntent a = forContainer(hp, c.ctx, 0, &errors);
  CHECK(a.cpuShares == 1024);
  CHECK_FALSE(a.cfsQuota);
  CHECK_FALSE(a.memoryLimit);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0],
             Catch::Contains("kubernetes.io/batch-memory limit -2147483648 is negative"));
}

TEST_CASE("a cpu limit past the kernel's largest quota refuses cpu.max.burst on cgroup v2",
          "[hooks]") {
  Ctx c;
  c.ctx.version = CgroupVersion::kV2;
  c.spec.cpuBurst.policy = CpuBurstPolicy::kCpuBurstOnly;
  for (int64_t milli : {INT64_MAX, int64_t{-2000}}) {
    const HookPod ls = hookPod(lsPod(KubeQos::kBurstable, KoordQos::kLS, milli));
    std::vector<std::string> errors;
    HookIntent a = forContainer(ls, c.ctx, 0, &errors);
    CHECK(a.unified.empty());
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0], Catch::Contains("pod default/ls-pod: hook CPUBurst: container app: cpu "
                                          "limit"));
    CHECK_THAT(errors[0], Catch::Contains("(cpu.max.burst not set)"));
  }
  // On v1 the hook sets nothing, so nothing is reported.
  c.ctx.version = CgroupVersion::kV1;
  std::vector<std::string> errors;
  static_cast<void>(forContainer(hookPod(lsPod(KubeQos::kBurstable, KoordQos::kLS, INT64_MAX)),
                                 c.ctx, 0, &errors));
  CHECK(errors.empty());
}

}  // namespace test_qos_runtime_hooks
