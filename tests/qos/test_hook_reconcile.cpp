// The runtime hooks reconciler (qos/hook_reconcile.h): the intended writes for a
// hand-built snapshot, then through the QoS manager on a temp cgroup v1 tree with
// every strategy in the same round, to show no knob has two owners.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/read_file.h"
#include "qos/cpu_burst.h"
#include "qos/cpu_suppress.h"
#include "qos/hook_reconcile.h"
#include "qos/memory_qos.h"
#include "qos/qos_manager.h"
#include "tests/support/temp_tree.h"

namespace test_qos_hook_reconcile {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kGi = 1024LL * 1024 * 1024;
constexpr int64_t kMi = 1024LL * 1024;
const CgroupLayout kLayout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);

Container ctr(std::string name, std::string id) {
  Container c;
  c.name = std::move(name);
  c.runtime = id.empty() ? "" : "containerd";
  c.id = std::move(id);
  return c;
}

Container batch(std::string name, std::string id, int64_t req, int64_t lim, int64_t mem) {
  Container c = ctr(std::move(name), std::move(id));
  c.requests.batchCpuMilli = req;
  c.limits.batchCpuMilli = lim;
  c.limits.batchMemoryBytes = mem;
  return c;
}

Pod pod(std::string uid, KubeQos kube, KoordQos koord, std::vector<Container> cs) {
  Pod p;
  p.uid = uid;
  p.ns = "default";
  p.name = "pod-" + uid;
  p.phase = "Running";
  p.kubeQos = kube;
  p.koordQos = koord;
  if (koord == KoordQos::kBE) p.labels["koordinator.sh/qosClass"] = "BE";
  if (koord == KoordQos::kLSR) p.labels["koordinator.sh/qosClass"] = "LSR";
  if (koord == KoordQos::kLS) p.labels["koordinator.sh/qosClass"] = "LS";
  p.containers = std::move(cs);
  return p;
}

Container limited(std::string name, std::string id, int64_t cpuMilli) {
  Container c = ctr(std::move(name), std::move(id));
  c.requests.cpuMilli = cpuMilli;
  c.limits.cpuMilli = cpuMilli;
  c.requests.memoryBytes = 256 * kMi;
  c.limits.memoryBytes = 256 * kMi;
  return c;
}

// As QosManager::snapshot builds it, without a metric cache.
QosSnapshot snapshotOf(const std::vector<Pod>& pods) {
  QosSnapshot snap;
  for (const Pod& p : pods) {
    PodView v;
    v.pod = &p;
    v.qos = p.qosWithDefault();
    v.dir = kLayout.podDir(p.kubeQos, p.uid);
    if (auto it = p.annotations.find("scheduling.koordinator.sh/resource-status");
        it != p.annotations.end()) {
      auto cpus = parseResourceStatusCpuset(it->second);
      if (cpus) v.pinnedCpus = *cpus;
    }
    for (const Container& c : p.containers) {
      ContainerView cv;
      cv.container = &c;
      if (!c.id.empty()) {
        cv.id = c.runtime + "://" + c.id;
        cv.dir = *kLayout.containerDir(v.dir, c.runtime, c.id);
      }
      v.containers.push_back(cv);
    }
    snap.pods.push_back(v);
  }
  return snap;
}

std::vector<std::string> describe(const std::vector<CgroupWrite>& writes) {
  std::vector<std::string> out;
  for (const CgroupWrite& w : writes) {
    out.push_back(w.dir + " " + knobSpec(w.knob).name + "=" +
                  renderKnob(w.knob, CgroupVersion::kV1, w.value) + " [" + w.owner + "]");
  }
  return out;
}

}  // namespace

TEST_CASE("the reconciler writes each active pod's and created container's hook values",
          "[hook-reconcile]") {
  std::vector<Pod> pods;
  pods.push_back(pod("be", KubeQos::kBestEffort, KoordQos::kBE,
                     {batch("a", "ida", 1000, 2000, 2 * kGi), batch("b", "idb", 500, 1000, kGi),
                      batch("c", "", 100, 100, 100 * kMi)}));
  pods.push_back(pod("lsr", KubeQos::kGuaranteed, KoordQos::kLSR, {limited("app", "idl", 2000)}));
  pods.back().annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"2-3"})";
  pods.push_back(pod("ls", KubeQos::kBurstable, KoordQos::kLS, {limited("app", "ids", 1000)}));
  pods.push_back(
      pod("done", KubeQos::kBestEffort, KoordQos::kBE, {batch("a", "idd", 1000, 2000, kGi)}));
  pods.back().phase = "Succeeded";
  pods.push_back(
      pod("skip", KubeQos::kBestEffort, KoordQos::kBE, {batch("a", "idk", 1000, 2000, kGi)}));
  pods.back().labels["runtimeproxy.koordinator.sh/skip-hookserver"] = "true";

  const NodeSloSpec spec = defaultNodeSlo();
  HookContext ctx;
  ctx.spec = &spec;
  const HookReconcileResult r = reconcileHooks(snapshotOf(pods), ctx);
  CHECK(r.errors.empty());
  CHECK(describe(r.writes) ==
        std::vector<std::string>{
            // Σ over a, b and c (c has no cgroup yet but is part of the pod).
            "kubepods/besteffort/podbe cpu.shares=1638 [runtime-hooks]",
            "kubepods/besteffort/podbe cpu.cfs_quota_us=310000 [runtime-hooks]",
            "kubepods/besteffort/podbe memory.limit_in_bytes=3326083072 [runtime-hooks]",
            "kubepods/besteffort/podbe/ida cpu.shares=1024 [runtime-hooks]",
            "kubepods/besteffort/podbe/ida cpu.cfs_quota_us=200000 [runtime-hooks]",
            "kubepods/besteffort/podbe/ida memory.limit_in_bytes=2147483648 [runtime-hooks]",
            "kubepods/besteffort/podbe/idb cpu.shares=512 [runtime-hooks]",
            "kubepods/besteffort/podbe/idb cpu.cfs_quota_us=100000 [runtime-hooks]",
            "kubepods/besteffort/podbe/idb memory.limit_in_bytes=1073741824 [runtime-hooks]",
            "kubepods/podlsr cpu.cfs_quota_us=-1 [runtime-hooks]",
            "kubepods/podlsr/idl cpu.cfs_quota_us=-1 [runtime-hooks]",
            "kubepods/podlsr/idl cpuset.cpus=2-3 [runtime-hooks]",
        });
}

TEST_CASE("a bad annotation costs its pod only the BatchResource values, reported once",
          "[hook-reconcile]") {
  std::vector<Pod> pods;
  pods.push_back(
      pod("bad", KubeQos::kBestEffort, KoordQos::kBE, {ctr("a", "ida"), ctr("b", "idb")}));
  pods.back().annotations["node.koordinator.sh/extended-resource-spec"] = "{nope";
  pods.push_back(
      pod("be", KubeQos::kBestEffort, KoordQos::kBE, {batch("a", "idc", 1000, 1000, kGi)}));
  const NodeSloSpec spec = defaultNodeSlo();
  HookContext ctx;
  ctx.spec = &spec;
  const HookReconcileResult r = reconcileHooks(snapshotOf(pods), ctx);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0] ==
        "pod default/pod-bad: hook BatchResource: annotation "
        "node.koordinator.sh/extended-resource-spec: not valid JSON");
  CHECK(describe(r.writes).size() == 6);  // the good pod's pod and container triples
  // Timed as failed for every field the annotation feeds, for the bad pod and each
  // of its containers; the good pod's as succeeded.
  int failed = 0, succeeded = 0;
  for (const HookReconcileTiming& t : r.timings) (t.ok ? succeeded : failed)++;
  CHECK(failed == 9);
  CHECK(succeeded == 6);
}

TEST_CASE("the gates turn the reconciler's hooks off", "[hook-reconcile]") {
  std::vector<Pod> pods;
  pods.push_back(
      pod("be", KubeQos::kBestEffort, KoordQos::kBE, {batch("a", "ida", 1000, 2000, kGi)}));
  pods.push_back(pod("lsr", KubeQos::kGuaranteed, KoordQos::kLSR, {limited("app", "idl", 2000)}));
  pods.back().annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"2-3"})";
  const NodeSloSpec spec = defaultNodeSlo();
  HookContext ctx;
  ctx.spec = &spec;
  ctx.batchResource = false;
  ctx.cpusetAllocator = false;
  CHECK(reconcileHooks(snapshotOf(pods), ctx).writes.empty());
}

namespace {

std::string fileOf(const test::TempTree& tree, const std::string& rel) {
  auto text = readFile(tree.path(rel));
  REQUIRE(text.ok());
  std::string s = *text;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

CpuTopology fourCpus() {
  CpuTopology t;
  for (int i = 0; i < 4; ++i) t.cpus.push_back(CpuInfo{i, i, 0, 0});
  return t;
}

// The four strategies' results in one round, as the checks below read them.
struct FourResults {
  explicit FourResults(const QosRound& round)
      : suppress(round.result<SuppressResult>(CpuSuppressStrategy::kName)),
        burst(round.result<BurstResult>(CpuBurstStrategy::kName)),
        memory(round.result<MemoryQosResult>(MemoryQosStrategy::kName)),
        hooks(round.result<HookReconcileResult>(HookReconcileStrategy::kName)),
        writes(round.writes) {
    if (auto* r = round.report(HookReconcileStrategy::kName)) hooksSeconds = r->seconds;
  }
  const SuppressResult* suppress;
  const BurstResult* burst;
  const MemoryQosResult* memory;
  const HookReconcileResult* hooks;
  std::optional<double> hooksSeconds;
  ExecutorStats writes;
};

}  // namespace

TEST_CASE("with suppress, burst, memory QoS and the hooks in one round no knob has two owners",
          "[hook-reconcile]") {
  test::TempTree tree;
  ManualClock clock;
  FailureLog failures{clock, std::chrono::minutes(10)};
  std::vector<Pod> pods;
  pods.push_back(
      pod("be", KubeQos::kBestEffort, KoordQos::kBE, {batch("a", "ida", 1000, 2000, 2 * kGi)}));
  pods.push_back(pod("pin", KubeQos::kBurstable, KoordQos::kLS, {limited("app", "idp", 2000)}));
  pods.back().annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"2-3"})";
  pods.push_back(pod("ls", KubeQos::kBurstable, KoordQos::kNone, {limited("app", "ids", 2000)}));
  std::vector<std::string> dirs = {"kubepods", kLayout.qosDir(KubeQos::kBurstable),
                                   kLayout.qosDir(KubeQos::kBestEffort)};
  for (const Pod& p : pods) {
    const std::string podDir = kLayout.podDir(p.kubeQos, p.uid);
    dirs.push_back(podDir);
    dirs.push_back(*kLayout.containerDir(podDir, "containerd", p.containers[0].id));
  }
  for (const std::string& d : dirs) {
    tree.write("cpu/" + d + "/cpu.shares", "1024\n");
    tree.write("cpu/" + d + "/cpu.cfs_quota_us", "200000\n");
    tree.write("cpu/" + d + "/cpu.cfs_period_us", "100000\n");
    tree.write("cpu/" + d + "/cpu.cfs_burst_us", "0\n");
    tree.write("cpuset/" + d + "/cpuset.cpus", "0-3\n");
    tree.write("memory/" + d + "/memory.limit_in_bytes", "9223372036854771712\n");
    tree.write("memory/" + d + "/memory.min", "0\n");
    tree.write("memory/" + d + "/memory.low", "0\n");
    tree.write("memory/" + d + "/memory.high", "max\n");
  }
  ExecutorConfig ec;
  ec.cgroupRoot = tree.path();
  Executor exec(ec, kLayout, KnobSupport::all(), clock, failures);
  QosManagerConfig config;
  config.nodeAllocatableMemory = 8 * kGi;
  QosManager manager(config, kLayout, fourCpus(), exec, clock);
  HookGates hooks;
  hooks.memoryQos = true;
  manager.add(std::make_unique<CpuSuppressStrategy>(1s, true));
  manager.add(std::make_unique<CpuBurstStrategy>(1s, true, 1));
  manager.add(std::make_unique<MemoryQosStrategy>(1s, true, kLayout, false));
  manager.add(std::make_unique<HookReconcileStrategy>(1s, hooks));
  MetricCache cache({}, clock.now());
  cache.append({MetricKind::kNodeCpuCores, "", ""}, clock.now(), 1.0);

  NodeSloSpec spec = defaultNodeSlo();
  spec.threshold.enable = true;
  spec.threshold.cpuSuppressPolicy = CpuSuppressPolicy::kCfsQuota;
  spec.cpuBurst.policy = CpuBurstPolicy::kAuto;
  spec.qos.ls.memory.enable = true;
  spec.qos.ls.memory.minLimitPercent = 100;
  spec.qos.be.memory.enable = true;
  spec.qos.be.memory.minLimitPercent = 100;

  for (int round = 0; round < 2; ++round) {
    const QosRound ran = manager.runDue(pods, cache, spec);
    const FourResults r(ran);
    REQUIRE(r.suppress);
    REQUIRE(r.burst);
    REQUIRE(r.memory);
    REQUIRE(r.hooks);
    REQUIRE(r.hooksSeconds);
    CHECK(r.hooks->errors.empty());
    CHECK(r.writes.refused == 0);
    clock.advance(1s);
    cache.append({MetricKind::kNodeCpuCores, "", ""}, clock.now(), 1.0);
  }
  CHECK(exec.stats().refused == 0);

  const std::string bePod = kLayout.podDir(KubeQos::kBestEffort, "be");
  CHECK(fileOf(tree, "cpu/" + bePod + "/cpu.shares") == "1024");
  CHECK(fileOf(tree, "cpu/" + bePod + "/cpu.cfs_quota_us") == "-1");  // suppress uses cfsQuota
  CHECK(fileOf(tree, "memory/" + bePod + "/ida/memory.limit_in_bytes") == "2147483648");
  CHECK(fileOf(tree, "memory/" + bePod + "/ida/memory.min") == "0");  // no batch-memory request
  const std::string pinPod = kLayout.podDir(KubeQos::kBurstable, "pin");
  CHECK(fileOf(tree, "cpuset/" + pinPod + "/idp/cpuset.cpus") == "2-3");
  CHECK(fileOf(tree, "cpu/" + pinPod + "/idp/cpu.cfs_quota_us") == "-1");
  CHECK(fileOf(tree, "cpu/" + pinPod + "/cpu.cfs_quota_us") == "-1");
  CHECK(fileOf(tree, "cpu/" + pinPod + "/idp/cpu.cfs_burst_us") == "0");  // not burst's
  CHECK(fileOf(tree, "memory/" + pinPod + "/idp/memory.min") == "268435456");
  const std::string lsPod = kLayout.podDir(KubeQos::kBurstable, "ls");
  CHECK(fileOf(tree, "cpu/" + lsPod + "/ids/cpu.cfs_burst_us") == "200000");  // = its quota
  CHECK(fileOf(tree, "cpu/" + lsPod + "/ids/cpu.shares") == "1024");          // untouched
}

TEST_CASE("the manager's hook context carries its gates, version and suppress policy",
          "[hook-reconcile]") {
  test::TempTree tree;
  ManualClock clock;
  FailureLog failures{clock, std::chrono::minutes(10)};
  ExecutorConfig ec;
  ec.cgroupRoot = tree.path();
  Executor exec(ec, kLayout, KnobSupport::all(), clock, failures);
  QosManagerConfig config;
  config.nodeAllocatableMemory = 4 * kGi;
  HookGates gates;
  gates.memoryQos = true;
  gates.disableUnsetCpuQuota = true;
  gates.batchResource = false;
  QosManager manager(config, kLayout, fourCpus(), exec, clock);
  NodeSloSpec spec = defaultNodeSlo();
  HookContext ctx = hookContext(gates, spec, manager.node());
  CHECK(ctx.spec == &spec);
  CHECK_FALSE(ctx.batchResource);
  CHECK(ctx.cpusetAllocator);
  CHECK_FALSE(ctx.resctrl);
  CHECK(ctx.memoryQos);
  CHECK(ctx.disableUnsetCpuQuota);
  CHECK_FALSE(ctx.suppressCfsQuota);
  CHECK(ctx.version == CgroupVersion::kV1);
  CHECK(ctx.nodeAllocatableMemory == 4 * kGi);
  manager.setResctrlReady(true);
  manager.setMemoryQosSupported(false);
  spec.threshold.enable = true;
  spec.threshold.cpuSuppressPolicy = CpuSuppressPolicy::kCfsQuota;
  ctx = hookContext(gates, spec, manager.node());
  CHECK(ctx.resctrl);
  CHECK_FALSE(ctx.memoryQos);
  CHECK(ctx.suppressCfsQuota);
}

TEST_CASE("a normalization ratio divides BE quotas, and LS quotas under the gate, rounded up",
          "[hook-reconcile]") {
  std::vector<Pod> pods;
  pods.push_back(pod("be", KubeQos::kBestEffort, KoordQos::kBE,
                     {batch("a", "ida", 1000, 2000, 2 * kGi), batch("b", "idb", 500, 1000, kGi)}));
  pods.push_back(pod("ls", KubeQos::kBurstable, KoordQos::kLS,
                     {limited("app", "ids", 1000), limited("side", "idt", 333)}));
  pods.push_back(pod("plain", KubeQos::kBurstable, KoordQos::kNone, {limited("app", "idp", 500)}));
  pods.push_back(pod("lsr", KubeQos::kGuaranteed, KoordQos::kLSR, {limited("app", "idl", 2000)}));
  Pod pinned = pod("pin", KubeQos::kGuaranteed, KoordQos::kNone, {limited("app", "idq", 2000)});
  pinned.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"2-3"})";
  pods.push_back(pinned);

  const NodeSloSpec spec = defaultNodeSlo();
  HookContext ctx;
  ctx.spec = &spec;
  ctx.cpuNormalizationRatio = 1.3;
  auto quotas = [&] {
    std::vector<std::string> out;
    for (const std::string& w : describe(reconcileHooks(snapshotOf(pods), ctx).writes)) {
      if (w.find("cfs_quota") != std::string::npos) out.push_back(w);
    }
    return out;
  };
  // Gate off: only the BE batch quotas (BatchResource), ceil(q / 1.3), and the pinned
  // pod's -1.
  CHECK(quotas() == std::vector<std::string>{
                        "kubepods/besteffort/podbe cpu.cfs_quota_us=230770 [runtime-hooks]",
                        "kubepods/besteffort/podbe/ida cpu.cfs_quota_us=153847 [runtime-hooks]",
                        "kubepods/besteffort/podbe/idb cpu.cfs_quota_us=76924 [runtime-hooks]",
                        "kubepods/podpin cpu.cfs_quota_us=-1 [runtime-hooks]",
                        "kubepods/podpin/idq cpu.cfs_quota_us=-1 [runtime-hooks]",
                    });
  // Gate on: LS-labelled and unlabelled pods too, pod level from the summed limits;
  // not the LSR pod, nor the pinned one.
  ctx.cpuNormalization = true;
  CHECK(quotas() == std::vector<std::string>{
                        "kubepods/besteffort/podbe cpu.cfs_quota_us=230770 [runtime-hooks]",
                        "kubepods/besteffort/podbe/ida cpu.cfs_quota_us=153847 [runtime-hooks]",
                        "kubepods/besteffort/podbe/idb cpu.cfs_quota_us=76924 [runtime-hooks]",
                        "kubepods/burstable/podls cpu.cfs_quota_us=102539 [runtime-hooks]",
                        "kubepods/burstable/podls/ids cpu.cfs_quota_us=76924 [runtime-hooks]",
                        "kubepods/burstable/podls/idt cpu.cfs_quota_us=25616 [runtime-hooks]",
                        "kubepods/burstable/podplain cpu.cfs_quota_us=38462 [runtime-hooks]",
                        "kubepods/burstable/podplain/idp cpu.cfs_quota_us=38462 [runtime-hooks]",
                        "kubepods/podpin cpu.cfs_quota_us=-1 [runtime-hooks]",
                        "kubepods/podpin/idq cpu.cfs_quota_us=-1 [runtime-hooks]",
                    });
  // A ratio of 1 or less writes the quota unscaled.
  ctx.cpuNormalizationRatio = 0.8;
  CHECK(quotas()[3] == "kubepods/burstable/podls cpu.cfs_quota_us=133300 [runtime-hooks]");
  // So does no ratio at all (the annotation removed): the divided quota is undone.
  ctx.cpuNormalizationRatio = -1;
  CHECK(quotas()[3] == "kubepods/burstable/podls cpu.cfs_quota_us=133300 [runtime-hooks]");
  CHECK(normalizeQuota(-1, 2.0) == -1);
  CHECK(normalizeQuota(1500, 5.0) == 1000);  // never under the kernel's minimum
}

TEST_CASE(
    "while CPU burst runs, the reconciler leaves LS quotas to it and burst steps from the "
    "normalized base",
    "[hook-reconcile]") {
  std::vector<Pod> pods;
  pods.push_back(pod("ls", KubeQos::kBurstable, KoordQos::kLS, {limited("app", "ids", 1000)}));
  NodeFacts node;
  node.cpuNormalizationRatio = 1.25;
  node.cpuNormalization = true;
  const NodeSloSpec spec = defaultNodeSlo();
  HookGates gates;
  gates.cpuBurst = true;
  HookReconcileStrategy strategy(std::chrono::seconds(10), gates);
  MapValues current;
  const QosSnapshot snap = snapshotOf(pods);
  MetricCache cache(MetricCache::Config{}, Clock::Monotonic{});
  StrategyContext sc{snap, spec, current, node, cache};
  for (const std::string& w : describe(strategy.run(sc).writes)) {
    CHECK(w.find("cfs_quota") == std::string::npos);
  }
  // CPU burst (policy none: reset to base) writes the normalized base, 80000.
  current.set("kubepods/burstable/podls", Knob::kCpuQuota, KnobValue::of(100000));
  current.set("kubepods/burstable/podls/ids", Knob::kCpuQuota, KnobValue::of(100000));
  CpuBurst burst(1);
  const BurstResult r = burst.run(snap, spec.cpuBurst, true, current, 1.25);
  CHECK(describe(r.writes) == std::vector<std::string>{
                                  "kubepods/burstable/podls/ids cpu.cfs_burst_us=0 [cpu-burst]",
                                  "kubepods/burstable/podls cpu.cfs_burst_us=0 [cpu-burst]",
                                  "kubepods/burstable/podls/ids cpu.cfs_quota_us=80000 [cpu-burst]",
                                  "kubepods/burstable/podls cpu.cfs_quota_us=80000 [cpu-burst]",
                              });
}

TEST_CASE("a static burst is held to the normalized quota the kernel checks it against",
          "[hook-reconcile]") {
  ResourceList limits;
  limits.cpuMilli = 1000;  // quota 100000 us, 80000 normalized by 1.25
  CpuBurstConfig config;
  config.policy = CpuBurstPolicy::kCpuBurstOnly;  // 1000 %: far above either quota
  CHECK(staticBurstUs(limits, config) == 100000);
  CHECK(staticBurstUs(limits, config, 1.25) == 80000);
  CHECK(staticBurstUs(limits, config, 0.8) == 100000);  // a ratio <= 1 scales nothing
}

}  // namespace test_qos_hook_reconcile

namespace test_qos_hook_reconcile {

TEST_CASE(
    "a BE pod's sidecar and init container count in its pod values as the kubelet "
    "counts them, and the sidecar gets its own values like an app container",
    "[hook-reconcile]") {
  // app: batch-cpu 1000/1000, memory 64Mi; sidecar mesh (restartPolicy Always):
  // 500/500, 32Mi; init setup after it in the spec (so it runs beside mesh):
  // 3000/3000, 16Mi.
  //   requests: running 1000 + 500 = 1500; setup beside mesh 3000 + 500 = 3500 -> 3500
  //             milli -> shares 3500 * 1024 / 1000 = 3584
  //   cpu limits: the same arithmetic -> 3500 milli -> quota 350000
  //   memory limits: running 64 + 32 = 96Mi; setup beside mesh 16 + 32 = 48Mi -> 96Mi
  Container mesh = batch("mesh", "idm", 500, 500, 32 * kMi);
  mesh.init = true;
  mesh.restartable = true;
  Container setup = batch("setup", "ids", 3000, 3000, 16 * kMi);
  setup.init = true;
  std::vector<Pod> pods;
  pods.push_back(
      pod("be", KubeQos::kBestEffort, KoordQos::kBE, {batch("app", "ida", 1000, 1000, 64 * kMi)}));
  pods.back().initContainers = {mesh, setup};

  test::TempTree tree;
  ManualClock clock;
  FailureLog failures{clock, std::chrono::minutes(10)};
  ExecutorConfig ec;
  ec.cgroupRoot = tree.path();
  Executor exec(ec, kLayout, KnobSupport::all(), clock, failures);
  QosManager manager(QosManagerConfig{}, kLayout, fourCpus(), exec, clock);
  MetricCache cache({}, clock.now());
  // The manager's own snapshot: the sidecar is a container of the pod; the finished
  // init container is not.
  const QosSnapshot snap = manager.snapshot(pods, cache);
  REQUIRE(snap.pods.size() == 1);
  std::vector<std::string> names;
  for (const ContainerView& cv : snap.pods[0].containers) names.push_back(cv.container->name);
  CHECK(names == std::vector<std::string>{"mesh", "app"});

  const NodeSloSpec spec = defaultNodeSlo();
  HookContext ctx;
  ctx.spec = &spec;
  const HookReconcileResult r = reconcileHooks(snap, ctx);
  CHECK(r.errors.empty());
  CHECK(describe(r.writes) ==
        std::vector<std::string>{
            "kubepods/besteffort/podbe cpu.shares=3584 [runtime-hooks]",
            "kubepods/besteffort/podbe cpu.cfs_quota_us=350000 [runtime-hooks]",
            "kubepods/besteffort/podbe memory.limit_in_bytes=100663296 [runtime-hooks]",
            "kubepods/besteffort/podbe/idm cpu.shares=512 [runtime-hooks]",
            "kubepods/besteffort/podbe/idm cpu.cfs_quota_us=50000 [runtime-hooks]",
            "kubepods/besteffort/podbe/idm memory.limit_in_bytes=33554432 [runtime-hooks]",
            "kubepods/besteffort/podbe/ida cpu.shares=1024 [runtime-hooks]",
            "kubepods/besteffort/podbe/ida cpu.cfs_quota_us=100000 [runtime-hooks]",
            "kubepods/besteffort/podbe/ida memory.limit_in_bytes=67108864 [runtime-hooks]",
        });

  // Timed per pod and container and per file decided, as koordlet's reconciler is.
  std::vector<std::string> timed;
  for (const HookReconcileTiming& t : r.timings) {
    CHECK(t.ok);
    CHECK(t.millis >= 0);
    timed.push_back(std::string(t.level) + " " + t.resourceType);
  }
  CHECK(timed == std::vector<std::string>{
                     "pod cpu.shares", "pod cpu.cfs_quota_us", "pod memory.limit_in_bytes",
                     "container cpu.shares", "container cpu.cfs_quota_us",
                     "container memory.limit_in_bytes", "container cpu.shares",
                     "container cpu.cfs_quota_us", "container memory.limit_in_bytes"});

  // The init container's own values at its creation (the hooks' container path).
  auto hp = hookPodFromKubelet(pods[0]);
  REQUIRE(hp);
  const HookContainer* init = hp->container("setup");
  REQUIRE(init != nullptr);
  CHECK(init->kind == ContainerKind::kInit);
  std::vector<std::string> errors;
  const HookIntent in = containerIntent(*hp, *init, ctx, &errors);
  CHECK(errors.empty());
  CHECK(in.cpuShares == 3072);
  CHECK(in.cfsQuota == 300000);
  CHECK(in.memoryLimit == 16 * kMi);

  // A sidecar without a batch-cpu limit leaves the pod's quota unlimited, as the
  // kubelet leaves a pod without a limit when one container has none.
  pods[0].initContainers[0].limits.batchCpuMilli.reset();
  auto open = hookPodFromKubelet(pods[0]);
  REQUIRE(open);
  const HookIntent podLevel = podIntent(*open, ctx, &errors);
  CHECK(podLevel.cfsQuota == -1);
  CHECK(podLevel.cpuShares == 3584);
}

}  // namespace test_qos_hook_reconcile

namespace test_qos_hook_reconcile {

TEST_CASE(
    "a sandbox's writes are the pod's own values, less an LS pod's normalized quota, "
    "never a cpuset, each with its reason",
    "[hook-reconcile]") {
  HookIntent intent;
  intent.cpuShares = 1024;
  intent.cfsQuota = 150000;
  intent.memoryLimit = 64 * kMi;
  intent.cpuset = "0-3";
  HookPod be;
  be.rawQos = KoordQos::kBE;
  auto w = sandboxWrites(be, intent, "kubepods/besteffort/podu");
  CHECK(describe(w) ==
        std::vector<std::string>{
            "kubepods/besteffort/podu cpu.shares=1024 [runtime-hooks]",
            "kubepods/besteffort/podu cpu.cfs_quota_us=150000 [runtime-hooks]",
            "kubepods/besteffort/podu memory.limit_in_bytes=67108864 [runtime-hooks]"});
  for (const CgroupWrite& x : w) {
    REQUIRE(x.why != nullptr);
    CHECK(x.why->inputs.at(0).value == "PreRunPodSandbox");
  }
  // An LS pod's normalized quota is left to CPU burst or the reconciler.
  HookPod ls;
  ls.rawQos = KoordQos::kLS;
  HookIntent normalized;
  normalized.cfsQuota = 50000;
  CHECK(sandboxWrites(ls, normalized, "kubepods/burstable/podl").empty());
  // A pinned pod's unlimited quota is written.
  HookIntent pinned;
  pinned.cfsQuota = -1;
  CHECK(describe(sandboxWrites(ls, pinned, "kubepods/podp")) ==
        std::vector<std::string>{"kubepods/podp cpu.cfs_quota_us=-1 [runtime-hooks]"});
}

}  // namespace test_qos_hook_reconcile
