// Degraded mode on old kernels, from the probe through the executor: throw-away
// trees shaped like a 4.19 kernel (v1 without cpu.cfs_burst_us, which came in
// 5.14, and without memory.min/low/high, which v1 has only on Anolis kernels) and a
// pre-5.14 v2 kernel (no cpu.max.burst). The knobs the probe finds absent are
// counted as unsupported, logged once per knob, and their files never created,
// while the knobs the kernel has are still written. The probe alone on such trees
// is tested in test_knob.cpp; this file follows its answer into the executor.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/executor.h"
#include "tests/support/log_capture.h"
#include "tests/support/temp_tree.h"

namespace test_cgroupfs_knob_old_kernel {  // this file's own names: tests build as unity chunks

using namespace koord;
namespace fs = std::filesystem;

namespace {

using Harness = test::LogCapture;

CgroupWrite setKnob(const std::string& dir, Knob knob, int64_t value) {
  return CgroupWrite{dir, knob, KnobValue::of(value), "test"};
}

std::string contents(const test::TempTree& tree, const std::string& rel) {
  auto text = readFile(tree.path(rel));
  REQUIRE(text.ok());
  return *text;
}

}  // namespace

TEST_CASE("on a 4.19-like v1 kernel burst and memory protection are unsupported, not written",
          "[knob][executor][old-kernel]") {
  const std::vector<std::string> dirs = {"kubepods", "kubepods/besteffort",
                                         "kubepods/besteffort/pod1", "kubepods/besteffort/pod1/c1"};
  test::TempTree tree;
  for (const std::string& dir : dirs) {
    tree.write("cpu/" + dir + "/cpu.shares", "1024\n");
    tree.write("cpu/" + dir + "/cpu.cfs_quota_us", "-1\n");
    tree.write("cpu/" + dir + "/cpu.cfs_period_us", "100000\n");
    tree.write("cpuset/" + dir + "/cpuset.cpus", "0-3\n");
    tree.write("memory/" + dir + "/memory.limit_in_bytes", "9223372036854771712\n");
  }
  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  const KnobSupport support = KnobSupport::probe(tree.path(), layout);
  CHECK_FALSE(support.has(Knob::kCpuBurst));
  CHECK_FALSE(support.has(Knob::kMemoryMin));
  CHECK_FALSE(support.has(Knob::kMemoryLow));
  CHECK_FALSE(support.has(Knob::kMemoryHigh));
  CHECK(support.has(Knob::kCpuQuota));
  CHECK(support.has(Knob::kMemoryLimit));

  Harness h;
  ExecutorConfig config;
  config.cgroupRoot = tree.path();
  Executor exec(config, layout, support, h.clock, h.failures);
  std::vector<std::string> statuses;
  exec.onWrite([&](const char* status, double) { statuses.emplace_back(status); });
  std::vector<CgroupWrite> batch;
  for (const std::string& dir : {dirs[2], dirs[3]}) {
    batch.push_back(setKnob(dir, Knob::kCpuBurst, 50000));
    batch.push_back(setKnob(dir, Knob::kMemoryMin, 1 << 20));
    batch.push_back(setKnob(dir, Knob::kMemoryLow, 2 << 20));
    batch.push_back(setKnob(dir, Knob::kMemoryHigh, 64 << 20));
  }
  batch.push_back(setKnob(dirs[3], Knob::kCpuQuota, 200000));

  ExecutorStats s = exec.apply(batch);
  CHECK(s.unsupported == 8);
  CHECK(s.written == 1);
  CHECK(s.invalid + s.failed + s.vanished == 0);
  CHECK(std::count(statuses.begin(), statuses.end(), "unsupported") == 8);
  // One line per knob: burst, min, low, high.
  CHECK(h.logLines() == 4);
  s = exec.apply(batch);
  CHECK(s.unsupported == 8);
  CHECK(s.unchanged == 1);
  CHECK(h.logLines() == 4);
  CHECK(exec.stats().unsupported == 16);

  for (const std::string& dir : {dirs[2], dirs[3]}) {
    CHECK_FALSE(fs::exists(tree.path("cpu/" + dir + "/cpu.cfs_burst_us")));
    for (const char* f : {"memory.min", "memory.low", "memory.high"}) {
      INFO(dir << "/" << f);
      CHECK_FALSE(fs::exists(tree.path("memory/" + dir + "/" + f)));
    }
  }
  CHECK(contents(tree, "cpu/" + dirs[3] + "/cpu.cfs_quota_us") == "200000\n");
}

TEST_CASE("on a v2 kernel before 5.14 cpu.max.burst is unsupported, not written",
          "[knob][executor][old-kernel]") {
  const std::vector<std::string> dirs = {
      "kubepods.slice", "kubepods.slice/kubepods-besteffort.slice",
      "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice",
      "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/"
      "cri-containerd-c1.scope"};
  test::TempTree tree({{"cgroup.controllers", "cpuset cpu io memory pids\n"}});
  for (const std::string& dir : dirs) {
    tree.write(dir + "/cpu.weight", "100\n");
    tree.write(dir + "/cpu.max", "max 100000\n");
    tree.write(dir + "/cpuset.cpus", "\n");
    tree.write(dir + "/memory.max", "max\n");
    tree.write(dir + "/memory.min", "0\n");
    tree.write(dir + "/memory.low", "0\n");
    tree.write(dir + "/memory.high", "max\n");
  }
  const CgroupLayout layout(CgroupVersion::kV2, CgroupDriver::kSystemd);
  const KnobSupport support = KnobSupport::probe(tree.path(), layout);
  CHECK_FALSE(support.has(Knob::kCpuBurst));
  for (Knob k : {Knob::kCpuShares, Knob::kCpuQuota, Knob::kCpusetCpus, Knob::kMemoryLimit,
                 Knob::kMemoryMin, Knob::kMemoryLow, Knob::kMemoryHigh}) {
    CHECK(support.has(k));
  }

  Harness h;
  ExecutorConfig config;
  config.cgroupRoot = tree.path();
  Executor exec(config, layout, support, h.clock, h.failures);
  const std::vector<CgroupWrite> batch = {setKnob(dirs[2], Knob::kCpuBurst, 50000),
                                          setKnob(dirs[3], Knob::kCpuBurst, 50000),
                                          setKnob(dirs[3], Knob::kCpuQuota, 200000)};
  ExecutorStats s = exec.apply(batch);
  CHECK(s.unsupported == 2);
  CHECK(s.written == 1);
  CHECK(h.logLines() == 1);
  CHECK(exec.apply(batch).unsupported == 2);
  CHECK(h.logLines() == 1);
  CHECK(h.log.str().find("cpu.cfs_burst_us is not supported") != std::string::npos);
  CHECK_FALSE(fs::exists(tree.path(dirs[2] + "/cpu.max.burst")));
  CHECK_FALSE(fs::exists(tree.path(dirs[3] + "/cpu.max.burst")));
  CHECK(contents(tree, dirs[3] + "/cpu.max") == "200000\n");
}

}  // namespace test_cgroupfs_knob_old_kernel
