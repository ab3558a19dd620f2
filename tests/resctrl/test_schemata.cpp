#include <catch2/catch.hpp>
#include <filesystem>

#include "resctrl/schemata.h"
#include "support/temp_tree.h"

namespace test_resctrl_schemata {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::resctrl;
using koord::test::TempTree;
using Lines = std::vector<std::string>;

namespace {

// ResctrlInfo read from a copy of one goresctrl capture.
ResctrlInfo infoOf(const std::string& capture) {
  TempTree tree;
  std::filesystem::copy(test::fixturePath("resctrl/goresctrl/" + capture), tree.path("resctrl"),
                        std::filesystem::copy_options::recursive);
  HostPaths paths;
  paths.sysFsRoot = tree.path();
  auto info = readResctrlInfo(paths);
  REQUIRE(info.ok());
  return *info;
}

ClassShare qos(int64_t start, int64_t end, int64_t mba) {
  ClassShare q;
  q.catRangeStartPercent = start;
  q.catRangeEndPercent = end;
  q.mbaPercent = mba;
  return q;
}

Lines linesOf(const ResctrlInfo& info, const ClassShare& q, CpuVendor v = CpuVendor::kIntel) {
  auto out = groupSchemata(info, v, q);
  REQUIRE(out.ok());
  return *out;
}

}  // namespace

TEST_CASE("l3 mask follows koordinator's ceil rule, 0x7ff 0-30% giving 0xf") {
  CHECK(*l3Mask(11, 1, 0, 30) == 0xf);
  CHECK(*l3Mask(11, 1, 0, 100) == 0x7ff);
  CHECK(*l3Mask(20, 1, 0, 30) == 0x3f);
  CHECK(*l3Mask(20, 1, 30, 100) == 0xfffc0);
  CHECK(*l3Mask(20, 1, 50, 75) == 0x7c00);  // ways 10..14
  CHECK(*l3Mask(64, 1, 0, 100) == ~uint64_t{0});
}

TEST_CASE("l3 mask widens a range narrower than min_cbm_bits") {
  // 0-5% of 20 ways is 1 way; min_cbm_bits 2 widens upwards to ways 0-1.
  CHECK(*l3Mask(20, 2, 0, 5) == 0x3);
  // 95-100% is way 19 only; the top is reached, so the start moves down to way 18.
  CHECK(*l3Mask(20, 2, 95, 100) == 0xc0000);
  CHECK(*l3Mask(20, 4, 40, 45) == 0xf00);
  CHECK(*l3Mask(20, 20, 0, 5) == 0xfffff);
}

TEST_CASE("l3 mask rejects empty and invalid ranges") {
  CHECK_FALSE(l3Mask(20, 1, 1, 4).ok());     // ceil(0.2) == ceil(0.8): no way at all
  CHECK_FALSE(l3Mask(20, 1, 96, 100).ok());  // ways 20..20
  CHECK_FALSE(l3Mask(20, 1, 30, 30).ok());
  CHECK_FALSE(l3Mask(20, 1, 50, 40).ok());
  CHECK_FALSE(l3Mask(20, 1, -1, 40).ok());
  CHECK_FALSE(l3Mask(20, 1, 0, 101).ok());
  CHECK_FALSE(l3Mask(20, 21, 0, 100).ok());
  CHECK_FALSE(l3Mask(0, 1, 0, 100).ok());
  CHECK(l3Mask(20, 1, 1, 4).error().message.find("empty") != std::string::npos);
}

TEST_CASE("intel mba rounds up to bandwidth_gran and honours min_bandwidth") {
  MbInfo mb;
  mb.bandwidthGran = 10;
  mb.minBandwidth = 10;
  CHECK(*mbValue(mb, CpuVendor::kIntel, 100) == 100);
  CHECK(*mbValue(mb, CpuVendor::kIntel, 25) == 30);
  CHECK(*mbValue(mb, CpuVendor::kIntel, 30) == 30);
  CHECK(*mbValue(mb, CpuVendor::kIntel, 1) == 10);
  mb.bandwidthGran = 1;
  mb.minBandwidth = 20;
  CHECK(*mbValue(mb, CpuVendor::kIntel, 15) == 20);
  CHECK(*mbValue(mb, CpuVendor::kIntel, 33) == 33);
  mb.bandwidthGran = 15;
  mb.minBandwidth = 0;
  CHECK(*mbValue(mb, CpuVendor::kIntel, 95) == 100);  // 105 capped at 100
  CHECK_FALSE(mbValue(mb, CpuVendor::kIntel, 0).ok());
  CHECK_FALSE(mbValue(mb, CpuVendor::kIntel, 101).ok());
}

TEST_CASE("amd mba is absolute: 100 percent is 2048, else 160 times the fraction") {
  MbInfo mb;
  CHECK(*mbValue(mb, CpuVendor::kAmd, 100) == 2048);
  CHECK(*mbValue(mb, CpuVendor::kAmd, 50) == 80);
  CHECK(*mbValue(mb, CpuVendor::kAmd, 30) == 48);
  CHECK(*mbValue(mb, CpuVendor::kAmd, 1) == 1);
  CHECK(*mbValue(mb, CpuVendor::kAmd, 99) == 158);
}

TEST_CASE("full capture gives L3 and MB lines for every cache id") {
  const ResctrlInfo info = infoOf("resctrl.full");
  CHECK(linesOf(info, qos(0, 30, 100)) ==
        Lines{"L3:0=3f;1=3f;2=3f;3=3f", "MB:0=100;1=100;2=100;3=100"});
  CHECK(linesOf(info, qos(0, 100, 25)) ==
        Lines{"L3:0=fffff;1=fffff;2=fffff;3=fffff", "MB:0=30;1=30;2=30;3=30"});
  // Default (disabled) config resets to the whole cache and full bandwidth.
  CHECK(linesOf(info, ClassShare{}) ==
        Lines{"L3:0=fffff;1=fffff;2=fffff;3=fffff", "MB:0=100;1=100;2=100;3=100"});
  CHECK_FALSE(groupSchemata(info, CpuVendor::kIntel, qos(1, 4, 100)).ok());
  CHECK_FALSE(groupSchemata(info, CpuVendor::kIntel, qos(0, 100, 0)).ok());
}

TEST_CASE("nomb capture gives only L3, widened to min_cbm_bits 2") {
  const ResctrlInfo info = infoOf("resctrl.nomb");
  CHECK(linesOf(info, qos(0, 5, 50)) == Lines{"L3:0=3;1=3;2=3;3=3"});
  CHECK(linesOf(info, qos(95, 100, 50)) == Lines{"L3:0=c0000;1=c0000;2=c0000;3=c0000"});
}

TEST_CASE("cdp capture gives L3CODE and L3DATA lines with the same mask") {
  const ResctrlInfo info = infoOf("resctrl.nomb.cdp");
  CHECK(linesOf(info, qos(0, 30, 100)) ==
        Lines{"L3CODE:0=3f;1=3f;2=3f;3=3f", "L3DATA:0=3f;1=3f;2=3f;3=3f"});
}

TEST_CASE("nol3 capture gives only MB") {
  CHECK(linesOf(infoOf("resctrl.nol3"), qos(0, 30, 45)) == Lines{"MB:0=50;1=50;2=50;3=50"});
}

TEST_CASE("intel MBps mode gives no MB line") {
  CHECK(linesOf(infoOf("resctrl.nol3.mbps"), qos(0, 30, 45)).empty());
}

TEST_CASE("l2-only capture gives no lines") {
  CHECK(linesOf(infoOf("resctrl.l2"), qos(0, 30, 45)).empty());
}

TEST_CASE("l2cdp capture gives an L3 line over its 12 ways and one cache id") {
  CHECK(linesOf(infoOf("resctrl.l2cdp"), qos(0, 30, 45)) == Lines{"L3:0=f"});
}

TEST_CASE("l2l3mb capture with padded MB values gives L3 then MB for ids 0 and 1") {
  CHECK(linesOf(infoOf("resctrl.l2l3mb"), qos(0, 30, 45)) == Lines{"L3:0=3f;1=3f", "MB:0=50;1=50"});
}

TEST_CASE("amd info tree gives absolute MB values and keeps non-contiguous cache ids") {
  TempTree tree({
      {"resctrl/schemata", "L3:0=ffff;1=ffff;4=ffff\nMB:0=2048;1=2048;4=2048\n"},
      {"resctrl/info/L3/cbm_mask", "ffff\n"},
      {"resctrl/info/L3/min_cbm_bits", "1\n"},
      {"resctrl/info/MB/bandwidth_gran", "1\n"},
      {"resctrl/info/MB/min_bandwidth", "0\n"},
  });
  HostPaths paths;
  paths.sysFsRoot = tree.path();
  auto info = readResctrlInfo(paths);
  REQUIRE(info.ok());
  CHECK(info->l3->ways == 16);
  CHECK(linesOf(*info, qos(0, 30, 50), CpuVendor::kAmd) ==
        Lines{"L3:0=1f;1=1f;4=1f", "MB:0=80;1=80;4=80"});
  CHECK(linesOf(*info, qos(0, 100, 100), CpuVendor::kAmd) ==
        Lines{"L3:0=ffff;1=ffff;4=ffff", "MB:0=2048;1=2048;4=2048"});
}

TEST_CASE("a root schemata lacking the L3 line that info announces is an error") {
  ResctrlInfo info = infoOf("resctrl.full");
  info.rootSchemata.erase(info.rootSchemata.begin());
  CHECK_FALSE(groupSchemata(info, CpuVendor::kIntel, qos(0, 30, 100)).ok());
}

}  // namespace test_resctrl_schemata
