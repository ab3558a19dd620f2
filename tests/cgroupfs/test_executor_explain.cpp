// Tests for what the executor remembers of each knob for GET /explain (KnobRecord):
// owner, the value asked and why, the value written and when, drift (someone else's
// value, kept after the repair) and refusals; on a throw-away tree and a ManualClock.
#include <catch2/catch.hpp>

#include "tests/cgroupfs/executor_fixture.h"

namespace test_cgroupfs_executor_explain {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::test;
using namespace std::chrono_literals;

namespace {

WriteReasonPtr reason(const std::string& threshold) {
  auto why = std::make_shared<WriteReason>();
  why->add("resourceUsedThresholdWithBE.cpuSuppressThresholdPercent", threshold,
           "NodeSLO node-1 resourceVersion 7");
  why->add("nodeUsedCores", "3.20");
  return why;
}

CgroupWrite with(CgroupWrite w, WriteReasonPtr why) {
  w.why = std::move(why);
  return w;
}

}  // namespace

TEST_CASE("explain names each knob's owner, the value asked, why, and when it was written",
          "[executor][explain]") {
  Fixture f;
  const Clock::Wall writtenAt = f.clock.wallNow();
  f.executor().apply({with(quota("kubepods/besteffort", 250000), reason("65")),
                      cpus(kPod, {0, 1}, "cpu-suppress")});
  f.clock.advance(5s);
  auto records = f.executor().explain("kubepods/besteffort", true);
  REQUIRE(records.size() == 2);
  const KnobRecord& q = records[0];
  CHECK(q.dir == "kubepods/besteffort");
  CHECK(q.knob == Knob::kCpuQuota);
  CHECK(q.owner == "cpusuppress");
  REQUIRE(q.asked);
  CHECK(q.asked->number == 250000);
  REQUIRE(q.written);
  CHECK(q.written->number == 250000);
  CHECK(q.writtenAt == writtenAt);
  CHECK_FALSE(q.writtenDryRun);
  REQUIRE(q.why);
  CHECK(q.why->inputs[0].name == "resourceUsedThresholdWithBE.cpuSuppressThresholdPercent");
  CHECK(q.why->inputs[0].source == "NodeSLO node-1 resourceVersion 7");
  CHECK_FALSE(q.drift);
  CHECK(records[1].dir == kPod);
  CHECK(records[1].knob == Knob::kCpusetCpus);
  // Without below, only the dir itself; with a knob, only that knob.
  CHECK(f.executor().explain("kubepods/besteffort", false).size() == 1);
  CHECK(f.executor().explain("kubepods/besteffort", true, Knob::kCpusetCpus).size() == 1);
  CHECK(f.executor().explain("kubepods/besteffort/pod", true).empty());  // a prefix, not a dir
  // The kernel's text, read from the file.
  auto kernel = f.executor().readNow("kubepods/besteffort", Knob::kCpuQuota);
  REQUIRE(kernel.ok());
  CHECK(*kernel == "250000");
}

TEST_CASE("a value the file already held is asked but never written", "[executor][explain]") {
  Fixture f;
  f.executor().apply({quota(kPod, -1)});
  auto records = f.executor().explain(kPod, false);
  REQUIRE(records.size() == 1);
  REQUIRE(records[0].asked);
  CHECK(records[0].asked->number == -1);
  CHECK_FALSE(records[0].written);
}

TEST_CASE("a value changed behind the agent's back shows as drift, is repaired, and stays shown",
          "[executor][explain]") {
  Fixture f;
  f.executor().apply({quota("kubepods/besteffort", 250000)});
  f.tree.write("cpu/kubepods/besteffort/cpu.cfs_quota_us", "-1\n");
  f.clock.advance(3s);
  // Within the verify period the known text answers: not noticed yet.
  f.executor().apply({quota("kubepods/besteffort", 250000)});
  CHECK_FALSE(f.executor().explain("kubepods/besteffort", false)[0].drift);
  f.clock.advance(10s);
  const Clock::Wall noticedAt = f.clock.wallNow();
  auto batch = f.executor().apply({quota("kubepods/besteffort", 250000)});
  CHECK(batch.written == 1);
  CHECK(f.file("cpu/kubepods/besteffort/cpu.cfs_quota_us") == "250000\n");  // repaired
  auto r = f.executor().explain("kubepods/besteffort", false)[0];
  REQUIRE(r.drift);
  CHECK(*r.drift == "-1");
  CHECK(r.driftReplaced == "250000");
  CHECK(r.driftAt == noticedAt);
  CHECK(r.drifts == 1);
  CHECK(f.executor().stats().drifted == 1);
  // Kept after the repair, not counted again while the file holds our value.
  f.clock.advance(20s);
  f.executor().apply({quota("kubepods/besteffort", 250000)});
  r = f.executor().explain("kubepods/besteffort", false)[0];
  REQUIRE(r.drift);
  CHECK(r.drifts == 1);
}

TEST_CASE("our own new value is not drift", "[executor][explain]") {
  Fixture f;
  f.executor().apply({quota("kubepods/besteffort", 250000)});
  f.clock.advance(20s);
  f.executor().apply({quota("kubepods/besteffort", 300000)});
  f.clock.advance(20s);
  f.executor().apply({quota("kubepods/besteffort", 200000)});
  auto r = f.executor().explain("kubepods/besteffort", false)[0];
  CHECK_FALSE(r.drift);
  CHECK(r.written->number == 200000);
  CHECK(f.executor().stats().drifted == 0);
}

TEST_CASE("a dry run's value is never taken for drift", "[executor][explain]") {
  Fixture f;
  f.config.dryRun = true;
  f.executor().apply({quota("kubepods/besteffort", 250000)});
  f.clock.advance(20s);
  f.executor().apply({quota("kubepods/besteffort", 250000)});
  auto r = f.executor().explain("kubepods/besteffort", false)[0];
  REQUIRE(r.written);
  CHECK(r.writtenDryRun);
  CHECK_FALSE(r.drift);
  CHECK(f.file("cpu/kubepods/besteffort/cpu.cfs_quota_us") == "-1\n");
}

TEST_CASE("refused writes show on the knob with their reason, for two force periods",
          "[executor][explain]") {
  Fixture f;
  f.executor().apply({quota(kPod, 200000, "cpu-burst")});
  f.executor().apply({quota(kPod, 100000, "runtime-hooks"), quota(kCtr, -5, "cpu-burst")});
  auto pod = f.executor().explain(kPod, false)[0];
  CHECK(pod.owner == "cpu-burst");
  REQUIRE(pod.refusal);
  CHECK(pod.refusal->reason == "second_owner");
  CHECK(pod.refusal->by == "runtime-hooks");
  CHECK(pod.refusal->value == "100000");
  auto ctr = f.executor().explain(kCtr, false)[0];
  REQUIRE(ctr.refusal);
  CHECK(ctr.refusal->reason == "out_of_range");
  CHECK(ctr.refusal->value == "-5");
  CHECK_FALSE(ctr.written);
  // The owner keeps asking; the refusal ages out.
  for (int i = 0; i < 13; ++i) {
    f.clock.advance(10s);
    f.executor().apply({quota(kPod, 200000, "cpu-burst")});
  }
  CHECK_FALSE(f.executor().explain(kPod, false)[0].refusal);
}

TEST_CASE("a gone pod's explain state goes with its owners", "[executor][explain]") {
  Fixture f;
  f.executor().apply({quota(kPod, 200000), quota(kCtr, 100000)});
  f.tree.write("cpu/kubepods/besteffort/cpu.cfs_quota_us", "-1\n");
  CHECK(f.executor().explain(kPod, true).size() == 2);
  f.executor().forgetUnder(kPod);
  CHECK(f.executor().explain(kPod, true).empty());
  CHECK(f.executor().ownerCount() == 0);
}

TEST_CASE("a write reads the file first, so drift within the verify period is seen and audited",
          "[executor][explain]") {
  Fixture f;
  f.executor().apply({quota("kubepods/besteffort", 250000)});
  f.tree.write("cpu/kubepods/besteffort/cpu.cfs_quota_us", "-1\n");
  f.clock.advance(2s);  // the known text (250000) is still trusted for reads
  f.executor().apply({quota("kubepods/besteffort", 300000)});
  auto r = f.executor().explain("kubepods/besteffort", false)[0];
  REQUIRE(r.drift);
  CHECK(*r.drift == "-1");
  CHECK(r.written->number == 300000);
  const auto lines = f.audit();
  REQUIRE(lines.size() == 2);
  CHECK(lines[1]["old"] == "-1");  // what the kernel held, not what we knew
}

TEST_CASE("a file that holds what its owner asks now is not drift, whoever put it there",
          "[executor][explain]") {
  Fixture f;
  f.config.verify = std::chrono::seconds(0);  // every ask reads the file
  f.executor().apply({quota("kubepods/besteffort", 250000)});
  f.tree.write("cpu/kubepods/besteffort/cpu.cfs_quota_us", "300000\n");
  for (int i = 0; i < 5; ++i) {
    f.clock.advance(1s);
    f.executor().apply({quota("kubepods/besteffort", 300000)});
  }
  CHECK_FALSE(f.executor().explain("kubepods/besteffort", false)[0].drift);
  CHECK(f.executor().stats().drifted == 0);
}

TEST_CASE("holds compares the kernel's text as the executor does", "[executor][explain]") {
  Fixture f;
  Executor& e = f.executor();
  CHECK(e.holds(Knob::kMemoryLimit, KnobValue::of(-1), "9223372036854771712\n"));
  CHECK(e.holds(Knob::kMemoryLimit, KnobValue::of(4097), "4096"));  // page-rounded
  CHECK_FALSE(e.holds(Knob::kMemoryLimit, KnobValue::of(8192), "4096"));
  CHECK(e.holds(Knob::kCpusetCpus, KnobValue::ofCpus({0, 1, 2}), "0-2\n"));
  CHECK_FALSE(e.holds(Knob::kCpuQuota, KnobValue::of(-1), "garbage"));
}

}  // namespace test_cgroupfs_executor_explain

namespace test_cgroupfs_executor_explain_weights {

using namespace koord;
using namespace koord::test;
using namespace std::chrono_literals;

TEST_CASE(
    "a cpu.weight written before the runtime's conversion was known is rewritten "
    "under the new one, and that is not drift",
    "[executor][explain]") {
  TempTree tree;
  for (const char* d : {"kubepods", "kubepods/besteffort", "kubepods/besteffort/pod1"}) {
    tree.write(std::string(d) + "/cpu.weight", "100\n");
  }
  tree.write("cgroup.controllers", "cpu memory\n");
  ManualClock clock;
  FailureLog failures(clock);
  ExecutorConfig config;
  config.cgroupRoot = tree.path();
  Executor exec(config, CgroupLayout(CgroupVersion::kV2, CgroupDriver::kCgroupfs),
                KnobSupport::all(), clock, failures);
  // Linear until the agent has read the runtime's conversion off a container: 512
  // shares is weight 20.
  exec.apply({shares("kubepods/besteffort/pod1", 512)});
  CHECK(*readFile(tree.path("kubepods/besteffort/pod1/cpu.weight")) == "20\n");
  // runc 1.3's quadratic curve: 512 shares is weight 59. The file's 20 is our own
  // write under the old conversion, not someone else's.
  exec.setCpuWeightConversion(CpuWeightConversion::kQuadratic);
  clock.advance(20s);
  auto batch = exec.apply({shares("kubepods/besteffort/pod1", 512)});
  CHECK(batch.written == 1);
  CHECK(*readFile(tree.path("kubepods/besteffort/pod1/cpu.weight")) == "59\n");
  CHECK(exec.stats().drifted == 0);
  CHECK_FALSE(exec.explain("kubepods/besteffort/pod1", false)[0].drift);
  // Changed behind our back after that: drift, as before.
  tree.write("kubepods/besteffort/pod1/cpu.weight", "1\n");
  clock.advance(20s);
  exec.apply({shares("kubepods/besteffort/pod1", 512)});
  CHECK(exec.stats().drifted == 1);
}

}  // namespace test_cgroupfs_executor_explain_weights
