// Tests for cgroupfs/executor on throw-away v1 trees with a ManualClock: what it
// refuses, what it skips, when it rewrites, in which order it writes, and what it
// records in the audit log.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/executor.h"
#include "tests/cgroupfs/executor_fixture.h"
#include "tests/support/temp_tree.h"

namespace test_cgroupfs_executor {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

using namespace koord::test;

TEST_CASE("the executor refuses every directory outside the kubepods hierarchy", "[executor]") {
  Fixture f;
  const std::vector<std::string> bad = {"",
                                        "other",
                                        "kubepods-other",
                                        "kubepods/../other",
                                        "kubepods/besteffort/..",
                                        "kubepods/./besteffort",
                                        "kubepods//besteffort",
                                        "/kubepods",
                                        "kubepods/",
                                        "kube"};
  std::vector<CgroupWrite> writes;
  for (const auto& dir : bad) writes.push_back(shares(dir, 2));
  const ExecutorStats s = f.executor().apply(writes);
  CHECK(s.refused == bad.size());
  CHECK(s.written == 0);
  CHECK(f.file("cpu/kubepods-other/cpu.shares") == "1024\n");
  CHECK(f.file("cpu/other/cpu.shares") == "1024\n");
  CHECK(f.file("cpu/kubepods/cpu.shares") == "1024\n");
  CHECK(f.statuses.empty());  // nothing was attempted
  const size_t lines = f.logLines();
  CHECK(lines == bad.size());  // one line per directory...
  f.executor().apply(writes);
  CHECK(f.logLines() == lines);  // ...and not again
  CHECK(f.executor().stats().refused == 2 * bad.size());
  // The kubepods root itself and everything below it are fine.
  CHECK(f.executor().apply({shares("kubepods", 2), shares(kCtr, 2)}).written == 2);
}

TEST_CASE("one owner per knob per cgroup: the first owner wins", "[executor]") {
  Fixture f;
  CHECK(f.executor().apply({shares(kPod, 512, "cpusuppress")}).written == 1);
  const ExecutorStats s = f.executor().apply({shares(kPod, 100, "batchresource")});
  CHECK(s.refused == 1);
  CHECK(f.file("cpu/" + kPod + "/cpu.shares") == "512\n");
  // Another knob of the same cgroup, or the same knob elsewhere, is free.
  CHECK(f.executor().apply({quota(kPod, 50000, "batchresource")}).written == 1);
  CHECK(f.executor().apply({shares(kCtr, 100, "batchresource")}).written == 1);
  // The owner itself keeps writing.
  CHECK(f.executor().apply({shares(kPod, 256, "cpusuppress")}).written == 1);
}

TEST_CASE("values outside the knob's range are refused and counted, never clamped or written",
          "[executor]") {
  Fixture f;
  std::vector<std::string> reasons;
  f.executor().onRefuse([&](const char* reason) { reasons.emplace_back(reason); });
  const ExecutorStats s = f.executor().apply(
      {shares(kPod, 0), quota(kPod, -5),
       CgroupWrite{kPod, Knob::kMemoryLimit, KnobValue::of(-20), "memqos"}, shares(kCtr, 512)});
  CHECK(s.refused == 3);
  CHECK(s.written == 1);  // the good write in the same batch still lands
  CHECK(reasons == std::vector<std::string>(3, "out_of_range"));
  // Before: shares 2, quota 1000 µs (the harshest throttle), memory limit 0 (on v2
  // memory.max 0 kills the cgroup). Now the files keep what they held.
  CHECK(f.file("cpu/" + kPod + "/cpu.shares") == "1024\n");
  CHECK(f.file("cpu/" + kPod + "/cpu.cfs_quota_us") == "-1\n");
  CHECK(f.file("memory/" + kPod + "/memory.limit_in_bytes") == "9223372036854771712\n");
  CHECK(f.file("cpu/" + kCtr + "/cpu.shares") == "512\n");
  CHECK(f.statuses == std::vector<std::string>{"succeeded"});  // refusals are not attempts
  // One line per cgroup and knob, naming both, the value and the owner.
  const std::string log = f.log.str();
  CHECK_THAT(log, Catch::Contains("memory.limit_in_bytes -20 is outside its range"));
  CHECK_THAT(log, Catch::Contains(kPod));
  CHECK_THAT(log, Catch::Contains("for memqos"));
  f.executor().apply({quota(kPod, -5)});
  CHECK(f.logLines() == 3);  // the repeat is counted, not logged again
}

TEST_CASE("knob owners of cgroups nobody asks for any more are let go after two force periods",
          "[executor]") {
  Fixture f;
  f.config.forceUpdate = 60s;
  // Pods come and go: each round asks for the knobs of the pods alive now (the
  // window of 10 moves by one a round). A gone pod's dir is left in place, as
  // when its removal races the round: only its owner entry could keep it.
  auto dir = [](int pod) { return "kubepods/besteffort/pod-churn-" + std::to_string(pod); };
  for (int round = 0; round < 400; ++round) {
    f.tree.write("cpu/" + dir(round + 9) + "/cpu.shares", "1024\n");
    std::vector<CgroupWrite> batch;
    for (int pod = round; pod < round + 10; ++pod) batch.push_back(shares(dir(pod), 2));
    batch.push_back(shares(kPod, 512));  // a pod that stays
    f.executor().apply(batch);
    f.clock.advance(1s);
  }
  // 10 live pods + the one that stays, plus those asked for within the last 120 s.
  CHECK(f.executor().ownerCount() <= 11 + 121);
  CHECK(f.executor().ownerCount() >= 11);
  // The pod that stayed keeps its owner: another strategy is still refused.
  CHECK(f.executor().apply({shares(kPod, 256, "other")}).refused == 1);
}

TEST_CASE("a pod's owners, and its containers', are let go at once when the pod is forgotten",
          "[executor]") {
  Fixture f;
  const std::string gone = "kubepods/besteffort/pod-a";
  const std::string sibling = "kubepods/besteffort/pod-a-2";  // shares the prefix, stays
  for (const std::string& d : {gone, gone + "/ctr-1", gone + "/ctr-2", sibling}) {
    f.tree.write("cpu/" + d + "/cpu.shares", "1024\n");
  }
  f.tree.write("cpu/" + gone + "/cpu.cfs_quota_us", "-1\n");
  f.executor().apply({shares(gone, 2), shares(gone + "/ctr-1", 2), shares(gone + "/ctr-2", 2),
                      quota(gone, 50000), shares(sibling, 2), shares(kPod, 512)});
  REQUIRE(f.executor().ownerCount() == 6);
  f.executor().forgetUnder(gone);
  CHECK(f.executor().ownerCount() == 2);
  // The survivors keep their owners: another strategy is still refused on them...
  CHECK(f.executor().apply({shares(sibling, 4, "other")}).refused == 1);
  CHECK(f.executor().apply({shares(kPod, 4, "other")}).refused == 1);
  // ...and the forgotten dir has none: a new owner may write it.
  CHECK(f.executor().apply({shares(gone, 4, "other")}).refused == 0);
}

TEST_CASE("a file that already holds the value is not written", "[executor]") {
  Fixture f;
  // "-1" holds unlimited; the page-rounded LONG_MAX of memory.limit_in_bytes too.
  const ExecutorStats s = f.executor().apply(
      {quota(kPod, -1), cpus(kPod, {0, 1, 2, 3, 4, 5, 6, 7}),
       CgroupWrite{kPod, Knob::kMemoryLimit, KnobValue::of(-1), "memqos"}, shares(kPod, 1024)});
  CHECK(s.unchanged == 4);
  CHECK(s.written == 0);
  CHECK(f.audit().empty());
  CHECK(f.statuses == std::vector<std::string>(4, "unchanged"));
}

TEST_CASE("an equal file is never rewritten, a changed one is repaired once verify has passed",
          "[executor]") {
  Fixture f;
  f.config.forceUpdate = 60s;
  CHECK(f.executor().apply({shares(kPod, 512)}).written == 1);
  CHECK(f.executor().apply({shares(kPod, 512)}).unchanged == 1);
  // koordlet's forced update re-checks the file and leaves an equal value alone.
  for (int i = 0; i < 3; ++i) {
    f.clock.advance(60s);
    CHECK(f.executor().apply({shares(kPod, 512)}).unchanged == 1);
  }
  // Someone changes it behind our back: repaired once the file is read again
  // (verify, 10 s after it was last read).
  f.tree.write("cpu/" + kPod + "/cpu.shares", "2\n");
  CHECK(f.executor().apply({shares(kPod, 512)}).unchanged == 1);  // trusted for 10 s
  f.clock.advance(10s);
  CHECK(f.executor().apply({shares(kPod, 512)}).written == 1);
  CHECK(f.file("cpu/" + kPod + "/cpu.shares") == "512\n");
  CHECK(f.audit().size() == 2);
}

TEST_CASE("an equal CPU list is rewritten once per forceUpdate, to re-apply task affinity",
          "[executor]") {
  Fixture f;
  f.config.forceUpdate = 60s;
  CHECK(f.executor().apply({cpus(kCtr, {0, 1})}).written == 1);
  CHECK(f.executor().apply({cpus(kCtr, {0, 1})}).unchanged == 1);
  f.clock.advance(59s);
  CHECK(f.executor().apply({cpus(kCtr, {0, 1})}).unchanged == 1);
  f.clock.advance(1s);  // 60 s since our write: due
  CHECK(f.executor().apply({cpus(kCtr, {0, 1})}).written == 1);
  CHECK(f.executor().apply({cpus(kCtr, {0, 1})}).unchanged == 1);
  // A list we never wrote but found equal starts its forced-rewrite clock then.
  CHECK(f.executor().apply({cpus(kPod, {0, 1, 2, 3, 4, 5, 6, 7})}).unchanged == 1);
  f.clock.advance(30s);
  CHECK(f.executor().apply({cpus(kPod, {0, 1, 2, 3, 4, 5, 6, 7})}).unchanged == 1);
  f.clock.advance(30s);
  CHECK(f.executor().apply({cpus(kPod, {0, 1, 2, 3, 4, 5, 6, 7})}).written == 1);
  CHECK(f.file("cpuset/" + kPod + "/cpuset.cpus") == "0-7\n");
  CHECK(f.audit().size() == 3);
}

TEST_CASE("a file read or written within the verify period is not read again", "[executor]") {
  Fixture f;
  f.config.verify = 10s;
  const std::string file = "cpu/" + kCtr + "/cpu.cfs_quota_us";
  CHECK(f.executor().apply({quota(kCtr, 50000)}).written == 1);
  CHECK(f.executor().knownCount() == 1);
  // Changed behind our back: neither read() nor the next write sees it yet...
  f.tree.write(file, "70000\n");
  f.clock.advance(9s);
  CHECK(f.executor().read(kCtr, Knob::kCpuQuota)->number == 50000);
  CHECK(f.executor().apply({quota(kCtr, 50000)}).unchanged == 1);
  CHECK(f.file(file) == "70000\n");
  // ...10 s after our write, both read the file, and the write repairs it.
  f.clock.advance(1s);
  CHECK(f.executor().read(kCtr, Knob::kCpuQuota)->number == 70000);
  CHECK(f.executor().apply({quota(kCtr, 50000)}).written == 1);
  CHECK(f.file(file) == "50000\n");
  // A file only read is known as read: a strategy's read() and the write that follows
  // within the period read it once.
  f.tree.write("cpu/" + kPod + "/cpu.cfs_quota_us", "80000\n");
  CHECK(f.executor().read(kPod, Knob::kCpuQuota)->number == 80000);
  f.tree.write("cpu/" + kPod + "/cpu.cfs_quota_us", "90000\n");
  CHECK(f.executor().apply({quota(kPod, 80000)}).unchanged == 1);
  // Known texts past the period are dropped at the next apply: the map stays bounded.
  f.clock.advance(10s);
  CHECK(f.executor().apply({}).written == 0);
  CHECK(f.executor().knownCount() == 0);
}

TEST_CASE("a value found equal stays unchanged only until a write or a forced rewrite is due",
          "[executor]") {
  Fixture f;
  f.config.verify = 10s;
  f.config.forceUpdate = 5s;
  const std::string file = "cpu/" + kPod + "/cpu.shares";
  CHECK(f.executor().apply({shares(kPod, 1024)}).unchanged == 1);
  CHECK(f.executor().apply({shares(kPod, 1024)}).unchanged == 1);
  // Another value is written; asking the first again writes it back at once.
  CHECK(f.executor().apply({shares(kPod, 512)}).written == 1);
  CHECK(f.executor().apply({shares(kPod, 1024)}).written == 1);
  CHECK(f.file(file) == "1024\n");
  CHECK(f.executor().apply({shares(kPod, 1024)}).unchanged == 1);
  // A CPU list's forced rewrite comes before the verify period ends, and is not
  // skipped.
  const std::string list = "cpuset/" + kCtr + "/cpuset.cpus";
  CHECK(f.executor().apply({cpus(kCtr, {0, 1, 2, 3, 4, 5, 6, 7})}).unchanged == 1);
  f.clock.advance(4s);
  CHECK(f.executor().apply({cpus(kCtr, {0, 1, 2, 3, 4, 5, 6, 7})}).unchanged == 1);
  f.tree.write(list, "0-7\n");  // rewritten below even though unchanged
  f.clock.advance(1s);
  CHECK(f.executor().apply({cpus(kCtr, {0, 1, 2, 3, 4, 5, 6, 7})}).written == 1);
  // A second owner is refused even for the value already in place.
  CHECK(f.executor().apply({shares(kPod, 1024, "other")}).refused == 1);
}

TEST_CASE("with verify 0 every write reads its file first", "[executor]") {
  Fixture f;
  f.config.verify = 0s;
  const std::string file = "cpu/" + kPod + "/cpu.shares";
  CHECK(f.executor().apply({shares(kPod, 512)}).written == 1);
  f.tree.write(file, "2\n");
  CHECK(f.executor().read(kPod, Knob::kCpuShares)->number == 2);
  CHECK(f.executor().apply({shares(kPod, 512)}).written == 1);
  CHECK(f.file(file) == "512\n");
  CHECK(f.executor().knownCount() == 0);
}

TEST_CASE("a failed write forgets the file's known text", "[executor]") {
  Fixture f;
  f.config.verify = 10s;
  CHECK(f.executor().apply({shares(kPod, 512)}).written == 1);
  // The cgroup goes: the write that follows finds no file, whatever was known.
  std::filesystem::remove_all(f.tree.path("cpu/" + kPod));
  f.clock.advance(1s);
  CHECK(f.executor().apply({shares(kPod, 256)}).vanished == 1);
  CHECK(f.executor().read(kPod, Knob::kCpuShares).error().sysErrno == ENOENT);
}

TEST_CASE("dry-run logs what it would write and writes nothing", "[executor]") {
  Fixture f;
  f.config.dryRun = true;
  const ExecutorStats s = f.executor().apply({shares(kPod, 512), quota(kPod, 20000)});
  CHECK(s.written == 2);
  CHECK(f.file("cpu/" + kPod + "/cpu.shares") == "1024\n");
  CHECK(f.file("cpu/" + kPod + "/cpu.cfs_quota_us") == "-1\n");
  CHECK_THAT(f.log.str(), Catch::Matchers::Contains("dry-run: would write 512 to " +
                                                    f.tree.path("cpu/" + kPod + "/cpu.shares") +
                                                    " (was 1024) for cpusuppress"));
  const auto events = f.audit();
  REQUIRE(events.size() == 2);
  CHECK(events[0]["dryRun"] == true);
}

TEST_CASE("every change is one JSON line in the audit log", "[executor][audit]") {
  Fixture f;
  f.executor().apply({shares(kPod, 512, "cpu\"suppress")});
  const auto events = f.audit();
  REQUIRE(events.size() == 1);
  CHECK(events[0]["ts"] == "2023-11-14T22:13:20.000Z");
  CHECK(events[0]["path"] == f.tree.path("cpu/" + kPod + "/cpu.shares"));
  CHECK(events[0]["old"] == "1024");
  CHECK(events[0]["new"] == "512");
  CHECK(events[0]["owner"] == "cpu\"suppress");
  CHECK(events[0]["dryRun"] == false);
}

TEST_CASE("the audit log rotates and stays within twice its bound", "[executor][audit]") {
  Fixture f;
  f.config.auditMaxBytes = 1000;
  for (int i = 0; i < 100; ++i) f.executor().apply({shares(kPod, 100 + i)});
  CHECK(f.executor().stats().written == 100);
  const auto size = fs::file_size(f.config.auditPath);
  const auto old = fs::file_size(f.config.auditPath + ".1");
  CHECK(size <= 1000);
  CHECK(old <= 1000);
  CHECK(old > 500);
  // The newest event is last in the current file.
  CHECK(f.audit().back()["new"] == "199");
  CHECK(!f.audit(f.config.auditPath + ".1").empty());
  CHECK_FALSE(fs::exists(f.config.auditPath + ".2"));
}

TEST_CASE("a vanished cgroup is counted and not logged", "[executor]") {
  Fixture f;
  const ExecutorStats s =
      f.executor().apply({shares("kubepods/besteffort/podgone", 2), quota(kPod + "/gone", 1000)});
  CHECK(s.vanished == 2);
  CHECK(f.logLines() == 0);
  CHECK(f.statuses == std::vector<std::string>{"vanished", "vanished"});
}

TEST_CASE(
    "a cgroup found gone is not tried again until cgroups may have changed or a force "
    "period passes",
    "[executor]") {
  Fixture f;
  const std::string gone = "kubepods/besteffort/podgone";
  CHECK(f.executor().apply({shares(gone, 2)}).vanished == 1);
  // Planned again every round on a steady node (a finished pod the kubelet still lists):
  // neither tried nor counted vanished again.
  for (int round = 0; round < 30; ++round) {
    f.clock.advance(1s);
    const ExecutorStats s = f.executor().apply({shares(gone, 2), shares(kPod, 3)});
    CHECK(s.vanished == 0);
    CHECK(s.skippedGone == 1);
  }
  CHECK(std::count(f.statuses.begin(), f.statuses.end(), "vanished") == 1);
  CHECK(f.executor().goneCount() == 1);
  // The pod list changed: the cgroup may be back (it is: a container started).
  f.tree.write("cpu/" + gone + "/cpu.shares", "1024\n");
  f.executor().cgroupsMayHaveChanged();
  CHECK(f.executor().apply({shares(gone, 2)}).written == 1);
  CHECK(f.file("cpu/" + gone + "/cpu.shares") == "2\n");
  // A host application's cgroup comes back without any pod list change: tried again
  // once a force period has passed.
  const std::string pod2 = "kubepods/besteffort/podgone2";
  CHECK(f.executor().apply({shares(pod2, 2)}).vanished == 1);
  f.tree.write("cpu/" + pod2 + "/cpu.shares", "1024\n");
  f.clock.advance(f.config.forceUpdate - 1s);
  CHECK(f.executor().apply({shares(pod2, 2)}).skippedGone == 1);
  f.clock.advance(1s);
  CHECK(f.executor().apply({shares(pod2, 2)}).written == 1);
  // A file missing from a live directory is no gone cgroup: the directory's other
  // files are still written (here the pod's cpu dir holds no quota file).
  std::filesystem::remove(f.tree.path("cpu/" + kPod + "/cpu.cfs_quota_us"));
  CHECK(f.executor().apply({quota(kPod, 50000)}).vanished == 1);
  CHECK(f.executor().apply({shares(kPod, 7)}).written == 1);
  // On v1 each controller has its own directory: the pod's cpuset dir gone says
  // nothing of its cpu dir.
  std::filesystem::remove_all(f.tree.path("cpuset/" + kPod));
  CHECK(f.executor().apply({cpus(kPod, {0, 1})}).vanished == 1);
  CHECK(f.executor().apply({cpus(kPod, {0, 1}), shares(kPod, 8)}).skippedGone == 1);
  CHECK(f.file("cpu/" + kPod + "/cpu.shares") == "8\n");
  // A pod that goes takes its gone dirs with it.
  CHECK(f.executor().apply({shares(gone + "/ctr", 2)}).vanished == 1);
  f.executor().forgetUnder(gone);
  CHECK(f.executor().goneCount() == 1);  // the pod's cpuset dir above stays
  f.executor().forgetUnder(kPod);
  CHECK(f.executor().goneCount() == 0);
}

TEST_CASE("an unsupported knob is counted, not written, and logged once", "[executor]") {
  Fixture f;
  KnobSupport support = KnobSupport::all();
  support.set(Knob::kCpuBurst, false);
  Executor exec(f.config, CgroupLayout(CgroupVersion::kV1, CgroupDriver::kCgroupfs), support,
                f.clock, f.failures);
  const CgroupWrite burst{kPod, Knob::kCpuBurst, KnobValue::of(1000), "cpuburst"};
  CHECK(exec.apply({burst, burst}).unsupported == 2);
  CHECK(
      exec.apply({CgroupWrite{kCtr, Knob::kCpuBurst, KnobValue::of(1), "cpuburst"}}).unsupported ==
      1);
  CHECK(f.logLines() == 1);
  CHECK_FALSE(fs::exists(f.tree.path("cpu/" + kPod + "/cpu.cfs_burst_us")));
}

TEST_CASE("a write error is counted and logged once per path until it recovers", "[executor]") {
  Fixture f;
  // A directory where the file should be: open(O_WRONLY) fails with EISDIR.
  fs::remove(f.tree.path("cpu/" + kPod + "/cpu.shares"));
  fs::create_directories(f.tree.path("cpu/" + kPod + "/cpu.shares"));
  CHECK(f.executor().apply({shares(kPod, 512)}).failed == 1);
  CHECK(f.executor().apply({shares(kPod, 512)}).failed == 1);
  CHECK(f.logLines() == 1);
  fs::remove(f.tree.path("cpu/" + kPod + "/cpu.shares"));
  f.tree.write("cpu/" + kPod + "/cpu.shares", "1024\n");
  CHECK(f.executor().apply({shares(kPod, 512)}).written == 1);
  CHECK_THAT(f.log.str(), Catch::Matchers::Contains("recovered"));
  CHECK(f.executor().stats().failed == 2);
}

TEST_CASE("hierarchical decreases go child-first and increases parent-first", "[executor]") {
  Fixture f;
  for (const std::string& dir : std::vector<std::string>{"kubepods/besteffort", kPod, kCtr})
    f.tree.write("cpu/" + dir + "/cpu.cfs_quota_us", "200000\n");
  SECTION("a decrease asked parent-first is written child-first") {
    f.executor().apply({quota("kubepods/besteffort", 100000), quota(kPod, 50000), shares(kPod, 2),
                        quota(kCtr, 40000)});
    CHECK(f.auditPaths() ==
          std::vector<std::string>{"cpu/" + kPod + "/cpu.shares=2",
                                   "cpu/" + kCtr + "/cpu.cfs_quota_us=40000",
                                   "cpu/" + kPod + "/cpu.cfs_quota_us=50000",
                                   "cpu/kubepods/besteffort/cpu.cfs_quota_us=100000"});
  }
  SECTION("an increase asked child-first is written parent-first, unlimited being largest") {
    f.executor().apply({quota(kCtr, 300000), quota(kPod, -1), quota("kubepods/besteffort", -1)});
    CHECK(f.auditPaths() == std::vector<std::string>{"cpu/kubepods/besteffort/cpu.cfs_quota_us=-1",
                                                     "cpu/" + kPod + "/cpu.cfs_quota_us=-1",
                                                     "cpu/" + kCtr + "/cpu.cfs_quota_us=300000"});
  }
  SECTION("a mixed batch shrinks first, deepest first, then grows, shallowest first") {
    f.executor().apply({quota("kubepods/besteffort", 400000), quota(kCtr, 100000)});
    CHECK(f.auditPaths() ==
          std::vector<std::string>{"cpu/" + kCtr + "/cpu.cfs_quota_us=100000",
                                   "cpu/kubepods/besteffort/cpu.cfs_quota_us=400000"});
  }
}

TEST_CASE("a cpu list that is neither a subset nor a superset grows to the union first",
          "[executor]") {
  Fixture f;
  f.tree.write("cpuset/" + kPod + "/cpuset.cpus", "0-3\n");
  f.tree.write("cpuset/" + kCtr + "/cpuset.cpus", "0-3\n");
  // Move pod and container from 0-3 to 2-5: neither contains the other.
  const ExecutorStats s = f.executor().apply({cpus(kCtr, {2, 3, 4, 5}), cpus(kPod, {2, 3, 4, 5})});
  CHECK(s.written == 4);
  CHECK(f.auditPaths() == std::vector<std::string>{"cpuset/" + kPod + "/cpuset.cpus=0-5",
                                                   "cpuset/" + kCtr + "/cpuset.cpus=0-5",
                                                   "cpuset/" + kCtr + "/cpuset.cpus=2-5",
                                                   "cpuset/" + kPod + "/cpuset.cpus=2-5"});
  CHECK(f.audit()[2]["old"] == "0-5");
  CHECK(f.file("cpuset/" + kPod + "/cpuset.cpus") == "2-5\n");
  // A shrink goes child-first, a grow parent-first.
  f.executor().apply({cpus(kPod, {2}), cpus(kCtr, {2})});
  f.executor().apply({cpus(kCtr, {0, 1, 2}), cpus(kPod, {0, 1, 2})});
  const auto paths = f.auditPaths();
  REQUIRE(paths.size() == 8);
  CHECK(paths[4] == "cpuset/" + kCtr + "/cpuset.cpus=2");
  CHECK(paths[5] == "cpuset/" + kPod + "/cpuset.cpus=2");
  CHECK(paths[6] == "cpuset/" + kPod + "/cpuset.cpus=0-2");
  CHECK(paths[7] == "cpuset/" + kCtr + "/cpuset.cpus=0-2");
}

TEST_CASE("the observer sees every attempted write with its status", "[executor]") {
  Fixture f;
  f.executor().apply(
      {shares(kPod, 512), shares(kCtr, 1024), shares(kPod + "/gone", 2), shares("other", 2)});
  CHECK(f.statuses == std::vector<std::string>{"unchanged", "vanished", "succeeded"});
}

TEST_CASE("reading a v2 cpuset that is empty gives the CPUs in force, from the effective file",
          "[executor]") {
  test::TempTree tree;
  tree.write("kubepods/besteffort/cpuset.cpus", "\n");
  tree.write("kubepods/besteffort/cpuset.cpus.effective", "0-3\n");
  tree.write("kubepods/burstable/cpuset.cpus", "2-3\n");
  tree.write("kubepods/burstable/cpuset.cpus.effective", "2-3\n");
  ManualClock clock;
  FailureLog failures{clock};
  ExecutorConfig config;
  config.cgroupRoot = tree.path();
  Executor exec(config, CgroupLayout(CgroupVersion::kV2, CgroupDriver::kCgroupfs),
                KnobSupport::all(), clock, failures);
  auto be = exec.read("kubepods/besteffort", Knob::kCpusetCpus);
  REQUIRE(be.ok());
  CHECK(be->cpus == std::vector<int>{0, 1, 2, 3});
  auto ls = exec.read("kubepods/burstable", Knob::kCpusetCpus);
  REQUIRE(ls.ok());
  CHECK(ls->cpus == std::vector<int>{2, 3});
}

TEST_CASE("a v2 cpuset write is compared with the list asked for, not the list in force",
          "[executor]") {
  // cpuset.cpus asks for CPUs 8-9, none of them in the parent's set, so the kernel
  // runs the tasks on the parent's 0-3 (cpuset.cpus.effective).
  test::TempTree tree;
  const std::string be = "kubepods/besteffort";
  tree.write(be + "/cpuset.cpus", "8-9\n");
  tree.write(be + "/cpuset.cpus.effective", "0-3\n");
  const std::string inherits = "kubepods/burstable";
  tree.write(inherits + "/cpuset.cpus", "\n");
  tree.write(inherits + "/cpuset.cpus.effective", "0-3\n");
  ManualClock clock;
  std::ostringstream log;
  Logger::setGlobal(log, clock, 0);
  FailureLog failures{clock};
  ExecutorConfig config;
  config.cgroupRoot = tree.path();
  Executor exec(config, CgroupLayout(CgroupVersion::kV2, CgroupDriver::kCgroupfs),
                KnobSupport::all(), clock, failures);
  auto cpus = [](const std::string& dir, std::vector<int> list) {
    return CgroupWrite{dir, Knob::kCpusetCpus, KnobValue::ofCpus(std::move(list)), "test"};
  };

  // The file already asks for the target: nothing to write, although what is in
  // force differs (compared with the effective list it would be rewritten forever).
  ExecutorStats s = exec.apply({cpus(be, {8, 9})});
  CHECK(s.unchanged == 1);
  CHECK(s.written == 0);
  CHECK(readFile(tree.path(be + "/cpuset.cpus")).value() == "8-9\n");
  // The target equals what is in force but not what is asked: written, so the
  // cgroup no longer depends on what its parent grants.
  // (8-9 to 0-3 goes through their union: two writes.)
  s = exec.apply({cpus(be, {0, 1, 2, 3}), cpus(inherits, {0, 1, 2, 3})});
  CHECK(s.written == 3);
  CHECK(readFile(tree.path(be + "/cpuset.cpus")).value() == "0-3\n");
  CHECK(readFile(tree.path(inherits + "/cpuset.cpus")).value() == "0-3\n");
  static SystemClock system;
  Logger::setGlobal(std::cerr, system, 0);
}

}  // namespace test_cgroupfs_executor
