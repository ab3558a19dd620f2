// Memory QoS end to end on a real cgroup v2 kernel (Debian 6.1 and 6.12 under the
// QEMU rig, tests/rig/run.sh): MemoryQosPlanner with the support the kernel's probe
// reports, and the real Executor with an audit log, over rounds that enable, raise,
// lower, add and remove pods and disable classes, in a private kubepods tree (systemd
// names) with +memory delegated at every level.
//
// What it shows, per kernel:
//   - every write is accepted (no EINVAL/EACCES/other errors) and reads back the
//     intended value, page-rounded; memory.oom.group is accepted;
//   - the Alinux-only knobs (wmark, priority, use_priority_oom) are absent, so the
//     strategy never emits them and the soft limit (v1 only) has no v2 file at all;
//   - "a child never exceeds its parent" for memory.min and memory.low, after EVERY
//     write: the v2 kernel accepts a child above its parent (it only clips the child's
//     effective protection), so the order can only be shown from the write sequence.
//     The test replays each round's audit log over the values read before the round
//     and checks every parent/child pair of the tree after each line. The kubepods
//     root is the top of the check: its parent here is the test's private dir, which
//     stands in for the root cgroup (no memory.min/low file on a real node).
// memory.high is deliberately not checked parent-over-child: it is a throttle, not a
// protection, a child's high above its parent's is meaningful (the parent's applies to
// the subtree), and koordlet writes it on containers only, so no written pair exists.
// The targets themselves keep child <= parent only while lowLimitPercent >=
// minLimitPercent (or low is 0): a pod's low is raised to its min, but koordlet sums
// the QoS dirs' low from the raw percent (kept, see qos/memory_qos.h); the rounds
// below use low >= min, the configuration koordinator documents.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/read_file.h"
#include "cgroupfs/executor.h"
#include "qos/memory_qos.h"
#include "tests/support/cgroup_v2_dirs.h"
#include "tests/support/kernel_io.h"
#include "tests/support/log_capture.h"
#include "tests/support/skip.h"

namespace test_rig_memory_qos_v2_kernel {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr CgroupVersion kV2 = CgroupVersion::kV2;
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kPage = 4096;

#define REQUIRE_KERNEL()                                       \
  do {                                                         \
    const std::string why = test::cgroupV2UnavailableReason(); \
    if (!why.empty()) KOORDLET_SKIP(why);                      \
  } while (0)

using test::kCgroupV2Root;
using test::rawWrite;
using test::readTrimmed;

struct Spec {
  int64_t request;
  std::optional<int64_t> limit;
};

// A kubepods tree whose pods come and go: koordlet-memrig-<pid>/kubepods.slice with
// the burstable and besteffort slices, guaranteed pods directly under kubepods.slice.
// Every dir but the containers delegates +memory. Removed deepest first at the end.
class Cluster {
 public:
  Cluster()
      : prefix_("koordlet-memrig-" + std::to_string(::getpid())),
        layout_(kV2, CgroupDriver::kSystemd, prefix_) {
    REQUIRE(rawWrite(kCgroupV2Root + "/cgroup.subtree_control", "+memory") == 0);
    dirs_.make(prefix_, "+memory");
    for (KubeQos q : {KubeQos::kGuaranteed, KubeQos::kBurstable, KubeQos::kBestEffort}) {
      dirs_.make(layout_.qosDir(q), "+memory");
      parent_[layout_.qosDir(q)] = q == KubeQos::kGuaranteed ? "" : layout_.kubeRootDir();
    }
  }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  const CgroupLayout& layout() const { return layout_; }

  // Creates the pod's dirs (as the kubelet would) and returns its index.
  size_t add(const std::string& uid, KoordQos label, KubeQos kube, std::vector<Spec> specs) {
    Pod& pod = pods_.emplace_back();
    pod.uid = uid;
    pod.ns = "default";
    pod.name = uid.substr(0, 8);
    pod.koordQos = label;
    pod.kubeQos = kube;
    pod.phase = "Running";
    for (size_t i = 0; i < specs.size(); ++i) {
      Container& c = pod.containers.emplace_back();
      c.name = "c" + std::to_string(i);
      c.runtime = "containerd";
      c.id = uid.substr(0, 8) + "0c" + std::to_string(i);
      auto& req = label == KoordQos::kBE ? c.requests.batchMemoryBytes : c.requests.memoryBytes;
      auto& lim = label == KoordQos::kBE ? c.limits.batchMemoryBytes : c.limits.memoryBytes;
      req = specs[i].request;
      lim = specs[i].limit;
    }
    present_.push_back(true);
    const std::string podDir = layout_.podDir(kube, uid);
    dirs_.make(podDir, "+memory");
    parent_[podDir] = layout_.qosDir(kube);
    for (const Container& c : pod.containers) {
      auto dir = layout_.containerDir(podDir, c.runtime, c.id);
      REQUIRE(dir.ok());
      dirs_.make(*dir);
      parent_[*dir] = podDir;
    }
    return pods_.size() - 1;
  }

  // The pod is deleted: its dirs go, deepest first, and it leaves the pod list.
  void remove(size_t i) {
    const Pod& pod = pods_[i];
    const std::string podDir = layout_.podDir(pod.kubeQos, pod.uid);
    for (const Container& c : pod.containers) {
      const std::string dir = *layout_.containerDir(podDir, c.runtime, c.id);
      dirs_.remove(dir);
      parent_.erase(dir);
    }
    dirs_.remove(podDir);
    parent_.erase(podDir);
    present_[i] = false;
  }

  QosSnapshot snapshot() const {
    QosSnapshot snap;
    for (size_t i = 0; i < pods_.size(); ++i) {
      if (!present_[i]) continue;
      const Pod& pod = pods_[i];
      PodView view;
      view.pod = &pod;
      view.qos = pod.qosWithDefault();
      view.dir = layout_.podDir(pod.kubeQos, pod.uid);
      for (const Container& c : pod.containers) {
        ContainerView cv;
        cv.container = &c;
        cv.id = "containerd://" + c.id;
        cv.dir = *layout_.containerDir(view.dir, c.runtime, c.id);
        view.containers.push_back(std::move(cv));
      }
      snap.pods.push_back(std::move(view));
    }
    return snap;
  }

  // dir -> parent dir, for every dir of the tree from the kubepods root down ("" for
  // the root: the top of the parent/child check).
  const std::map<std::string, std::string>& parents() const { return parent_; }
  std::string file(const std::string& dir, const char* f) const {
    return test::CgroupV2Dirs::file(dir, f);
  }

 private:
  std::string prefix_;
  CgroupLayout layout_;
  std::deque<Pod> pods_;
  std::vector<bool> present_;
  std::map<std::string, std::string> parent_;
  test::CgroupV2Dirs dirs_;
};

MemoryQos block(int64_t minPct, int64_t lowPct, int64_t throttlingPct, int64_t oomGroup = 0) {
  MemoryQos m;
  m.enable = true;
  m.minLimitPercent = minPct;
  m.lowLimitPercent = lowPct;
  m.throttlingPercent = throttlingPct;
  m.oomKillGroup = oomGroup;
  return m;
}
MemoryQos disabled() { return MemoryQos{}; }  // enable false: the none values

ResourceQosStrategy config(MemoryQos lsr, MemoryQos ls, MemoryQos be) {
  ResourceQosStrategy q;
  q.lsr.memory = lsr;
  q.ls.memory = ls;
  q.be.memory = be;
  return q;
}

using Values = std::map<std::string, int64_t>;  // dir -> value, of one knob

struct Rig : test::LogCapture {
  explicit Rig(Cluster& c)
      : cluster(c),
        audit("/tmp/koordlet-memqos-audit-" + std::to_string(::getpid()) + ".log"),
        support(KnobSupport::probe(kCgroupV2Root, c.layout())),
        exec(makeConfig(audit), c.layout(), support, clock, failures),
        strategy(c.layout()) {}

  static ExecutorConfig makeConfig(const std::string& auditPath) {
    ExecutorConfig config;
    config.cgroupRoot = kCgroupV2Root;
    config.auditPath = auditPath;
    config.pageSize = kPage;
    return config;
  }

  Values read(Knob knob) const {
    Values out;
    for (const auto& [dir, parent] : cluster.parents()) {
      auto v = parseKnob(knob, kV2, readTrimmed(cluster.file(dir, knobSpec(knob).v2File)) + "\n");
      REQUIRE(v.ok());
      out[dir] = v->number;
    }
    return out;
  }

  // Child <= parent for every pair of the tree; returns the offending pairs.
  std::vector<std::string> violations(const Values& values) const {
    std::vector<std::string> out;
    for (const auto& [dir, parent] : cluster.parents()) {
      if (parent.empty()) continue;
      if (values.at(dir) > values.at(parent)) {
        out.push_back(dir + " " + std::to_string(values.at(dir)) + " > parent " +
                      std::to_string(values.at(parent)));
      }
    }
    return out;
  }

  // One round: the strategy's writes applied, every one accepted and read back, and
  // the audit log replayed write by write over the values read before the round.
  struct Replay {
    size_t writes = 0;  // min/low writes replayed
    // Violations the same writes would cause in reverse order: shows the order is
    // what keeps the invariant (and that the check can fail).
    size_t reversedViolations = 0;
  };
  Replay round(const ResourceQosStrategy& cfg) {
    MemoryQosOptions o;
    o.enabled = true;
    o.pageSize = kPage;
    o.nodeAllocatableMemory = 384 * kMiB;
    o.support = support;
    const MemoryQosResult r = strategy.run(cluster.snapshot(), cfg, o);
    CHECK(r.errors.empty());
    REQUIRE_FALSE(r.writes.empty());
    for (const CgroupWrite& w : r.writes) {
      INFO(w.dir << " " << knobSpec(w.knob).name);
      CHECK(support.has(w.knob));
    }

    std::map<Knob, Values> state = {{Knob::kMemoryMin, read(Knob::kMemoryMin)},
                                    {Knob::kMemoryLow, read(Knob::kMemoryLow)}};
    for (auto& [knob, values] : state) {
      INFO("before the round, " << knobSpec(knob).name);
      CHECK(violations(values).empty());
    }
    fs::remove(audit);

    const ExecutorStats s = exec.apply(r.writes);
    CHECK(s.invalid == 0);
    CHECK(s.failed == 0);
    CHECK(s.denied == 0);
    CHECK(s.unsupported == 0);
    CHECK(s.vanished == 0);
    CHECK(s.refused == 0);
    CHECK(failures.activeStreaks() == 0);

    for (const CgroupWrite& w : r.writes) {
      const std::string path = cluster.file(w.dir, knobSpec(w.knob).v2File);
      int64_t want = w.value.number;
      if (want > 0 && (w.knob == Knob::kMemoryMin || w.knob == Knob::kMemoryLow ||
                       w.knob == Knob::kMemoryHigh)) {
        want -= want % kPage;
      }
      const std::string text = readTrimmed(path);
      INFO(path << " holds \"" << text << "\"");
      auto got = parseKnob(w.knob, kV2, text + "\n");
      REQUIRE(got.ok());
      CHECK(got->number == want);
    }

    // Replay: after every min/low write, no child above its parent.
    const std::map<Knob, Values> before = state;
    std::vector<std::tuple<Knob, std::string, int64_t>> events;
    Replay replay;
    size_t lines = 0;
    std::ifstream in(audit);
    for (std::string line; std::getline(in, line);) {
      ++lines;
      const nlohmann::json e = nlohmann::json::parse(line);
      const std::string path = e.at("path").get<std::string>();
      const std::string prefix = kCgroupV2Root + "/";
      REQUIRE(path.rfind(prefix, 0) == 0);
      const std::string rel = path.substr(prefix.size());
      const std::string dir = rel.substr(0, rel.rfind('/'));
      const std::string file = rel.substr(rel.rfind('/') + 1);
      for (auto& [knob, values] : state) {
        if (file != knobSpec(knob).v2File) continue;
        auto v = parseKnob(knob, kV2, e.at("new").get<std::string>() + "\n");
        REQUIRE(v.ok());
        REQUIRE(values.count(dir) == 1);
        values[dir] = v->number;
        events.emplace_back(knob, dir, v->number);
        ++replay.writes;
        INFO("after audit line " << lines << ": " << line);
        CHECK(violations(values).empty());
      }
    }
    CHECK(lines == s.written);
    // The replay ends where the kernel is.
    for (auto& [knob, values] : state) CHECK(values == read(knob));
    std::map<Knob, Values> reversed = before;
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      auto& [knob, dir, value] = *it;
      reversed[knob][dir] = value;
      replay.reversedViolations += violations(reversed[knob]).empty() ? 0 : 1;
    }
    return replay;
  }

  Cluster& cluster;
  std::string audit;
  KnobSupport support;
  Executor exec;
  MemoryQosPlanner strategy;
};

}  // namespace

TEST_CASE("on v2 the probe finds min, low, high and oom.group and no Alinux knob",
          "[v2][memory_qos]") {
  REQUIRE_KERNEL();
  Cluster cluster;
  const KnobSupport s = KnobSupport::probe(kCgroupV2Root, cluster.layout());
  CHECK(memoryQosSupported(s));
  CHECK(s.has(Knob::kMemoryOomGroup));
  for (Knob k : {Knob::kMemoryWmarkRatio, Knob::kMemoryWmarkScaleFactor, Knob::kMemoryWmarkMinAdj,
                 Knob::kMemoryPriority, Knob::kMemoryUsePriorityOom, Knob::kMemorySoftLimit}) {
    INFO(knobSpec(k).name);
    CHECK_FALSE(s.has(k));
    CHECK_FALSE(fs::exists(cluster.file(cluster.layout().kubeRootDir(), knobSpec(k).name)));
  }
}

TEST_CASE("on v2 memory QoS rounds land every value and never put a child above its parent",
          "[v2][memory_qos]") {
  REQUIRE_KERNEL();
  Cluster c;
  Rig rig(c);
  c.add("9a000000-0000-4000-8000-000000000001", KoordQos::kLSR, KubeQos::kGuaranteed,
        {{48 * kMiB, 48 * kMiB}});
  c.add("9a000000-0000-4000-8000-000000000002", KoordQos::kLSR, KubeQos::kGuaranteed,
        {{16 * kMiB + 1, 16 * kMiB + 1}, {8 * kMiB, 8 * kMiB}});
  c.add("b0000000-0000-4000-8000-000000000001", KoordQos::kLS, KubeQos::kBurstable,
        {{32 * kMiB, 64 * kMiB}, {20 * kMiB + 4095, std::nullopt}});
  const size_t b2 = c.add("b0000000-0000-4000-8000-000000000002", KoordQos::kLS,
                          KubeQos::kBurstable, {{24 * kMiB, 96 * kMiB}});
  c.add("be000000-0000-4000-8000-000000000001", KoordQos::kBE, KubeQos::kBestEffort,
        {{40 * kMiB + 123, 80 * kMiB}, {10 * kMiB, std::nullopt}});
  size_t replayed = 0;
  auto round = [&](const ResourceQosStrategy& cfg) {
    const Rig::Replay r = rig.round(cfg);
    replayed += r.writes;
    return r;
  };

  // Enable: protections grow from 0, parent first.
  CHECK(
      round(config(block(50, 80, 90), block(50, 80, 90, 1), block(0, 50, 90))).reversedViolations >
      0);
  CHECK(readTrimmed(c.file(c.layout().qosDir(KubeQos::kBurstable), "memory.oom.group")) == "1");
  CHECK(readTrimmed(c.file(c.layout().kubeRootDir(), "memory.oom.group")) == "0");
  // Raise.
  CHECK(round(config(block(100, 100, 95), block(80, 100, 95, 1), block(20, 60, 95)))
            .reversedViolations > 0);
  // Lower: child first.
  CHECK(round(config(block(30, 40, 70), block(10, 20, 50), block(0, 10, 50))).reversedViolations >
        0);
  CHECK(readTrimmed(c.file(c.layout().qosDir(KubeQos::kBurstable), "memory.oom.group")) == "0");
  // A pod removed, two added.
  c.remove(b2);
  c.add("b0000000-0000-4000-8000-000000000003", KoordQos::kLS, KubeQos::kBurstable,
        {{12 * kMiB, 24 * kMiB}, {6 * kMiB, 12 * kMiB}});
  c.add("be000000-0000-4000-8000-000000000002", KoordQos::kBE, KubeQos::kBestEffort,
        {{30 * kMiB, std::nullopt}});
  round(config(block(60, 70, 80), block(40, 60, 80, 1), block(10, 30, 80)));
  // LS and BE disabled: their pods go to 0/0/max, the QoS sums drop.
  round(config(block(60, 70, 80), disabled(), disabled()));
  for (const std::string& dir :
       {c.layout().qosDir(KubeQos::kBurstable), c.layout().qosDir(KubeQos::kBestEffort)}) {
    INFO(dir);
    CHECK(readTrimmed(c.file(dir, "memory.min")) == "0");
    CHECK(readTrimmed(c.file(dir, "memory.low")) == "0");
    CHECK(readTrimmed(c.file(dir, "memory.oom.group")) == "0");
  }
  // Everything disabled: every protection back to 0.
  round(config(disabled(), disabled(), disabled()));
  for (const auto& [dir, parent] : c.parents()) {
    INFO(dir);
    CHECK(readTrimmed(c.file(dir, "memory.min")) == "0");
    CHECK(readTrimmed(c.file(dir, "memory.low")) == "0");
  }
  // The rounds really moved protections up and down the tree.
  CHECK(replayed >= 60);
  WARN("memory QoS rig: " << rig.exec.stats().written << " writes, " << replayed
                          << " min/low writes replayed");
}

TEST_CASE("on v2 the executor treats the v1-only soft limit as unsupported, whatever it is told",
          "[v2][memory_qos][executor]") {
  REQUIRE_KERNEL();
  Cluster c;
  c.add("be000000-0000-4000-8000-000000000009", KoordQos::kBE, KubeQos::kBestEffort,
        {{10 * kMiB, std::nullopt}});
  test::LogCapture log;
  ExecutorConfig config;
  config.cgroupRoot = kCgroupV2Root;
  Executor exec(config, c.layout(), KnobSupport::all(), log.clock, log.failures);
  const std::string pod =
      c.layout().podDir(KubeQos::kBestEffort, "be000000-0000-4000-8000-000000000009");
  const ExecutorStats s = exec.apply(
      {CgroupWrite{pod, Knob::kMemorySoftLimit, KnobValue::of(4 * kMiB), kOwnerMemoryQos}});
  CHECK(s.unsupported == 1);
  CHECK(s.written == 0);
  CHECK_FALSE(fs::exists(c.file(pod, "memory.soft_limit_in_bytes")));
  CHECK_FALSE(exec.read(pod, Knob::kMemorySoftLimit).ok());
}

}  // namespace test_rig_memory_qos_v2_kernel
