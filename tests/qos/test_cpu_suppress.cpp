// Tests for qos/cpu_suppress: snapshots built by hand (and the real EPYC 7402
// topology capture), current values from a MapValues, assertions on the exact
// intended writes. No filesystem except the topology capture.
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "metrics/cpu_topology.h"
#include "metrics/metric_cache.h"
#include "qos/cpu_suppress.h"
#include "tests/support/temp_tree.h"

namespace test_qos_cpu_suppress {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

const Clock::Monotonic kNow{std::chrono::seconds(1000)};
const std::string kBe = "kubepods/besteffort";

// n CPUs, one per core, one socket, one node (a VM without SMT).
CpuTopology flat(int n) {
  CpuTopology t;
  for (int i = 0; i < n; ++i) t.cpus.push_back(CpuInfo{i, i, 0, 0});
  return t;
}

CpuTopology epyc() {
  HostPaths paths;
  paths.sysRoot = test::fixturePath("sysfs/amd-epyc7402-2socket");
  auto topo = readCpuTopology(paths);
  REQUIRE(topo.ok());
  return *topo;
}

std::vector<int> range(int lo, int hi) {
  std::vector<int> out;
  for (int i = lo; i <= hi; ++i) out.push_back(i);
  return out;
}

// A node: the pods own their Pod objects (views point into the deque).
struct Node {
  std::deque<Pod> pods;
  QosSnapshot snap;
  MapValues current;

  explicit Node(CpuTopology topo, double nodeUsed = 0) {
    snap.at = kNow;
    snap.topology = std::move(topo);
    snap.besteffortDir = kBe;
    snap.nodeCpuCores = Sample{nodeUsed, kNow - 500ms};
    // What a fresh node holds: the whole machine, no quota.
    current.set(kBe, Knob::kCpusetCpus, KnobValue::ofCpus(snap.topology.ids()));
    current.set(kBe, Knob::kCpuQuota, KnobValue::of(-1));
  }

  // A pod with `containers` running containers; usage nullopt = no sample.
  PodView& add(const std::string& name, KoordQos label, KubeQos kube, std::optional<double> usage,
               int containers = 1, std::vector<int> pinned = {}) {
    Pod& pod = pods.emplace_back();
    pod.uid = name;
    pod.name = name;
    pod.koordQos = label;
    pod.kubeQos = kube;
    PodView view;
    view.pod = &pod;
    view.qos = pod.qosWithDefault();
    const char* kubeDir = kube == KubeQos::kBestEffort  ? "kubepods/besteffort/pod"
                          : kube == KubeQos::kBurstable ? "kubepods/burstable/pod"
                                                        : "kubepods/pod";
    view.dir = kubeDir + name;
    if (usage) view.cpuCores = Sample{*usage, kNow - 1s};
    view.pinnedCpus = std::move(pinned);
    for (int i = 0; i < containers; ++i) {
      ContainerView c;
      c.id = "containerd://" + name + "c" + std::to_string(i);
      c.dir = view.dir + "/" + name + "c" + std::to_string(i);
      view.containers.push_back(std::move(c));
    }
    snap.pods.push_back(std::move(view));
    return snap.pods.back();
  }
  PodView& be(const std::string& name, std::optional<double> usage, int containers = 1) {
    return add(name, KoordQos::kBE, KubeQos::kBestEffort, usage, containers);
  }
  PodView& ls(const std::string& name, std::optional<double> usage) {
    return add(name, KoordQos::kLS, KubeQos::kBurstable, usage);
  }

  // The executor's effect on what the next round reads.
  void apply(const SuppressResult& r) {
    for (const CgroupWrite& w : r.writes) current.set(w.dir, w.knob, w.value);
  }
};

ResourceThresholdStrategy config(int64_t threshold = 65,
                                 CpuSuppressPolicy policy = CpuSuppressPolicy::kCpuset) {
  ResourceThresholdStrategy c;
  c.enable = true;
  c.cpuSuppressThresholdPercent = threshold;
  c.cpuSuppressPolicy = policy;
  return c;
}

// "dir knob=value", in the order the strategy emitted them; every write must be
// owned by cpu-suppress.
std::vector<std::string> writes(const SuppressResult& r) {
  std::vector<std::string> out;
  for (const CgroupWrite& w : r.writes) {
    CHECK(w.owner == kOwnerCpuSuppress);
    out.push_back(w.dir + " " + knobSpec(w.knob).name + "=" +
                  renderKnob(w.knob, CgroupVersion::kV1, w.value));
  }
  return out;
}

std::string cpuset(const std::string& dir, const std::string& list) {
  return dir + " cpuset.cpus=" + list;
}
std::string quota(const std::string& dir, int64_t q) {
  return dir + " cpu.cfs_quota_us=" + std::to_string(q);
}

// The cpuset writes of one BE pod "b" with one container, plus the QoS dir.
std::vector<std::string> beCpusets(const std::string& top, const std::string& container) {
  return {cpuset(kBe, top), cpuset("kubepods/besteffort/podb", top),
          cpuset("kubepods/besteffort/podb/bc0", container)};
}

template <typename T>
std::vector<T> plus(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

// ---- the suppress amount ----------------------------------------------------------

TEST_CASE("cpu suppress gives BE capacity x threshold minus LS usage minus system usage",
          "[cpu_suppress]") {
  // 10 cores at 65%: 6500m. LS uses 2, BE 1, the node 4.5: system = 4.5 - 3 = 1.5.
  // 6500 - 2000 - 1500 = 3000m -> 3 CPUs.
  Node node(flat(10), 4.5);
  node.ls("l", 2.0);
  node.be("b", 1.0);
  CpuSuppress s;
  const SuppressResult r = s.run(node.snap, config(), true, node.current);
  CHECK(r.skipped.empty());
  CHECK(r.policy == CpuSuppressPolicy::kCpuset);
  CHECK(writes(r) == plus(beCpusets("0-2", "0-2"), {quota(kBe, -1)}));
  CHECK(r.suppressCores == 3.0);
  CHECK(r.lsUsedCores == 2.0);
  CHECK(r.beUsedCores == 1.0);
}

TEST_CASE("cpu suppress counts the node reservation as system usage when it is larger",
          "[cpu_suppress]") {
  Node node(flat(10), 4.5);
  node.ls("l", 2.0);
  node.be("b", 1.0);
  CpuSuppress s;
  SECTION("resources.cpu 2.5 > system 1.5: 6500 - 2000 - 2500 = 2000m") {
    node.snap.reservation.cpuMilli = 2500;
    CHECK(writes(s.run(node.snap, config(), true, node.current)) ==
          plus(beCpusets("0-1", "0-1"), {quota(kBe, -1)}));
  }
  SECTION("resources.cpu below system usage changes nothing") {
    node.snap.reservation.cpuMilli = 1000;
    CHECK(s.run(node.snap, config(), true, node.current).suppressCores == 3.0);
  }
  SECTION("reservedCPUs count as their number and are never given to BE") {
    // Two reserved CPUs = 2000m > 1500m: 6500 - 2000 - 2000 = 2500m -> 3 CPUs.
    node.snap.reservation.cpuMilli = 5000;  // overridden by reservedCPUs, as koordlet
    node.snap.reservation.reservedCpus = {0, 1};
    CHECK(writes(s.run(node.snap, config(), true, node.current)) ==
          plus(beCpusets("2-4", "2-4"), {quota(kBe, -1)}));
  }
}

TEST_CASE("cpu suppress never gives BE fewer than 2 CPUs, whatever the LS load", "[cpu_suppress]") {
  // 6500 - 8000 = -1500m -> ceil(-1.5) = -1 -> 2.
  Node node(flat(10), 8.0);
  node.ls("l", 8.0);
  node.be("b", std::nullopt);
  CpuSuppress s;
  const SuppressResult r = s.run(node.snap, config(), true, node.current);
  CHECK(writes(r) == plus(beCpusets("0-1", "0-1"), {quota(kBe, -1)}));
  CHECK(r.suppressCores == 2.0);
  CHECK(r.beUsedCores == 0.0);
}

TEST_CASE("cpuSuppressMinPercent raises the amount, never lowers it", "[cpu_suppress]") {
  Node node(flat(10), 8.0);
  node.ls("l", 8.0);
  node.be("b", 0.5);
  CpuSuppress s;
  ResourceThresholdStrategy c = config();
  SECTION("50%: max(-1500m, 5000m) = 5 CPUs") {
    c.cpuSuppressMinPercent = 50;
    CHECK(s.run(node.snap, c, true, node.current).suppressCores == 5.0);
  }
  SECTION("10%: max(-1500m, 1000m) = 1 CPU, then the minimum of 2") {
    c.cpuSuppressMinPercent = 10;
    CHECK(s.run(node.snap, c, true, node.current).suppressCores == 2.0);
  }
  SECTION("below the computed amount it does nothing") {
    node.snap.pods[0].cpuCores = Sample{1.0, kNow};
    node.snap.nodeCpuCores = Sample{1.5, kNow};
    c.cpuSuppressMinPercent = 20;  // 2000m < 6500 - 1000 - 0 = 5500m
    CHECK(s.run(node.snap, c, true, node.current).suppressCores == 6.0);
  }
}

TEST_CASE("threshold 0 leaves BE the minimum: 2 CPUs, or a 2000 us quota", "[cpu_suppress]") {
  Node node(flat(10), 0.2);
  node.be("b", 0.2);
  CpuSuppress s;
  CHECK(writes(s.run(node.snap, config(0), true, node.current)) ==
        plus(beCpusets("0-1", "0-1"), {quota(kBe, -1)}));
  CpuSuppress q;
  CHECK(writes(q.run(node.snap, config(0, CpuSuppressPolicy::kCfsQuota), true, node.current)) ==
        plus({quota(kBe, 2000)}, beCpusets("0-9", "0-9")));
}

TEST_CASE("threshold 100 gives BE everything LS and the system leave", "[cpu_suppress]") {
  Node node(flat(10), 1.0);
  node.ls("l", 1.0);
  node.be("b", 0.0);
  CpuSuppress s;
  CHECK(s.run(node.snap, config(100), true, node.current).suppressCores == 9.0);
  node.snap.pods[0].cpuCores = Sample{0.0, kNow};
  node.snap.nodeCpuCores = Sample{0.0, kNow};
  CHECK(writes(s.run(node.snap, config(100), true, node.current)) ==
        beCpusets("0-9", "0-9"));  // quota already recovered by the first round
}

// ---- freshness --------------------------------------------------------------------

TEST_CASE("a node usage sample older than 2 s, or none, skips the round with no writes",
          "[cpu_suppress]") {
  Node node(flat(10), 1.0);
  node.be("b", 0.5);
  CpuSuppress s;
  node.snap.nodeCpuCores = Sample{1.0, kNow - 2s - 1ms};
  SuppressResult r = s.run(node.snap, config(), true, node.current);
  CHECK(r.writes.empty());
  CHECK(r.skipped == "node cpu usage stale or missing");
  CHECK_FALSE(r.suppressCores);
  CHECK_FALSE(r.lsUsedCores);

  node.snap.nodeCpuCores.reset();
  r = s.run(node.snap, config(), true, node.current);
  CHECK(r.writes.empty());
  CHECK(r.skipped == "node cpu usage stale or missing");

  node.snap.nodeCpuCores = Sample{1.0, kNow - 2s};  // exactly 2 s: still fresh
  r = s.run(node.snap, config(), true, node.current);
  CHECK(r.skipped.empty());
  CHECK_FALSE(r.writes.empty());
}

TEST_CASE("a pod whose usage sample is stale counts as 0, its usage left to system usage",
          "[cpu_suppress]") {
  // Reservation 3.5 cores; node 4, LS 3, BE 1.
  Node node(flat(10), 4.0);
  node.snap.reservation.cpuMilli = 3500;
  node.ls("l", 3.0);
  node.be("b", 1.0);
  CpuSuppress s;
  // Fresh: system = max(4 - 4, 3.5) = 3.5; 6500 - 3000 - 3500 = 0 -> 2 CPUs.
  SuppressResult r = s.run(node.snap, config(), true, node.current);
  CHECK(r.suppressCores == 2.0);
  CHECK(r.lsUsedCores == 3.0);
  // LS sample 3 s old: system = max(4 - 1, 3.5) = 3.5; 6500 - 0 - 3500 = 3000 -> 3.
  node.snap.pods[0].cpuCores = Sample{3.0, kNow - 3s};
  r = s.run(node.snap, config(), true, node.current);
  CHECK(r.suppressCores == 3.0);
  CHECK(r.lsUsedCores == 0.0);
  CHECK(r.beUsedCores == 1.0);
}

// ---- which pods, which dirs -------------------------------------------------------

TEST_CASE("with no BE pods the besteffort dir is still suppressed", "[cpu_suppress]") {
  Node node(flat(10), 2.0);
  node.ls("l", 2.0);
  CpuSuppress s;
  const SuppressResult r = s.run(node.snap, config(), true, node.current);
  CHECK(writes(r) == std::vector<std::string>{cpuset(kBe, "0-4"), quota(kBe, -1)});
  CHECK(r.beUsedCores == 0.0);
}

TEST_CASE("an empty pod list skips the round, as koordlet does", "[cpu_suppress]") {
  Node node(flat(10), 2.0);
  CpuSuppress s;
  const SuppressResult r = s.run(node.snap, config(), true, node.current);
  CHECK(r.writes.empty());
  CHECK(r.skipped == "no pods");
}

TEST_CASE("cpu suppress writes every BE container dir and skips dirs not created yet",
          "[cpu_suppress]") {
  Node node(flat(10), 2.0);
  node.ls("l", 2.0);
  PodView& b = node.be("b", std::nullopt, 2);
  b.containers[1].dir.clear();  // not started
  PodView& pending = node.be("p", std::nullopt, 1);
  pending.dir.clear();  // no pod dir known: neither it nor its containers
  CpuSuppress s;
  CHECK(writes(s.run(node.snap, config(), true, node.current)) ==
        std::vector<std::string>{cpuset(kBe, "0-4"), cpuset("kubepods/besteffort/podb", "0-4"),
                                 cpuset("kubepods/besteffort/podb/bc0", "0-4"), quota(kBe, -1)});
}

TEST_CASE("a labelled pod of kube class BestEffort counts and is suppressed as BE",
          "[cpu_suppress]") {
  // koordlet's NonBEPodFilter: BE by label or by kube QoS; it lives in the
  // besteffort dir, so its cpuset must shrink with it.
  Node node(flat(10), 3.0);
  node.add("x", KoordQos::kLS, KubeQos::kBestEffort, 3.0, 1);
  CpuSuppress s;
  const SuppressResult r = s.run(node.snap, config(), true, node.current);
  CHECK(r.lsUsedCores == 0.0);
  CHECK(r.beUsedCores == 3.0);
  CHECK(writes(r) ==
        std::vector<std::string>{cpuset(kBe, "0-6"), cpuset("kubepods/besteffort/podx", "0-6"),
                                 cpuset("kubepods/besteffort/podx/xc0", "0-6"), quota(kBe, -1)});
}

// ---- the cpuset policy ------------------------------------------------------------

TEST_CASE("BE gains at most ceil(10% of CPUs) per round and shrinks at once", "[cpu_suppress]") {
  // 20 CPUs: step 2. BE starts on 2 CPUs, the target is all 20.
  Node node(flat(20), 0.0);
  node.be("b", 0.0);
  node.current.set(kBe, Knob::kCpusetCpus, KnobValue::ofCpus({0, 1}));
  CpuSuppress s;
  std::vector<double> given;
  for (int round = 0; round < 3; ++round) {
    const SuppressResult r = s.run(node.snap, config(100), true, node.current);
    given.push_back(*r.suppressCores);
    node.apply(r);
  }
  CHECK(given == std::vector<double>{4, 6, 8});
  CHECK(node.current.get(kBe, Knob::kCpusetCpus)->cpus == range(0, 7));
  // LS load arrives: 20000 - 15000 = 5000m -> 5 CPUs at once.
  node.ls("l", 15.0);
  node.snap.nodeCpuCores = Sample{15.0, kNow};
  const SuppressResult r = s.run(node.snap, config(100), true, node.current);
  CHECK(writes(r) == beCpusets("0-4", "0-4"));
}

TEST_CASE("the growth step counts from the besteffort cpuset as read", "[cpu_suppress]") {
  // EPYC capture, 42 CPUs: step ceil(4.2) = 5. BE has 2 CPUs, wants 27.
  Node node(epyc(), 0.0);
  node.be("b", 0.0);
  node.current.set(kBe, Knob::kCpusetCpus, KnobValue::ofCpus({3, 27}));
  CpuSuppress s;
  CHECK(s.run(node.snap, config(), true, node.current).suppressCores == 7.0);
}

TEST_CASE("an unreadable besteffort cpuset skips the cpuset writes, not the quota recovery",
          "[cpu_suppress]") {
  Node node(flat(10), 2.0);
  node.be("b", 0.0);
  MapValues none;
  CpuSuppress s;
  const SuppressResult r = s.run(node.snap, config(), true, none);
  CHECK(r.skipped == "besteffort cpuset unreadable");
  CHECK(writes(r) == std::vector<std::string>{quota(kBe, -1)});
  CHECK_FALSE(r.suppressCores);
}

TEST_CASE("CPUs pinned by LSE pods are excluded, those of LSR pods form their own pool",
          "[cpu_suppress]") {
  // BE may use 2-9: LSR pool 6-9, LS pool 2-5. LSE and LSR use 1 each:
  // 6500 - 2000 = 4500m -> 5 CPUs, 5 x 4 / 8 = 2 from the LSR pool, 3 from LS.
  Node node(flat(10), 2.0);
  node.add("e", KoordQos::kLSE, KubeQos::kGuaranteed, 1.0, 1, {0, 1});
  node.add("r", KoordQos::kLSR, KubeQos::kGuaranteed, 1.0, 1, {6, 7, 8, 9});
  node.be("b", 0.0);
  CpuSuppress s;
  CHECK(CpuSuppress::fullBeCpus(node.snap) == range(2, 9));
  const SuppressResult r = s.run(node.snap, config(), true, node.current);
  CHECK(writes(r) == plus(beCpusets("2-4,6-7", "2-4,6-7"), {quota(kBe, -1)}));
  CHECK(r.lsUsedCores == 2.0);
}

TEST_CASE("pinned CPUs are classed by the qosClass label, not the kube QoS default",
          "[cpu_suppress]") {
  // koordlet reads the raw label (GetPodQoSClassRaw): an unlabelled Guaranteed
  // pod's pinned CPUs are neither excluded nor an LSR pool.
  Node node(flat(4), 0.0);
  node.add("g", KoordQos::kNone, KubeQos::kGuaranteed, 0.0, 1, {0, 1});
  node.snap.reservation.systemExclusiveCpus = {3};
  CHECK(CpuSuppress::fullBeCpus(node.snap) == std::vector<int>{0, 1, 2});
}

TEST_CASE("asking for more CPUs than BE may use gives it all of them", "[cpu_suppress]") {
  // 10 cores at 100%, nothing used: 10 CPUs wanted, LSE pins 4: BE gets the 6 left
  // (koordlet picks none here and leaves the old cpuset).
  Node node(flat(10), 0.0);
  node.add("e", KoordQos::kLSE, KubeQos::kGuaranteed, 0.0, 1, {0, 1, 2, 3});
  node.be("b", 0.0);
  CpuSuppress s;
  const SuppressResult r = s.run(node.snap, config(100), true, node.current);
  CHECK(writes(r) == plus(beCpusets("4-9", "4-9"), {quota(kBe, -1)}));
  CHECK(r.suppressCores == 6.0);
}

TEST_CASE("with every CPU reserved or pinned BE keeps its cpuset and only the quota recovers",
          "[cpu_suppress]") {
  Node node(flat(4), 1.0);
  node.snap.reservation.reservedCpus = {0, 1};
  node.add("e", KoordQos::kLSE, KubeQos::kGuaranteed, 1.0, 1, {2, 3});
  node.be("b", 0.0);
  CpuSuppress s;
  SuppressResult r = s.run(node.snap, config(), true, node.current);
  CHECK(r.skipped == "no CPUs left for BE (all reserved, system or LSE-pinned)");
  CHECK(writes(r) == std::vector<std::string>{quota(kBe, -1)});
  // Disabled: nothing to recover the cpusets to, so they are left alone.
  r = s.run(node.snap, config(), false, node.current);
  CHECK(r.writes.empty());
  CHECK(r.skipped == "disabled");
}

TEST_CASE("with the static CPU manager policy the QoS and pod dirs keep the full BE set",
          "[cpu_suppress]") {
  Node node(flat(10), 2.0);
  node.snap.cpuManagerPolicy = CpuManagerPolicy::kStatic;
  node.snap.reservation.reservedCpus = {9};
  node.ls("l", 2.0);  // 6500 - 2000 - max(0, 1000) = 3500m -> 4 CPUs
  node.be("b", 0.0, 2);
  CpuSuppress s;
  CHECK(writes(s.run(node.snap, config(), true, node.current)) ==
        std::vector<std::string>{cpuset(kBe, "0-8"), cpuset("kubepods/besteffort/podb", "0-8"),
                                 cpuset("kubepods/besteffort/podb/bc0", "0-3"),
                                 cpuset("kubepods/besteffort/podb/bc1", "0-3"), quota(kBe, -1)});
}

// ---- CPU picking ------------------------------------------------------------------

TEST_CASE("CPU picking takes HT sibling pairs first on the EPYC 7402 capture", "[cpu_suppress]") {
  // Sorted by (core, cpu): 0 (core 0, sibling 24 offline), 1, 2, then 3+27 (core
  // 4), 4+28 (core 5), ... Pairs come first, a single CPU from the start.
  const CpuTopology topo = epyc();
  const std::vector<int> all = topo.ids();
  CHECK(CpuSuppress::pickCpus(topo, all, 2) == std::vector<int>{3, 27});
  CHECK(CpuSuppress::pickCpus(topo, all, 4) == std::vector<int>{3, 4, 27, 28});
  CHECK(CpuSuppress::pickCpus(topo, all, 3) == std::vector<int>{0, 3, 27});
  CHECK(CpuSuppress::pickCpus(topo, all, 5) == std::vector<int>{0, 3, 4, 27, 28});
  CHECK(CpuSuppress::pickCpus(topo, all, 1) == std::vector<int>{0});
  CHECK(CpuSuppress::pickCpus(topo, all, 0).empty());
  // Only candidates count: without 27, core 4 is no pair.
  std::vector<int> some = {3, 4, 5, 28, 29};
  CHECK(CpuSuppress::pickCpus(topo, some, 2) == std::vector<int>{4, 28});
  CHECK(CpuSuppress::pickCpus(topo, some, 5) == some);
  CHECK(CpuSuppress::pickCpus(topo, some, 9) == some);  // more than there are: all
}

TEST_CASE("a cpuset run on the EPYC capture gives BE whole cores", "[cpu_suppress]") {
  // 42 cores at 65% = 27300m, LS uses 20: 7300m -> 8 CPUs = 4 sibling pairs.
  Node node(epyc(), 20.0);
  node.ls("l", 20.0);
  node.be("b", 0.0);
  CpuSuppress s;
  CHECK(writes(s.run(node.snap, config(), true, node.current)) ==
        plus(beCpusets("3-6,27-30", "3-6,27-30"), {quota(kBe, -1)}));
}

TEST_CASE("CPU picking goes round-robin over (node, socket) buckets, largest first",
          "[cpu_suppress]") {
  // Bucket A (node 0, socket 0): cores 0 {0,4}, 1 {1,5}.
  // Bucket B (node 1, socket 1): cores 0 {2,6}, 1 {3,7}, 2 {8,9}. B is larger.
  CpuTopology t;
  for (CpuInfo c :
       {CpuInfo{0, 0, 0, 0}, CpuInfo{1, 1, 0, 0}, CpuInfo{2, 0, 1, 1}, CpuInfo{3, 1, 1, 1},
        CpuInfo{4, 0, 0, 0}, CpuInfo{5, 1, 0, 0}, CpuInfo{6, 0, 1, 1}, CpuInfo{7, 1, 1, 1},
        CpuInfo{8, 2, 1, 1}, CpuInfo{9, 2, 1, 1}}) {
    t.cpus.push_back(c);
  }
  const std::vector<int> all = t.ids();
  CHECK(CpuSuppress::pickCpus(t, all, 2) == std::vector<int>{2, 6});
  CHECK(CpuSuppress::pickCpus(t, all, 4) == std::vector<int>{0, 2, 4, 6});
  // Pairs from B, A; the single from B, where the pair round stopped.
  CHECK(CpuSuppress::pickCpus(t, all, 5) == std::vector<int>{0, 2, 3, 4, 6});
  // Pairs from B, A, B; the single from A.
  CHECK(CpuSuppress::pickCpus(t, all, 7) == std::vector<int>{0, 1, 2, 3, 4, 6, 7});
  CHECK(CpuSuppress::pickCpus(t, all, 10) == all);
}

TEST_CASE("buckets of one size are ordered by their first CPU after the core sort",
          "[cpu_suppress]") {
  // A: cpu 5 (core 0), cpu 1 (core 1) -> first 5. B: cpu 2 (core 0), cpu 3 (core 1)
  // -> first 2. B goes first although A holds the lowest id.
  CpuTopology t;
  t.cpus = {CpuInfo{1, 1, 0, 0}, CpuInfo{2, 0, 1, 1}, CpuInfo{3, 1, 1, 1}, CpuInfo{5, 0, 0, 0}};
  CHECK(CpuSuppress::pickCpus(t, t.ids(), 1) == std::vector<int>{2});
  CHECK(CpuSuppress::pickCpus(t, t.ids(), 3) == std::vector<int>{2, 3, 5});
}

TEST_CASE("without HT CPU picking alternates sockets: the Xeon 5218 capture", "[cpu_suppress]") {
  HostPaths paths;
  paths.sysRoot = test::fixturePath("sysfs/intel-xeon5218-2socket-noht");
  auto topo = readCpuTopology(paths);
  REQUIRE(topo.ok());
  // Socket 0 (first: core 0 = cpu 0), socket 1 (core 0 = cpu 1), socket 0 core 1 = cpu 4.
  CHECK(CpuSuppress::pickCpus(*topo, topo->ids(), 3) == std::vector<int>{0, 1, 4});
}

// ---- the cfsQuota policy ----------------------------------------------------------

TEST_CASE("the cfsQuota policy sets the besteffort quota and recovers the BE cpusets",
          "[cpu_suppress]") {
  // 10 cores: 1% = 10000 us, 10% = 100000 us. 6500 - 2000 = 4500m -> 450000 us.
  Node node(flat(10), 2.0);
  node.ls("l", 2.0);
  node.be("b", 0.0);
  const auto c = config(65, CpuSuppressPolicy::kCfsQuota);
  CpuSuppress s;
  SECTION("current -1: no step limit") {
    const SuppressResult r = s.run(node.snap, c, true, node.current);
    CHECK(r.policy == CpuSuppressPolicy::kCfsQuota);
    CHECK(writes(r) == plus({quota(kBe, 450000)}, beCpusets("0-9", "0-9")));
    CHECK(r.suppressCores == 4.5);
    CHECK(r.lsUsedCores == 2.0);
  }
  SECTION("within 1% of capacity of the current quota: not written") {
    node.current.set(kBe, Knob::kCpuQuota, KnobValue::of(445000));
    const SuppressResult r = s.run(node.snap, c, true, node.current);
    CHECK(r.skipped == "quota change within 1% of capacity");
    CHECK(writes(r) == beCpusets("0-9", "0-9"));
    CHECK_FALSE(r.suppressCores);
  }
  SECTION("exactly 1% away: written") {
    node.current.set(kBe, Knob::kCpuQuota, KnobValue::of(440000));
    CHECK(s.run(node.snap, c, true, node.current).suppressCores == 4.5);
  }
  SECTION("growth is limited to 10% of capacity per round") {
    node.current.set(kBe, Knob::kCpuQuota, KnobValue::of(300000));
    SuppressResult r = s.run(node.snap, c, true, node.current);
    CHECK(writes(r)[0] == quota(kBe, 400000));
    node.apply(r);
    r = s.run(node.snap, c, true, node.current);
    CHECK(writes(r)[0] == quota(kBe, 450000));
  }
  SECTION("shrinking is immediate") {
    node.current.set(kBe, Knob::kCpuQuota, KnobValue::of(900000));
    CHECK(writes(s.run(node.snap, c, true, node.current))[0] == quota(kBe, 450000));
  }
  SECTION("an unreadable quota writes no quota, the cpusets still recover") {
    MapValues none;
    const SuppressResult r = s.run(node.snap, c, true, none);
    CHECK(r.skipped == "besteffort quota unreadable");
    CHECK(writes(r) == beCpusets("0-9", "0-9"));
  }
}

TEST_CASE("the cfsQuota minimum is 2000 us and always written", "[cpu_suppress]") {
  Node node(flat(10), 9.0);
  node.ls("l", 9.0);  // 6500 - 9000 < 0
  node.be("b", 0.0);
  node.current.set(kBe, Knob::kCpuQuota, KnobValue::of(2000));
  CpuSuppress s;
  // |2000 - 2000| < 1% of capacity, but the minimum is exempt from the skip rule.
  const SuppressResult r =
      s.run(node.snap, config(65, CpuSuppressPolicy::kCfsQuota), true, node.current);
  CHECK(writes(r)[0] == quota(kBe, 2000));
  CHECK(r.suppressCores == 0.02);
}

TEST_CASE("a small quota target right after recovery leaves BE unlimited, as koordlet",
          "[cpu_suppress]") {
  // 1% of 10 cores = 100m; LS uses 0.05: 50m -> 5000 us, within 10000 of -1.
  Node node(flat(10), 0.05);
  node.ls("l", 0.05);
  CpuSuppress s;
  const SuppressResult r =
      s.run(node.snap, config(1, CpuSuppressPolicy::kCfsQuota), true, node.current);
  CHECK(r.skipped == "quota change within 1% of capacity");
  CHECK(writes(r) == std::vector<std::string>{cpuset(kBe, "0-9")});
}

// ---- disable, recover, enable again -----------------------------------------------

TEST_CASE("disabled suppress recovers quota and cpusets once they land, then writes nothing",
          "[cpu_suppress]") {
  Node node(flat(10), 2.0);
  node.snap.reservation.reservedCpus = {0};
  node.ls("l", 2.0);
  node.be("b", 0.0);
  CpuSuppress s;
  SuppressResult r = s.run(node.snap, config(), false, node.current);
  CHECK(r.skipped == "disabled");
  CHECK(writes(r) == plus({quota(kBe, -1)}, beCpusets("1-9", "1-9")));
  CHECK_FALSE(r.suppressCores);
  node.apply(r);
  r = s.run(node.snap, config(), false, node.current);
  CHECK(r.writes.empty());
  CHECK(r.skipped == "disabled");

  // Enabled: suppressed (the quota is already unlimited: not written again).
  // 6500 - 2000 - 1000 = 3500m -> 4 CPUs out of 1-9.
  r = s.run(node.snap, config(), true, node.current);
  CHECK(writes(r) == beCpusets("1-4", "1-4"));
  r = s.run(node.snap, config(), true, node.current);
  CHECK(writes(r) == beCpusets("1-4", "1-4"));  // every round: new pods, changed load

  // Disabled again: the cpusets go back to the full BE set, once.
  r = s.run(node.snap, config(), false, node.current);
  CHECK(writes(r) == beCpusets("1-9", "1-9"));
  node.apply(r);
  CHECK(s.run(node.snap, config(), false, node.current).writes.empty());
}

TEST_CASE("a recovery write that did not land is written again until the file holds it",
          "[cpu_suppress]") {
  Node node(flat(10), 2.0);
  node.ls("l", 2.0);
  node.be("b", 0.0);
  CpuSuppress s;
  SuppressResult r = s.run(node.snap, config(65, CpuSuppressPolicy::kCfsQuota), true, node.current);
  node.apply(r);  // the besteffort quota is now suppressed
  REQUIRE(node.current.get(kBe, Knob::kCpuQuota)->number != -1);
  // Disabled: the recovery is written, but the kernel refuses it (EBUSY, ENOENT
  // while the dir is re-created): the file keeps the suppressed quota.
  r = s.run(node.snap, config(), false, node.current);
  CHECK(writes(r) == std::vector<std::string>{quota(kBe, -1)});
  // Not given up: written again next round, and the round after.
  r = s.run(node.snap, config(), false, node.current);
  CHECK(writes(r) == std::vector<std::string>{quota(kBe, -1)});
  r = s.run(node.snap, config(), false, node.current);
  CHECK(writes(r) == std::vector<std::string>{quota(kBe, -1)});
  node.apply(r);  // this time it lands
  CHECK(s.run(node.snap, config(), false, node.current).writes.empty());
  CHECK(s.run(node.snap, config(), false, node.current).writes.empty());
}

TEST_CASE("switching policies recovers what the other policy set", "[cpu_suppress]") {
  Node node(flat(10), 2.0);
  node.ls("l", 2.0);
  node.be("b", 0.0);
  CpuSuppress s;
  // cfsQuota: quota set, cpusets full.
  SuppressResult r = s.run(node.snap, config(65, CpuSuppressPolicy::kCfsQuota), true, node.current);
  CHECK(writes(r) == plus({quota(kBe, 450000)}, beCpusets("0-9", "0-9")));
  node.apply(r);
  // cpuset: cpusets narrowed, the quota recovered once.
  r = s.run(node.snap, config(), true, node.current);
  CHECK(writes(r) == plus(beCpusets("0-4", "0-4"), {quota(kBe, -1)}));
  node.apply(r);
  r = s.run(node.snap, config(), true, node.current);
  CHECK(writes(r) == beCpusets("0-4", "0-4"));
  // cfsQuota again, then disabled: only the quota needs recovering.
  r = s.run(node.snap, config(65, CpuSuppressPolicy::kCfsQuota), true, node.current);
  CHECK(writes(r) == plus({quota(kBe, 450000)}, beCpusets("0-9", "0-9")));
  node.apply(r);
  r = s.run(node.snap, config(), false, node.current);
  CHECK(writes(r) == std::vector<std::string>{quota(kBe, -1)});
}

TEST_CASE("without sysfs placement policy cpuset is skipped and cfsQuota still suppresses",
          "[cpu_suppress]") {
  auto ids = cpuTopologyFromIds({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  REQUIRE(ids.ok());
  Node node(*ids, 2.0);
  node.ls("l", 2.0);
  node.be("b", 0.0);
  CpuSuppress s;
  SuppressResult r = s.run(node.snap, config(), true, node.current);
  // Nothing to pick CPUs by; the besteffort quota (already -1) is all it writes.
  CHECK(writes(r) == std::vector<std::string>{quota(kBe, -1)});
  CHECK_THAT(r.skipped, Catch::Contains("policy cpuset needs the CPU topology"));
  // cfsQuota needs only the CPU count: 10 × 65% − 2 (LS) − 0 (system) = 4.5 cores.
  r = s.run(node.snap, config(65, CpuSuppressPolicy::kCfsQuota), true, node.current);
  CHECK(r.skipped.empty());
  REQUIRE(r.suppressCores);
  CHECK(writes(r).front() == quota(kBe, 450000));
  node.apply(r);
  // Back to cpuset on this node: the suppressed quota is recovered, not left at
  // 450000 for good, until the file holds -1.
  r = s.run(node.snap, config(), true, node.current);
  CHECK(writes(r) == std::vector<std::string>{quota(kBe, -1)});
  r = s.run(node.snap, config(), true, node.current);  // refused: written again
  CHECK(writes(r) == std::vector<std::string>{quota(kBe, -1)});
  node.apply(r);
  CHECK(s.run(node.snap, config(), true, node.current).writes.empty());
}

// ---- what GET /explain shows ------------------------------------------------------

TEST_CASE("cpu suppress's writes carry the threshold, where it came from, and the usage",
          "[cpu_suppress][explain]") {
  // 10 cores at 60%: 6000 - LS 2000 - system 1500 = 2500m -> 3 CPUs.
  Node node(flat(10), 4.5);
  node.ls("l", 2.0);
  node.be("b", 1.0);
  auto spec =
      parseNodeSlo("resourceUsedThresholdWithBE: {enable: true, cpuSuppressThresholdPercent: 60}\n",
                   "/etc/koordlet/slo.yaml");
  REQUIRE(spec.ok());
  MetricCache cache({}, kNow);
  NodeFacts facts;
  CpuSuppressStrategy strategy(1s, true);
  StrategyOutcome out = strategy.run(StrategyContext{node.snap, *spec, node.current, facts, cache});
  REQUIRE(out.why);
  std::map<std::string, std::pair<std::string, std::string>> in;
  for (const WriteInput& i : out.why->inputs) in[i.name] = {i.value, i.source};
  using P = std::pair<std::string, std::string>;
  CHECK(in["resourceUsedThresholdWithBE.cpuSuppressThresholdPercent"] ==
        P{"60", "file /etc/koordlet/slo.yaml"});
  CHECK(in["resourceUsedThresholdWithBE.cpuSuppressPolicy"] == P{"cpuset", "default"});
  CHECK(in["nodeUsedCores"] == P{"4.50", ""});
  CHECK(in["lsUsedCores"] == P{"2.00", ""});
  CHECK(in["beUsedCores"] == P{"1.00", ""});
  CHECK(in["systemUsedCores"] == P{"1.50", ""});
  CHECK(in["beAllowedCores"] == P{"3.00", ""});
  CHECK(in["capacityCores"] == P{"10", ""});
  CHECK_FALSE(in.contains("skipped"));
}

}  // namespace test_qos_cpu_suppress
