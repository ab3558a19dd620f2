// monitor: the mon_data parsers on string literals, readMonData over temp trees laid
// out as the kernel does (<group>/mon_data/mon_L3_<id>/<counter>).
#include <catch2/catch.hpp>
#include <string>

#include "resctrl/monitor.h"
#include "support/temp_tree.h"

namespace test_resctrl_monitor {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::resctrl;
using koord::test::TempTree;

namespace {

bool anyMentions(const std::vector<std::string>& errors, const std::string& what) {
  for (const auto& e : errors) {
    if (e.find(what) != std::string::npos) return true;
  }
  return false;
}

// One domain of a group with all three counters.
void domain(const TempTree& tree, const std::string& group, const std::string& dir,
            const std::string& llc, const std::string& local, const std::string& total) {
  const std::string base = group + "/mon_data/" + dir + "/";
  tree.write(base + "llc_occupancy", llc);
  tree.write(base + "mbm_local_bytes", local);
  tree.write(base + "mbm_total_bytes", total);
}

}  // namespace

TEST_CASE("mon domain names give the cache id") {
  CHECK(*parseMonDomain("mon_L3_00") == 0);
  CHECK(*parseMonDomain("mon_L3_01") == 1);
  CHECK(*parseMonDomain("mon_L3_17") == 17);
  for (const char* bad : {"mon_L3_", "mon_L3_x", "mon_L2_00", "mon_L3_-1", "L3_00", "mon_L3_1 ",
                          "mon_L3_4294967296", ""}) {
    INFO("name: \"" << bad << "\"");
    auto id = parseMonDomain(bad);
    REQUIRE_FALSE(id.ok());
    CHECK(id.error().message.find(bad) != std::string::npos);
  }
}

TEST_CASE("mon counters are numbers or Unavailable") {
  CHECK(**parseMonCounter("123456\n", "f") == 123456);
  CHECK(**parseMonCounter("0", "f") == 0);
  CHECK(**parseMonCounter("18446744073709551615\n", "f") == UINT64_MAX);
  auto unavailable = parseMonCounter("Unavailable\n", "f");
  REQUIRE(unavailable.ok());
  CHECK_FALSE(unavailable->has_value());
  for (const char* bad : {"", "\n", "Error\n", "12x\n", "-5\n", " 12\n", "12\n\n"}) {
    INFO("text: \"" << bad << "\"");
    auto v = parseMonCounter(bad, "/r/LS/mon_data/mon_L3_00/llc_occupancy");
    REQUIRE_FALSE(v.ok());
    CHECK(v.error().message.find("mon_L3_00/llc_occupancy") != std::string::npos);
  }
}

TEST_CASE("mon data of every group and domain is read, sorted by group then cache id") {
  TempTree tree;
  domain(tree, "LS", "mon_L3_01", "100\n", "200\n", "300\n");
  domain(tree, "LS", "mon_L3_00", "10\n", "20\n", "30\n");
  domain(tree, "BE", "mon_L3_00", "1\n", "2\n", "3\n");
  domain(tree, "LSR", "mon_L3_00", "7\n", "8\n", "9\n");
  const MonRead r = readMonData(tree.path(), {"LSR", "LS", "BE"});
  CHECK(r.errors.empty());
  REQUIRE(r.samples.size() == 4);
  CHECK(r.samples[0].group == "BE");
  CHECK(r.samples[0].llcOccupancy == 1u);
  CHECK(r.samples[1].group == "LS");
  CHECK(r.samples[1].cacheId == 0);
  CHECK(r.samples[1].mbmLocalBytes == 20u);
  CHECK(r.samples[2].group == "LS");
  CHECK(r.samples[2].cacheId == 1);
  CHECK(r.samples[2].llcOccupancy == 100u);
  CHECK(r.samples[2].mbmLocalBytes == 200u);
  CHECK(r.samples[2].mbmTotalBytes == 300u);
  CHECK(r.samples[3].group == "LSR");
  CHECK(r.samples[3].mbmTotalBytes == 9u);
}

TEST_CASE("a group without mon_data or not created gives no samples and no error") {
  TempTree tree;
  tree.write("BE/schemata", "L3:0=f\n");
  domain(tree, "LS", "mon_L3_00", "10\n", "20\n", "30\n");
  const MonRead r = readMonData(tree.path(), {"LSR", "LS", "BE"});
  CHECK(r.errors.empty());
  REQUIRE(r.samples.size() == 1);
  CHECK(r.samples[0].group == "LS");
}

TEST_CASE("missing or Unavailable counters are empty fields, not errors") {
  TempTree tree;
  tree.write("LS/mon_data/mon_L3_00/llc_occupancy", "4096\n");  // no MBM on this CPU
  domain(tree, "BE", "mon_L3_00", "Unavailable\n", "Unavailable\n", "55\n");
  const MonRead r = readMonData(tree.path(), {"LS", "BE"});
  CHECK(r.errors.empty());
  REQUIRE(r.samples.size() == 2);
  const MonSample& be = r.samples[0];
  CHECK(be.group == "BE");
  CHECK_FALSE(be.llcOccupancy.has_value());
  CHECK_FALSE(be.mbmLocalBytes.has_value());
  CHECK(be.mbmTotalBytes == 55u);
  const MonSample& ls = r.samples[1];
  CHECK(ls.llcOccupancy == 4096u);
  CHECK_FALSE(ls.mbmLocalBytes.has_value());
  CHECK_FALSE(ls.mbmTotalBytes.has_value());
}

TEST_CASE("a malformed counter is an error naming the file; other samples are kept") {
  TempTree tree;
  domain(tree, "LS", "mon_L3_00", "garbage\n", "20\n", "30\n");
  domain(tree, "LS", "mon_L3_01", "11\n", "21\n", "31\n");
  const MonRead r = readMonData(tree.path(), {"LS"});
  REQUIRE(r.errors.size() == 1);
  CHECK(anyMentions(r.errors, "LS/mon_data/mon_L3_00/llc_occupancy"));
  REQUIRE(r.samples.size() == 2);
  CHECK_FALSE(r.samples[0].llcOccupancy.has_value());
  CHECK(r.samples[0].mbmLocalBytes == 20u);
  CHECK(r.samples[1].llcOccupancy == 11u);
}

TEST_CASE("a malformed domain dir is reported and other entries are not read") {
  TempTree tree;
  domain(tree, "LS", "mon_L3_zz", "1\n", "2\n", "3\n");
  domain(tree, "LS", "mon_MB_00", "1\n", "2\n", "3\n");
  domain(tree, "LS", "mon_L3_02", "1\n", "2\n", "3\n");
  const MonRead r = readMonData(tree.path(), {"LS"});
  REQUIRE(r.errors.size() == 1);
  CHECK(anyMentions(r.errors, "mon_L3_zz"));
  REQUIRE(r.samples.size() == 1);
  CHECK(r.samples[0].cacheId == 2);
}

}  // namespace test_resctrl_monitor
