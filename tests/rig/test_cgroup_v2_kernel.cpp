// The knob table and the executor against a real cgroup v2 kernel, in a private
// kubepods-like subtree (systemd driver names) under /sys/fs/cgroup. This host runs
// cgroup v1, so tests/rig/run.sh boots Debian's 6.1 and 6.12 kernels under QEMU
// and runs this binary as the VM's only program; anywhere without cgroup2 at
// /sys/fs/cgroup it skips visibly (a failure under KOORDLET_REQUIRE_ALL=1, which
// the VM sets).
//
// What cgroup v2 really refuses, found with raw writes below (6.1 and 6.12 alike):
//   - cpu.max quota below 1000 us or above 2^44-1 us: EINVAL (the range check refuses it);
//   - cpu.max.burst above the cgroup's own quota, and a quota below its own burst:
//     EINVAL. This is the one ordering rule v2 has, and it is within one cgroup;
//   - cpu.weight outside 1..10000: ERANGE (the range check refuses it);
//   - a cpuset.cpus naming a CPU beyond the machine's: ERANGE (the executor
//     counts it as failed, not invalid);
//   - memory.high "-1": EINVAL (renderKnob writes "max").
// What v1 refuses and v2 accepts: a child quota above its parent's (v2 uses the
// smaller one), a parent cpuset.cpus that no longer holds its child's (v2 clips the
// child's cpuset.cpus.effective), a child memory.min above its parent's (v2 clips
// the effective protection). So on v2 the executor's child-first/parent-first
// order for hierarchical knobs is harmless, not required. The kernel also rounds
// memory values down to a page.
//
// The rig found two executor gaps, now fixed and tested here: a burst raised above
// the old quota needs the quota written first, and a memory target that is not a
// page multiple never read back equal (so it was rewritten every apply).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/executor.h"
#include "tests/support/cgroup_v2_dirs.h"
#include "tests/support/cpu_burst_degraded.h"
#include "tests/support/kernel_io.h"
#include "tests/support/kernel_release.h"
#include "tests/support/log_capture.h"
#include "tests/support/skip.h"

namespace test_rig_cgroup_v2_kernel {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr const char* kControllers = "+cpu +cpuset +memory";
constexpr CgroupVersion kV2 = CgroupVersion::kV2;
constexpr int64_t kMiB = 1 << 20;

using test::kCgroupV2Root;
using test::rawWrite;
using test::readTrimmed;

std::string errnoName(int err) { return err == 0 ? "success" : std::strerror(err); }

// koordlet-rig-<pid>/kubepods.slice/kubepods-besteffort.slice/
// kubepods-besteffort-pod<uid>.slice/cri-containerd-<id>.scope, each level with
// cpu, cpuset and memory enabled for its children, removed deepest first when the
// test ends, passed or not.
class KernelTree {
 public:
  KernelTree()
      : prefix_("koordlet-rig-" + std::to_string(::getpid())),
        layout_(CgroupVersion::kV2, CgroupDriver::kSystemd, prefix_) {
    kube_ = layout_.kubeRootDir();
    be_ = layout_.qosDir(KubeQos::kBestEffort);
    pod_ = layout_.podDir(KubeQos::kBestEffort, "0d1c2b3a-0000-4000-8000-000000000001");
    auto ctr = layout_.containerDir(pod_, "containerd", "c0ffee");
    REQUIRE(ctr.ok());
    ctr_ = *ctr;
    // The root's subtree_control gets the controllers too (the rig's /init already
    // did it; elsewhere this is where it fails, with a reason). A failed REQUIRE
    // throws out of the constructor: dirs_, a member, still removes what was made.
    REQUIRE(rawWrite(kCgroupV2Root + "/cgroup.subtree_control", kControllers) == 0);
    for (const std::string& dir : {prefix_, kube_, be_, pod_}) dirs_.make(dir, kControllers);
    dirs_.make(ctr_);
  }
  KernelTree(const KernelTree&) = delete;
  KernelTree& operator=(const KernelTree&) = delete;

  const CgroupLayout& layout() const { return layout_; }
  std::string file(const std::string& dir, const char* f) const {
    return test::CgroupV2Dirs::file(dir, f);
  }
  std::string knobFile(const std::string& dir, Knob knob) const {
    return file(dir, knobSpec(knob).v2File);
  }
  const std::string& prefix() const { return prefix_; }
  const std::string& kube() const { return kube_; }
  const std::string& pod() const { return pod_; }
  const std::string& ctr() const { return ctr_; }

 private:
  std::string prefix_;
  CgroupLayout layout_;
  std::string kube_, be_, pod_, ctr_;
  test::CgroupV2Dirs dirs_;
};

struct Harness : test::LogCapture {
  Executor make(const KernelTree& tree) {
    ExecutorConfig config;
    config.cgroupRoot = kCgroupV2Root;
    config.forceUpdate = 60s;
    return Executor(config, tree.layout(), KnobSupport::probe(kCgroupV2Root, tree.layout()), clock,
                    failures);
  }
};

// Linux before 5.14 (the rig's 5.10) has no cpu.max.burst. There a burst case checks the
// degraded form instead and returns true: the probe finds no burst knob, and a burst
// write is counted unsupported with no file made. On a newer kernel it returns false
// (and a missing file fails the probe case).
bool checkedWithoutBurst(const KernelTree& tree) {
  if (test::kernelHasCpuBurst()) return false;
  test::checkCpuBurstUnsupported(kCgroupV2Root, tree.layout(), tree.ctr(),
                                 tree.file(tree.ctr(), "cpu.max.burst"));
  return true;
}

CgroupWrite setKnob(const std::string& dir, Knob knob, int64_t value) {
  return CgroupWrite{dir, knob, KnobValue::of(value), "rig"};
}
CgroupWrite cpus(const std::string& dir, std::vector<int> c) {
  return CgroupWrite{dir, Knob::kCpusetCpus, KnobValue::ofCpus(std::move(c)), "rig"};
}

// Reads every file the batch targets back from the kernel and compares it with
// the value asked: shares by the weight text (v2 weight -> shares does
// not invert exactly), the rest by parsed value.
void checkReadBack(const KernelTree& tree, const std::vector<CgroupWrite>& batch) {
  for (const CgroupWrite& w : batch) {
    const std::string path = tree.knobFile(w.dir, w.knob);
    const KnobValue& want = w.value;
    const std::string text = readTrimmed(path);
    INFO(path << " holds \"" << text << "\"");
    if (w.knob == Knob::kCpuShares) {
      CHECK(text == renderKnob(w.knob, kV2, want));
      continue;
    }
    auto got = parseKnob(w.knob, kV2, text + "\n");
    REQUIRE(got.ok());
    CHECK(*got == want);
  }
}

// Applies the batch, expecting every write to succeed, and reads it all back.
ExecutorStats applyChecked(Executor& exec, const KernelTree& tree,
                           const std::vector<CgroupWrite>& batch) {
  const ExecutorStats s = exec.apply(batch);
  CHECK(s.invalid == 0);
  CHECK(s.failed == 0);
  CHECK(s.denied == 0);
  CHECK(s.unsupported == 0);
  CHECK(s.vanished == 0);
  checkReadBack(tree, batch);
  return s;
}

#define REQUIRE_KERNEL()                                       \
  do {                                                         \
    const std::string why = test::cgroupV2UnavailableReason(); \
    if (!why.empty()) KOORDLET_SKIP(why);                      \
  } while (0)

}  // namespace

TEST_CASE("on a v2 kernel the probe finds every knob koordlet writes", "[v2][knob]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  const KnobSupport s = KnobSupport::probe(kCgroupV2Root, tree.layout());
  // The vanilla knobs; the Alinux memory extensions and the v1-only soft limit are
  // covered by test_memory_qos_v2_kernel.cpp.
  for (Knob k : {Knob::kCpuShares, Knob::kCpuQuota, Knob::kCpusetCpus, Knob::kMemoryLimit,
                 Knob::kMemoryMin, Knob::kMemoryLow, Knob::kMemoryHigh, Knob::kMemoryOomGroup}) {
    const KnobSpec& spec = knobSpec(k);
    INFO(spec.v2File);
    CHECK(s.has(spec.knob));
  }
  // The files behind them, by their v2 names.
  for (const char* f : {"cpu.weight", "cpu.max", "cpuset.cpus", "memory.max", "memory.min",
                        "memory.low", "memory.high"}) {
    INFO(f);
    CHECK(fs::exists(tree.file(tree.kube(), f)));
  }
  // cpu.max.burst from Linux 5.14: found there, and reported missing before (5.10).
  INFO("kernel with CPU burst (5.14+): " << test::kernelHasCpuBurst());
  CHECK(s.has(Knob::kCpuBurst) == test::kernelHasCpuBurst());
  CHECK(fs::exists(tree.file(tree.kube(), "cpu.max.burst")) == test::kernelHasCpuBurst());
}

TEST_CASE("knob values round-trip through the v2 kernel's files", "[v2][knob][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  const std::string& ctr = tree.ctr();

  SECTION("shares become the cpu.weight the kernel keeps") {
    for (int64_t shares : {2, 1024, 5000, 262144}) {
      applyChecked(exec, tree, {setKnob(ctr, Knob::kCpuShares, shares)});
      const std::string weight = readTrimmed(tree.file(ctr, "cpu.weight"));
      CHECK(weight == renderKnob(Knob::kCpuShares, kV2, KnobValue::of(shares)));
      auto back = parseKnob(Knob::kCpuShares, kV2, weight + "\n");
      REQUIRE(back.ok());
      CHECK(renderKnob(Knob::kCpuShares, kV2, *back) == weight);
    }
    CHECK(readTrimmed(tree.file(ctr, "cpu.weight")) == "10000");
  }
  SECTION("quota -1 is max, and the period the file holds is kept") {
    const std::string cpuMax = tree.file(ctr, "cpu.max");
    REQUIRE(rawWrite(cpuMax, "50000 200000") == 0);
    auto parsed = parseKnob(Knob::kCpuQuota, kV2, readTrimmed(cpuMax) + "\n");
    REQUIRE(parsed.ok());
    CHECK(parsed->number == 50000);
    applyChecked(exec, tree, {setKnob(ctr, Knob::kCpuQuota, 30000)});
    CHECK(readTrimmed(cpuMax) == "30000 200000");
    applyChecked(exec, tree, {setKnob(ctr, Knob::kCpuQuota, -1)});
    CHECK(readTrimmed(cpuMax) == "max 200000");
  }
  SECTION("burst is written to cpu.max.burst") {
    if (checkedWithoutBurst(tree)) return;
    applyChecked(exec, tree,
                 {setKnob(ctr, Knob::kCpuQuota, 100000), setKnob(ctr, Knob::kCpuBurst, 50000)});
    CHECK(readTrimmed(tree.file(ctr, "cpu.max.burst")) == "50000");
    CHECK(readTrimmed(tree.file(ctr, "cpu.max")) == "100000 100000");
  }
  SECTION("memory limits: bytes, and -1 as max") {
    applyChecked(
        exec, tree,
        {setKnob(ctr, Knob::kMemoryLimit, 256 * kMiB), setKnob(ctr, Knob::kMemoryHigh, -1),
         setKnob(ctr, Knob::kMemoryMin, 8 * kMiB), setKnob(ctr, Knob::kMemoryLow, 16 * kMiB)});
    CHECK(readTrimmed(tree.file(ctr, "memory.max")) == std::to_string(256 * kMiB));
    CHECK(readTrimmed(tree.file(ctr, "memory.high")) == "max");
    applyChecked(exec, tree, {setKnob(ctr, Knob::kMemoryHigh, 128 * kMiB)});
    CHECK(readTrimmed(tree.file(ctr, "memory.high")) == std::to_string(128 * kMiB));
    applyChecked(exec, tree,
                 {setKnob(ctr, Knob::kMemoryHigh, -1), setKnob(ctr, Knob::kMemoryLimit, -1)});
    CHECK(readTrimmed(tree.file(ctr, "memory.high")) == "max");
    CHECK(readTrimmed(tree.file(ctr, "memory.max")) == "max");
  }
  SECTION("cpuset.cpus as the kernel prints it") {
    auto all = parseKnob(Knob::kCpusetCpus, kV2,
                         readTrimmed(tree.file(ctr, "cpuset.cpus.effective")) + "\n");
    REQUIRE(all.ok());
    applyChecked(exec, tree, {cpus(tree.pod(), all->cpus), cpus(ctr, all->cpus)});
    CHECK(readTrimmed(tree.file(ctr, "cpuset.cpus")) == renderKnob(Knob::kCpusetCpus, kV2, *all));
  }
}

TEST_CASE("v2 refuses only values out of range and a burst above its own cgroup's quota",
          "[v2][kernel]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  const std::string podMax = tree.file(tree.pod(), "cpu.max");
  const std::string ctrMax = tree.file(tree.ctr(), "cpu.max");
  const std::string ctrBurst = tree.file(tree.ctr(), "cpu.max.burst");

  // Out of range.
  CHECK(errnoName(rawWrite(ctrMax, "999")) == errnoName(EINVAL));
  CHECK(errnoName(rawWrite(ctrMax, std::to_string(int64_t{1} << 44))) == errnoName(EINVAL));
  CHECK(errnoName(rawWrite(tree.file(tree.ctr(), "cpu.weight"), "0")) == errnoName(ERANGE));
  CHECK(errnoName(rawWrite(tree.file(tree.ctr(), "cpu.weight"), "10001")) == errnoName(ERANGE));
  CHECK(errnoName(rawWrite(tree.file(tree.ctr(), "memory.high"), "-1")) == errnoName(EINVAL));
  // A CPU beyond the machine's: the CPU list parser says ERANGE.
  CHECK(errnoName(rawWrite(tree.file(tree.ctr(), "cpuset.cpus"), "9000")) == errnoName(ERANGE));

  // Burst and quota bound each other inside one cgroup (where there is a burst: 5.14+).
  REQUIRE(rawWrite(ctrMax, "30000") == 0);
  if (test::kernelHasCpuBurst()) {
    CHECK(errnoName(rawWrite(ctrBurst, "40000")) == errnoName(EINVAL));
    REQUIRE(rawWrite(ctrBurst, "20000") == 0);
    CHECK(errnoName(rawWrite(ctrMax, "10000")) == errnoName(EINVAL));
  } else {
    CHECK_FALSE(fs::exists(ctrBurst));
  }
  CHECK(readTrimmed(ctrMax) == "30000 100000");

  // A parent does not bound its child's quota: a child above its parent, and a
  // parent lowered below its child, are both accepted (v1 says EINVAL to both).
  REQUIRE(rawWrite(podMax, "50000") == 0);
  CHECK(rawWrite(ctrMax, "100000") == 0);
  CHECK(rawWrite(podMax, "20000") == 0);
  CHECK(readTrimmed(ctrMax) == "100000 100000");

  // Nor its child's memory protection: v2 clips the effective value instead.
  CHECK(rawWrite(tree.file(tree.pod(), "memory.min"), std::to_string(kMiB)) == 0);
  CHECK(rawWrite(tree.file(tree.ctr(), "memory.min"), std::to_string(4 * kMiB)) == 0);
  CHECK(readTrimmed(tree.file(tree.ctr(), "memory.min")) == std::to_string(4 * kMiB));

  // The kernel keeps memory in pages: a value not a page multiple is rounded down.
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  CHECK(rawWrite(tree.file(tree.ctr(), "memory.high"), std::to_string(25 * page + 7)) == 0);
  CHECK(readTrimmed(tree.file(tree.ctr(), "memory.high")) == std::to_string(25 * page));
}

TEST_CASE("v2 accepts a child cpuset outside its parent's and clips the effective set",
          "[v2][kernel]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  const std::string podCpus = tree.file(tree.pod(), "cpuset.cpus");
  const std::string ctrCpus = tree.file(tree.ctr(), "cpuset.cpus");
  auto all = parseKnob(Knob::kCpusetCpus, kV2,
                       readTrimmed(tree.file(tree.pod(), "cpuset.cpus.effective")) + "\n");
  REQUIRE(all.ok());
  if (all->cpus.size() < 2) KOORDLET_SKIP("fewer than 2 CPUs (run.sh boots with -smp 2)");
  const std::string a = std::to_string(all->cpus[0]);
  const std::string b = std::to_string(all->cpus[1]);

  REQUIRE(rawWrite(podCpus, a + "," + b) == 0);
  REQUIRE(rawWrite(ctrCpus, b) == 0);
  const int shrink = rawWrite(podCpus, a);
  if (!test::kernelAtLeast(6, 1)) {
    // Linux 5.10 (the oldest the rig boots) still refuses to shrink a parent below its
    // child, EBUSY as v1 does; 6.1 and later accept. The executor's order (a shrink
    // child first) lands the same change on it.
    CHECK(errnoName(shrink) == errnoName(EBUSY));
    Harness h;
    Executor exec = h.make(tree);
    const ExecutorStats s = applyChecked(
        exec, tree, {cpus(tree.pod(), {all->cpus[0]}), cpus(tree.ctr(), {all->cpus[0]})});
    CHECK(s.written == 3);  // the container via the union (two writes), then the pod
    return;
  }
  // Shrinking the parent below its child is accepted (v1: EBUSY)...
  CHECK(shrink == 0);
  CHECK(readTrimmed(ctrCpus) == b);
  // ...the child keeps what it asked but runs on its parent's CPUs.
  CHECK(readTrimmed(tree.file(tree.ctr(), "cpuset.cpus.effective")) == a);
  // And a child asking for CPUs its parent lacks is accepted too (v1: EACCES).
  CHECK(rawWrite(ctrCpus, a + "," + b) == 0);
  CHECK(readTrimmed(tree.file(tree.ctr(), "cpuset.cpus.effective")) == a);
}

TEST_CASE(
    "on v2 the executor lowers burst before quota, the order the kernel needs, and refuses what "
    "v2 would refuse",
    "[v2][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  const std::string& ctr = tree.ctr();
  if (checkedWithoutBurst(tree)) return;
  applyChecked(exec, tree,
               {setKnob(ctr, Knob::kCpuQuota, 100000), setKnob(ctr, Knob::kCpuBurst, 80000)});

  // Quota first, as a strategy might list them, would be refused: quota below burst.
  CHECK(errnoName(rawWrite(tree.file(ctr, "cpu.max"), "50000")) == errnoName(EINVAL));
  // The executor writes burst (a flat knob) before quota (a hierarchical one).
  ExecutorStats s = applyChecked(
      exec, tree, {setKnob(ctr, Knob::kCpuQuota, 50000), setKnob(ctr, Knob::kCpuBurst, 20000)});
  CHECK(s.written == 2);

  // Out-of-range values are refused by the executor itself, never sent to be
  // refused by v2 nor clamped to a bound: the files keep what they held.
  const std::string weight = readTrimmed(tree.file(ctr, "cpu.weight"));
  const std::string podMax = readTrimmed(tree.file(tree.pod(), "cpu.max"));
  s = exec.apply({setKnob(ctr, Knob::kCpuShares, 0), setKnob(tree.pod(), Knob::kCpuQuota, 500),
                  setKnob(ctr, Knob::kCpuShares, 1'000'000)});
  CHECK(s.refused == 3);
  CHECK(s.written + s.invalid == 0);
  CHECK(readTrimmed(tree.file(ctr, "cpu.weight")) == weight);
  CHECK(readTrimmed(tree.file(tree.pod(), "cpu.max")) == podMax);
}

// The kernel keeps a cgroup's burst at most its quota (EINVAL otherwise): raising
// both needs the quota first, lowering both the burst first. Both in one apply.
TEST_CASE("on v2 quota and burst raised or lowered together land in one apply", "[v2][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  const std::string& ctr = tree.ctr();
  if (checkedWithoutBurst(tree)) return;
  applyChecked(exec, tree,
               {setKnob(ctr, Knob::kCpuQuota, 50000), setKnob(ctr, Knob::kCpuBurst, 20000)});
  // The same raise in the raw order burst-then-quota is refused by the kernel.
  REQUIRE(rawWrite(tree.file(ctr, "cpu.max.burst"), "150000") == EINVAL);
  ExecutorStats s = applyChecked(
      exec, tree, {setKnob(ctr, Knob::kCpuBurst, 150000), setKnob(ctr, Knob::kCpuQuota, 200000)});
  CHECK(s.invalid == 0);
  CHECK(s.written == 2);
  CHECK(readTrimmed(tree.file(ctr, "cpu.max.burst")) == "150000");
  // And back down: the quota below the old burst needs the burst lowered first.
  s = applyChecked(exec, tree,
                   {setKnob(ctr, Knob::kCpuQuota, 50000), setKnob(ctr, Knob::kCpuBurst, 20000)});
  CHECK(s.invalid == 0);
  CHECK(s.written == 2);
  CHECK(readTrimmed(tree.file(ctr, "cpu.max")) == "50000 100000");
  CHECK(readTrimmed(tree.file(ctr, "cpu.max.burst")) == "20000");
}

TEST_CASE("on v2 the executor's hierarchical order still lands every value", "[v2][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  const std::string& pod = tree.pod();
  const std::string& ctr = tree.ctr();
  ExecutorStats s = applyChecked(
      exec, tree, {setKnob(pod, Knob::kCpuQuota, 200000), setKnob(ctr, Knob::kCpuQuota, 150000)});
  CHECK(s.written == 2);
  s = applyChecked(
      exec, tree,
      {setKnob(pod, Knob::kCpuQuota, 50000), setKnob(ctr, Knob::kCpuQuota, 40000),
       setKnob(pod, Knob::kMemoryMin, 16 * kMiB), setKnob(ctr, Knob::kMemoryMin, 8 * kMiB)});
  CHECK(s.written == 4);
  s = applyChecked(exec, tree,
                   {setKnob(ctr, Knob::kCpuQuota, -1), setKnob(pod, Knob::kCpuQuota, -1),
                    setKnob(ctr, Knob::kMemoryMin, 0), setKnob(pod, Knob::kMemoryMin, 0)});
  CHECK(s.written == 4);

  auto all = parseKnob(Knob::kCpusetCpus, kV2,
                       readTrimmed(tree.file(pod, "cpuset.cpus.effective")) + "\n");
  REQUIRE(all.ok());
  if (all->cpus.size() < 2) KOORDLET_SKIP("fewer than 2 CPUs (run.sh boots with -smp 2)");
  const int a = all->cpus[0];
  const int b = all->cpus[1];
  s = applyChecked(exec, tree, {cpus(pod, {a}), cpus(ctr, {a})});
  CHECK(s.written == 2);
  // Neither subset nor superset: a -> b via the union, four writes.
  s = applyChecked(exec, tree, {cpus(ctr, {b}), cpus(pod, {b})});
  CHECK(s.written == 4);
  CHECK(readTrimmed(tree.file(ctr, "cpuset.cpus.effective")) == std::to_string(b));
  s = applyChecked(exec, tree, {cpus(ctr, all->cpus), cpus(pod, all->cpus)});
  CHECK(s.written == 2);
}

TEST_CASE("on v2 an identical apply writes nothing, and only a CPU list again at forceUpdate",
          "[v2][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  const std::vector<CgroupWrite> batch = {
      setKnob(tree.pod(), Knob::kCpuQuota, 80000), setKnob(tree.ctr(), Knob::kCpuQuota, 60000),
      setKnob(tree.ctr(), Knob::kCpuShares, 1024),
      setKnob(tree.ctr(), Knob::kMemoryHigh, 64 * kMiB), cpus(tree.ctr(), {0})};
  CHECK(applyChecked(exec, tree, batch).written == 5);
  ExecutorStats s = applyChecked(exec, tree, batch);
  CHECK(s.written == 0);
  CHECK(s.unchanged == 5);
  h.clock.advance(59s);
  CHECK(applyChecked(exec, tree, batch).unchanged == 5);
  h.clock.advance(1s);
  s = applyChecked(exec, tree, batch);
  CHECK(s.written == 1);  // the CPU list: its write re-applies the tasks' affinity
  CHECK(s.unchanged == 4);
  // Changed behind the executor's back: trusted for the verify period
  // (--resource-verify-seconds, 10 s) after the file was last read, then read again
  // and repaired. 10 s on, every file is read again (the CPU list written above,
  // the others read at 59 s), so all are known from the same moment.
  h.clock.advance(10s);
  CHECK(applyChecked(exec, tree, batch).unchanged == 5);
  REQUIRE(rawWrite(tree.file(tree.ctr(), "cpu.weight"), "500") == 0);
  h.clock.advance(9s);
  s = exec.apply(batch);
  CHECK(s.written == 0);
  CHECK(s.unchanged == 5);
  h.clock.advance(1s);
  s = applyChecked(exec, tree, batch);
  CHECK(s.written == 1);
  CHECK(s.unchanged == 4);
}

// The kernel keeps memory in pages and rounds a byte value down; the executor aims
// at the page below, so the file reads back equal and the next apply writes nothing.
TEST_CASE("on v2 an unaligned memory target is written once, page-aligned", "[v2][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  const std::vector<CgroupWrite> batch = {setKnob(tree.ctr(), Knob::kMemoryHigh, 25 * page + 7)};
  CHECK(exec.apply(batch).written == 1);
  CHECK(readTrimmed(tree.file(tree.ctr(), "memory.high")) == std::to_string(25 * page));
  const ExecutorStats again = exec.apply(batch);
  CHECK(again.written == 0);
  CHECK(again.unchanged == 1);
}

TEST_CASE("on v2 a value the kernel refuses is counted invalid every time and logged once",
          "[v2][executor]") {
  REQUIRE_KERNEL();
  KernelTree tree;
  Harness h;
  Executor exec = h.make(tree);
  const std::string& ctr = tree.ctr();
  applyChecked(exec, tree, {setKnob(ctr, Knob::kCpuQuota, 30000)});
  // A burst above the cgroup's quota: in range for the table, EINVAL for the kernel
  // (5.14+; before, there is no burst file to refuse it).
  const bool burst = test::kernelHasCpuBurst();
  if (burst) {
    CHECK(exec.apply({setKnob(ctr, Knob::kCpuBurst, 50000)}).invalid == 1);
    CHECK(exec.apply({setKnob(ctr, Knob::kCpuBurst, 50000)}).invalid == 1);
    CHECK(exec.stats().invalid == 2);
  }
  // A CPU this machine does not have is ERANGE: the kernel refusing the value,
  // counted as invalid like EINVAL.
  ExecutorStats s = exec.apply({cpus(ctr, {9000})});
  CHECK(s.invalid == 1);
  CHECK(s.failed == 0);
  CHECK(exec.stats().invalid == (burst ? 3 : 1));
  CHECK(h.logLines() == (burst ? 2 : 1));  // one per path
  if (burst) CHECK(readTrimmed(tree.file(ctr, "cpu.max.burst")) == "0");
  CHECK(readTrimmed(tree.file(ctr, "cpuset.cpus")).empty());
}

TEST_CASE("the rig's subtree is gone when a test ends", "[v2]") {
  REQUIRE_KERNEL();
  std::string prefix;
  {
    KernelTree tree;
    prefix = kCgroupV2Root + "/" + tree.prefix();
    REQUIRE(fs::exists(tree.file(tree.ctr(), "cgroup.procs")));
  }
  CHECK_FALSE(fs::exists(prefix));
}

}  // namespace test_rig_cgroup_v2_kernel
