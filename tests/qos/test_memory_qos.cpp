// Tests for qos/memory_qos: snapshots built by hand, assertions on the exact intended
// writes (rendered as "dir knob=value"), no filesystem.
#include "qos/memory_qos.h"

#include <catch2/catch.hpp>

#include <limits>

#include <deque>
#include <string>
#include <vector>

namespace test_qos_memory_qos {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kPage = 4096;
constexpr int64_t kAllocatable = 8 * kGi;

const CgroupLayout kLayout(CgroupVersion::kV2, CgroupDriver::kCgroupfs);
constexpr CgroupVersion kV1 = CgroupVersion::kV1;

struct Mem {
  std::optional<int64_t> request;
  std::optional<int64_t> limit;
};

struct Node {
  std::deque<Pod> pods;
  QosSnapshot snap;

  // A pod with one container "c" per entry of `containers` (memory, or batch-memory
  // for BE-labelled pods); its dirs as the QoS manager builds them.
  PodView& add(const std::string& name, KoordQos label, KubeQos kube, std::vector<Mem> containers,
               std::string phase = "Running") {
    Pod& pod = pods.emplace_back();
    pod.uid = name;
    pod.ns = "default";
    pod.name = name;
    pod.koordQos = label;
    pod.kubeQos = kube;
    pod.phase = std::move(phase);
    for (size_t i = 0; i < containers.size(); ++i) {
      Container& c = pod.containers.emplace_back();
      // Appended, not "c" + to_string(i): g++ 12 warns falsely (-Wrestrict) on that once inlined.
      c.name = "c";
      c.name += std::to_string(i);
      c.runtime = "containerd";
      c.id = name + "c" + std::to_string(i);
      auto& req = label == KoordQos::kBE ? c.requests.batchMemoryBytes : c.requests.memoryBytes;
      auto& lim = label == KoordQos::kBE ? c.limits.batchMemoryBytes : c.limits.memoryBytes;
      req = containers[i].request;
      lim = containers[i].limit;
    }
    PodView view;
    view.pod = &pod;
    view.qos = pod.qosWithDefault();
    view.dir = kLayout.podDir(kube, name);
    for (const Container& c : pod.containers) {
      ContainerView cv;
      cv.container = &c;
      cv.id = "containerd://" + c.id;
      cv.dir = view.dir + "/" + c.id;
      view.containers.push_back(std::move(cv));
    }
    snap.pods.push_back(std::move(view));
    return snap.pods.back();
  }
  PodView& ls(const std::string& name, std::vector<Mem> containers) {
    return add(name, KoordQos::kLS, KubeQos::kBurstable, std::move(containers));
  }
};

MemoryQos block(int64_t minPct, int64_t lowPct, int64_t throttlingPct) {
  MemoryQos m;
  m.enable = true;
  m.minLimitPercent = minPct;
  m.lowLimitPercent = lowPct;
  m.throttlingPercent = throttlingPct;
  return m;
}

ResourceQosStrategy config(MemoryQos lsr, MemoryQos ls, MemoryQos be) {
  ResourceQosStrategy q;
  q.lsr.memory = lsr;
  q.ls.memory = ls;
  q.be.memory = be;
  return q;
}
ResourceQosStrategy lsOnly(MemoryQos ls) { return config(block(0, 0, 0), ls, block(0, 0, 0)); }

// Rendered as the given cgroup version's executor would write them.
std::vector<std::string> writes(const MemoryQosResult& r,
                                CgroupVersion version = CgroupVersion::kV2) {
  std::vector<std::string> out;
  for (const CgroupWrite& w : r.writes) {
    CHECK(w.owner == kOwnerMemoryQos);
    out.push_back(w.dir + " " + knobSpec(w.knob).name + "=" + renderKnob(w.knob, version, w.value));
  }
  return out;
}

// Knob sets shaped like real kernels. minLowHigh: only the three protection knobs,
// so the tests about min/low/high assert exactly those writes.
KnobSupport supportOf(std::initializer_list<Knob> knobs) {
  KnobSupport s;
  for (Knob k : knobs) s.set(k, true);
  return s;
}
KnobSupport minLowHigh() {
  return supportOf({Knob::kMemoryMin, Knob::kMemoryLow, Knob::kMemoryHigh});
}
// What KnobSupport::probe finds on a vanilla v1 kernel (this machine's) and a Debian v2 one.
KnobSupport vanillaV1() {
  return supportOf({Knob::kCpuShares, Knob::kCpuQuota, Knob::kCpuBurst, Knob::kCpusetCpus,
                    Knob::kMemoryLimit, Knob::kMemorySoftLimit});
}
KnobSupport vanillaV2() {
  return supportOf({Knob::kCpuShares, Knob::kCpuQuota, Knob::kCpuBurst, Knob::kCpusetCpus,
                    Knob::kMemoryLimit, Knob::kMemoryMin, Knob::kMemoryLow, Knob::kMemoryHigh,
                    Knob::kMemoryOomGroup});
}

MemoryQosOptions options(KnobSupport support = minLowHigh(), int64_t allocatable = kAllocatable) {
  MemoryQosOptions o;
  o.enabled = true;
  o.pageSize = kPage;
  o.nodeAllocatableMemory = allocatable;
  o.support = support;
  return o;
}

MemoryQosResult run(const Node& n, const ResourceQosStrategy& cfg,
                    int64_t allocatable = kAllocatable) {
  return MemoryQosPlanner(kLayout).run(n.snap, cfg, options(minLowHigh(), allocatable));
}
MemoryQosResult runWith(const Node& n, const ResourceQosStrategy& cfg, const MemoryQosOptions& o) {
  return MemoryQosPlanner(kLayout).run(n.snap, cfg, o);
}

std::string w(const std::string& dir, const char* knob, int64_t v) {
  return dir + " " + knob + "=" + std::to_string(v);
}
std::string wmax(const std::string& dir) { return dir + " memory.high=max"; }

// QoS dirs (root and burstable) then pod then container "c0" of Burstable pod `name`.
std::vector<std::string> lsPodWrites(const std::string& name, int64_t podMin, int64_t podLow,
                                     int64_t min, int64_t low, std::optional<int64_t> high,
                                     int64_t qosMin, int64_t qosLow) {
  const std::string pod = "kubepods/burstable/pod" + name;
  const std::string c = pod + "/" + name + "c0";
  return {w("kubepods", "memory.min", qosMin),
          w("kubepods", "memory.low", qosLow),
          w("kubepods/burstable", "memory.min", qosMin),
          w("kubepods/burstable", "memory.low", qosLow),
          w(pod, "memory.min", podMin),
          w(pod, "memory.low", podLow),
          w(c, "memory.min", min),
          w(c, "memory.low", low),
          high ? w(c, "memory.high", *high) : wmax(c)};
}

}  // namespace

// ---- per class ---------------------------------------------------------------------

TEST_CASE("an LS pod gets min, low and a page-aligned high from its request and limit",
          "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  auto r = run(n, lsOnly(block(50, 70, 80)));
  CHECK(r.errors.empty());
  // high = floor((1Gi + 1Gi × 80%) / 4096) × 4096
  CHECK(writes(r) == lsPodWrites("a", 536870912, 751619276, 536870912, 751619276, 1932734464,
                                 536870912, 751619276));
}

TEST_CASE("an LSR pod uses the lsr block and throttling 0 writes max", "[memory_qos]") {
  Node n;
  n.add("g", KoordQos::kLSR, KubeQos::kGuaranteed, {{kGi, kGi}});
  auto r = run(n, config(block(100, 100, 0), block(0, 0, 0), block(0, 0, 0)));
  CHECK(writes(r) == std::vector<std::string>{
                         w("kubepods", "memory.min", kGi), w("kubepods", "memory.low", kGi),
                         w("kubepods/podg", "memory.min", kGi),
                         w("kubepods/podg", "memory.low", kGi),
                         w("kubepods/podg/gc0", "memory.min", kGi),
                         w("kubepods/podg/gc0", "memory.low", kGi), wmax("kubepods/podg/gc0")});
}

TEST_CASE("an LSE pod uses the lsr block", "[memory_qos]") {
  Node n;
  n.add("e", KoordQos::kLSE, KubeQos::kGuaranteed, {{kGi, kGi}});
  auto r = run(n, config(block(50, 0, 0), block(0, 0, 0), block(0, 0, 0)));
  CHECK(writes(r)[0] == w("kubepods", "memory.min", kGi / 2));
}

TEST_CASE("a BE pod's percents apply to its batch-memory request and limit", "[memory_qos]") {
  Node n;
  n.add("b", KoordQos::kBE, KubeQos::kBestEffort, {{kGi, 2 * kGi}});
  auto r = run(n, config(block(0, 0, 0), block(0, 0, 0), block(10, 20, 50)));
  const std::string pod = "kubepods/besteffort/podb";
  CHECK(writes(r) ==
        std::vector<std::string>{
            w("kubepods", "memory.min", 107374182), w("kubepods", "memory.low", 214748364),
            w("kubepods/besteffort", "memory.min", 107374182),
            w("kubepods/besteffort", "memory.low", 214748364), w(pod, "memory.min", 107374182),
            w(pod, "memory.low", 214748364), w(pod + "/bc0", "memory.min", 107374182),
            w(pod + "/bc0", "memory.low", 214748364), w(pod + "/bc0", "memory.high", 1610612736)});
}

// ---- the values --------------------------------------------------------------------

TEST_CASE("a container without a memory request counts 0 and high starts from 0", "[memory_qos]") {
  Node n;
  n.ls("z", {{std::nullopt, kGi}});
  auto r = run(n, lsOnly(block(50, 50, 50)));
  CHECK(writes(r) == lsPodWrites("z", 0, 0, 0, 0, kGi / 2, 0, 0));
}

TEST_CASE("a container without a limit is throttled against node allocatable memory",
          "[memory_qos]") {
  Node n;
  n.ls("n", {{kGi, std::nullopt}});
  auto r = run(n, lsOnly(block(0, 0, 50)));
  // 1Gi + (8Gi − 1Gi) × 50%
  CHECK(writes(r) == lsPodWrites("n", 0, 0, 0, 0, 4831838208, 0, 0));
}

TEST_CASE("memory.low below memory.min is raised to it, but 0 stays 0", "[memory_qos]") {
  Node n;
  n.ls("l", {{kGi, 2 * kGi}});
  auto r = run(n, lsOnly(block(60, 30, 0)));
  const int64_t min = 644245094, low = 322122547;  // 1Gi × 60%, 1Gi × 30%
  // The QoS dirs sum the unraised values, as koordlet does.
  CHECK(writes(r) == lsPodWrites("l", min, min, min, min, std::nullopt, min, low));

  auto zero = run(n, lsOnly(block(60, 0, 0)));
  CHECK(writes(zero) == lsPodWrites("l", min, 0, min, 0, std::nullopt, min, 0));
}

TEST_CASE("memory.high rounds down to a page and is raised to memory.min", "[memory_qos]") {
  Node n;
  n.ls("p", {{1000, 10000}});
  // 1000 + 9000 × 50% = 5500 → 4096
  CHECK(writes(run(n, lsOnly(block(0, 0, 50)))) == lsPodWrites("p", 0, 0, 0, 0, 4096, 0, 0));

  Node m;
  m.ls("q", {{5000, 6000}});
  // 5000 + 1000 × 1% = 5010 → 4096, below min 5000 → 5000
  CHECK(writes(run(m, lsOnly(block(100, 0, 1)))) ==
        lsPodWrites("q", 5000, 0, 5000, 0, 5000, 5000, 0));
}

TEST_CASE("the pod request is the larger of the containers' sum and an init container's",
          "[memory_qos]") {
  Node n;
  n.ls("i", {{kGi, std::nullopt}, {kGi, std::nullopt}});
  Pod& pod = n.pods.back();
  Container& init = pod.initContainers.emplace_back();
  init.init = true;
  init.requests.memoryBytes = 3 * kGi;
  auto r = run(n, lsOnly(block(100, 0, 0)));
  CHECK(writes(r)[0] == w("kubepods", "memory.min", 3 * kGi));
  CHECK(writes(r)[4] == w("kubepods/burstable/podi", "memory.min", 3 * kGi));
}

// ---- QoS dirs ----------------------------------------------------------------------

TEST_CASE("each QoS dir sums its pods and the kubepods root sums all three", "[memory_qos]") {
  Node n;
  n.add("g", KoordQos::kNone, KubeQos::kGuaranteed, {{kGi, kGi}});         // LSR by default
  n.add("s", KoordQos::kNone, KubeQos::kBurstable, {{2 * kGi, 4 * kGi}});  // LS by default
  n.add("t", KoordQos::kNone, KubeQos::kBurstable, {{2 * kGi, 4 * kGi}});
  n.add("b", KoordQos::kBE, KubeQos::kBestEffort, {{4 * kGi, 4 * kGi}});
  auto r = run(n, config(block(100, 100, 0), block(50, 100, 0), block(25, 50, 0)));
  auto all = writes(r);
  REQUIRE(all.size() >= 6);
  CHECK(std::vector<std::string>(all.begin(), all.begin() + 6) ==
        std::vector<std::string>{
            w("kubepods", "memory.min", kGi + 2 * kGi + kGi),
            w("kubepods", "memory.low", kGi + 4 * kGi + 2 * kGi),
            w("kubepods/burstable", "memory.min", 2 * kGi),
            w("kubepods/burstable", "memory.low", 4 * kGi),
            w("kubepods/besteffort", "memory.min", kGi),
            w("kubepods/besteffort", "memory.low", 2 * kGi),
        });
  CHECK(all.size() == 6 + 4 * 5);  // pod min/low and container min/low/high each
}

TEST_CASE("no active pod writes no QoS dir", "[memory_qos]") {
  Node n;
  auto r = run(n, lsOnly(block(50, 50, 50)));
  CHECK(r.writes.empty());
  CHECK(r.errors.empty());
}

// ---- which pods and containers -----------------------------------------------------

TEST_CASE("succeeded and failed pods are skipped, pending pods count", "[memory_qos]") {
  Node n;
  n.add("done", KoordQos::kLS, KubeQos::kBurstable, {{kGi, kGi}}, "Succeeded");
  n.add("dead", KoordQos::kLS, KubeQos::kBurstable, {{kGi, kGi}}, "Failed");
  CHECK(run(n, lsOnly(block(50, 0, 0))).writes.empty());

  n.add("a", KoordQos::kLS, KubeQos::kBurstable, {{kGi, 2 * kGi}}, "Pending");
  CHECK(writes(run(n, lsOnly(block(50, 0, 0)))) ==
        lsPodWrites("a", kGi / 2, 0, kGi / 2, 0, std::nullopt, kGi / 2, 0));
}

TEST_CASE("a container without a cgroup dir is skipped but still counts for its pod",
          "[memory_qos]") {
  Node n;
  PodView& v = n.ls("a", {{kGi, 2 * kGi}, {kGi, 2 * kGi}});
  v.containers[1].dir = "";
  auto r = run(n, lsOnly(block(50, 0, 0)));
  auto all = writes(r);
  CHECK(all == std::vector<std::string>{w("kubepods", "memory.min", kGi),
                                        w("kubepods", "memory.low", 0),
                                        w("kubepods/burstable", "memory.min", kGi),
                                        w("kubepods/burstable", "memory.low", 0),
                                        w("kubepods/burstable/poda", "memory.min", kGi),
                                        w("kubepods/burstable/poda", "memory.low", 0),
                                        w("kubepods/burstable/poda/ac0", "memory.min", kGi / 2),
                                        w("kubepods/burstable/poda/ac0", "memory.low", 0),
                                        wmax("kubepods/burstable/poda/ac0")});
}

// ---- enable and config ---------------------------------------------------------------

TEST_CASE("a class with memoryQOS disabled gets the none values", "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  MemoryQos off = block(50, 70, 80);
  off.enable = false;
  CHECK(writes(run(n, lsOnly(off))) == lsPodWrites("a", 0, 0, 0, 0, std::nullopt, 0, 0));
}

TEST_CASE("the strategy disabled writes nothing at all", "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  MemoryQosOptions off;
  off.enabled = false;
  off.pageSize = kPage;
  off.nodeAllocatableMemory = kAllocatable;
  auto r = MemoryQosPlanner(kLayout).run(n.snap, lsOnly(block(50, 70, 80)), off);
  CHECK(r.writes.empty());
  CHECK(r.errors.empty());
}

TEST_CASE("a round without node allocatable memory writes nothing and says why", "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  auto r = run(n, lsOnly(block(50, 70, 80)), 0);
  CHECK(r.writes.empty());
  REQUIRE(r.errors.size() == 1);
  CHECK_THAT(r.errors[0], Catch::Contains("allocatable"));
}

TEST_CASE("systemd dirs come from the layout", "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  CgroupLayout systemd(CgroupVersion::kV2, CgroupDriver::kSystemd);
  auto r = MemoryQosPlanner(systemd).run(n.snap, lsOnly(block(50, 0, 0)), options());
  REQUIRE(r.writes.size() >= 3);
  CHECK(r.writes[0].dir == "kubepods.slice");
  CHECK(r.writes[2].dir == "kubepods.slice/kubepods-burstable.slice");
}

// ---- the pod annotation ------------------------------------------------------------

TEST_CASE("policy none gives the none values and ignores the annotation's fields", "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  n.pods.back().annotations[kMemoryQosAnnotation] = R"({"policy":"none","minLimitPercent":50})";
  auto r = run(n, lsOnly(block(50, 70, 80)));
  CHECK(r.errors.empty());
  CHECK(writes(r) == lsPodWrites("a", 0, 0, 0, 0, std::nullopt, 0, 0));
}

TEST_CASE("policy auto starts from koordlet's built-in class block", "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  n.pods.back().annotations[kMemoryQosAnnotation] = R"({"policy":"auto"})";
  // The built-in blocks protect nothing and do not throttle.
  CHECK(writes(run(n, lsOnly(block(50, 70, 80)))) ==
        lsPodWrites("a", 0, 0, 0, 0, std::nullopt, 0, 0));

  n.pods.back().annotations[kMemoryQosAnnotation] = R"({"policy":"auto","throttlingPercent":50})";
  CHECK(writes(run(n, lsOnly(block(50, 70, 80)))) ==
        lsPodWrites("a", 0, 0, 0, 0, kGi + kGi / 2, 0, 0));
}

TEST_CASE("policy default merges the annotation's fields over the class block", "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  n.pods.back().annotations[kMemoryQosAnnotation] = R"({"policy":"default","minLimitPercent":25})";
  const int64_t low = 751619276;  // 1Gi × 70%, from the class block
  CHECK(writes(run(n, lsOnly(block(50, 70, 0)))) ==
        lsPodWrites("a", kGi / 4, low, kGi / 4, low, std::nullopt, kGi / 4, low));

  // No policy is the default policy; the pod can enable what its class disables.
  n.pods.back().annotations[kMemoryQosAnnotation] = R"({"minLimitPercent":25})";
  MemoryQos off = block(50, 70, 0);
  off.enable = false;
  CHECK(writes(run(n, lsOnly(off))) ==
        lsPodWrites("a", kGi / 4, 0, kGi / 4, 0, std::nullopt, kGi / 4, 0));
}

TEST_CASE("a bad annotation is an error naming the pod and the class block is used",
          "[memory_qos]") {
  for (const char* bad : {"{not json", R"({"minLimitPercent":"50"})", R"({"minLimitPercent":150})",
                          R"({"policy":"nonee"})", R"({"minLimit":50})", "[1]"}) {
    INFO(bad);
    Node n;
    n.ls("a", {{kGi, 2 * kGi}});
    n.pods.back().annotations[kMemoryQosAnnotation] = bad;
    auto r = run(n, lsOnly(block(50, 0, 0)));
    REQUIRE(r.errors.size() == 1);
    CHECK_THAT(r.errors[0],
               Catch::StartsWith("pod default/a: annotation koordinator.sh/memoryQOS: "));
    CHECK(writes(r) == lsPodWrites("a", kGi / 2, 0, kGi / 2, 0, std::nullopt, kGi / 2, 0));
  }
}

TEST_CASE("annotation fields match case-insensitively and null keeps the class value",
          "[memory_qos]") {
  const MemoryQos cls = block(50, 70, 80);
  auto m = mergeMemoryQosAnnotation(cls, MemoryQos{},
                                    R"({"MinLimitPercent":10,"lowLimitPercent":null,"policy":""})");
  REQUIRE(m.ok());
  CHECK(m->minLimitPercent == 10);
  CHECK(m->lowLimitPercent == 70);
  CHECK(m->throttlingPercent == 80);

  auto e = mergeMemoryQosAnnotation(cls, MemoryQos{}, R"({"throttlingPercent":1.5})");
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().message ==
        "annotation koordinator.sh/memoryQOS: throttlingPercent: expected an integer, got "
        "number 1.5");

  auto page = mergeMemoryQosAnnotation(
      cls, MemoryQos{}, R"({"pageCacheLimitSize":1024,"pageCacheReclaimSync":true})");
  REQUIRE(page.ok());  // accepted, no knob yet
}

// ---- a SYSTEM pod -----------------------------------------------------------------

TEST_CASE("a SYSTEM pod uses the system block", "[memory_qos]") {
  Node n;
  n.add("sys", KoordQos::kSystem, KubeQos::kBurstable, {{kGi, 2 * kGi}});
  ResourceQosStrategy q = lsOnly(block(0, 0, 0));
  q.system.memory = block(20, 40, 50);
  // high = floor((1Gi + 1Gi × 50%) / 4096) × 4096 = 1.5Gi
  CHECK(writes(run(n, q)) == lsPodWrites("sys", 214748364, 429496729, 214748364, 429496729,
                                         kGi + kGi / 2, 214748364, 429496729));
}

// ---- wmark, priority and oom.group -------------------------------------------------

namespace {

MemoryQos withOom(MemoryQos m, int64_t ratio, int64_t scale, int64_t minAdj, int64_t prioEnable,
                  int64_t prio, int64_t oomGroup) {
  m.wmarkRatio = ratio;
  m.wmarkScalePermill = scale;
  m.wmarkMinAdj = minAdj;
  m.priorityEnable = prioEnable;
  m.priority = prio;
  m.oomKillGroup = oomGroup;
  return m;
}

// The priority/oom triple of one dir, in the strategy's order.
std::vector<std::string> oomWrites(const std::string& dir, int64_t prio, int64_t prioEnable,
                                   int64_t oomGroup) {
  return {w(dir, "memory.priority", prio), w(dir, "memory.use_priority_oom", prioEnable),
          w(dir, "memory.oom.group", oomGroup)};
}
std::vector<std::string> wmarkWrites(const std::string& dir, int64_t ratio, int64_t scale,
                                     int64_t minAdj) {
  return {w(dir, "memory.wmark_ratio", ratio), w(dir, "memory.wmark_scale_factor", scale),
          w(dir, "memory.wmark_min_adj", minAdj)};
}
void append(std::vector<std::string>& out, const std::vector<std::string>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

}  // namespace

TEST_CASE("container and pod dirs get wmark and priority from the pod's merged config",
          "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  const ResourceQosStrategy q = config(withOom(block(0, 0, 0), 95, 20, -25, 0, 2, 0),
                                       withOom(block(50, 70, 80), 90, 30, -10, 1, 8, 1),
                                       withOom(block(0, 0, 0), 95, 20, 50, 1, 0, 0));
  const std::string pod = "kubepods/burstable/poda";
  const std::string c = pod + "/ac0";
  auto expected = [&](int64_t minAdj, int64_t prio) {
    std::vector<std::string> out = {w("kubepods", "memory.min", kGi / 2),
                                    w("kubepods", "memory.low", 751619276)};
    append(out, oomWrites("kubepods", 2, 0, 0));  // the lsr block
    append(out, {w("kubepods/burstable", "memory.min", kGi / 2),
                 w("kubepods/burstable", "memory.low", 751619276)});
    append(out, oomWrites("kubepods/burstable", 8, 1, 1));   // the ls block, not the pod's
    append(out, oomWrites("kubepods/besteffort", 0, 1, 0));  // the be block, no pod there
    append(out, {w(pod, "memory.min", kGi / 2), w(pod, "memory.low", 751619276)});
    append(out, wmarkWrites(pod, 90, 30, minAdj));
    append(out, oomWrites(pod, prio, 1, 1));
    append(out, {w(c, "memory.min", kGi / 2), w(c, "memory.low", 751619276),
                 w(c, "memory.high", 1932734464)});
    append(out, wmarkWrites(c, 90, 30, minAdj));
    append(out, oomWrites(c, prio, 1, 1));
    return out;
  };
  CHECK(writes(runWith(n, q, options(KnobSupport::all()))) == expected(-10, 8));

  n.pods.back().annotations[kMemoryQosAnnotation] = R"({"priority":3,"wmarkMinAdj":-25})";
  CHECK(writes(runWith(n, q, options(KnobSupport::all()))) == expected(-25, 3));
}

TEST_CASE("QoS dirs get priority, use_priority_oom and oom.group with or without pods",
          "[memory_qos]") {
  Node n;  // no pod at all: min/low are not written, the oom knobs are
  ResourceQosStrategy q = config(withOom(block(0, 0, 0), 95, 20, -25, 1, 12, 1),
                                 withOom(block(0, 0, 0), 95, 20, -25, 1, 6, 0),
                                 withOom(block(0, 0, 0), 95, 20, 50, 0, 0, 1));
  std::vector<std::string> expected = oomWrites("kubepods", 12, 1, 1);
  append(expected, oomWrites("kubepods/burstable", 6, 1, 0));
  append(expected, oomWrites("kubepods/besteffort", 0, 0, 1));
  CHECK(writes(runWith(n, q, options(KnobSupport::all()))) == expected);

  // A disabled class block resets its dir to the none values.
  q.lsr.memory.enable = false;
  expected = oomWrites("kubepods", 0, 0, 0);
  append(expected, oomWrites("kubepods/burstable", 6, 1, 0));
  append(expected, oomWrites("kubepods/besteffort", 0, 0, 1));
  CHECK(writes(runWith(n, q, options(KnobSupport::all()))) == expected);
}

TEST_CASE("a disabled class resets wmark and priority to the none values", "[memory_qos]") {
  Node n;
  n.add("b", KoordQos::kBE, KubeQos::kBestEffort, {{kGi, kGi}});
  MemoryQos be = withOom(block(10, 20, 0), 80, 100, 40, 1, 9, 1);
  be.enable = false;
  const ResourceQosStrategy q = config(block(0, 0, 0), block(0, 0, 0), be);
  KnobSupport alinux =
      supportOf({Knob::kMemoryWmarkRatio, Knob::kMemoryWmarkScaleFactor, Knob::kMemoryWmarkMinAdj,
                 Knob::kMemoryPriority, Knob::kMemoryUsePriorityOom, Knob::kMemoryOomGroup});
  std::vector<std::string> expected = oomWrites("kubepods", 0, 0, 0);
  append(expected, oomWrites("kubepods/burstable", 0, 0, 0));
  append(expected, oomWrites("kubepods/besteffort", 0, 0, 0));
  append(expected, wmarkWrites("kubepods/besteffort/podb", 0, 50, 0));
  append(expected, oomWrites("kubepods/besteffort/podb", 0, 0, 0));
  // The container's oom.group 0 is left to the kubelet (it sets 1 on v2 since 1.28).
  append(expected, wmarkWrites("kubepods/besteffort/podb/bc0", 0, 50, 0));
  std::vector<std::string> ctrOom = oomWrites("kubepods/besteffort/podb/bc0", 0, 0, 0);
  ctrOom.pop_back();  // no memory.oom.group=0
  append(expected, ctrOom);
  CHECK(writes(runWith(n, q, options(alinux))) == expected);
}

TEST_CASE("a container's oom.group is written to turn it on, never to turn the kubelet's off",
          "[memory_qos]") {
  Node n;
  n.add("b", KoordQos::kBE, KubeQos::kBestEffort, {{kGi, kGi}});
  const KnobSupport oomOnly = supportOf({Knob::kMemoryOomGroup});
  MemoryQos be = withOom(block(0, 0, 0), 95, 20, 50, 0, 0, 1);
  auto on = writes(runWith(n, config(block(0, 0, 0), block(0, 0, 0), be), options(oomOnly)));
  CHECK(std::count(on.begin(), on.end(), "kubepods/besteffort/podb/bc0 memory.oom.group=1") == 1);
  CHECK(std::count(on.begin(), on.end(), "kubepods/besteffort/podb memory.oom.group=1") == 1);
  be.oomKillGroup = 0;
  auto off = writes(runWith(n, config(block(0, 0, 0), block(0, 0, 0), be), options(oomOnly)));
  CHECK(std::count(off.begin(), off.end(), "kubepods/besteffort/podb memory.oom.group=0") == 1);
  for (const std::string& w : off) CHECK(w.find("bc0 memory.oom.group") == std::string::npos);
}

// ---- kernel support ------------------------------------------------------------------

TEST_CASE("a vanilla v1 kernel gets no memory QoS write from any class", "[memory_qos]") {
  Node n;
  n.add("g", KoordQos::kLSR, KubeQos::kGuaranteed, {{kGi, kGi}});
  n.ls("s", {{kGi, 2 * kGi}});
  n.add("b", KoordQos::kBE, KubeQos::kBestEffort, {{kGi, kGi}});
  n.add("e", KoordQos::kLSE, KubeQos::kGuaranteed, {{kGi, kGi}});
  const MemoryQos on = withOom(block(50, 80, 90), 95, 20, 0, 1, 5, 1);
  auto r = runWith(n, config(on, on, on), options(vanillaV1()));
  CHECK(r.writes.empty());
  CHECK(r.errors.empty());
}

TEST_CASE("a vanilla v2 kernel gets min, low, high and oom.group but no Alinux knob",
          "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  const MemoryQos ls = withOom(block(50, 70, 80), 90, 30, -10, 1, 8, 1);
  auto r = runWith(n, lsOnly(ls), options(vanillaV2()));
  std::vector<std::string> expected = {w("kubepods", "memory.min", kGi / 2),
                                       w("kubepods", "memory.low", 751619276),
                                       w("kubepods", "memory.oom.group", 0),
                                       w("kubepods/burstable", "memory.min", kGi / 2),
                                       w("kubepods/burstable", "memory.low", 751619276),
                                       w("kubepods/burstable", "memory.oom.group", 1),
                                       w("kubepods/besteffort", "memory.oom.group", 0),
                                       w("kubepods/burstable/poda", "memory.min", kGi / 2),
                                       w("kubepods/burstable/poda", "memory.low", 751619276),
                                       w("kubepods/burstable/poda", "memory.oom.group", 1),
                                       w("kubepods/burstable/poda/ac0", "memory.min", kGi / 2),
                                       w("kubepods/burstable/poda/ac0", "memory.low", 751619276),
                                       w("kubepods/burstable/poda/ac0", "memory.high", 1932734464),
                                       w("kubepods/burstable/poda/ac0", "memory.oom.group", 1)};
  CHECK(writes(r) == expected);
}

TEST_CASE("memory QoS is supported only where min, low and high all exist", "[memory_qos]") {
  CHECK(memoryQosSupported(KnobSupport::all()));
  CHECK(memoryQosSupported(vanillaV2()));
  CHECK(memoryQosSupported(minLowHigh()));
  CHECK_FALSE(memoryQosSupported(vanillaV1()));
  for (Knob missing : {Knob::kMemoryMin, Knob::kMemoryLow, Knob::kMemoryHigh}) {
    KnobSupport s = minLowHigh();
    s.set(missing, false);
    INFO(knobSpec(missing).name);
    CHECK_FALSE(memoryQosSupported(s));
  }
}

// ---- the v1 soft-limit fallback ------------------------------------------------------

namespace {

MemoryQosOptions softLimitOn() {
  MemoryQosOptions o = options(vanillaV1());
  o.softLimitFallback = true;
  return o;
}

// A BE pod with two containers whose batch-memory requests are not page multiples,
// and an LS pod, which the fallback leaves alone.
Node beAndLs() {
  Node n;
  n.add("b", KoordQos::kBE, KubeQos::kBestEffort, {{1'000'001, 2'000'000}, {3 * kGi, 4 * kGi}});
  n.ls("s", {{kGi, 2 * kGi}});
  return n;
}

std::vector<std::string> softLimits(int64_t pod, int64_t c0, int64_t c1) {
  auto soft = [](const std::string& dir, int64_t v) {
    return dir + " memory.soft_limit_in_bytes=" + std::to_string(v);
  };
  return {soft("kubepods/besteffort/podb", pod), soft("kubepods/besteffort/podb/bc0", c0),
          soft("kubepods/besteffort/podb/bc1", c1)};
}

}  // namespace

TEST_CASE("without memory.low BE pods get their low target as a page-rounded soft limit",
          "[memory_qos]") {
  const Node n = beAndLs();
  const ResourceQosStrategy q = config(block(50, 80, 0), block(50, 80, 90), block(10, 50, 90));
  // pod low = (1000001 + 3Gi) × 50% = 1611112736 → 1611112448 (page-rounded);
  // c0 low = 500000 → 499712; c1 low = 1.5Gi.
  CHECK(writes(runWith(n, q, softLimitOn()), kV1) == softLimits(1611112448, 499712, 3 * kGi / 2));
}

TEST_CASE("a BE block with low 0 gives soft limit 0: all BE memory goes first", "[memory_qos]") {
  const Node n = beAndLs();
  CHECK(writes(runWith(n, config(block(0, 0, 0), block(0, 0, 0), block(0, 0, 0)), softLimitOn()),
               kV1) == softLimits(0, 0, 0));
}

TEST_CASE("a disabled BE block or policy none resets BE soft limits to unlimited", "[memory_qos]") {
  Node n = beAndLs();
  MemoryQos be = block(10, 50, 90);
  be.enable = false;
  CHECK(writes(runWith(n, config(block(0, 0, 0), block(0, 0, 0), be), softLimitOn()), kV1) ==
        softLimits(-1, -1, -1));
  n.pods.front().annotations[kMemoryQosAnnotation] = R"({"policy":"none"})";
  CHECK(writes(runWith(n, config(block(0, 0, 0), block(0, 0, 0), block(10, 50, 90)), softLimitOn()),
               kV1) == softLimits(-1, -1, -1));
}

TEST_CASE("the soft-limit fallback is off where memory.low exists or when not asked for",
          "[memory_qos]") {
  const Node n = beAndLs();
  const ResourceQosStrategy q = config(block(0, 0, 0), block(0, 0, 0), block(10, 50, 0));
  MemoryQosOptions v2 = options(vanillaV2());
  v2.support.set(Knob::kMemorySoftLimit, true);  // even a kernel with both files
  v2.softLimitFallback = true;
  for (const CgroupWrite& write : runWith(n, q, v2).writes) {
    CHECK(write.knob != Knob::kMemorySoftLimit);
  }
  MemoryQosOptions notAsked = softLimitOn();
  notAsked.softLimitFallback = false;
  CHECK(runWith(n, q, notAsked).writes.empty());
}

TEST_CASE("with low below min a pod's raised low exceeds its QoS dir's, as in koordlet",
          "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  // pod and container low: 20% raised to min (50%); QoS dirs: Σ 20%, not raised.
  CHECK(writes(run(n, lsOnly(block(50, 20, 0)))) ==
        lsPodWrites("a", kGi / 2, kGi / 2, kGi / 2, kGi / 2, std::nullopt, kGi / 2, 214748364));
}

TEST_CASE("a pod asking for more than 64 TiB is left alone with an error naming it, no sum wraps",
          "[memory_qos]") {
  Node n;
  n.ls("a", {{kGi, 2 * kGi}});
  // Two containers near INT64_MAX would wrap the pod's sum negative.
  n.ls("huge", {{std::numeric_limits<int64_t>::max() - 1, std::nullopt},
                {std::numeric_limits<int64_t>::max() - 1, std::nullopt}});
  auto r = run(n, lsOnly(block(50, 70, 80)));
  REQUIRE(r.errors.size() == 1);
  CHECK_THAT(r.errors[0], Catch::Contains("pod default/huge: container c0: memory request"));
  CHECK_THAT(r.errors[0], Catch::Contains("above 64 TiB"));
  // The good pod is written exactly as alone; nothing of the huge pod, and the QoS
  // dirs' sums hold only the good pod's share.
  CHECK(writes(r) == lsPodWrites("a", 536870912, 751619276, 536870912, 751619276, 1932734464,
                                 536870912, 751619276));
}

}  // namespace test_qos_memory_qos
