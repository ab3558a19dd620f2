#include <catch2/catch.hpp>

#include "qos/resctrl_plan.h"
#include "resctrl/schemata.h"

namespace test_qos_resctrl_plan {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::resctrl;
using Lines = std::vector<std::string>;
using Tids = std::vector<int32_t>;

namespace {

// An Intel host like goresctrl's resctrl.full: 20 ways, 4 cache ids, MB gran 10.
ResctrlInfo intelInfo() {
  ResctrlInfo info;
  info.l3 = L3Info{0xfffff, 20, 1, false};
  info.mb = MbInfo{10, 10, 100};
  auto root =
      parseSchemata("L3:0=fffff;1=fffff;2=fffff;3=fffff\nMB:0=100;1=100;2=100;3=100\n", "schemata");
  REQUIRE(root.ok());
  info.rootSchemata = *root;
  return info;
}

ResctrlQos rdt(bool enable, int64_t start, int64_t end, int64_t mba) {
  return ResctrlQos{enable, start, end, mba};
}

Pod pod(const std::string& uid, KoordQos qos, const std::string& phase = "Running") {
  Pod p;
  p.uid = uid;
  p.koordQos = qos;
  p.phase = phase;
  return p;
}

const GroupPlan& group(const ResctrlPlan& plan, const std::string& name) {
  for (const auto& g : plan.groups) {
    if (g.group == name) return g;
  }
  FAIL("no group " << name);
  return plan.groups.front();
}

}  // namespace

TEST_CASE("the plan always lists LSR, LS and BE, a disabled class reset to 0-100 percent") {
  ResourceQosStrategy config;
  config.lsr.resctrl = rdt(false, 50, 60, 20);  // disabled: its numbers must not be used
  config.ls.resctrl = rdt(true, 0, 50, 50);
  config.be.resctrl = rdt(true, 0, 30, 40);
  const auto plan = planResctrl(intelInfo(), CpuVendor::kIntel, config, {});
  REQUIRE(plan.groups.size() == 3);
  CHECK(plan.groups[0].group == "LSR");
  CHECK(plan.groups[1].group == "LS");
  CHECK(plan.groups[2].group == "BE");
  CHECK(plan.errors.empty());
  CHECK(group(plan, "LSR").schemata ==
        Lines{"L3:0=fffff;1=fffff;2=fffff;3=fffff", "MB:0=100;1=100;2=100;3=100"});
  CHECK(group(plan, "LS").schemata ==
        Lines{"L3:0=3ff;1=3ff;2=3ff;3=3ff", "MB:0=50;1=50;2=50;3=50"});
  CHECK(group(plan, "BE").schemata == Lines{"L3:0=3f;1=3f;2=3f;3=3f", "MB:0=40;1=40;2=40;3=40"});
  for (const auto& g : plan.groups) {
    CHECK(g.schemataKnown);
    CHECK(g.tids.empty());
  }
}

TEST_CASE("tids of active pods of enabled classes go to their group, sorted and unique") {
  ResourceQosStrategy config;
  config.lsr.resctrl = rdt(true, 0, 100, 100);
  config.ls.resctrl = rdt(false, 0, 100, 100);
  config.be.resctrl = rdt(true, 0, 30, 100);

  const Pod lse = pod("lse", KoordQos::kLSE);
  const Pod lsr = pod("lsr", KoordQos::kLSR, "Pending");
  Pod guaranteed = pod("guaranteed", KoordQos::kNone);  // no label: kube QoS default LSR
  guaranteed.kubeQos = KubeQos::kGuaranteed;
  const Pod ls = pod("ls", KoordQos::kLS);  // LS is disabled
  const Pod be = pod("be", KoordQos::kBE);
  const Pod beDone = pod("be-done", KoordQos::kBE, "Succeeded");
  const Pod beFailed = pod("be-failed", KoordQos::kBE, "Failed");
  Pod beOwnGroup = pod("be-own", KoordQos::kBE);
  beOwnGroup.annotations[kPodResctrlAnnotation] = R"({"llc":{"schemata":{"range":[0,30]}}})";
  const Pod system = pod("system", KoordQos::kSystem);

  const std::vector<PodThreads> threads = {
      {&lse, {30, 10}},    {&lsr, {20, 10}}, {&guaranteed, {40}}, {&ls, {50}},
      {&be, {70, 60, 70}}, {&beDone, {80}},  {&beFailed, {81}},   {&beOwnGroup, {90}},
      {&system, {100}},    {nullptr, {110}},
  };
  const auto plan = planResctrl(intelInfo(), CpuVendor::kIntel, config, threads);
  CHECK(group(plan, "LSR").tids == Tids{10, 20, 30, 40});
  CHECK(group(plan, "LS").tids.empty());
  CHECK(group(plan, "BE").tids == Tids{60, 70});
}

TEST_CASE("a class whose cache range is under one way gets no schemata and an error") {
  ResourceQosStrategy config;
  config.ls.resctrl = rdt(true, 1, 4, 100);  // 1-4 % of 20 ways: no whole way
  config.be.resctrl = rdt(true, 0, 30, 100);
  const Pod ls = pod("ls", KoordQos::kLS);
  const auto plan = planResctrl(intelInfo(), CpuVendor::kIntel, config, {{&ls, {5}}});
  const GroupPlan& g = group(plan, "LS");
  CHECK_FALSE(g.schemataKnown);
  CHECK(g.schemata.empty());
  CHECK(g.tids == Tids{5});  // tasks are still planned
  REQUIRE(plan.errors.size() == 1);
  CHECK(plan.errors[0].find("resctrlQOS of class LS: ") == 0);
  CHECK(plan.errors[0].find("empty") != std::string::npos);
  CHECK(group(plan, "BE").schemataKnown);
  CHECK(group(plan, "LSR").schemataKnown);
}

TEST_CASE("an AMD host gets its MB lines on the 2048 and 160 scale") {
  ResctrlInfo info;
  info.l3 = L3Info{0xffff, 16, 1, false};
  info.mb = MbInfo{1, 0, 2048};
  info.rootSchemata = *parseSchemata("L3:0=ffff;1=ffff\nMB:0=2048;1=2048\n", "schemata");
  ResourceQosStrategy config;
  config.be.resctrl = rdt(true, 0, 30, 50);
  const auto plan = planResctrl(info, CpuVendor::kAmd, config, {});
  CHECK(group(plan, "LSR").schemata == Lines{"L3:0=ffff;1=ffff", "MB:0=2048;1=2048"});
  CHECK(group(plan, "BE").schemata == Lines{"L3:0=1f;1=1f", "MB:0=80;1=80"});
}

TEST_CASE("pod qos classes map to the LSR, LS and BE groups") {
  CHECK(std::string(groupForQos(KoordQos::kLSE)) == "LSR");
  CHECK(std::string(groupForQos(KoordQos::kLSR)) == "LSR");
  CHECK(std::string(groupForQos(KoordQos::kLS)) == "LS");
  CHECK(std::string(groupForQos(KoordQos::kBE)) == "BE");
  CHECK(std::string(groupForQos(KoordQos::kSystem)).empty());
  CHECK(std::string(groupForQos(KoordQos::kNone)).empty());
}

}  // namespace test_qos_resctrl_plan
