// The QoS manager end to end on a temp cgroup v1 tree: pods and cache samples in,
// the strategies' writes through the real executor out, read back from the files.
// The strategies' own rules are tested without files (test_cpu_suppress.cpp,
// test_cpu_burst.cpp); here the plumbing is: which pods and dirs reach a
// strategy, which samples count as fresh, when a strategy is due, and that the
// writes land where the layout says.
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

namespace test_qos_qos_manager {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

const CgroupLayout kLayout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);

CpuTopology fourCpus() {
  CpuTopology t;
  for (int i = 0; i < 4; ++i) t.cpus.push_back(CpuInfo{i, i, 0, 0});
  return t;
}

Pod makePod(std::string uid, KubeQos kube, KoordQos koord, std::string cid,
            std::optional<int64_t> cpuLimitMilli) {
  Pod p;
  p.uid = uid;
  p.ns = "default";
  p.name = "pod-" + uid;
  p.phase = "Running";
  p.kubeQos = kube;
  p.koordQos = koord;
  Container c;
  c.name = "main";
  c.runtime = "containerd";
  c.id = std::move(cid);
  c.limits.cpuMilli = cpuLimitMilli;
  c.requests.cpuMilli = cpuLimitMilli;
  p.containers.push_back(c);
  return p;
}

std::string fileOf(const test::TempTree& tree, const std::string& subsystem, const std::string& dir,
                   const std::string& file) {
  auto text = readFile(tree.path(subsystem + "/" + dir + "/" + file));
  REQUIRE(text.ok());
  std::string s = *text;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

struct Fixture {
  test::TempTree tree;
  ManualClock clock;
  FailureLog failures{clock, std::chrono::minutes(10)};
  std::vector<Pod> pods;
  std::string beDir, bePodDir, beCtrDir, lsPodDir, lsCtrDir;

  Fixture() {
    pods.push_back(makePod("be-1", KubeQos::kBestEffort, KoordQos::kBE, "bbb", std::nullopt));
    pods.push_back(makePod("ls-1", KubeQos::kBurstable, KoordQos::kLS, "lll", 2000));
    beDir = kLayout.qosDir(KubeQos::kBestEffort);
    bePodDir = kLayout.podDir(KubeQos::kBestEffort, "be-1");
    beCtrDir = *kLayout.containerDir(bePodDir, "containerd", "bbb");
    lsPodDir = kLayout.podDir(KubeQos::kBurstable, "ls-1");
    lsCtrDir = *kLayout.containerDir(lsPodDir, "containerd", "lll");
    for (const auto& dir : {beDir, bePodDir, beCtrDir, lsPodDir, lsCtrDir}) {
      tree.write("cpu/" + dir + "/cpu.cfs_quota_us", "-1\n");
      tree.write("cpu/" + dir + "/cpu.cfs_period_us", "100000\n");
      tree.write("cpu/" + dir + "/cpu.cfs_burst_us", "0\n");
      tree.write("cpuset/" + dir + "/cpuset.cpus", "0-3\n");
    }
    tree.write("cpu/" + lsPodDir + "/cpu.cfs_quota_us", "200000\n");
    tree.write("cpu/" + lsCtrDir + "/cpu.cfs_quota_us", "200000\n");
    tree.write("cpu/kubepods/cpu.shares", "1024\n");
    tree.write("cpuset/kubepods/cpuset.cpus", "0-3\n");
  }

  ExecutorConfig execConfig() const {
    ExecutorConfig c;
    c.cgroupRoot = tree.path();
    return c;
  }
};

// Node 2.0 cores, LS pod 1.0, BE pod 0.5, all sampled now.
void fillCache(MetricCache& cache, Clock::Monotonic at) {
  cache.append({MetricKind::kNodeCpuCores, "", ""}, at, 2.0);
  cache.append({MetricKind::kPodCpuCores, "ls-1", ""}, at, 1.0);
  cache.append({MetricKind::kPodCpuCores, "be-1", ""}, at, 0.5);
  cache.append({MetricKind::kContainerCpuCores, "containerd://lll", ""}, at, 1.0);
  cache.append({MetricKind::kContainerCpuCores, "containerd://bbb", ""}, at, 0.5);
}

// What these tests vary: the manager's config and the strategies' schedules and
// gates. makeManager registers the four strategies as the agent does.
struct Settings {
  std::string cgroupRoot;
  std::chrono::nanoseconds suppressInterval = 1s;
  std::chrono::nanoseconds burstInterval = 1s;
  std::chrono::nanoseconds memoryInterval = 1s;
  bool suppressGate = true;
  bool burstGate = true;
  bool memoryGate = false;
  int64_t nodeAllocatableMemory = 0;
};

QosManager makeManager(const Settings& s, Executor& exec, const Clock& clock) {
  QosManagerConfig config;
  config.cgroupRoot = s.cgroupRoot;
  config.nodeAllocatableMemory = s.nodeAllocatableMemory;
  QosManager manager(config, kLayout, fourCpus(), exec, clock);
  manager.add(std::make_unique<CpuSuppressStrategy>(s.suppressInterval, s.suppressGate));
  manager.add(std::make_unique<CpuBurstStrategy>(s.burstInterval, s.burstGate, 1));
  manager.add(std::make_unique<MemoryQosStrategy>(s.memoryInterval, s.memoryGate, kLayout, false));
  HookGates hooks;
  hooks.cpuBurst = s.burstGate && s.burstInterval > 0s;
  hooks.cpuSuppress = s.suppressGate && s.suppressInterval > 0s;
  hooks.memoryQos = s.memoryGate && s.memoryInterval > 0s;
  manager.add(std::make_unique<HookReconcileStrategy>(1s, hooks));
  return manager;
}

// A round as these checks read it: each strategy's own result, when it ran.
struct Round {
  // Implicit, so `Round round = manager.runDue(...)` reads as before.
  Round(const QosRound& r) : writes(r.writes) {
    if (auto* v = r.result<SuppressResult>(CpuSuppressStrategy::kName)) suppress = *v;
    if (auto* v = r.result<BurstResult>(CpuBurstStrategy::kName)) burst = *v;
    if (auto* v = r.result<MemoryQosResult>(MemoryQosStrategy::kName)) memory = *v;
    if (auto* v = r.report(MemoryQosStrategy::kName)) {
      memorySeconds = v->seconds;
      const ExecutorStats& w = v->writes;
      memoryWrites = w.written + w.unchanged + w.unsupported + w.vanished + w.invalid + w.denied +
                     w.failed + w.refused;
    }
  }
  std::optional<SuppressResult> suppress;
  std::optional<BurstResult> burst;
  std::optional<MemoryQosResult> memory;
  std::optional<double> memorySeconds;
  uint64_t memoryWrites = 0;  // handed to the executor, whatever became of them
  ExecutorStats writes;
};

NodeSloSpec suppressByQuota() {
  NodeSloSpec spec = defaultNodeSlo();
  spec.threshold.enable = true;
  spec.threshold.cpuSuppressPolicy = CpuSuppressPolicy::kCfsQuota;
  spec.threshold.cpuSuppressThresholdPercent = 65;
  return spec;
}

}  // namespace

TEST_CASE("the snapshot carries every pod with its dirs, QoS, pinned CPUs and newest samples",
          "[qos_manager]") {
  Fixture f;
  f.pods[1].annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"2-3"})";
  Executor exec(f.execConfig(), kLayout, KnobSupport::all(), f.clock, f.failures);
  QosManager manager = makeManager({}, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  fillCache(cache, f.clock.now());

  const QosSnapshot snap = manager.snapshot(f.pods, cache);
  CHECK(snap.capacityMilli() == 4000);
  CHECK(snap.besteffortDir == f.beDir);
  REQUIRE(snap.nodeCpuCores);
  CHECK(snap.nodeCpuCores->value == Approx(2.0));
  REQUIRE(snap.nodeCpuAvgCores);
  CHECK(*snap.nodeCpuAvgCores == Approx(2.0));
  REQUIRE(snap.pods.size() == 2);
  CHECK(snap.pods[0].qos == KoordQos::kBE);
  CHECK(snap.pods[0].dir == f.bePodDir);
  CHECK(snap.pods[0].containers.at(0).dir == f.beCtrDir);
  CHECK(snap.pods[0].containers.at(0).id == "containerd://bbb");
  CHECK(snap.pods[1].qos == KoordQos::kLS);
  CHECK(snap.pods[1].pinnedCpus == std::vector<int>{2, 3});
  REQUIRE(snap.pods[1].cpuCores);
  CHECK(snap.pods[1].cpuCores->value == Approx(1.0));
  REQUIRE(snap.pods[1].containers.at(0).cpuCores);
}

TEST_CASE("a pod whose uid could name a path outside its dir never reaches a strategy",
          "[qos_manager]") {
  Fixture f;
  f.pods.push_back(makePod("../../etc", KubeQos::kBestEffort, KoordQos::kBE, "x", std::nullopt));
  Executor exec(f.execConfig(), kLayout, KnobSupport::all(), f.clock, f.failures);
  QosManager manager = makeManager({}, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  CHECK(manager.snapshot(f.pods, cache).pods.size() == 2);
}

TEST_CASE("cfsQuota suppress lands on the besteffort dir's quota file, per the formula",
          "[qos_manager]") {
  Fixture f;
  Executor exec(f.execConfig(), kLayout, KnobSupport::all(), f.clock, f.failures);
  QosManager manager = makeManager({}, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  fillCache(cache, f.clock.now());

  Round round = manager.runDue(f.pods, cache, suppressByQuota());
  REQUIRE(round.suppress);
  CHECK(round.suppress->skipped.empty());
  // 4000m × 65% − LS 1000m − system (2000 − 1000 − 500 = 500m) = 1100m -> 110000 µs.
  CHECK(fileOf(f.tree, "cpu", f.beDir, "cpu.cfs_quota_us") == "110000");
  REQUIRE(round.suppress->suppressCores);
  CHECK(*round.suppress->suppressCores == Approx(1.1));
  CHECK(round.writes.written >= 1);
  // BE cpusets are recovered to the full set: already 0-3, so nothing to write.
  CHECK(fileOf(f.tree, "cpuset", f.beCtrDir, "cpuset.cpus") == "0-3");
  // Burst ran too (policy none): the LS quota stays at its base, burst 0.
  REQUIRE(round.burst);
  CHECK(fileOf(f.tree, "cpu", f.lsCtrDir, "cpu.cfs_quota_us") == "200000");
  CHECK(round.writes.refused == 0);
}

TEST_CASE("a strategy runs once per interval however often the agent calls", "[qos_manager]") {
  Fixture f;
  Executor exec(f.execConfig(), kLayout, KnobSupport::all(), f.clock, f.failures);
  Settings config;
  config.suppressInterval = 2s;
  config.burstInterval = 1s;
  QosManager manager = makeManager(config, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  const NodeSloSpec spec = suppressByQuota();

  fillCache(cache, f.clock.now());
  Round first = manager.runDue(f.pods, cache, spec);
  CHECK(first.suppress);
  CHECK(first.burst);
  f.clock.advance(1s);
  fillCache(cache, f.clock.now());
  Round second = manager.runDue(f.pods, cache, spec);
  CHECK_FALSE(second.suppress);
  CHECK(second.burst);
  // Collection rounds jitter: 1.8 s after the last run counts as due for a 2 s interval.
  f.clock.advance(800ms);
  fillCache(cache, f.clock.now());
  Round third = manager.runDue(f.pods, cache, spec);
  CHECK(third.suppress);
  // An interval of 0 turns a strategy off (koordlet: Enabled() needs interval > 0).
  Settings off;
  off.suppressInterval = 0s;
  off.burstInterval = 0s;
  QosManager idle = makeManager(off, exec, f.clock);
  Round none = idle.runDue(f.pods, cache, spec);
  CHECK_FALSE(none.suppress);
  CHECK_FALSE(none.burst);
}

TEST_CASE("suppress waits for fresh node usage: samples older than 2 s write nothing",
          "[qos_manager]") {
  Fixture f;
  Executor exec(f.execConfig(), kLayout, KnobSupport::all(), f.clock, f.failures);
  QosManager manager = makeManager({}, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  fillCache(cache, f.clock.now());
  f.clock.advance(5s);  // the collectors stalled
  Round round = manager.runDue(f.pods, cache, suppressByQuota());
  REQUIRE(round.suppress);
  CHECK_FALSE(round.suppress->skipped.empty());
  CHECK(fileOf(f.tree, "cpu", f.beDir, "cpu.cfs_quota_us") == "-1");
}

TEST_CASE("the burst policy from the config reaches the LS container's burst file",
          "[qos_manager]") {
  Fixture f;
  Executor exec(f.execConfig(), kLayout, KnobSupport::all(), f.clock, f.failures);
  QosManager manager = makeManager({}, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  fillCache(cache, f.clock.now());
  NodeSloSpec spec = defaultNodeSlo();
  spec.cpuBurst.policy = CpuBurstPolicy::kCpuBurstOnly;
  Round round = manager.runDue(f.pods, cache, spec);
  REQUIRE(round.burst);
  // 2 cores × 1000% × 100000 = 2,000,000 per koordlet's formula, held to the
  // 200,000 µs quota of a 2-core limit (the kernel refuses a burst above it).
  CHECK(fileOf(f.tree, "cpu", f.lsCtrDir, "cpu.cfs_burst_us") == "200000");
  CHECK(fileOf(f.tree, "cpu", f.lsPodDir, "cpu.cfs_burst_us") == "200000");
  // Suppress is disabled by default (resourceUsedThresholdWithBE.enable false):
  // the BE quota is left at -1 (its recovery value).
  CHECK(fileOf(f.tree, "cpu", f.beDir, "cpu.cfs_quota_us") == "-1");
  // BE pods are suppress's: burst never writes them.
  CHECK(fileOf(f.tree, "cpu", f.beCtrDir, "cpu.cfs_burst_us") == "0");
}

TEST_CASE("a pod gone from the list has its knob owners let go in the next round",
          "[qos_manager]") {
  Fixture f;
  Executor exec(f.execConfig(), kLayout, KnobSupport::all(), f.clock, f.failures);
  QosManager manager = makeManager({}, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  fillCache(cache, f.clock.now());
  NodeSloSpec spec = defaultNodeSlo();
  spec.cpuBurst.policy = CpuBurstPolicy::kCpuBurstOnly;
  Round round = manager.runDue(f.pods, cache, spec);
  REQUIRE(round.burst);
  const size_t withLs = exec.ownerCount();
  REQUIRE(withLs >= 2);  // the LS pod's and container's burst
  const size_t pods = manager.stateEntries();
  // The LS pod leaves; its dirs stay (a removal racing the round), so only the
  // manager can tell the executor it is gone. No strategy is due yet.
  f.pods.pop_back();
  manager.runDue(f.pods, cache, spec);
  CHECK(exec.ownerCount() == withLs - 2);
  CHECK(manager.stateEntries() == pods - 2);  // its paths and its container's
}

TEST_CASE("a container restarted under a new id is found at its new dir, the old one's paths freed",
          "[qos_manager]") {
  Fixture f;
  Executor exec(f.execConfig(), kLayout, KnobSupport::all(), f.clock, f.failures);
  QosManager manager = makeManager({}, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  fillCache(cache, f.clock.now());
  const QosSnapshot first = manager.snapshot(f.pods, cache);
  const size_t entries = manager.stateEntries();
  REQUIRE(first.pods.back().containers.at(0).id == "containerd://lll");
  const std::string oldDir = first.pods.back().containers.at(0).dir;
  REQUIRE(oldDir.ends_with("/lll"));

  f.pods.back().containers.at(0).id = "lll2";
  const QosSnapshot second = manager.snapshot(f.pods, cache);
  const ContainerView& cv = second.pods.back().containers.at(0);
  CHECK(cv.id == "containerd://lll2");
  CHECK(cv.dir == oldDir.substr(0, oldDir.size() - 3) + "lll2");
  CHECK(second.pods.back().dir == first.pods.back().dir);
  CHECK(manager.stateEntries() == entries);
}

TEST_CASE("with the gates off the manager runs neither suppress nor burst and writes nothing",
          "[qos_manager]") {
  Fixture f;
  f.tree.write("cpu/" + f.beDir + "/cpu.cfs_quota_us", "50000\n");
  Executor exec(f.execConfig(), kLayout, KnobSupport::all(), f.clock, f.failures);
  Settings config;
  config.suppressGate = false;
  config.burstGate = false;
  QosManager manager = makeManager(config, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  fillCache(cache, f.clock.now());
  for (int i = 0; i < 3; ++i) {
    Round round = manager.runDue(f.pods, cache, suppressByQuota());
    CHECK_FALSE(round.suppress);
    CHECK_FALSE(round.burst);
    CHECK(round.writes.written == 0);
    f.clock.advance(std::chrono::seconds(60));
  }
  // koordlet writes nothing with BECPUSuppress off: no recovery either.
  CHECK(fileOf(f.tree, "cpu", f.beDir, "cpu.cfs_quota_us") == "50000");
  CHECK(exec.stats().written == 0);
}

TEST_CASE("with the gate on and NodeSLO's enable false, suppress recovers the quota",
          "[qos_manager]") {
  Fixture f;
  f.tree.write("cpu/" + f.beDir + "/cpu.cfs_quota_us", "50000\n");
  Executor exec(f.execConfig(), kLayout, KnobSupport::all(), f.clock, f.failures);
  QosManager manager = makeManager({}, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  fillCache(cache, f.clock.now());
  NodeSloSpec spec = suppressByQuota();
  spec.threshold.enable = false;
  Round round = manager.runDue(f.pods, cache, spec);
  REQUIRE(round.suppress);
  CHECK(round.suppress->skipped == "disabled");
  CHECK(fileOf(f.tree, "cpu", f.beDir, "cpu.cfs_quota_us") == "-1");
}

TEST_CASE("cpuset suppress narrows every cgroup under besteffort, pause containers included",
          "[qos_manager]") {
  Fixture f;
  // The sandbox's pause container and a deleted pod's leftover: on disk, not in the list.
  const std::string pause = f.bePodDir + "/pause0001";
  const std::string leftover = f.beDir + "/podgone";
  for (const auto& dir : {pause, leftover}) f.tree.write("cpuset/" + dir + "/cpuset.cpus", "0-3\n");
  ExecutorConfig ec = f.execConfig();
  Executor exec(ec, kLayout, KnobSupport::all(), f.clock, f.failures);
  Settings config;
  config.cgroupRoot = f.tree.path();
  QosManager manager = makeManager(config, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  fillCache(cache, f.clock.now());
  NodeSloSpec spec = suppressByQuota();
  spec.threshold.cpuSuppressPolicy = CpuSuppressPolicy::kCpuset;

  const QosSnapshot snap = manager.snapshot(f.pods, cache);
  CHECK(snap.besteffortPodDirs == std::vector<std::string>{f.bePodDir, leftover});
  CHECK(snap.besteffortContainerDirs == std::vector<std::string>{f.beCtrDir, pause});

  Round round = manager.runDue(f.pods, cache, spec);
  REQUIRE(round.suppress);
  CHECK(round.suppress->skipped.empty());
  // 1100m -> 2 CPUs (the minimum), shrunk at once from 4.
  const std::string be = fileOf(f.tree, "cpuset", f.beDir, "cpuset.cpus");
  auto cpus = parseKnob(Knob::kCpusetCpus, CgroupVersion::kV1, be + "\n");
  REQUIRE(cpus.ok());
  CHECK(cpus->cpus.size() == 2);
  for (const auto& dir : {f.bePodDir, f.beCtrDir, pause, leftover}) {
    INFO(dir);
    CHECK(fileOf(f.tree, "cpuset", dir, "cpuset.cpus") == be);
  }
  // LS pods keep every CPU.
  CHECK(fileOf(f.tree, "cpuset", f.lsCtrDir, "cpuset.cpus") == "0-3");
  CHECK(round.writes.refused == 0);
}

// ---- memory QoS (CgroupReconcile) ------------------------------------------------

namespace {

constexpr int64_t kGi = int64_t{1} << 30;

// The fixture's LS pod with a 2 GiB request and 4 GiB limit, memory files in place.
struct MemoryFixture : Fixture {
  MemoryFixture() {
    pods[1].containers[0].requests.memoryBytes = 2 * kGi;
    pods[1].containers[0].limits.memoryBytes = 4 * kGi;
    for (const auto& dir :
         {std::string("kubepods"), kLayout.qosDir(KubeQos::kBurstable),
          kLayout.qosDir(KubeQos::kBestEffort), lsPodDir, lsCtrDir, bePodDir, beCtrDir}) {
      tree.write("memory/" + dir + "/memory.min", "0\n");
      tree.write("memory/" + dir + "/memory.low", "0\n");
      tree.write("memory/" + dir + "/memory.high", "max\n");
    }
  }
  // memory.min/low/high only, as a kernel with the v2 files (or Anolis v1) has them.
  static KnobSupport memoryKnobs() {
    KnobSupport s;
    for (Knob k : {Knob::kMemoryMin, Knob::kMemoryLow, Knob::kMemoryHigh}) s.set(k, true);
    return s;
  }
  static NodeSloSpec lsProtected() {
    NodeSloSpec spec = defaultNodeSlo();
    spec.qos.ls.memory.enable = true;
    spec.qos.ls.memory.minLimitPercent = 50;
    spec.qos.ls.memory.lowLimitPercent = 75;
    spec.qos.ls.memory.throttlingPercent = 50;
    return spec;
  }
};

Settings memoryOn(int64_t allocatable) {
  Settings c;
  c.suppressInterval = 0s;  // only memory QoS here
  c.burstInterval = 0s;
  c.memoryGate = true;
  c.nodeAllocatableMemory = allocatable;
  return c;
}

}  // namespace

TEST_CASE("memory QoS lands memory.min, low and high on the LS pod, its container and the QoS dirs",
          "[qos_manager][memory_qos]") {
  MemoryFixture f;
  Executor exec(f.execConfig(), kLayout, MemoryFixture::memoryKnobs(), f.clock, f.failures);
  QosManager manager = makeManager(memoryOn(16 * kGi), exec, f.clock);
  MetricCache cache({}, f.clock.now());

  Round round = manager.runDue(f.pods, cache, MemoryFixture::lsProtected());
  REQUIRE(round.memory.has_value());
  CHECK(round.memory->errors.empty());
  CHECK(round.memorySeconds.has_value());
  CHECK_FALSE(round.suppress.has_value());
  CHECK(round.writes.invalid == 0);
  // Container: min 1 GiB, low 1.5 GiB, high = 2 + (4 - 2) × 50% = 3 GiB.
  CHECK(fileOf(f.tree, "memory", f.lsCtrDir, "memory.min") == std::to_string(kGi));
  CHECK(fileOf(f.tree, "memory", f.lsCtrDir, "memory.low") == std::to_string(3 * kGi / 2));
  CHECK(fileOf(f.tree, "memory", f.lsCtrDir, "memory.high") == std::to_string(3 * kGi));
  CHECK(fileOf(f.tree, "memory", f.lsPodDir, "memory.min") == std::to_string(kGi));
  CHECK(fileOf(f.tree, "memory", f.lsPodDir, "memory.low") == std::to_string(3 * kGi / 2));
  // The burstable dir sums its pods; the root sums every class.
  CHECK(fileOf(f.tree, "memory", kLayout.qosDir(KubeQos::kBurstable), "memory.min") ==
        std::to_string(kGi));
  CHECK(fileOf(f.tree, "memory", "kubepods", "memory.min") == std::to_string(kGi));
  // BE's block is disabled: its pod is reset to the none values.
  CHECK(fileOf(f.tree, "memory", f.bePodDir, "memory.min") == "0");
  CHECK(fileOf(f.tree, "memory", f.beCtrDir, "memory.high") == "max");

  // The next round before the interval writes nothing; after it, nothing changes.
  f.clock.advance(100ms);
  CHECK_FALSE(
      Round(manager.runDue(f.pods, cache, MemoryFixture::lsProtected())).memory.has_value());
  f.clock.advance(1s);
  Round again = manager.runDue(f.pods, cache, MemoryFixture::lsProtected());
  REQUIRE(again.memory.has_value());
  CHECK(again.writes.written == 0);
}

TEST_CASE("with CgroupReconcile off the manager never touches memory knobs",
          "[qos_manager][memory_qos]") {
  MemoryFixture f;
  Executor exec(f.execConfig(), kLayout, MemoryFixture::memoryKnobs(), f.clock, f.failures);
  Settings config = memoryOn(16 * kGi);
  config.memoryGate = false;
  QosManager manager = makeManager(config, exec, f.clock);
  MetricCache cache({}, f.clock.now());
  Round round = manager.runDue(f.pods, cache, MemoryFixture::lsProtected());
  CHECK_FALSE(round.memory.has_value());
  CHECK(fileOf(f.tree, "memory", f.lsCtrDir, "memory.min") == "0");
  CHECK(exec.stats().written == 0);
}

TEST_CASE("memory QoS waits for the node's allocatable memory, then applies it",
          "[qos_manager][memory_qos]") {
  MemoryFixture f;
  // A BE-less LS pod without a limit: high is computed against the node's memory.
  f.pods[1].containers[0].limits.memoryBytes.reset();
  Executor exec(f.execConfig(), kLayout, MemoryFixture::memoryKnobs(), f.clock, f.failures);
  QosManager manager = makeManager(memoryOn(0), exec, f.clock);
  MetricCache cache({}, f.clock.now());

  Round first = manager.runDue(f.pods, cache, MemoryFixture::lsProtected());
  REQUIRE(first.memory.has_value());
  CHECK(first.memoryWrites == 0);
  REQUIRE(first.memory->errors.size() == 1);
  CHECK_THAT(first.memory->errors[0], Catch::Contains("allocatable"));
  CHECK(fileOf(f.tree, "memory", f.lsCtrDir, "memory.high") == "max");

  manager.setNodeAllocatableMemory(10 * kGi);
  f.clock.advance(1s);
  Round second = manager.runDue(f.pods, cache, MemoryFixture::lsProtected());
  REQUIRE(second.memory.has_value());
  CHECK(second.memory->errors.empty());
  CHECK(second.memoryWrites > 0);
  // high = 2 + (10 - 2) × 50% = 6 GiB.
  CHECK(fileOf(f.tree, "memory", f.lsCtrDir, "memory.high") == std::to_string(6 * kGi));
}

TEST_CASE("on a kernel without memory.min/low/high memory QoS writes nothing at all",
          "[qos_manager][memory_qos]") {
  MemoryFixture f;
  KnobSupport vanillaV1;  // nothing but what v1 always has
  vanillaV1.set(Knob::kCpuQuota, true);
  vanillaV1.set(Knob::kMemoryLimit, true);
  Executor exec(f.execConfig(), kLayout, vanillaV1, f.clock, f.failures);
  QosManager manager = makeManager(memoryOn(16 * kGi), exec, f.clock);
  MetricCache cache({}, f.clock.now());
  Round round = manager.runDue(f.pods, cache, MemoryFixture::lsProtected());
  REQUIRE(round.memory.has_value());
  CHECK(round.memoryWrites == 0);
  CHECK(round.writes.unsupported == 0);  // not even attempted
  CHECK(fileOf(f.tree, "memory", f.lsCtrDir, "memory.min") == "0");
}

}  // namespace test_qos_qos_manager
