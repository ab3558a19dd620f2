#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>

#include "base/read_file.h"
#include "resctrl/resctrl_info.h"
#include "support/temp_tree.h"

namespace test_resctrl_resctrl_info {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::resctrl;
using koord::test::TempTree;

namespace {

// A host whose <sysFsRoot>/resctrl is a copy of one goresctrl capture.
HostPaths hostWith(const TempTree& tree, const std::string& capture) {
  std::filesystem::copy(test::fixturePath("resctrl/goresctrl/" + capture), tree.path("resctrl"),
                        std::filesystem::copy_options::recursive);
  HostPaths paths;
  paths.sysFsRoot = tree.path();
  return paths;
}

bool mentions(const Error& e, const std::string& what) {
  return e.message.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("cpuinfo reports support only with both cat_l3 and mba flags") {
  const std::string intel =
      "processor\t: 0\nvendor_id\t: GenuineIntel\n"
      "flags\t\t: fpu vme cat_l3 cdp_l3 mba cqm_llc\n\nprocessor\t: 1\n";
  const auto flags = parseCpuInfoRdt(intel);
  CHECK(flags.catL3);
  CHECK(flags.mba);
  CHECK(flags.supported());
  CHECK(flags.vendor == CpuVendor::kIntel);

  const auto noMba = parseCpuInfoRdt("vendor_id\t: GenuineIntel\nflags\t\t: fpu cat_l3 cdp_l3\n");
  CHECK(noMba.catL3);
  CHECK_FALSE(noMba.mba);
  CHECK_FALSE(noMba.supported());

  CHECK_FALSE(parseCpuInfoRdt("").supported());
  // A flag name that merely contains "mba" is not mba.
  CHECK_FALSE(parseCpuInfoRdt("flags : cat_l3 mbax\n").mba);
}

TEST_CASE("cpuinfo with an AuthenticAMD vendor_id is AMD") {
  const auto flags = parseCpuInfoRdt(
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu cat_l3 mba cqm_llc\n");
  CHECK(flags.supported());
  CHECK(flags.vendor == CpuVendor::kAmd);
}

TEST_CASE("cbm_mask parses as contiguous hex and gives the way count") {
  auto m = parseCbmMask("fffff\n", "cbm_mask");
  REQUIRE(m.ok());
  CHECK(*m == 0xfffff);
  CHECK(cbmWays(*m) == 20);
  CHECK(cbmWays(*parseCbmMask("7ff", "f")) == 11);
  CHECK(cbmWays(*parseCbmMask("FFF\n", "f")) == 12);
  CHECK(cbmWays(*parseCbmMask("ffffffffffffffff", "f")) == 64);
}

TEST_CASE("malformed cbm_mask is an error naming the file") {
  const std::string file = "/sys/fs/resctrl/info/L3/cbm_mask";
  for (const char* bad : {"f0f\n", "ff0", "0", "xyz\n", "0x7ff", "", "\n", "1ffffffffffffffff"}) {
    INFO("cbm_mask text: \"" << bad << "\"");
    auto m = parseCbmMask(bad, file);
    REQUIRE_FALSE(m.ok());
    CHECK(mentions(m.error(), file));
  }
  CHECK(mentions(parseCbmMask("f0f", "x").error(), "not contiguous"));
  CHECK(mentions(parseCbmMask("xyz", "x").error(), "not hex"));
  CHECK(mentions(parseCbmMask("", "x").error(), "empty"));
}

TEST_CASE("info numbers parse and bad ones name the file") {
  CHECK(*parseInfoNumber("10\n", "f") == 10);
  auto bad = parseInfoNumber("ten\n", "info/MB/bandwidth_gran");
  REQUIRE_FALSE(bad.ok());
  CHECK(mentions(bad.error(), "info/MB/bandwidth_gran"));
  CHECK_FALSE(parseInfoNumber("", "f").ok());
  CHECK_FALSE(parseInfoNumber("-1", "f").ok());
}

TEST_CASE("schemata parsing keeps every resource with ids and trimmed values") {
  auto s =
      parseSchemata("    MB:0=  100;1=  100\n    L3:0=fffff;1=fffff\nL2:0=ff;3=ff\n", "schemata");
  REQUIRE(s.ok());
  REQUIRE(s->size() == 3);
  const SchemataResource* mb = findResource(*s, "MB");
  REQUIRE(mb != nullptr);
  CHECK(mb->domains == std::vector<SchemataDomain>{{0, "100"}, {1, "100"}});
  const SchemataResource* l2 = findResource(*s, "L2");
  REQUIRE(l2 != nullptr);
  CHECK(l2->domains == std::vector<SchemataDomain>{{0, "ff"}, {3, "ff"}});
  CHECK(findResource(*s, "L3CODE") == nullptr);
  CHECK(parseSchemata("", "schemata")->empty());
  CHECK(parseSchemata("\n\n", "schemata")->empty());
}

TEST_CASE("malformed schemata lines are errors naming the file and line") {
  const std::string file = "/sys/fs/resctrl/schemata";
  for (const char* bad : {"L3 0=fff", ":0=fff", "L3:0fff", "L3:a=fff", "L3:0=;1=fff", "L3:0=f;0=f",
                          "L3:", "L3:-1=f", "L3:4294967296=f"}) {
    INFO("line: " << bad);
    auto s = parseSchemata(std::string("MB:0=100\n") + bad + "\n", file);
    REQUIRE_FALSE(s.ok());
    CHECK(mentions(s.error(), file + ":2:"));
  }
}

TEST_CASE("every goresctrl root schemata parses") {
  struct Case {
    const char* capture;
    std::vector<std::string> names;
    size_t firstIds;
  };
  const std::vector<Case> cases = {
      {"resctrl.full", {"L3", "MB"}, 4},
      {"resctrl.l2", {"L2"}, 2},
      {"resctrl.l2cdp", {"L3", "L2DATA", "L2CODE"}, 1},
      {"resctrl.l2l3mb", {"MB", "L2", "L3"}, 2},
      {"resctrl.nol3", {"MB"}, 4},
      {"resctrl.nol3.mbps", {"MB"}, 4},
      {"resctrl.nomb", {"L3"}, 4},
      {"resctrl.nomb.cdp", {"L3DATA", "L3CODE"}, 4},
  };
  for (const auto& c : cases) {
    INFO(c.capture);
    auto text =
        readFile(test::fixturePath(std::string("resctrl/goresctrl/") + c.capture + "/schemata"));
    REQUIRE(text.ok());
    auto s = parseSchemata(*text, c.capture);
    REQUIRE(s.ok());
    std::vector<std::string> names;
    for (const auto& r : *s) names.push_back(r.name);
    CHECK(names == c.names);
    CHECK(s->front().domains.size() == c.firstIds);
  }
}

TEST_CASE("readResctrlInfo finds L3 and MB on the full capture") {
  TempTree tree;
  auto info = readResctrlInfo(hostWith(tree, "resctrl.full"));
  REQUIRE(info.ok());
  REQUIRE(info->l3.has_value());
  CHECK(info->l3->cbmMask == 0xfffff);
  CHECK(info->l3->ways == 20);
  CHECK(info->l3->minCbmBits == 1);
  CHECK_FALSE(info->l3->cdp);
  REQUIRE(info->mb.has_value());
  CHECK(info->mb->bandwidthGran == 10);
  CHECK(info->mb->minBandwidth == 10);
  CHECK(info->mb->rootMaxValue == 100);
  CHECK(info->rootSchemata.size() == 2);
}

TEST_CASE("readResctrlInfo treats missing L3 or MB as absent, not as errors") {
  struct Case {
    const char* capture;
    bool l3;
    bool cdp;
    bool mb;
  };
  for (const Case& c :
       {Case{"resctrl.nomb", true, false, false}, Case{"resctrl.nomb.cdp", true, true, false},
        Case{"resctrl.nol3", false, false, true}, Case{"resctrl.nol3.mbps", false, false, true},
        Case{"resctrl.l2", false, false, false}, Case{"resctrl.l2cdp", true, false, false},
        Case{"resctrl.l2l3mb", true, false, true}}) {
    INFO(c.capture);
    TempTree tree;
    auto info = readResctrlInfo(hostWith(tree, c.capture));
    REQUIRE(info.ok());
    CHECK(info->l3.has_value() == c.l3);
    if (info->l3) CHECK(info->l3->cdp == c.cdp);
    CHECK(info->mb.has_value() == c.mb);
  }
}

TEST_CASE("readResctrlInfo reads min_cbm_bits, CDP masks and MBps root values") {
  {
    TempTree tree;
    auto info = readResctrlInfo(hostWith(tree, "resctrl.nomb"));
    REQUIRE(info.ok());
    CHECK(info->l3->minCbmBits == 2);
  }
  {
    TempTree tree;
    auto info = readResctrlInfo(hostWith(tree, "resctrl.l2cdp"));
    REQUIRE(info.ok());
    CHECK(info->l3->ways == 12);
  }
  {
    TempTree tree;
    auto info = readResctrlInfo(hostWith(tree, "resctrl.nol3.mbps"));
    REQUIRE(info.ok());
    CHECK(info->mb->rootMaxValue == 4294967295u);
  }
}

TEST_CASE("readResctrlInfo errors name the file at fault") {
  SECTION("resctrl not mounted: no root schemata") {
    TempTree tree;
    HostPaths paths;
    paths.sysFsRoot = tree.path();
    auto info = readResctrlInfo(paths);
    REQUIRE_FALSE(info.ok());
    CHECK(info.error().sysErrno == ENOENT);
    CHECK(mentions(info.error(), "resctrl/schemata"));
  }
  SECTION("bad cbm_mask") {
    TempTree tree;
    HostPaths paths = hostWith(tree, "resctrl.full");
    tree.write("resctrl/info/L3/cbm_mask", "ff0ff\n");
    auto info = readResctrlInfo(paths);
    REQUIRE_FALSE(info.ok());
    CHECK(mentions(info.error(), "resctrl/info/L3/cbm_mask"));
  }
  SECTION("missing min_cbm_bits next to a cbm_mask") {
    TempTree tree;
    HostPaths paths = hostWith(tree, "resctrl.full");
    tree.remove("resctrl/info/L3/min_cbm_bits");
    auto info = readResctrlInfo(paths);
    REQUIRE_FALSE(info.ok());
    CHECK(mentions(info.error(), "resctrl/info/L3/min_cbm_bits"));
  }
  SECTION("bad bandwidth_gran") {
    TempTree tree;
    HostPaths paths = hostWith(tree, "resctrl.full");
    tree.write("resctrl/info/MB/bandwidth_gran", "0\n");
    auto info = readResctrlInfo(paths);
    REQUIRE_FALSE(info.ok());
    CHECK(mentions(info.error(), "resctrl/info/MB/bandwidth_gran"));
  }
  SECTION("malformed root schemata") {
    TempTree tree;
    HostPaths paths = hostWith(tree, "resctrl.full");
    tree.write("resctrl/schemata", "L3:0=fffff\nMB:0\n");
    auto info = readResctrlInfo(paths);
    REQUIRE_FALSE(info.ok());
    CHECK(mentions(info.error(), "resctrl/schemata:2:"));
  }
}

}  // namespace test_resctrl_resctrl_info
