// The executor against this machine's real cgroup v1 kernel, in a private
// kubepods-like subtree under /sys/fs/cgroup/{cpu,cpuset}/: the kernel's own
// parent-bounds-child checks prove the write order matters (and that the executor
// gets it right), and its EINVAL is counted and logged once. Needs root and the
// v1 cpu and cpuset controllers; skips visibly without them (a failure under
// KOORDLET_REQUIRE_ALL=1, as in CI).
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/executor.h"
#include "tests/support/kernel_io.h"
#include "tests/support/log_capture.h"
#include "tests/support/skip.h"

namespace test_cgroupfs_executor_kernel {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const std::string kCgroupRoot = "/sys/fs/cgroup";
const char* const kControllers[] = {"cpu", "cpuset"};

// Why this machine cannot run the test, or "" when it can.
std::string unavailableReason() {
  if (::geteuid() != 0) return "not root: cannot create cgroups";
  if (!fs::exists(kCgroupRoot + "/cpu/cpu.cfs_quota_us")) return "no cgroup v1 cpu controller";
  if (!fs::exists(kCgroupRoot + "/cpuset/cpuset.cpus")) return "no cgroup v1 cpuset controller";
  return "";
}

using test::rawWrite;
using test::readTrimmed;

// koordlet-exec-<pid>-<rand>/kubepods/besteffort/pod<uid>/<cid> in cpu and cpuset,
// removed deepest first when the test ends, passed or not.
class KernelTree {
 public:
  KernelTree() {
    std::random_device rd;
    prefix_ = "koordlet-exec-" + std::to_string(::getpid()) + "-" + std::to_string(rd() % 100000);
    kube_ = prefix_ + "/kubepods";
    be_ = kube_ + "/besteffort";
    pod_ = be_ + "/pod0d1c2b3a-0000-4000-8000-000000000001";
    ctr_ = pod_ + "/c0ffee";
    // A failed REQUIRE throws out of the constructor, where no destructor runs:
    // remove what was made before passing it on.
    try {
      create();
    } catch (...) {
      removeAll();
      throw;
    }
  }
  ~KernelTree() { removeAll(); }
  KernelTree(const KernelTree&) = delete;
  KernelTree& operator=(const KernelTree&) = delete;

  CgroupLayout layout() const {
    return CgroupLayout(CgroupVersion::kV1, CgroupDriver::kCgroupfs, prefix_);
  }
  std::string file(const char* controller, const std::string& dir, const char* f) const {
    return kCgroupRoot + "/" + controller + "/" + dir + "/" + f;
  }
  const std::string& pod() const { return pod_; }
  const std::string& ctr() const { return ctr_; }

 private:
  void create() {
    for (const std::string& dir : {prefix_, kube_, be_, pod_, ctr_}) {
      for (const char* c : kControllers) {
        const std::string path = kCgroupRoot + "/" + c + "/" + dir;
        if (::mkdir(path.c_str(), 0755) != 0) FAIL("mkdir " << path << ": " << errno);
        created_.push_back(path);
        // A new cpuset is empty and nothing can join it or bound a child until it
        // has CPUs and memory nodes: copy the parent's, top-down.
        if (std::string(c) == "cpuset") {
          const std::string parent = fs::path(path).parent_path().string();
          for (const char* f : {"cpuset.cpus", "cpuset.mems"}) {
            REQUIRE(rawWrite(path + "/" + f, readTrimmed(parent + "/" + f)) == 0);
          }
        }
      }
    }
  }
  // Deepest first: rmdir only removes an empty cgroup.
  void removeAll() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::rmdir(it->c_str());
    created_.clear();
  }

  std::string prefix_, kube_, be_, pod_, ctr_;
  std::vector<std::string> created_;  // in creation order
};

struct Harness : test::LogCapture {
  Executor make(const KernelTree& tree) {
    ExecutorConfig config;
    config.cgroupRoot = kCgroupRoot;
    config.forceUpdate = 60s;
    return Executor(config, tree.layout(), KnobSupport::probe(kCgroupRoot, tree.layout()), clock,
                    failures);
  }
};

CgroupWrite quota(const std::string& dir, int64_t q) {
  return CgroupWrite{dir, Knob::kCpuQuota, KnobValue::of(q), "test"};
}
CgroupWrite cpus(const std::string& dir, std::vector<int> c) {
  return CgroupWrite{dir, Knob::kCpusetCpus, KnobValue::ofCpus(std::move(c)), "test"};
}

#define REQUIRE_KERNEL() KOORDLET_SKIP_UNLESS_EMPTY(unavailableReason())

// The cpuset ordering cases' scene: the tree, an executor on it, the pod's and the
// container's cpuset.cpus files and two of the machine's CPUs (a and b; -1 with fewer
// than two in the root cpuset).
struct CpusetScene {
  CpusetScene()
      : exec(h.make(tree)),
        podCpus(tree.file("cpuset", tree.pod(), "cpuset.cpus")),
        ctrCpus(tree.file("cpuset", tree.ctr(), "cpuset.cpus")) {
    auto parsed = parseKnob(Knob::kCpusetCpus, CgroupVersion::kV1, readTrimmed(podCpus) + "\n");
    REQUIRE(parsed.ok());
    all = *parsed;
    if (all.cpus.size() >= 2) {
      a = all.cpus[0];
      b = all.cpus[1];
    }
  }
  KernelTree tree;
  Harness h;
  Executor exec;
  const std::string podCpus, ctrCpus;
  KnobValue all;
  int a = -1, b = -1;
};

}  // namespace

TEST_CASE("the kernel refuses a parent quota below its child's, and the executor orders around it",
          "[kernel][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  const std::string podQuota = tree.file("cpu", tree.pod(), "cpu.cfs_quota_us");
  const std::string ctrQuota = tree.file("cpu", tree.ctr(), "cpu.cfs_quota_us");
  REQUIRE(rawWrite(podQuota, "200000") == 0);
  REQUIRE(rawWrite(ctrQuota, "150000") == 0);

  // A decrease asked parent-first succeeds: the child is written first.
  ExecutorStats s = exec.apply({quota(tree.pod(), 50000), quota(tree.ctr(), 40000)});
  CHECK(s.written == 2);
  CHECK(s.invalid == 0);
  CHECK(readTrimmed(podQuota) == "50000");
  CHECK(readTrimmed(ctrQuota) == "40000");
  // The kernel enforces it: the parent below its child is EINVAL.
  CHECK(rawWrite(podQuota, "30000") == EINVAL);

  // An increase asked child-first succeeds: the parent is written first...
  s = exec.apply({quota(tree.ctr(), 300000), quota(tree.pod(), 400000)});
  CHECK(s.written == 2);
  CHECK(s.invalid == 0);
  CHECK(readTrimmed(podQuota) == "400000");
  CHECK(readTrimmed(ctrQuota) == "300000");
  // ...and a child above its parent is EINVAL.
  CHECK(rawWrite(ctrQuota, "500000") == EINVAL);

  // Unlimited is the largest of all: the parent goes first.
  s = exec.apply({quota(tree.ctr(), -1), quota(tree.pod(), -1)});
  CHECK(s.written == 2);
  CHECK(readTrimmed(ctrQuota) == "-1");
}

TEST_CASE(
    "on the kernel an identical apply writes nothing, and only a CPU list again at forceUpdate",
    "[kernel][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  const std::string ctrCpus = tree.file("cpuset", tree.ctr(), "cpuset.cpus");
  auto current = parseKnob(Knob::kCpusetCpus, CgroupVersion::kV1, readTrimmed(ctrCpus) + "\n");
  REQUIRE(current.ok());
  const std::vector<CgroupWrite> batch = {quota(tree.pod(), 80000), quota(tree.ctr(), 60000),
                                          cpus(tree.ctr(), current->cpus)};
  ExecutorStats s = exec.apply(batch);
  CHECK(s.written == 2);
  CHECK(s.unchanged == 1);  // the CPU list already held: its forced-rewrite clock starts
  s = exec.apply(batch);
  CHECK(s.written == 0);
  CHECK(s.unchanged == 3);
  h.clock.advance(59s);
  CHECK(exec.apply(batch).unchanged == 3);
  h.clock.advance(1s);
  s = exec.apply(batch);
  CHECK(s.written == 1);  // the CPU list, which re-applies its tasks' affinity
  CHECK(s.unchanged == 2);
  CHECK(s.invalid + s.failed == 0);
  CHECK(readTrimmed(tree.file("cpu", tree.ctr(), "cpu.cfs_quota_us")) == "60000");
  CHECK(readTrimmed(ctrCpus) == renderKnob(Knob::kCpusetCpus, CgroupVersion::kV1, *current));
  h.clock.advance(60s);
  CHECK(exec.apply(batch).written == 1);
}

TEST_CASE("on the kernel cpu.cfs_burst_us is written where it exists", "[kernel][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  const std::string burst = tree.file("cpu", tree.ctr(), "cpu.cfs_burst_us");
  if (!fs::exists(burst)) KOORDLET_SKIP("no cpu.cfs_burst_us: kernel before 5.14");
  Executor exec = h.make(tree);
  const ExecutorStats s =
      exec.apply({quota(tree.ctr(), 100000),
                  CgroupWrite{tree.ctr(), Knob::kCpuBurst, KnobValue::of(50000), "test"}});
  CHECK(s.written == 2);
  CHECK(readTrimmed(burst) == "50000");
}

TEST_CASE("on the kernel quota and burst raised or lowered together land in one apply",
          "[kernel][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  const std::string burst = tree.file("cpu", tree.ctr(), "cpu.cfs_burst_us");
  if (!fs::exists(burst)) KOORDLET_SKIP("no cpu.cfs_burst_us: kernel before 5.14");
  auto burstOf = [&](int64_t b) {
    return CgroupWrite{tree.ctr(), Knob::kCpuBurst, KnobValue::of(b), "test"};
  };
  Executor exec = h.make(tree);
  REQUIRE(exec.apply({quota(tree.ctr(), 50000), burstOf(20000)}).written == 2);
  // The kernel keeps burst <= quota: raising the burst first is refused.
  CHECK(rawWrite(burst, "150000") == EINVAL);
  ExecutorStats s = exec.apply({burstOf(150000), quota(tree.ctr(), 200000)});
  CHECK(s.invalid == 0);
  CHECK(s.written == 2);
  CHECK(readTrimmed(burst) == "150000");
  // Lowering both: the quota below the current burst is refused, so burst goes first.
  CHECK(rawWrite(tree.file("cpu", tree.ctr(), "cpu.cfs_quota_us"), "50000") == EINVAL);
  s = exec.apply({quota(tree.ctr(), 50000), burstOf(20000)});
  CHECK(s.invalid == 0);
  CHECK(s.written == 2);
  CHECK(readTrimmed(tree.file("cpu", tree.ctr(), "cpu.cfs_quota_us")) == "50000");
  CHECK(readTrimmed(burst) == "20000");
}

TEST_CASE(
    "on the kernel cpuset.cpus shrinks child-first, grows parent-first, and moves via "
    "the union",
    "[kernel][executor]") {
  REQUIRE_KERNEL();
  CpusetScene c;
  if (c.a < 0) KOORDLET_SKIP("fewer than 2 CPUs in the root cpuset");
  const KernelTree& tree = c.tree;
  const std::string &podCpus = c.podCpus, &ctrCpus = c.ctrCpus;
  const int a = c.a, b = c.b;
  Executor& exec = c.exec;

  ExecutorStats s = exec.apply({cpus(tree.pod(), {a}), cpus(tree.ctr(), {a})});
  CHECK(s.written == 2);
  CHECK(s.failed + s.invalid == 0);
  CHECK(readTrimmed(podCpus) == std::to_string(a));
  // A parent that would no longer hold its child's CPUs is refused by the kernel.
  CHECK(rawWrite(podCpus, std::to_string(b)) != 0);

  // Neither subset nor superset: a -> b via the union.
  s = exec.apply({cpus(tree.ctr(), {b}), cpus(tree.pod(), {b})});
  CHECK(s.written == 4);
  CHECK(s.failed + s.invalid == 0);
  CHECK(readTrimmed(podCpus) == std::to_string(b));
  CHECK(readTrimmed(ctrCpus) == std::to_string(b));

  s = exec.apply({cpus(tree.ctr(), c.all.cpus), cpus(tree.pod(), c.all.cpus)});
  CHECK(s.written == 2);
  CHECK(s.failed + s.invalid == 0);
  CHECK(readTrimmed(ctrCpus) == renderKnob(Knob::kCpusetCpus, CgroupVersion::kV1, c.all));
}

// A parent shrinking onto the CPU its child moves to (pod a,b -> a; container b -> a):
// the parent's shrink waits for the child's move, else the kernel says EBUSY (v1, and
// Linux 5.10's v2 in the rig).
TEST_CASE("on the kernel a parent shrinks after its child moved within it", "[kernel][executor]") {
  REQUIRE_KERNEL();
  CpusetScene c;
  if (c.a < 0) KOORDLET_SKIP("fewer than 2 CPUs in the root cpuset");
  ExecutorStats s = c.exec.apply({cpus(c.tree.pod(), {c.a, c.b}), cpus(c.tree.ctr(), {c.b})});
  REQUIRE(s.failed + s.invalid == 0);
  REQUIRE(readTrimmed(c.ctrCpus) == std::to_string(c.b));
  // The raw order parent-first is what the kernel refuses.
  CHECK(rawWrite(c.podCpus, std::to_string(c.a)) == EBUSY);

  s = c.exec.apply({cpus(c.tree.pod(), {c.a}), cpus(c.tree.ctr(), {c.a})});
  INFO(c.h.log.str());
  CHECK(s.failed + s.invalid == 0);
  CHECK(readTrimmed(c.podCpus) == std::to_string(c.a));
  CHECK(readTrimmed(c.ctrCpus) == std::to_string(c.a));
}

TEST_CASE("on the kernel EINVAL is counted every time and logged once", "[kernel][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  CHECK(exec.apply({quota(tree.pod(), 100000)}).written == 1);
  // A child above its parent, the parent not in the batch: the kernel says EINVAL.
  CHECK(exec.apply({quota(tree.ctr(), 200000)}).invalid == 1);
  CHECK(exec.apply({quota(tree.ctr(), 200000)}).invalid == 1);
  CHECK(exec.stats().invalid == 2);
  CHECK(h.logLines() == 1);
  CHECK(readTrimmed(tree.file("cpu", tree.ctr(), "cpu.cfs_quota_us")) == "-1");
}

namespace {

// The test tree's cpu hierarchy bind-mounted read-only at <dir>/cpu/<prefix>, so an
// executor rooted at <dir> writes through a read-only mount (EROFS). Unmounted
// (lazily) when the test ends.
class ReadOnlyCpuBind {
 public:
  ReadOnlyCpuBind(const std::string& dir, const std::string& prefix) {
    target_ = dir + "/cpu/" + prefix;
    fs::create_directories(target_);
    const std::string source = kCgroupRoot + "/cpu/" + prefix;
    REQUIRE(::mount(source.c_str(), target_.c_str(), nullptr, MS_BIND, nullptr) == 0);
    setReadOnly(true);
  }
  ~ReadOnlyCpuBind() { ::umount2(target_.c_str(), MNT_DETACH); }
  ReadOnlyCpuBind(const ReadOnlyCpuBind&) = delete;
  ReadOnlyCpuBind& operator=(const ReadOnlyCpuBind&) = delete;
  void setReadOnly(bool ro) {
    const unsigned long flags = MS_REMOUNT | MS_BIND | (ro ? MS_RDONLY : 0);
    REQUIRE(::mount(nullptr, target_.c_str(), nullptr, flags, nullptr) == 0);
  }

 private:
  std::string target_;
};

}  // namespace

TEST_CASE(
    "on a read-only mount every write is counted as read_only and logged once for the whole "
    "root, with one recovery line once it is writable",
    "[kernel][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  const std::string prefix = fs::path(tree.pod()).begin()->string();
  char tmpl[] = "/tmp/koordlet-exec-ro-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string root = tmpl;
  struct RemoveRoot {
    std::string path;
    ~RemoveRoot() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } removeRoot{root};
  ReadOnlyCpuBind bind(root, prefix);

  Harness h;
  ExecutorConfig config;
  config.cgroupRoot = root;
  Executor exec(config, tree.layout(), KnobSupport::all(), h.clock, h.failures);
  std::vector<std::string> statuses;
  exec.onWrite([&](const char* status, double) { statuses.emplace_back(status); });
  const std::vector<CgroupWrite> batch = {quota(tree.pod(), 100000), quota(tree.ctr(), 50000)};

  ExecutorStats s = exec.apply(batch);
  CHECK(s.failed == 2);
  CHECK(s.written == 0);
  CHECK(statuses == std::vector<std::string>{"read_only", "read_only"});
  h.clock.advance(1s);
  CHECK(exec.apply(batch).failed == 2);
  INFO(h.log.str());
  CHECK(h.logLines() == 1);  // two files, two rounds: one line
  CHECK(h.log.str().find("Read-only file system") != std::string::npos);
  CHECK(readTrimmed(tree.file("cpu", tree.pod(), "cpu.cfs_quota_us")) == "-1");

  bind.setReadOnly(false);
  h.clock.advance(1s);
  s = exec.apply(batch);
  CHECK(s.written == 2);
  CHECK(h.logLines() == 2);  // the recovery line
  CHECK(h.log.str().find("recovered after 4 failed attempts") != std::string::npos);
  CHECK(readTrimmed(tree.file("cpu", tree.ctr(), "cpu.cfs_quota_us")) == "50000");
}

TEST_CASE("on the kernel EBUSY (a cpuset a child still uses) is counted as busy, per path",
          "[kernel][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  std::vector<std::string> statuses;
  exec.onWrite([&](const char* status, double) { statuses.emplace_back(status); });
  auto all = parseKnob(Knob::kCpusetCpus, CgroupVersion::kV1,
                       readTrimmed(tree.file("cpuset", tree.pod(), "cpuset.cpus")) + "\n");
  REQUIRE(all.ok());
  if (all->cpus.size() < 2) KOORDLET_SKIP("fewer than 2 CPUs: no CPU to drop");
  // The container holds the last CPU; the pod may not drop it (v1: a parent is a
  // superset of its children), whatever the order, as the child is not in the batch.
  const int last = all->cpus.back();
  REQUIRE(rawWrite(tree.file("cpuset", tree.ctr(), "cpuset.cpus"), std::to_string(last)) == 0);
  ExecutorStats s = exec.apply({cpus(tree.pod(), {all->cpus.front()})});
  CHECK(s.failed == 1);
  CHECK(statuses == std::vector<std::string>{"busy"});
  CHECK(h.logLines() == 1);
  CHECK(h.log.str().find("Device or resource busy") != std::string::npos);
}

}  // namespace test_cgroupfs_executor_kernel
