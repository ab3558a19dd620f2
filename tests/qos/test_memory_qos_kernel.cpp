// Memory QoS against this machine's real cgroup v1 kernel, in a private kubepods-like
// subtree under /sys/fs/cgroup/memory/koordlet-memqos-<pid>-<rand>/. A vanilla v1
// kernel has no memory.min/low/high: the probe must say so, the strategy must emit
// nothing for them and the executor must create no such file; the opt-in soft-limit
// fallback's BE values must be accepted, read back page-rounded, and reset to
// unlimited. If this kernel has memory.min (Anolis), the same tests check instead that
// the protection values are accepted. Needs root and the v1 memory controller; skips
// visibly without them (a failure under KOORDLET_REQUIRE_ALL=1, as in CI).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cerrno>
#include <deque>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/executor.h"
#include "qos/memory_qos.h"
#include "tests/support/kernel_io.h"
#include "tests/support/log_capture.h"
#include "tests/support/skip.h"

namespace test_qos_memory_qos_kernel {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const std::string kCgroupRoot = "/sys/fs/cgroup";
const std::string kMemoryRoot = kCgroupRoot + "/memory";
// What v1 shows for "no soft limit": LONG_MAX rounded down to a 4 KiB page.
const std::string kUnlimited = "9223372036854771712";
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

std::string unavailableReason() {
  if (::geteuid() != 0) return "not root: cannot create cgroups";
  if (!fs::exists(kMemoryRoot + "/memory.limit_in_bytes")) {
    return "no cgroup v1 memory controller at " + kMemoryRoot;
  }
  return "";
}

#define REQUIRE_KERNEL() KOORDLET_SKIP_UNLESS_EMPTY(unavailableReason())

using test::rawWrite;
using test::readTrimmed;

int64_t pageSize() { return ::sysconf(_SC_PAGESIZE); }

// The pods of the tree: one LS pod (burstable) with one container, one BE pod
// (besteffort) with two containers whose batch-memory requests are not page multiples.
struct Pods {
  std::deque<Pod> pods;
  QosSnapshot snap;

  PodView& add(const CgroupLayout& layout, const std::string& uid, KoordQos label, KubeQos kube,
               std::vector<int64_t> requests) {
    Pod& pod = pods.emplace_back();
    pod.uid = uid;
    pod.ns = "default";
    pod.name = uid;
    pod.koordQos = label;
    pod.kubeQos = kube;
    pod.phase = "Running";
    for (size_t i = 0; i < requests.size(); ++i) {
      Container& c = pod.containers.emplace_back();
      c.name = "c" + std::to_string(i);
      c.runtime = "containerd";
      c.id = uid.substr(0, 8) + "c" + std::to_string(i);
      auto& req = label == KoordQos::kBE ? c.requests.batchMemoryBytes : c.requests.memoryBytes;
      auto& lim = label == KoordQos::kBE ? c.limits.batchMemoryBytes : c.limits.memoryBytes;
      req = requests[i];
      lim = 2 * requests[i];
    }
    PodView view;
    view.pod = &pod;
    view.qos = pod.qosWithDefault();
    view.dir = layout.podDir(kube, uid);
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
};

// koordlet-memqos-<pid>-<rand>/kubepods/{burstable,besteffort}/pod<uid>/<cid> in the
// memory hierarchy, removed deepest first when the test ends, passed or not.
class KernelTree {
 public:
  KernelTree() : layout_(CgroupVersion::kV1, CgroupDriver::kCgroupfs, prefix()) {
    pods_.add(layout_, "11111111-aaaa-4000-8000-000000000001", KoordQos::kLS, KubeQos::kBurstable,
              {256 * kMiB});
    pods_.add(layout_, "22222222-bbbb-4000-8000-000000000002", KoordQos::kBE, KubeQos::kBestEffort,
              {100 * kMiB + 1, 64 * kMiB + 4095});
    try {
      create();
    } catch (...) {  // a failed REQUIRE throws out of the constructor: no destructor
      removeAll();
      throw;
    }
  }
  ~KernelTree() { removeAll(); }
  KernelTree(const KernelTree&) = delete;
  KernelTree& operator=(const KernelTree&) = delete;

  const CgroupLayout& layout() const { return layout_; }
  const QosSnapshot& snap() const { return pods_.snap; }
  const PodView& ls() const { return pods_.snap.pods[0]; }
  const PodView& be() const { return pods_.snap.pods[1]; }
  std::string file(const std::string& dir, const std::string& f) const {
    return kMemoryRoot + "/" + dir + "/" + f;
  }
  // Every dir of the tree below the private prefix, parents first.
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  std::string prefix() {
    std::random_device rd;
    prefix_ = "koordlet-memqos-" + std::to_string(::getpid()) + "-" + std::to_string(rd() % 100000);
    return prefix_;
  }
  void create() {
    dirs_ = {layout_.kubeRootDir(), layout_.qosDir(KubeQos::kBurstable),
             layout_.qosDir(KubeQos::kBestEffort)};
    for (const PodView& v : pods_.snap.pods) {
      dirs_.push_back(v.dir);
      for (const ContainerView& cv : v.containers) dirs_.push_back(cv.dir);
    }
    mkdir(prefix_);
    for (const std::string& d : dirs_) mkdir(d);
  }
  void mkdir(const std::string& dir) {
    const std::string path = kMemoryRoot + "/" + dir;
    if (::mkdir(path.c_str(), 0755) != 0) FAIL("mkdir " << path << ": " << errno);
    created_.push_back(path);
  }
  void removeAll() {  // deepest first: rmdir only removes an empty cgroup
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::rmdir(it->c_str());
    created_.clear();
  }

  std::string prefix_;
  CgroupLayout layout_;
  Pods pods_;
  std::vector<std::string> dirs_;
  std::vector<std::string> created_;
};

struct Harness : test::LogCapture {
  Executor make(const KernelTree& tree, const KnobSupport& support) {
    ExecutorConfig config;
    config.cgroupRoot = kCgroupRoot;
    config.forceUpdate = 60s;
    config.pageSize = pageSize();
    return Executor(config, tree.layout(), support, clock, failures);
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

ResourceQosStrategy config(MemoryQos be) {
  ResourceQosStrategy q;
  q.lsr.memory = block(50, 80, 90);
  q.ls.memory = block(50, 80, 90);
  q.be.memory = be;
  return q;
}

MemoryQosOptions options(const KnobSupport& support, bool softLimitFallback) {
  MemoryQosOptions o;
  o.enabled = true;
  o.pageSize = pageSize();
  o.nodeAllocatableMemory = 8 * kGiB;
  o.support = support;
  o.softLimitFallback = softLimitFallback;
  return o;
}

void checkAccepted(const ExecutorStats& s) {
  CHECK(s.invalid == 0);
  CHECK(s.failed == 0);
  CHECK(s.denied == 0);
  CHECK(s.refused == 0);
  CHECK(s.vanished == 0);
}

bool anolis(const KernelTree& tree) {
  return fs::exists(tree.file(tree.layout().kubeRootDir(), "memory.min"));
}

}  // namespace

TEST_CASE("the probe on this v1 kernel reports memory QoS knobs by the files it has",
          "[kernel][memory_qos]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  const KnobSupport support = KnobSupport::probe(kCgroupRoot, tree.layout());
  const std::string kube = tree.layout().kubeRootDir();
  for (size_t i = 0; i < kKnobCount; ++i) {
    const KnobSpec& spec = knobSpec(static_cast<Knob>(i));
    if (std::string(spec.v1Subsystem) != "memory") continue;
    INFO(spec.v1File);
    CHECK(support.has(spec.knob) == fs::exists(tree.file(kube, spec.v1File)));
  }
  CHECK(support.has(Knob::kMemorySoftLimit));
  CHECK(support.has(Knob::kMemoryLimit));
  if (anolis(tree)) {
    WARN("this v1 kernel has memory.min (Anolis): memory QoS is supported");
    CHECK(memoryQosSupported(support));
  } else {
    // Vanilla v1: no protection knobs, and none of the Alinux extensions.
    for (Knob k : {Knob::kMemoryMin, Knob::kMemoryLow, Knob::kMemoryHigh, Knob::kMemoryWmarkRatio,
                   Knob::kMemoryWmarkScaleFactor, Knob::kMemoryWmarkMinAdj, Knob::kMemoryPriority,
                   Knob::kMemoryUsePriorityOom, Knob::kMemoryOomGroup}) {
      INFO(knobSpec(k).name);
      CHECK_FALSE(support.has(k));
    }
    CHECK_FALSE(memoryQosSupported(support));
  }
}

TEST_CASE("on vanilla v1 the strategy emits nothing and the executor creates no memory.min",
          "[kernel][memory_qos]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  const KnobSupport support = KnobSupport::probe(kCgroupRoot, tree.layout());
  Executor exec = h.make(tree, support);
  const MemoryQosResult r =
      MemoryQosPlanner(tree.layout())
          .run(tree.snap(), config(block(50, 80, 90)), options(support, false));
  CHECK(r.errors.empty());
  if (anolis(tree)) {
    // The Anolis branch: every value the strategy wants is accepted and reads back.
    REQUIRE_FALSE(r.writes.empty());
    const ExecutorStats s = exec.apply(r.writes);
    checkAccepted(s);
    for (const CgroupWrite& w : r.writes) {
      auto v = exec.read(w.dir, w.knob);
      REQUIRE(v.ok());
      INFO(w.dir << " " << knobSpec(w.knob).name);
      int64_t want = w.value.number;
      if (want > 0 && (w.knob == Knob::kMemoryMin || w.knob == Knob::kMemoryLow ||
                       w.knob == Knob::kMemoryHigh)) {
        want -= want % pageSize();
      }
      CHECK(v->number == want);
    }
    return;
  }
  CHECK(r.writes.empty());
  // Handed protection writes anyway, the executor counts them unsupported and touches
  // no file (on v1 cgroupfs a write would never create one; this shows nothing tried).
  std::vector<CgroupWrite> forced;
  for (const std::string& dir : tree.dirs()) {
    for (Knob k : {Knob::kMemoryMin, Knob::kMemoryLow, Knob::kMemoryHigh}) {
      forced.push_back(CgroupWrite{dir, k, KnobValue::of(64 * kMiB), kOwnerMemoryQos});
    }
  }
  const ExecutorStats s = exec.apply(forced);
  CHECK(s.unsupported == forced.size());
  CHECK(s.written == 0);
  checkAccepted(s);
  for (const std::string& dir : tree.dirs()) {
    INFO(dir);
    CHECK_FALSE(fs::exists(tree.file(dir, "memory.min")));
    CHECK_FALSE(fs::exists(tree.file(dir, "memory.low")));
    CHECK_FALSE(fs::exists(tree.file(dir, "memory.high")));
  }
  // One line per knob, ever: three knobs, three lines, whatever the count.
  CHECK(h.logLines() == 3);
}

TEST_CASE("the kernel keeps a v1 soft limit in whole pages, rounding down",
          "[kernel][memory_qos]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  const std::string soft = tree.file(tree.be().dir, "memory.soft_limit_in_bytes");
  CHECK(readTrimmed(soft) == kUnlimited);
  REQUIRE(rawWrite(soft, std::to_string(10 * kMiB + 1)) == 0);
  CHECK(readTrimmed(soft) == std::to_string(10 * kMiB));
  REQUIRE(rawWrite(soft, std::to_string(10 * kMiB + pageSize() - 1)) == 0);
  CHECK(readTrimmed(soft) == std::to_string(10 * kMiB));
  REQUIRE(rawWrite(soft, "-1") == 0);
  CHECK(readTrimmed(soft) == kUnlimited);
}

TEST_CASE("the soft-limit fallback's BE values are accepted, LS untouched, and reset when off",
          "[kernel][memory_qos]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  const KnobSupport support = KnobSupport::probe(kCgroupRoot, tree.layout());
  Executor exec = h.make(tree, support);
  const MemoryQosPlanner strategy(tree.layout());
  const MemoryQosOptions on = options(support, true);
  const MemoryQosResult r = strategy.run(tree.snap(), config(block(10, 50, 90)), on);
  CHECK(r.errors.empty());
  if (anolis(tree)) {
    // memory.low exists: the fallback stays off.
    for (const CgroupWrite& w : r.writes) CHECK(w.knob != Knob::kMemorySoftLimit);
    return;
  }
  const int64_t page = pageSize();
  const PodView& be = tree.be();
  // low = request × 50%, page-rounded: c0 (100 MiB + 1) → 50 MiB; c1 (64 MiB + 4095)
  // → 32 MiB + 2047 → 32 MiB; pod: (164 MiB + 4096) × 50% = 82 MiB + 2048 → 82 MiB.
  const int64_t c0 = (100 * kMiB + 1) / 2 / page * page;
  const int64_t c1 = (64 * kMiB + 4095) / 2 / page * page;
  const int64_t pod = (164 * kMiB + 4096) / 2 / page * page;
  REQUIRE(r.writes.size() == 3);
  ExecutorStats s = exec.apply(r.writes);
  checkAccepted(s);
  CHECK(s.written == 3);
  CHECK(readTrimmed(tree.file(be.dir, "memory.soft_limit_in_bytes")) == std::to_string(pod));
  CHECK(readTrimmed(tree.file(be.containers[0].dir, "memory.soft_limit_in_bytes")) ==
        std::to_string(c0));
  CHECK(readTrimmed(tree.file(be.containers[1].dir, "memory.soft_limit_in_bytes")) ==
        std::to_string(c1));
  // What the strategy aims at is what the kernel holds: the next round writes nothing.
  s = exec.apply(strategy.run(tree.snap(), config(block(10, 50, 90)), on).writes);
  CHECK(s.unchanged == 3);
  CHECK(s.written == 0);
  // LS pods and the QoS dirs are left alone.
  for (const std::string& dir :
       {tree.ls().dir, tree.ls().containers[0].dir, tree.layout().qosDir(KubeQos::kBestEffort),
        tree.layout().kubeRootDir()}) {
    INFO(dir);
    CHECK(readTrimmed(tree.file(dir, "memory.soft_limit_in_bytes")) == kUnlimited);
  }

  // BE's block disabled: back to unlimited, which v1 shows as its page-rounded LONG_MAX.
  MemoryQos off = block(10, 50, 90);
  off.enable = false;
  s = exec.apply(strategy.run(tree.snap(), config(off), on).writes);
  checkAccepted(s);
  CHECK(s.written == 3);
  for (const std::string& dir : {be.dir, be.containers[0].dir, be.containers[1].dir}) {
    INFO(dir);
    CHECK(readTrimmed(tree.file(dir, "memory.soft_limit_in_bytes")) == kUnlimited);
  }
  // And the kernel's text reads back as -1: nothing left to write.
  CHECK(exec.apply(strategy.run(tree.snap(), config(off), on).writes).unchanged == 3);
}

}  // namespace test_qos_memory_qos_kernel
