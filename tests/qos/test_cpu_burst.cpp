// Tests for qos/cpu_burst: hand-built snapshots with explicit timestamps, current
// knob values from a map, and assertions on the exact intended writes.
#include <catch2/catch.hpp>

#include <limits>

#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "qos/cpu_burst.h"

namespace test_qos_cpu_burst {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

const Clock::Monotonic kT0{std::chrono::seconds(1000)};

struct ContainerSpec {
  std::optional<int64_t> limitMilli;  // nullopt: no CPU limit
  std::optional<int64_t> requestMilli;
};

// A node with `cpus` CPUs and pods added one by one. Pods live in a list so the
// snapshot's pointers stay valid as more are added.
struct World {
  explicit World(int cpus = 8) {
    for (int i = 0; i < cpus; ++i) snap.topology.cpus.push_back(CpuInfo{i, i, 0, 0});
    snap.at = kT0;
    snap.nodeCpuAvgCores = 1.0;  // idle by default
  }

  // Pod `name` with containers c0, c1, ... in dir kubepods/burstable/pod<name>.
  PodView& addPod(const std::string& name, std::vector<ContainerSpec> specs,
                  KoordQos qos = KoordQos::kLS, const std::string& phase = "Running",
                  std::map<std::string, std::string> annotations = {}) {
    Pod& pod = pods.emplace_back();
    pod.uid = "uid-" + name;
    pod.ns = "default";
    pod.name = name;
    pod.phase = phase;
    pod.koordQos = qos;
    pod.kubeQos = KubeQos::kBurstable;
    pod.annotations = std::move(annotations);
    for (size_t i = 0; i < specs.size(); ++i) {
      Container c;
      c.name = "c" + std::to_string(i);
      c.runtime = "containerd";
      c.id = name + "-" + c.name;
      c.limits.cpuMilli = specs[i].limitMilli;
      c.requests.cpuMilli = specs[i].requestMilli;
      pod.containers.push_back(c);
    }
    PodView& pv = snap.pods.emplace_back();
    pv.pod = &pod;
    pv.qos = pod.qosWithDefault();
    pv.dir = podDir(name);
    for (const Container& c : pod.containers) {
      ContainerView cv;
      cv.container = &c;
      cv.id = "containerd://" + c.id;
      cv.dir = pv.dir + "/" + c.name;
      pv.containers.push_back(cv);
    }
    return pv;
  }

  static std::string podDir(const std::string& name) { return "kubepods/burstable/pod" + name; }
  static std::string ctrDir(const std::string& name, int i) {
    return podDir(name) + "/c" + std::to_string(i);
  }

  void quota(const std::string& dir, int64_t v) {
    values.set(dir, Knob::kCpuQuota, KnobValue::of(v));
  }
  // Marks every container of every pod as throttled (or not) in a sample taken now.
  void throttled(double ratio) {
    for (PodView& pv : snap.pods) {
      for (ContainerView& cv : pv.containers) cv.throttledRatio = Sample{ratio, snap.at};
    }
  }
  void containerUsage(const std::string& pod, int i, double cores) {
    for (PodView& pv : snap.pods) {
      if (pv.pod->name == pod) pv.containers[i].cpuCores = Sample{cores, snap.at};
    }
  }
  void advance(std::chrono::nanoseconds d) { snap.at += d; }

  BurstResult run(CpuBurst& burst, bool enabled = true) {
    return burst.run(snap, config, enabled, values);
  }

  std::list<Pod> pods;
  QosSnapshot snap;
  MapValues values;
  CpuBurstConfig config;
};

CpuBurstConfig policy(CpuBurstPolicy p) {
  CpuBurstConfig c;
  c.policy = p;
  return c;
}

// "dir knob=value" per write, in the order the strategy emitted them.
std::vector<std::string> show(const BurstResult& r) {
  std::vector<std::string> out;
  for (const CgroupWrite& w : r.writes) {
    CHECK(w.owner == kOwnerCpuBurst);
    out.push_back(w.dir + " " + knobSpec(w.knob).name + "=" + std::to_string(w.value.number));
  }
  return out;
}

std::vector<std::string> show(const BurstResult& r, Knob knob) {
  std::vector<std::string> out;
  for (const CgroupWrite& w : r.writes) {
    if (w.knob == knob) out.push_back(w.dir + "=" + std::to_string(w.value.number));
  }
  return out;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("policy none writes zero burst and leaves a quota at its base alone", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kNone);
  w.addPod("web", {{2000, 1000}});
  w.quota(World::podDir("web"), 200000);
  w.quota(World::ctrDir("web", 0), 200000);
  w.throttled(0.5);
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  CHECK(show(r) == Strings{"kubepods/burstable/podweb/c0 cpu.cfs_burst_us=0",
                           "kubepods/burstable/podweb cpu.cfs_burst_us=0"});
  REQUIRE(r.metrics.size() == 1);
  CHECK(r.metrics[0].burstUs == 0);
  CHECK(!r.metrics[0].quotaUs);
  CHECK(r.errors.empty());
  CHECK(r.nodeState == SharePoolState::kIdle);
}

TEST_CASE("cpuBurstOnly sets each container's burst up to its quota and the pod's to the sum",
          "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCpuBurstOnly);
  w.addPod("web", {{2000, 1000}, {500, 500}});
  w.quota(World::podDir("web"), 250000);
  w.quota(World::ctrDir("web", 0), 200000);
  w.quota(World::ctrDir("web", 1), 50000);
  w.throttled(0.5);  // throttled, but this policy never scales quota
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  // 2 cores × 1000% × 100000 = 2,000,000, held to the 200,000 quota the kernel
  // allows; 0.5 cores -> 500,000, held to 50,000.
  CHECK(show(r) == Strings{"kubepods/burstable/podweb/c0 cpu.cfs_burst_us=200000",
                           "kubepods/burstable/podweb/c1 cpu.cfs_burst_us=50000",
                           "kubepods/burstable/podweb cpu.cfs_burst_us=250000"});
  REQUIRE(r.metrics.size() == 2);
  CHECK(r.metrics[0].containerId == "containerd://web-c0");
  CHECK(r.metrics[0].burstUs == 200000);
  CHECK(r.metrics[1].burstUs == 50000);
}

TEST_CASE("cpuBurstPercent scales the static burst", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCpuBurstOnly);
  w.config.cpuBurstPercent = 50;
  w.addPod("web", {{1500, 1000}});
  CpuBurst burst(1);
  // 1.5 cores × 50% × 100000 = 75,000 (below the 150,000 quota).
  CHECK(show(w.run(burst), Knob::kCpuBurst) ==
        Strings{"kubepods/burstable/podweb/c0=75000", "kubepods/burstable/podweb=75000"});
}

TEST_CASE("the static burst is truncated from floating point exactly as koordlet computes it",
          "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCpuBurstOnly);
  w.config.cpuBurstPercent = 30;
  w.addPod("web", {{3000, 3000}});
  CpuBurst burst(1);
  // 3 × 0.3 × 100000 = 89999.99... in float64: koordlet writes 89999, not 90000.
  CHECK(show(w.run(burst), Knob::kCpuBurst) ==
        Strings{"kubepods/burstable/podweb/c0=89999", "kubepods/burstable/podweb=89999"});
}

TEST_CASE("cfsQuotaBurstOnly scales a throttled container's quota and its pod's by 1.2",
          "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCfsQuotaBurstOnly);
  w.addPod("web", {{2000, 1000}});
  w.quota(World::podDir("web"), 200000);
  w.quota(World::ctrDir("web", 0), 200000);
  w.throttled(0.3);
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  CHECK(show(r) == Strings{"kubepods/burstable/podweb/c0 cpu.cfs_burst_us=0",
                           "kubepods/burstable/podweb cpu.cfs_burst_us=0",
                           "kubepods/burstable/podweb/c0 cpu.cfs_quota_us=240000",
                           "kubepods/burstable/podweb cpu.cfs_quota_us=240000"});
  REQUIRE(r.metrics.size() == 1);
  CHECK(r.metrics[0].burstUs == 0);
  CHECK(r.metrics[0].quotaUs == 240000);
}

TEST_CASE("auto sets the static burst and scales the quota", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  w.addPod("web", {{1000, 1000}});
  w.quota(World::podDir("web"), 100000);
  w.quota(World::ctrDir("web", 0), 100000);
  w.throttled(1.0);
  CpuBurst burst(1);
  CHECK(show(w.run(burst)) == Strings{"kubepods/burstable/podweb/c0 cpu.cfs_burst_us=100000",
                                      "kubepods/burstable/podweb cpu.cfs_burst_us=100000",
                                      "kubepods/burstable/podweb/c0 cpu.cfs_quota_us=120000",
                                      "kubepods/burstable/podweb cpu.cfs_quota_us=120000"});
}

TEST_CASE("the pod annotation {\"policy\": \"auto\"} turns burst on over a node policy of none",
          "[cpu_burst]") {
  // koordinator's docs example: apache-demo with a CPU limit of 4.
  World w;
  w.config = policy(CpuBurstPolicy::kNone);
  w.addPod("apache-demo", {{4000, 4000}}, KoordQos::kNone, "Running",
           {{"koordinator.sh/cpuBurst", R"({"policy": "auto"})"}});
  w.addPod("other", {{4000, 4000}});
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  CHECK(r.errors.empty());
  // 4 cores × 1000% × 100000 = 4,000,000 µs, up to the 400,000 µs quota; the pod
  // without the annotation gets 0.
  CHECK(show(r, Knob::kCpuBurst) == Strings{"kubepods/burstable/podapache-demo/c0=400000",
                                            "kubepods/burstable/podapache-demo=400000",
                                            "kubepods/burstable/podother/c0=0",
                                            "kubepods/burstable/podother=0"});
}

TEST_CASE("a bad cpuBurst annotation is reported naming the pod and the node config is used",
          "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCpuBurstOnly);
  w.addPod("broken", {{1000, 1000}}, KoordQos::kLS, "Running",
           {{"koordinator.sh/cpuBurst", "{not json"}});
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  REQUIRE(r.errors.size() == 1);
  CHECK_THAT(r.errors[0].message, Catch::Contains("default/broken"));
  CHECK(show(r, Knob::kCpuBurst) ==
        Strings{"kubepods/burstable/podbroken/c0=100000", "kubepods/burstable/podbroken=100000"});
}

TEST_CASE("a container without a CPU limit gets no burst and its quota is never scaled",
          "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  w.addPod("web", {{std::nullopt, 500}, {1000, 1000}});
  w.quota(World::podDir("web"), -1);
  w.quota(World::ctrDir("web", 0), -1);
  w.quota(World::ctrDir("web", 1), 100000);
  w.throttled(0.5);
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  CHECK(show(r) == Strings{"kubepods/burstable/podweb/c0 cpu.cfs_burst_us=0",
                           "kubepods/burstable/podweb/c1 cpu.cfs_burst_us=100000",
                           "kubepods/burstable/podweb cpu.cfs_burst_us=100000",
                           // The pod has no quota (-1): only the container's is raised.
                           "kubepods/burstable/podweb/c1 cpu.cfs_quota_us=120000"});
}

TEST_CASE("LSR, LSE and BE pods are left to other strategies", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  for (auto [name, qos] : std::vector<std::pair<std::string, KoordQos>>{
           {"lsr", KoordQos::kLSR}, {"lse", KoordQos::kLSE}, {"be", KoordQos::kBE}}) {
    w.addPod(name, {{2000, 2000}}, qos);
    w.quota(World::podDir(name), 200000);
    w.quota(World::ctrDir(name, 0), 200000);
  }
  w.throttled(0.5);
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  CHECK(r.writes.empty());
  CHECK(r.metrics.empty());
  CHECK(burst.limiterCount() == 0);
}

TEST_CASE("an unlabelled pod bursts whatever its kube QoS, since the raw label decides",
          "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCpuBurstOnly);
  w.addPod("guaranteed", {{1000, 1000}}, KoordQos::kNone);
  w.pods.back().kubeQos = KubeQos::kGuaranteed;
  CpuBurst burst(1);
  CHECK(show(w.run(burst), Knob::kCpuBurst) == Strings{"kubepods/burstable/podguaranteed/c0=100000",
                                                       "kubepods/burstable/podguaranteed=100000"});
}

TEST_CASE("pending pods are bursted, succeeded and failed ones are not", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCpuBurstOnly);
  w.addPod("pending", {{1000, 1000}}, KoordQos::kLS, "Pending");
  w.addPod("done", {{1000, 1000}}, KoordQos::kLS, "Succeeded");
  w.addPod("failed", {{1000, 1000}}, KoordQos::kLS, "Failed");
  CpuBurst burst(1);
  CHECK(show(w.run(burst), Knob::kCpuBurst) ==
        Strings{"kubepods/burstable/podpending/c0=100000", "kubepods/burstable/podpending=100000"});
}

TEST_CASE("koordlet's default 1000 percent bursts exactly up to the quota, never above it",
          "[cpu_burst]") {
  CpuBurstConfig c = policy(CpuBurstPolicy::kCpuBurstOnly);  // cpuBurstPercent 1000
  ResourceList limits;
  limits.cpuMilli = 1000;
  CHECK(staticBurstUs(limits, c) == 100000);  // koordlet would write 1,000,000: EINVAL
  limits.cpuMilli = 5;                        // quota at its 1000 µs floor
  CHECK(staticBurstUs(limits, c) == 1000);
  c.cpuBurstPercent = 100;
  limits.cpuMilli = 2500;
  CHECK(staticBurstUs(limits, c) == 250000);
  c.cpuBurstPercent = 10000;
  limits.cpuMilli = std::numeric_limits<int64_t>::max();  // a hostile limit: no overflow
  CHECK(staticBurstUs(limits, c) == 100'000'000);         // no quota to bound it: 100 s
  CHECK(burstWithinQuota(-5, 100000) == 0);
  CHECK(burstWithinQuota(300000, -1) == 300000);  // an unlimited quota bounds nothing
  CHECK(burstWithinQuota(300000, 200000) == 200000);
}

TEST_CASE("a pod's burst stays within the pod's quota, before and after the quota steps",
          "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  // Two 5m containers: each container's quota floors at 1000 µs, but the kubelet
  // gives the pod 10m of quota, 1000 µs, below the sum of the two.
  w.addPod("tiny", {{5, 5}, {5, 5}});
  w.quota(World::podDir("tiny"), 1000);
  w.quota(World::ctrDir("tiny", 0), 1000);
  w.quota(World::ctrDir("tiny", 1), 1000);
  CpuBurst burst(1);
  CHECK(show(w.run(burst), Knob::kCpuBurst) == Strings{"kubepods/burstable/podtiny/c0=1000",
                                                       "kubepods/burstable/podtiny/c1=1000",
                                                       "kubepods/burstable/podtiny=1000"});
  // Unreadable, the pod's quota is taken as the kubelet's for the sum of the limits.
  World u;
  u.config = policy(CpuBurstPolicy::kCpuBurstOnly);
  u.addPod("tiny", {{5, 5}, {5, 5}});
  CHECK(show(u.run(burst), Knob::kCpuBurst) == Strings{"kubepods/burstable/podtiny/c0=1000",
                                                       "kubepods/burstable/podtiny/c1=1000",
                                                       "kubepods/burstable/podtiny=1000"});

  // A pod quota that drops this round bounds the burst too. Two 1-core containers,
  // one at base (100000) and one raised earlier to 150000, in a pod whose quota is
  // 210000; the share pool is overloaded, so the raised one steps down ×0.8 to
  // 120000 and the pod's quota by the same 30000 to 180000.
  World d;
  d.config = policy(CpuBurstPolicy::kAuto);
  d.addPod("web", {{1000, 1000}, {1000, 1000}});
  d.quota(World::podDir("web"), 210000);
  d.quota(World::ctrDir("web", 0), 100000);
  d.quota(World::ctrDir("web", 1), 150000);
  d.snap.nodeCpuAvgCores = 8.0;  // overloaded share pool: scale down x0.8
  BurstResult r = d.run(burst);
  // Bursts 100000 each (sum 200000, under 210000 before); the pod quota drops by
  // 30000 to 180000 this round, so the pod's burst is held to 180000.
  CHECK(show(r) == Strings{"kubepods/burstable/podweb/c0 cpu.cfs_burst_us=100000",
                           "kubepods/burstable/podweb/c1 cpu.cfs_burst_us=100000",
                           "kubepods/burstable/podweb cpu.cfs_burst_us=180000",
                           "kubepods/burstable/podweb/c1 cpu.cfs_quota_us=120000",
                           "kubepods/burstable/podweb cpu.cfs_quota_us=180000"});
  // The kernel's other bound: quota + burst within (2^44 - 1) µs.
  CHECK(burstWithinQuota(100'000'000, (int64_t{1} << 44) - 1 - 5) == 5);
}

TEST_CASE("a container whose cgroup does not exist yet is skipped", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  PodView& pv = w.addPod("web", {{1000, 1000}, {2000, 2000}});
  pv.containers[1].dir = "";
  w.quota(World::podDir("web"), 300000);
  w.quota(World::ctrDir("web", 0), 100000);
  w.throttled(0.5);
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  CHECK(show(r) == Strings{"kubepods/burstable/podweb/c0 cpu.cfs_burst_us=100000",
                           "kubepods/burstable/podweb cpu.cfs_burst_us=100000",
                           "kubepods/burstable/podweb/c0 cpu.cfs_quota_us=120000",
                           "kubepods/burstable/podweb cpu.cfs_quota_us=320000"});
  CHECK(r.metrics.size() == 1);
}

TEST_CASE("a throttled container's quota grows by 1.2 per round up to its ceiling", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCfsQuotaBurstOnly);  // ceiling 300% of base
  w.addPod("web", {{2000, 1000}});
  int64_t pod = 200000;
  int64_t ctr = 200000;
  CpuBurst burst(1);
  std::vector<int64_t> seen;
  for (int round = 0; round < 9; ++round) {
    w.quota(World::podDir("web"), pod);
    w.quota(World::ctrDir("web", 0), ctr);
    w.throttled(0.2);
    BurstResult r = w.run(burst);
    Strings quotas = show(r, Knob::kCpuQuota);
    if (quotas.empty()) break;
    REQUIRE(quotas.size() == 2);
    int64_t next = r.writes[r.writes.size() - 2].value.number;
    CHECK(r.writes.back().value.number == pod + (next - ctr));
    pod += next - ctr;
    ctr = next;
    seen.push_back(ctr);
    w.advance(1s);
  }
  CHECK(seen == std::vector<int64_t>{240000, 288000, 345600, 414720, 497664, 597196, 600000});
  CHECK(pod == 600000);
}

TEST_CASE("an overloaded share pool scales quota down, never below base", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  w.addPod("web", {{2000, 1000}});
  w.addPod("lsr", {{4000, 4000}}, KoordQos::kLSR);  // 8 CPUs - 4 requested = 4 in the pool
  w.addPod("be", {{std::nullopt, std::nullopt}}, KoordQos::kBE);
  w.snap.nodeCpuAvgCores = 5.0;
  w.snap.pods[1].cpuCores = Sample{2.0, w.snap.at};
  w.snap.pods[2].cpuCores = Sample{1.0, w.snap.at};  // pool used = 5 - 2 - 1 = 2 = 50% of 4
  w.throttled(0.5);                                  // overload wins over throttling

  w.quota(World::podDir("web"), 400000);
  w.quota(World::ctrDir("web", 0), 400000);
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  CHECK(r.nodeState == SharePoolState::kOverload);
  CHECK(show(r, Knob::kCpuQuota) ==
        Strings{"kubepods/burstable/podweb/c0=320000", "kubepods/burstable/podweb=320000"});

  w.quota(World::podDir("web"), 210000);
  w.quota(World::ctrDir("web", 0), 210000);
  r = w.run(burst);
  CHECK(show(r, Knob::kCpuQuota) ==
        Strings{"kubepods/burstable/podweb/c0=200000", "kubepods/burstable/podweb=200000"});

  w.quota(World::podDir("web"), 200000);
  w.quota(World::ctrDir("web", 0), 200000);
  r = w.run(burst);
  CHECK(show(r, Knob::kCpuQuota).empty());
}

TEST_CASE("a cooling share pool holds a throttled container's quota", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  w.addPod("web", {{2000, 1000}});
  w.addPod("lsr", {{4000, 4000}}, KoordQos::kLSR);
  w.snap.nodeCpuAvgCores = 3.9;
  w.snap.pods[1].cpuCores = Sample{2.0, w.snap.at};  // pool used 1.9 of 4 = 47.5%
  w.quota(World::podDir("web"), 240000);
  w.quota(World::ctrDir("web", 0), 240000);
  w.throttled(0.5);
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  CHECK(r.nodeState == SharePoolState::kCooling);
  CHECK(show(r, Knob::kCpuQuota).empty());
}

TEST_CASE("share pool state follows the pool's usage ratio", "[cpu_burst]") {
  World w;  // 8 CPUs, one LSE pod requesting 2, one LSR pod requesting 2: pool of 4
  w.addPod("lse", {{2000, 2000}}, KoordQos::kLSE);
  w.addPod("lsr", {{2000, 2000}}, KoordQos::kLSR);
  w.snap.pods[0].cpuCores = Sample{1.0, w.snap.at};
  w.snap.pods[1].cpuCores = Sample{1.0, w.snap.at};
  CpuBurst burst(1);
  auto stateAt = [&](double nodeCores) {
    w.snap.nodeCpuAvgCores = nodeCores;
    return w.run(burst).nodeState;
  };
  CHECK(stateAt(3.0) == SharePoolState::kIdle);       // 1 / 4 = 25%
  CHECK(stateAt(3.9) == SharePoolState::kCooling);    // 47.5%
  CHECK(stateAt(4.1) == SharePoolState::kOverload);   // 52.5%
  CHECK(stateAt(12.0) == SharePoolState::kOverload);  // beyond the pool

  // A stale LSE/LSR usage sample is not subtracted.
  w.snap.pods[0].cpuCores = Sample{1.0, w.snap.at - 3s};
  CHECK(stateAt(3.0) == SharePoolState::kOverload);  // (3 - 1) / 4 = 50%

  // Every CPU requested by LSE/LSR pods: the pool counts as full.
  World full(2);
  full.addPod("lsr", {{2000, 2000}}, KoordQos::kLSR);
  full.snap.nodeCpuAvgCores = 0.1;
  CHECK(full.run(burst).nodeState == SharePoolState::kOverload);
}

TEST_CASE("without node usage the share pool is unknown and quotas hold", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  w.snap.nodeCpuAvgCores.reset();
  w.addPod("web", {{2000, 1000}});
  w.quota(World::podDir("web"), 240000);
  w.quota(World::ctrDir("web", 0), 240000);
  w.throttled(0.5);
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  CHECK(r.nodeState == SharePoolState::kUnknown);
  CHECK(show(r, Knob::kCpuQuota).empty());
  CHECK(show(r, Knob::kCpuBurst).size() == 2);  // static burst does not need node data
}

TEST_CASE("a throttle sample older than two seconds does not scale up", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  PodView& pv = w.addPod("web", {{2000, 1000}});
  w.quota(World::podDir("web"), 200000);
  w.quota(World::ctrDir("web", 0), 200000);
  pv.containers[0].throttledRatio = Sample{0.9, w.snap.at - 3s};
  CpuBurst burst(1);
  CHECK(show(w.run(burst), Knob::kCpuQuota).empty());

  pv.containers[0].throttledRatio = Sample{0.9, w.snap.at - 1500ms};
  CHECK(show(w.run(burst), Knob::kCpuQuota) ==
        Strings{"kubepods/burstable/podweb/c0=240000", "kubepods/burstable/podweb=240000"});
}

TEST_CASE("policies without cfsQuotaBurst reset a raised quota to base", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCpuBurstOnly);
  w.addPod("web", {{2000, 1000}, {1000, 500}});
  w.quota(World::podDir("web"), 700000);
  w.quota(World::ctrDir("web", 0), 480000);
  w.quota(World::ctrDir("web", 1), 100000);  // already at base
  w.throttled(0.5);
  CpuBurst burst(1);
  BurstResult r = w.run(burst);
  CHECK(show(r, Knob::kCpuQuota) ==
        Strings{"kubepods/burstable/podweb/c0=200000", "kubepods/burstable/podweb=420000"});
  REQUIRE(r.metrics.size() == 2);
  CHECK(r.metrics[0].quotaUs == 200000);
  CHECK(!r.metrics[1].quotaUs);

  w.config = policy(CpuBurstPolicy::kNone);
  CHECK(show(w.run(burst), Knob::kCpuQuota) ==
        Strings{"kubepods/burstable/podweb/c0=200000", "kubepods/burstable/podweb=420000"});
}

TEST_CASE("the pod quota follows the deltas of all its containers", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCfsQuotaBurstOnly);
  w.addPod("web", {{1000, 1000}, {2000, 1000}});
  w.quota(World::podDir("web"), 300000);
  w.quota(World::ctrDir("web", 0), 100000);
  w.quota(World::ctrDir("web", 1), 200000);
  w.throttled(0.5);
  CpuBurst burst(1);
  CHECK(show(w.run(burst), Knob::kCpuQuota) == Strings{"kubepods/burstable/podweb/c0=120000",
                                                       "kubepods/burstable/podweb/c1=240000",
                                                       "kubepods/burstable/podweb=360000"});
}

TEST_CASE("the pod quota is only changed when it is positive, and needs to be known",
          "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCfsQuotaBurstOnly);
  w.addPod("web", {{1000, 1000}});
  w.quota(World::ctrDir("web", 0), 100000);
  w.throttled(0.5);
  CpuBurst burst(1);

  // Unknown pod quota: koordlet reads it before touching either, so neither moves.
  CHECK(show(w.run(burst), Knob::kCpuQuota).empty());

  w.quota(World::podDir("web"), -1);
  CHECK(show(w.run(burst), Knob::kCpuQuota) == Strings{"kubepods/burstable/podweb/c0=120000"});

  w.quota(World::podDir("web"), 100000);
  CHECK(show(w.run(burst), Knob::kCpuQuota) ==
        Strings{"kubepods/burstable/podweb/c0=120000", "kubepods/burstable/podweb=120000"});
}

TEST_CASE("an unlimited or unreadable container quota", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  w.addPod("web", {{1000, 1000}, {1000, 1000}});
  w.quota(World::podDir("web"), 200000);
  w.quota(World::ctrDir("web", 0), -1);  // lands on base, as koordlet steps from -1
  // c1's quota is unreadable: skipped this round.
  CpuBurst burst(1);
  CHECK(show(w.run(burst), Knob::kCpuQuota) ==
        Strings{"kubepods/burstable/podweb/c0=100000", "kubepods/burstable/podweb=300001"});
}

TEST_CASE("the limiter denies bursting after sustained use above the limit, then recovers",
          "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCfsQuotaBurstOnly);
  w.config.cfsQuotaBurstPeriodSeconds = 10;  // capacity 10 × (300 - 100) = 2000
  w.addPod("web", {{1000, 1000}});           // base 100000, ceiling 300000
  w.quota(World::podDir("web"), 200000);
  w.quota(World::ctrDir("web", 0), 200000);
  CpuBurst burst(7);
  auto round = [&](double usageCores) {
    w.advance(1s);
    w.throttled(0.5);
    w.containerUsage("web", 0, usageCores);
    Strings q = show(w.run(burst), Knob::kCpuQuota);
    REQUIRE(q.size() == 2);
    return q[0];
  };
  const std::string up = "kubepods/burstable/podweb/c0=240000";
  const std::string down = "kubepods/burstable/podweb/c0=160000";

  // The first round creates the bucket part full, at random.
  (void)round(1.0);
  // Idle for 20 s: +100 tokens a second fills the bucket whatever its random start.
  for (int i = 0; i < 20; ++i) CHECK(round(0.0) == up);
  CHECK(burst.limiterCount() == 1);
  // 300% of the limit spends 200 a second: empty after 10 s.
  for (int i = 0; i < 9; ++i) CHECK(round(3.0) == up);
  CHECK(round(3.0) == down);  // 0 tokens
  CHECK(round(3.0) == down);  // -200
  CHECK(round(0.8) == down);  // 80%: neither earns nor spends
  CHECK(round(0.2) == down);  // 20%: +80 -> -120
  CHECK(round(0.2) == down);  // -40
  CHECK(round(0.2) == up);    // +40
}

TEST_CASE("the limiter's bucket is bounded below by minus its capacity", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCfsQuotaBurstOnly);
  w.config.cfsQuotaBurstPeriodSeconds = 1;  // capacity 200
  w.addPod("web", {{1000, 1000}});
  w.quota(World::podDir("web"), 200000);
  w.quota(World::ctrDir("web", 0), 200000);
  CpuBurst burst(3);
  auto round = [&](std::chrono::nanoseconds step, double usageCores) {
    w.advance(step);
    w.throttled(0.5);
    w.containerUsage("web", 0, usageCores);
    return show(w.run(burst), Knob::kCpuQuota).at(0);
  };
  round(0s, 1.0);
  CHECK(round(100s, 5.0) == "kubepods/burstable/podweb/c0=160000");    // far below, clamped -200
  CHECK(round(1s, 0.7) == "kubepods/burstable/podweb/c0=160000");      // 70%: no change
  CHECK(round(1s, 0.0) == "kubepods/burstable/podweb/c0=160000");      // -100
  CHECK(round(1500ms, 0.0) == "kubepods/burstable/podweb/c0=240000");  // +50
}

TEST_CASE("a limiter not used for twice its period is dropped, a vanished container's at once",
          "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCfsQuotaBurstOnly);
  w.config.cfsQuotaBurstPeriodSeconds = 10;
  w.addPod("web", {{1000, 1000}});
  w.addPod("api", {{1000, 1000}});
  for (const char* pod : {"web", "api"}) {
    w.quota(World::podDir(pod), 100000);
    w.quota(World::ctrDir(pod, 0), 100000);
  }
  CpuBurst burst(1);
  (void)w.run(burst);
  CHECK(burst.limiterCount() == 2);

  // web finishes (still listed, no longer evaluated); api's pod disappears.
  w.pods.front().phase = "Succeeded";
  w.snap.pods.pop_back();
  w.advance(1s);
  (void)w.run(burst);
  CHECK(burst.limiterCount() == 1);
  w.advance(19s);  // 20 s since web's last use: not yet past 2 × period
  (void)w.run(burst);
  CHECK(burst.limiterCount() == 1);
  w.advance(1s);
  (void)w.run(burst);
  CHECK(burst.limiterCount() == 0);
}

TEST_CASE("without a burst period there is no limiter", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCfsQuotaBurstOnly);
  w.addPod("web", {{1000, 1000}});
  w.quota(World::podDir("web"), 100000);
  w.quota(World::ctrDir("web", 0), 100000);
  w.containerUsage("web", 0, 5.0);
  w.throttled(0.5);
  CpuBurst burst(1);
  CHECK(show(w.run(burst), Knob::kCpuQuota).size() == 2);
  CHECK(burst.limiterCount() == 0);
}

TEST_CASE("a burst period of zero denies bursting at once", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kCfsQuotaBurstOnly);
  w.config.cfsQuotaBurstPeriodSeconds = 0;
  w.addPod("web", {{2000, 1000}});
  w.quota(World::podDir("web"), 400000);
  w.quota(World::ctrDir("web", 0), 400000);
  w.throttled(0.5);
  CpuBurst burst(1);
  CHECK(show(w.run(burst), Knob::kCpuQuota) ==
        Strings{"kubepods/burstable/podweb/c0=320000", "kubepods/burstable/podweb=320000"});
}

TEST_CASE("disabled burst writes nothing and reports nothing", "[cpu_burst]") {
  World w;
  w.config = policy(CpuBurstPolicy::kAuto);
  w.config.cfsQuotaBurstPeriodSeconds = 10;
  w.addPod("web", {{1000, 1000}});
  w.quota(World::podDir("web"), 100000);
  w.quota(World::ctrDir("web", 0), 100000);
  w.throttled(0.5);
  CpuBurst burst(1);
  BurstResult r = w.run(burst, false);
  CHECK(r.writes.empty());
  CHECK(r.metrics.empty());
  CHECK(r.errors.empty());
  CHECK(burst.limiterCount() == 0);
}

TEST_CASE("share pool states have names", "[cpu_burst]") {
  CHECK(std::string(toString(SharePoolState::kUnknown)) == "unknown");
  CHECK(std::string(toString(SharePoolState::kIdle)) == "idle");
  CHECK(std::string(toString(SharePoolState::kCooling)) == "cooling");
  CHECK(std::string(toString(SharePoolState::kOverload)) == "overload");
}

}  // namespace test_qos_cpu_burst
