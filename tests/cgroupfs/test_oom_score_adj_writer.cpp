// Tests for cgroupfs/oom_score_adj_writer: a container's processes from a cgroup.procs
// file and their oom_score_adj files, in a temp tree standing in for cgroupfs and
// /proc (regular files: the kernel's own are in the e2e test).
#include <catch2/catch.hpp>

#include "base/read_file.h"
#include "cgroupfs/oom_score_adj_writer.h"
#include "tests/support/temp_tree.h"

namespace test_cgroupfs_oom_score_adj_writer {  // unity chunks: this file's own names

using namespace koord;
using koord::test::TempTree;

TEST_CASE("cgroup.procs parses one pid a line and names a bad line", "[oom_score_adj]") {
  auto pids = parseProcs("12\n345\n\n7\n", "procs");
  REQUIRE(pids.ok());
  CHECK(*pids == std::vector<int>{12, 345, 7});
  CHECK(parseProcs("", "procs")->empty());
  auto bad = parseProcs("12\nx\n", "c/cgroup.procs");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "c/cgroup.procs: line 2: \"x\" is not a pid");
  CHECK_FALSE(parseProcs("0\n", "p").ok());
  CHECK_FALSE(parseProcs("-3\n", "p").ok());
}

TEST_CASE(
    "every process of the container gets the value, one already at it is not written, and a "
    "process gone meanwhile is counted and skipped",
    "[oom_score_adj]") {
  TempTree t;
  t.write("cgroup/c1/cgroup.procs", "10\n11\n12\n");
  t.write("proc/10/oom_score_adj", "968\n");
  t.write("proc/11/oom_score_adj", "-500\n");  // already there
  // 12 has exited: no /proc/12.
  const std::string procs = t.path("cgroup/c1/cgroup.procs");
  OomScoreAdjOutcome o = applyOomScoreAdj(procs, t.path("proc"), -500);
  CHECK(o.processes == 3);
  CHECK(o.updated == 1);
  CHECK(o.unchanged == 1);
  CHECK(o.failed == 1);
  CHECK_FALSE(o.gone);
  CHECK(o.error.find("proc/12/oom_score_adj") != std::string::npos);
  CHECK(*readFile(t.path("proc/10/oom_score_adj")) == "-500");
  CHECK(*readFile(t.path("proc/11/oom_score_adj")) == "-500\n");  // untouched

  SECTION("a value outside the kernel's range touches nothing") {
    o = applyOomScoreAdj(procs, t.path("proc"), 1001);
    CHECK(o.error == "oom_score_adj 1001 is outside [-1000, 1000]");
    CHECK(o.processes == 0);
    CHECK(*readFile(t.path("proc/10/oom_score_adj")) == "-500");
  }
  SECTION("a container whose cgroup is gone is said as gone") {
    o = applyOomScoreAdj(t.path("cgroup/c2/cgroup.procs"), t.path("proc"), 5);
    CHECK(o.gone);
    CHECK(o.processes == 0);
  }
}

}  // namespace test_cgroupfs_oom_score_adj_writer
