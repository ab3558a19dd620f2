#include <catch2/catch.hpp>
#include <iostream>
#include <sstream>

#include "base/log.h"
#include "metrics/pod_collector.h"
#include "tests/support/temp_tree.h"

namespace test_metrics_pod_collector {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

struct QuietLog {
  explicit QuietLog(const Clock& clock) { Logger::setGlobal(out, clock, 0); }
  ~QuietLog() {
    static SystemClock system;  // must outlive this object: the logger keeps it
    Logger::setGlobal(std::cerr, system, 0);
  }
  std::ostringstream out;
};

const char* kUid = "7a96c459-d529-44ae-9f99-90d3798d6426";
const std::string kCid(64, 'c');

Pod makePod(KoordQos qos, KubeQos kube, const std::string& uid, const std::string& cid) {
  Pod p;
  p.uid = uid;
  p.ns = "ns";
  p.name = "pod-" + uid.substr(0, 4);
  p.kubeQos = kube;
  p.koordQos = qos;
  p.phase = "Running";
  Container c;
  c.name = "main";
  c.runtime = "containerd";
  c.id = cid;
  p.containers.push_back(c);
  return p;
}

std::string memoryStatV1(uint64_t anon) {
  return "cache 999999\nrss " + std::to_string(anon) +
         "\ntotal_cache 999999\ntotal_inactive_anon " + std::to_string(anon / 2) +
         "\ntotal_active_anon " + std::to_string(anon / 2) + "\ntotal_unevictable 4096\n";
}

std::string cpuStatV1(uint64_t periods, uint64_t throttled) {
  return "nr_periods " + std::to_string(periods) + "\nnr_throttled " + std::to_string(throttled) +
         "\nthrottled_time 12345\n";
}

// A v1 tree with cgroupfs driver: one burstable pod with one container, and the
// besteffort QoS dir.
struct V1Node {
  V1Node() : layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs) {
    podDir = layout.podDir(KubeQos::kBurstable, kUid);
    containerDir = *layout.containerDir(podDir, "containerd", kCid);
    beDir = layout.qosDir(KubeQos::kBestEffort);
    set(0, 0, 0, 0);
    tree.write("memory/" + podDir + "/memory.stat", memoryStatV1(1 << 20));
    tree.write("memory/" + containerDir + "/memory.stat", memoryStatV1(1 << 19));
    tree.write("cpuset/" + beDir + "/cpuset.cpus", "0-3\n");
    tree.write("cpu/" + beDir + "/cpu.cfs_quota_us", "-1\n");
    tree.write("cpu/" + beDir + "/cpu.cfs_period_us", "100000\n");
  }
  // Cumulative counters: pod and container CPU ns, throttling, BE dir ns.
  void set(uint64_t podNs, uint64_t containerNs, uint64_t periods, uint64_t throttled) {
    tree.write("cpuacct/" + podDir + "/cpuacct.usage", std::to_string(podNs) + "\n");
    tree.write("cpuacct/" + containerDir + "/cpuacct.usage", std::to_string(containerNs) + "\n");
    tree.write("cpu/" + podDir + "/cpu.stat", cpuStatV1(periods, throttled));
    tree.write("cpu/" + containerDir + "/cpu.stat", cpuStatV1(periods, throttled));
    tree.write("cpuacct/" + beDir + "/cpuacct.usage", std::to_string(podNs / 4) + "\n");
  }
  test::TempTree tree;
  CgroupLayout layout;
  std::string podDir, containerDir, beDir;
};

PodCollector::Config configFor(const test::TempTree& tree) {
  PodCollector::Config c;
  c.cgroupRoot = tree.path();
  return c;
}

}  // namespace

TEST_CASE("pod and container cpu cores come from cpuacct.usage deltas on the injected clock",
          "[pod_collector]") {
  ManualClock clock;
  QuietLog quiet(clock);
  V1Node node;
  PodCollector collector(configFor(node.tree), node.layout, clock);
  std::vector<Pod> pods{makePod(KoordQos::kLS, KubeQos::kBurstable, kUid, kCid)};

  auto first = collector.collect(pods, nullptr);
  REQUIRE(first.errors.empty());
  REQUIRE(first.sample.pods.size() == 1);
  CHECK_FALSE(first.sample.pods[0].usage.cpuCores.has_value());  // one sample: no rate yet

  clock.advance(2s);
  node.set(3'000'000'000, 1'000'000'000, 20, 5);  // 1.5 and 0.5 cores over 2 s
  auto second = collector.collect(pods, nullptr);
  REQUIRE(second.errors.empty());
  const PodUsage& pu = second.sample.pods[0];
  CHECK(*pu.usage.cpuCores == Approx(1.5));
  REQUIRE(pu.containers.size() == 1);
  CHECK(pu.containers[0].id == "containerd://" + kCid);
  CHECK(*pu.containers[0].usage.cpuCores == Approx(0.5));
  CHECK(*pu.usage.throttledRatio == Approx(0.25));  // 5 of 20 periods
  // Memory without page cache: inactive + active anon + unevictable.
  CHECK(*pu.usage.memoryBytes == (1u << 20) + 4096);
  CHECK(*pu.containers[0].usage.memoryBytes == (1u << 19) + 4096);
  // This memory.stat has no file keys: no memory with page cache, and no error.
  CHECK_FALSE(pu.usage.memoryWithPageCacheBytes.has_value());
}

TEST_CASE("memory with page cache adds the file pages of the same memory.stat read",
          "[pod_collector]") {
  ManualClock clock;
  QuietLog quiet(clock);
  V1Node node;
  node.tree.write("memory/" + node.podDir + "/memory.stat",
                  memoryStatV1(1 << 20) + "total_active_file 3000\ntotal_inactive_file 5000\n");
  PodCollector collector(configFor(node.tree), node.layout, clock);
  std::vector<Pod> pods{makePod(KoordQos::kLS, KubeQos::kBurstable, kUid, kCid)};
  auto out = collector.collect(pods, nullptr);
  REQUIRE(out.errors.empty());
  const PodUsage& pu = out.sample.pods.at(0);
  CHECK(*pu.usage.memoryBytes == (1u << 20) + 4096);
  CHECK(*pu.usage.memoryWithPageCacheBytes == (1u << 20) + 4096 + 8000);
}

TEST_CASE("a pod whose cgroup vanishes mid-collection is dropped without an error",
          "[pod_collector]") {
  ManualClock clock;
  QuietLog quiet(clock);
  V1Node node;
  PodCollector collector(configFor(node.tree), node.layout, clock);
  std::vector<Pod> pods{makePod(KoordQos::kLS, KubeQos::kBurstable, kUid, kCid),
                        makePod(KoordQos::kLS, KubeQos::kBurstable,
                                "00000000-0000-0000-0000-000000000001", std::string(64, 'd'))};
  collector.collect(pods, nullptr);
  size_t before = collector.stateEntries();
  node.tree.remove("cpuacct/" + node.podDir);  // deleted between rounds
  clock.advance(1s);
  auto out = collector.collect(pods, nullptr);
  CHECK(out.errors.empty());
  CHECK(out.sample.pods.empty());  // neither pod has a cgroup now
  CHECK(collector.stateEntries() < before);
  CHECK(quiet.out.str().empty());
}

TEST_CASE("the owners' version changes only when the pods and containers sampled change",
          "[pod_collector]") {
  ManualClock clock;
  QuietLog quiet(clock);
  V1Node node;
  PodCollector collector(configFor(node.tree), node.layout, clock);
  Pod pod = makePod(KoordQos::kLS, KubeQos::kBurstable, kUid, kCid);
  std::vector<Pod> pods{pod};
  auto round = [&] {
    clock.advance(1s);
    return collector.collect(pods, nullptr).sample.ownersVersion;
  };
  const uint64_t first = round();
  CHECK(round() == first);  // the same pod and container, read again
  node.set(1'000'000'000, 1'000'000'000, 10, 1);
  CHECK(round() == first);  // new values are no new owners

  // A container the pod lists with no cgroup yet: not sampled, no change.
  Container pending = pod.containers[0];
  pending.name = "sidecar";
  pending.id = std::string(64, 'f');
  pods[0].containers.push_back(pending);
  CHECK(round() == first);
  // Its cgroup appears: sampled, a new version; then steady.
  const std::string sidecarDir = *node.layout.containerDir(node.podDir, "containerd", pending.id);
  node.tree.write("cpuacct/" + sidecarDir + "/cpuacct.usage", "0\n");
  node.tree.write("memory/" + sidecarDir + "/memory.stat", memoryStatV1(4096));
  node.tree.write("cpu/" + sidecarDir + "/cpu.stat", cpuStatV1(0, 0));
  const uint64_t withSidecar = round();
  CHECK(withSidecar != first);
  CHECK(round() == withSidecar);
  // It goes (the kubelet still lists it): a new version.
  node.tree.remove("cpuacct/" + sidecarDir);
  const uint64_t without = round();
  CHECK(without != withSidecar);
  CHECK(round() == without);
  // The pod leaves the list: a new version.
  pods.clear();
  CHECK(round() != without);
}

TEST_CASE("a malformed cgroup file is an error naming the file", "[pod_collector]") {
  ManualClock clock;
  QuietLog quiet(clock);
  V1Node node;
  node.tree.write("memory/" + node.containerDir + "/memory.stat", "total_active_anon x\n");
  PodCollector collector(configFor(node.tree), node.layout, clock);
  std::vector<Pod> pods{makePod(KoordQos::kLS, KubeQos::kBurstable, kUid, kCid)};
  auto out = collector.collect(pods, nullptr);
  REQUIRE(out.errors.size() == 1);
  CHECK(out.errors[0].message.rfind(node.tree.path("memory/" + node.containerDir), 0) == 0);
  REQUIRE(out.sample.pods.size() == 1);
  REQUIRE(out.sample.pods[0].containers.size() == 1);
  CHECK_FALSE(out.sample.pods[0].containers[0].usage.memoryBytes.has_value());
}

TEST_CASE("the BE aggregate sums batch-cpu requests and takes the smallest cpuset and quota",
          "[pod_collector]") {
  ManualClock clock;
  QuietLog quiet(clock);
  V1Node node;
  const std::string beUid = "be000000-0000-0000-0000-000000000001";
  const std::string beCid(64, 'e');
  Pod be = makePod(KoordQos::kBE, KubeQos::kBestEffort, beUid, beCid);
  be.containers[0].requests.batchCpuMilli = 1500;
  const std::string beContainer = *node.layout.containerDir(
      node.layout.podDir(KubeQos::kBestEffort, beUid), "containerd", beCid);
  node.tree.write("cpuset/" + beContainer + "/cpuset.cpus", "2-3\n");  // 2 CPUs: the smallest
  // The BE pod's own usage (its container's is not there: its cpuset counts all the same).
  const std::string bePod = node.layout.podDir(KubeQos::kBestEffort, beUid);
  node.tree.write("cpuacct/" + bePod + "/cpuacct.usage", "0\n");
  node.tree.write("memory/" + bePod + "/memory.stat", memoryStatV1(4096));
  node.tree.write("cpu/" + bePod + "/cpu.stat", cpuStatV1(0, 0));
  std::vector<Pod> pods{makePod(KoordQos::kLS, KubeQos::kBurstable, kUid, kCid), be};
  PodCollector collector(configFor(node.tree), node.layout, clock);

  collector.collect(pods, nullptr);
  clock.advance(1s);
  node.set(2'000'000'000, 0, 0, 0);  // BE dir: 500 ms in 1 s
  auto out = collector.collect(pods, nullptr);
  CHECK(out.sample.be.requestMilli == Approx(1500));
  REQUIRE(out.sample.be.usageMilli.has_value());
  CHECK(*out.sample.be.usageMilli == Approx(500));
  REQUIRE(out.sample.be.realLimitMilli.has_value());
  CHECK(*out.sample.be.realLimitMilli == Approx(2000));

  // A quota of 1.5 cores on the besteffort dir is now the tighter bound.
  node.tree.write("cpu/" + node.beDir + "/cpu.cfs_quota_us", "150000\n");
  clock.advance(1s);
  out = collector.collect(pods, nullptr);
  CHECK(*out.sample.be.realLimitMilli == Approx(1500));
}

TEST_CASE("system usage is node usage minus pods, clamped at zero, only from a fresh node sample",
          "[pod_collector]") {
  ManualClock clock;
  QuietLog quiet(clock);
  V1Node node;
  PodCollector collector(configFor(node.tree), node.layout, clock);
  std::vector<Pod> pods{makePod(KoordQos::kLS, KubeQos::kBurstable, kUid, kCid)};
  collector.collect(pods, nullptr);
  clock.advance(1s);
  node.set(1'000'000'000, 0, 0, 0);  // the pod used 1 core

  NodeSample ns;
  ns.at = clock.now();
  ns.cpuUsedCores = 3.0;
  MemInfo mem;
  mem.memTotalBytes = 100 << 20;
  mem.memAvailableBytes = 50 << 20;
  ns.memory = mem;
  auto out = collector.collect(pods, &ns);
  REQUIRE(out.sample.systemCpuCores.has_value());
  CHECK(*out.sample.systemCpuCores == Approx(2.0));
  REQUIRE(out.sample.systemMemoryBytes.has_value());
  CHECK(*out.sample.systemMemoryBytes == Approx((50 << 20) - (1 << 20) - 4096));

  ns.cpuUsedCores = 0.5;  // less than the pods: clamped
  clock.advance(1s);
  ns.at = clock.now();
  node.set(2'000'000'000, 0, 0, 0);
  out = collector.collect(pods, &ns);
  CHECK(*out.sample.systemCpuCores == 0.0);

  clock.advance(11s);  // the node sample is now older than 10 s
  node.set(3'000'000'000, 0, 0, 0);
  out = collector.collect(pods, &ns);
  CHECK_FALSE(out.sample.systemCpuCores.has_value());
}

TEST_CASE("on cgroup v2 with systemd, usage comes from cpu.stat usage_usec and PSI is read",
          "[pod_collector]") {
  ManualClock clock;
  QuietLog quiet(clock);
  CgroupLayout layout(CgroupVersion::kV2, CgroupDriver::kSystemd);
  const std::string podDir = layout.podDir(KubeQos::kBurstable, kUid);
  const std::string cDir = *layout.containerDir(podDir, "containerd", kCid);
  test::TempTree tree;
  const char* pressure =
      "some avg10=1.00 avg60=2.00 avg300=3.00 total=100\nfull avg10=0.50 avg60=0.25 avg300=0.00 "
      "total=50\n";
  auto write = [&](uint64_t usec) {
    for (const std::string& d : {podDir, cDir}) {
      tree.write(d + "/cpu.stat", "usage_usec " + std::to_string(usec) +
                                      "\nuser_usec 1\nsystem_usec 1\nnr_periods 10\n"
                                      "nr_throttled 0\nthrottled_usec 0\n");
      tree.write(d + "/memory.stat",
                 "anon 1\nfile 99\ninactive_anon 100\nactive_anon 200\n"
                 "unevictable 0\n");
      for (const char* f : {"cpu.pressure", "memory.pressure", "io.pressure"}) {
        tree.write(d + "/" + f, pressure);
      }
    }
  };
  write(0);
  tree.write(layout.kubeRootDir() + "/cpu.pressure", pressure);
  PodCollector::Config config = configFor(tree);
  config.psiEnabled = true;
  PodCollector collector(config, layout, clock);
  std::vector<Pod> pods{makePod(KoordQos::kLS, KubeQos::kBurstable, kUid, kCid)};

  collector.collect(pods, nullptr);
  CHECK(collector.psiSupport() == Support::kSupported);
  clock.advance(1s);
  write(250'000);  // 0.25 cores
  auto out = collector.collect(pods, nullptr);
  INFO((out.errors.empty() ? std::string() : out.errors[0].message));
  REQUIRE(out.sample.pods.size() == 1);
  const auto& u = out.sample.pods[0].containers.at(0).usage;
  CHECK(*u.cpuCores == Approx(0.25));
  CHECK(*u.memoryBytes == 300);
  CHECK(*u.throttledRatio == 0.0);
  // PSI is read on the first round, then every psi interval (10 s), not every round.
  CHECK_FALSE(u.pressure[0].has_value());
  clock.advance(10s);
  write(500'000);
  out = collector.collect(pods, nullptr);
  const auto& later = out.sample.pods[0].containers.at(0).usage;
  REQUIRE(later.pressure[0].has_value());
  CHECK(later.pressure[0]->some.avg10 == Approx(1.0));
  CHECK(later.pressure[1]->full->avg10 == Approx(0.5));
}

TEST_CASE("without kernel PSI at the kubepods root, pod PSI is logged once and skipped",
          "[pod_collector]") {
  ManualClock clock;
  QuietLog log(clock);
  V1Node node;  // vanilla v1: no cpuacct/kubepods/cpu.pressure
  PodCollector::Config config = configFor(node.tree);
  config.psiEnabled = true;
  PodCollector collector(config, node.layout, clock);
  std::vector<Pod> pods{makePod(KoordQos::kLS, KubeQos::kBurstable, kUid, kCid)};
  for (int i = 0; i < 3; ++i) {
    auto out = collector.collect(pods, nullptr);
    CHECK(out.errors.empty());
    clock.advance(10s);
  }
  CHECK(collector.psiSupport() == Support::kUnsupported);
  std::string logged = log.out.str();
  CHECK(std::count(logged.begin(), logged.end(), '\n') == 1);
  CHECK(logged.find("Anolis") != std::string::npos);
}

TEST_CASE("on cgroup v2 the BE cpuset limit counts the CPUs in force, not those asked for",
          "[pod_collector]") {
  ManualClock clock;
  QuietLog quiet(clock);
  CgroupLayout layout(CgroupVersion::kV2, CgroupDriver::kSystemd);
  const std::string beDir = layout.qosDir(KubeQos::kBestEffort);
  const std::string beUid = "be000000-0000-0000-0000-000000000001";
  const std::string beCid(64, 'e');
  const std::string beContainer =
      *layout.containerDir(layout.podDir(KubeQos::kBestEffort, beUid), "containerd", beCid);
  test::TempTree tree;
  tree.write(beDir + "/cpu.max", "max 100000\n");
  // The besteffort dir asks for CPUs 8-9, none in its parent's set: it runs on 0-3.
  tree.write(beDir + "/cpuset.cpus", "8-9\n");
  tree.write(beDir + "/cpuset.cpus.effective", "0-3\n");
  // The BE pod's usage files; the container inherits (asks for nothing) and runs on 0-2.
  const std::string bePod = layout.podDir(KubeQos::kBestEffort, beUid);
  tree.write(bePod + "/cpu.stat", "usage_usec 0\nnr_periods 0\nnr_throttled 0\n");
  tree.write(bePod + "/memory.stat", "inactive_anon 0\nactive_anon 0\nunevictable 0\n");
  tree.write(beContainer + "/cpuset.cpus", "\n");
  tree.write(beContainer + "/cpuset.cpus.effective", "0-2\n");
  Pod be = makePod(KoordQos::kBE, KubeQos::kBestEffort, beUid, beCid);
  PodCollector collector(configFor(tree), layout, clock);

  auto out = collector.collect({be}, nullptr);
  REQUIRE(out.sample.be.realLimitMilli.has_value());
  CHECK(*out.sample.be.realLimitMilli == Approx(3000));
  // Narrowing what is in force narrows the limit, whatever the dir asks for.
  tree.write(beContainer + "/cpuset.cpus.effective", "0-1\n");
  clock.advance(1s);
  out = collector.collect({be}, nullptr);
  CHECK(*out.sample.be.realLimitMilli == Approx(2000));
}

}  // namespace test_metrics_pod_collector
