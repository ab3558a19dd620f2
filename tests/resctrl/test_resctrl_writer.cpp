#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <set>

#include "base/read_file.h"
#include "resctrl/resctrl_writer.h"
#include "resctrl/schemata.h"
#include "support/fake_resctrl_kernel.h"
#include "support/log_capture.h"
#include "support/temp_tree.h"

namespace test_resctrl_resctrl_writer {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::resctrl;
using koord::test::FakeKernel;
using koord::test::LogCapture;
using koord::test::TempTree;
using Strings = std::vector<std::string>;

namespace {

// Each class's resctrlQOS share, shaped as the NodeSLO's blocks (class.resctrl).
struct ClassConfig {
  ClassShare resctrl;
};
struct Classes {
  ClassConfig lsr, ls, be;
};

std::string contents(const std::string& path) {
  auto text = readFile(path);
  INFO(path);
  REQUIRE(text.ok());
  return *text;
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// A host whose <sysFsRoot>/resctrl is a copy of a goresctrl capture (or built by the
// test), with the writer's state file beside it.
struct Host {
  explicit Host(const std::string& capture = "") {
    if (!capture.empty()) {
      std::filesystem::copy(test::fixturePath("resctrl/goresctrl/" + capture), tree.path("resctrl"),
                            std::filesystem::copy_options::recursive);
    }
    paths.sysFsRoot = tree.path();
  }
  std::string root() const { return tree.path("resctrl"); }
  std::string group(const std::string& g, const std::string& file) const {
    return tree.path("resctrl/" + g + "/" + file);
  }
  std::string stateFile() const { return tree.path("run/resctrl-groups"); }

  // The plan qos/resctrl_plan.h would hand over for these shares and no pods: the
  // three groups' schemata, no tids.
  ResctrlPlan plan(const Classes& config, CpuVendor vendor = CpuVendor::kIntel) const {
    auto info = readResctrlInfo(paths);
    REQUIRE(info.ok());
    ResctrlPlan p;
    for (const auto& [group, share] :
         {std::pair{kGroupLSR, config.lsr.resctrl}, std::pair{kGroupLS, config.ls.resctrl},
          std::pair{kGroupBE, config.be.resctrl}}) {
      auto lines = groupSchemata(*info, vendor, share);
      REQUIRE(lines.ok());
      p.groups.push_back(GroupPlan{group, *lines, true, {}});
    }
    return p;
  }

  TempTree tree;
  HostPaths paths;
};

ClassShare rdt(int64_t start, int64_t end, int64_t mba) { return ClassShare{start, end, mba}; }

// LSR at the none values, LS 0-60 % MBA 80, BE 0-30 % MBA 40.
Classes threeClasses() {
  Classes config;
  config.lsr.resctrl = rdt(0, 100, 100);
  config.ls.resctrl = rdt(0, 60, 80);
  config.be.resctrl = rdt(0, 30, 40);
  return config;
}

// An AMD host as the kernel shows one: 16 ways, absolute MB (2048 = unlimited).
void buildAmd(const TempTree& tree) {
  tree.write("resctrl/info/L3/cbm_mask", "ffff\n");
  tree.write("resctrl/info/L3/min_cbm_bits", "1\n");
  tree.write("resctrl/info/MB/bandwidth_gran", "1\n");
  tree.write("resctrl/info/MB/min_bandwidth", "0\n");
  tree.write("resctrl/info/last_cmd_status", "ok\n");
  tree.write("resctrl/schemata",
             "L3:0=ffff;1=ffff;2=ffff;3=ffff\nMB:0=2048;1=2048;2=2048;3=2048\n");
}

}  // namespace

TEST_CASE("a first apply on Intel creates the three groups and writes only differing lines") {
  Host host("resctrl.full");
  LogCapture cap;
  FakeKernel kernel(host.root());
  GroupOwnership own(host.stateFile(), false);
  ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());

  const auto stats = writer.apply(host.plan(threeClasses()));
  CHECK(kernel.made == Strings{host.root() + "/LSR", host.root() + "/LS", host.root() + "/BE"});
  // LSR's none values are what a new group starts with: nothing to write.
  CHECK(kernel.writesTo(host.group("LSR", "schemata")).empty());
  CHECK(kernel.writesTo(host.group("LS", "schemata")) ==
        Strings{"L3:0=fff;1=fff;2=fff;3=fff\n", "MB:0=80;1=80;2=80;3=80\n"});
  CHECK(kernel.writesTo(host.group("BE", "schemata")) ==
        Strings{"L3:0=3f;1=3f;2=3f;3=3f\n", "MB:0=40;1=40;2=40;3=40\n"});
  CHECK(contents(host.group("BE", "schemata")) ==
        "L3:0=0003f;1=0003f;2=0003f;3=0003f\nMB:0=  40;1=  40;2=  40;3=  40\n");
  CHECK(stats.groupsCreated == 3);
  CHECK(stats.schemataWritten == 4);
  CHECK(stats.schemataUnchanged == 2);
  CHECK(stats.schemataFailed == 0);
  CHECK(contents(host.stateFile()) == "BE\nLS\nLSR\n");
  CHECK(cap.logLines() == 0);

  SECTION("a second apply writes nothing") {
    const size_t before = kernel.calls.size();
    const auto again = writer.apply(host.plan(threeClasses()));
    CHECK(kernel.calls.size() == before);
    CHECK(again.groupsCreated == 0);
    CHECK(again.schemataWritten == 0);
    CHECK(again.schemataUnchanged == 6);
  }
  SECTION("a changed MBA percent writes only the MB line of that group") {
    auto config = threeClasses();
    config.be.resctrl.mbaPercent = 50;
    kernel.calls.clear();
    const auto again = writer.apply(host.plan(config));
    REQUIRE(kernel.calls.size() == 1);
    CHECK(kernel.calls[0].path == host.group("BE", "schemata"));
    CHECK(kernel.calls[0].data == "MB:0=50;1=50;2=50;3=50\n");
    CHECK(kernel.calls[0].mode == WriteMode::kSchemata);
    CHECK(again.schemataWritten == 1);
    CHECK(again.schemataUnchanged == 5);
  }
  SECTION("the record survives an agent restart: the groups stay ours") {
    GroupOwnership reloaded(host.stateFile(), false);
    REQUIRE(reloaded.loadStatus().ok());
    ResctrlWriter next(host.root(), reloaded, cap.failures, false, kernel.ops());
    const auto again = next.apply(host.plan(threeClasses()));
    CHECK(again.groupsRefused == 0);
    CHECK(again.schemataUnchanged == 6);
  }
}

TEST_CASE("CDP writes L3CODE and L3DATA lines and a host without MB only L3") {
  SECTION("CDP") {
    Host host("resctrl.nomb.cdp");
    LogCapture cap;
    FakeKernel kernel(host.root());
    GroupOwnership own("", false);
    ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
    const auto stats = writer.apply(host.plan(threeClasses()));
    // The capture's root holds 001ff, which new groups copy here: LSR differs too.
    CHECK(kernel.writesTo(host.group("LSR", "schemata")) ==
          Strings{"L3CODE:0=fffff;1=fffff;2=fffff;3=fffff\n",
                  "L3DATA:0=fffff;1=fffff;2=fffff;3=fffff\n"});
    CHECK(kernel.writesTo(host.group("BE", "schemata")) ==
          Strings{"L3CODE:0=3f;1=3f;2=3f;3=3f\n", "L3DATA:0=3f;1=3f;2=3f;3=3f\n"});
    CHECK(stats.schemataWritten == 6);
  }
  SECTION("no MB") {
    Host host("resctrl.nomb");
    LogCapture cap;
    FakeKernel kernel(host.root());
    GroupOwnership own("", false);
    ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
    writer.apply(host.plan(threeClasses()));
    CHECK(kernel.writesTo(host.group("LS", "schemata")) == Strings{"L3:0=fff;1=fff;2=fff;3=fff\n"});
    CHECK(kernel.writesTo(host.group("BE", "schemata")) == Strings{"L3:0=3f;1=3f;2=3f;3=3f\n"});
  }
}

TEST_CASE("Intel in MBps mode gets no MB line") {
  SECTION("the captured MBps host has no L3 either: groups are made, nothing written") {
    Host host("resctrl.nol3.mbps");
    LogCapture cap;
    FakeKernel kernel(host.root());
    GroupOwnership own("", false);
    ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
    const auto stats = writer.apply(host.plan(threeClasses()));
    CHECK(stats.groupsCreated == 3);
    CHECK(kernel.calls.empty());
  }
  SECTION("the full capture remounted with mba_MBps") {
    Host host("resctrl.full");
    host.tree.write("resctrl/schemata",
                    "L3:0=fffff;1=fffff;2=fffff;3=fffff\n"
                    "MB:0=4294967295;1=4294967295;2=4294967295;3=4294967295\n");
    LogCapture cap;
    FakeKernel kernel(host.root());
    GroupOwnership own("", false);
    ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
    writer.apply(host.plan(threeClasses()));
    CHECK(kernel.writesTo(host.group("BE", "schemata")) == Strings{"L3:0=3f;1=3f;2=3f;3=3f\n"});
  }
}

TEST_CASE("an AMD host gets absolute MB values on the 2048 and 160 scale") {
  Host host;
  buildAmd(host.tree);
  LogCapture cap;
  FakeKernel kernel(host.root());
  GroupOwnership own("", false);
  ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
  auto config = threeClasses();
  config.ls.resctrl = rdt(0, 100, 60);
  writer.apply(host.plan(config, CpuVendor::kAmd));
  CHECK(kernel.writesTo(host.group("LSR", "schemata")).empty());  // 2048 already
  CHECK(kernel.writesTo(host.group("LS", "schemata")) == Strings{"MB:0=96;1=96;2=96;3=96\n"});
  CHECK(kernel.writesTo(host.group("BE", "schemata")) ==
        Strings{"L3:0=1f;1=1f;2=1f;3=1f\n", "MB:0=64;1=64;2=64;3=64\n"});
}

TEST_CASE("padded MB values and non-contiguous cache ids compare as numbers") {
  // goresctrl's l2l3mb capture prints MB padded ("MB:0=  100") next to an L2 line.
  Host host("resctrl.l2l3mb");
  LogCapture cap;
  FakeKernel kernel(host.root());
  GroupOwnership own("", false);
  ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
  writer.apply(host.plan(threeClasses()));
  CHECK(kernel.writesTo(host.group("LSR", "schemata")).empty());
  CHECK(kernel.writesTo(host.group("BE", "schemata")) ==
        Strings{"L3:0=3f;1=3f\n", "MB:0=40;1=40\n"});

  auto current = parseSchemata("    L3:0=0003f;2=0003f\n    MB:0=  40;2=  40\n", "schemata");
  REQUIRE(current.ok());
  CHECK(*schemataLineHeld(*current, "L3:0=3f;2=3f"));
  CHECK(*schemataLineHeld(*current, "L3:2=03F"));
  CHECK(*schemataLineHeld(*current, "MB:0=40;2=40"));
  CHECK_FALSE(*schemataLineHeld(*current, "L3:0=3f;1=3f"));  // id 1 is not there
  CHECK_FALSE(*schemataLineHeld(*current, "MB:0=40;2=50"));
  CHECK_FALSE(*schemataLineHeld(*current, "L3CODE:0=3f"));  // resource not there
  CHECK(*schemataLineHeld(*current, "MB:0=040"));           // decimal: 040 is 40
  CHECK_FALSE(schemataLineHeld(*current, "L3:0=xyz").ok());
  CHECK_FALSE(schemataLineHeld(*current, "L3 0=f").ok());
}

TEST_CASE("tasks get only the missing tids, one per write, and a vanished tid is quiet") {
  Host host("resctrl.full");
  LogCapture cap;
  FakeKernel kernel(host.root());
  GroupOwnership own("", false);
  ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
  auto plan = host.plan(threeClasses());
  writer.apply(plan);  // creates the groups
  FakeKernel::writeText(host.group("LS", "tasks"), "11\n12\n");
  kernel.calls.clear();
  kernel.vanished = {15};

  plan.groups[1].tids = {11, 12, 13, 14, 15};
  const auto stats = writer.apply(plan);
  const Strings writes = kernel.writesTo(host.group("LS", "tasks"));
  CHECK(writes == Strings{"13\n", "14\n", "15\n"});
  for (const auto& c : kernel.calls) CHECK(c.mode == WriteMode::kTasks);
  CHECK(contents(host.group("LS", "tasks")) == "11\n12\n13\n14\n");
  CHECK(stats.tasksWritten == 2);
  CHECK(stats.tasksUnchanged == 2);
  CHECK(stats.tasksVanished == 1);
  CHECK(stats.tasksFailed == 0);
  CHECK(cap.logLines() == 0);

  SECTION("other errors count as failed and log once per group") {
    kernel.refused = {16, 17};
    plan.groups[1].tids = {11, 16, 17};
    auto failed = writer.apply(plan);
    CHECK(failed.tasksFailed == 2);
    CHECK(cap.logLines() == 1);
    CHECK(has(cap.log.str(), "2 of 2 tids not moved to " + host.group("LS", "tasks")));
    CHECK(has(cap.log.str(), "tid 16"));
    failed = writer.apply(plan);
    CHECK(failed.tasksFailed == 2);
    CHECK(cap.logLines() == 1);
  }
}

TEST_CASE("an existing group we did not create is never touched unless adopting") {
  Host host("resctrl.full");
  host.tree.write("resctrl/LSR/schemata",
                  "L3:0=00003;1=00003;2=00003;3=00003\nMB:0=10;1=10;2=10;3=10\n");
  host.tree.write("resctrl/LSR/tasks", "1\n");
  const std::string schemataBefore = contents(host.group("LSR", "schemata"));
  LogCapture cap;
  FakeKernel kernel(host.root());
  auto plan = host.plan(threeClasses());
  plan.groups[0].tids = {7};

  {
    GroupOwnership own(host.stateFile(), false);
    ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
    auto stats = writer.apply(plan);
    CHECK(stats.groupsRefused == 1);
    CHECK(stats.groupsCreated == 2);
    for (const auto& c : kernel.calls) CHECK_FALSE(has(c.path, "/LSR/"));
    CHECK(contents(host.group("LSR", "schemata")) == schemataBefore);
    CHECK(contents(host.group("LSR", "tasks")) == "1\n");
    CHECK(contents(host.stateFile()) == "BE\nLS\n");
    CHECK(cap.logLines() == 1);
    CHECK(has(cap.log.str(), host.root() + "/LSR exists and was not created by this agent"));
    stats = writer.apply(plan);  // logged once
    CHECK(stats.groupsRefused == 1);
    CHECK(cap.logLines() == 1);
  }
  {
    GroupOwnership adopting(host.stateFile(), true);
    ResctrlWriter writer(host.root(), adopting, cap.failures, false, kernel.ops());
    kernel.calls.clear();
    const auto stats = writer.apply(plan);
    CHECK(stats.groupsRefused == 0);
    CHECK(kernel.writesTo(host.group("LSR", "schemata")) ==
          Strings{"L3:0=fffff;1=fffff;2=fffff;3=fffff\n", "MB:0=100;1=100;2=100;3=100\n"});
    CHECK(kernel.writesTo(host.group("LSR", "tasks")) == Strings{"7\n"});
    CHECK(contents(host.stateFile()) == "BE\nLS\nLSR\n");
  }
}

TEST_CASE("a schemata line the kernel rejects reports last_cmd_status, once") {
  Host host("resctrl.full");
  LogCapture cap;
  FakeKernel kernel(host.root());
  kernel.rejectPrefix = "MB:";
  kernel.rejectStatus = "MB value 40 out of range [10,100]";
  GroupOwnership own("", false);
  ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
  auto stats = writer.apply(host.plan(threeClasses()));
  // The L3 lines are separate writes and still land.
  CHECK(kernel.writesTo(host.group("BE", "schemata")) ==
        Strings{"L3:0=3f;1=3f;2=3f;3=3f\n", "MB:0=40;1=40;2=40;3=40\n"});
  CHECK(stats.schemataWritten == 2);
  CHECK(stats.schemataFailed == 2);  // LS and BE MB
  CHECK(cap.logLines() == 2);        // one per group and resource
  CHECK(has(cap.log.str(), "last_cmd_status: MB value 40 out of range [10,100]"));
  CHECK(has(cap.log.str(), host.group("BE", "schemata")));
  stats = writer.apply(host.plan(threeClasses()));
  CHECK(stats.schemataFailed == 2);
  CHECK(cap.logLines() == 2);
}

TEST_CASE("a malformed cbm_mask stops the plan with an error naming the file") {
  Host host("resctrl.full");
  host.tree.write("resctrl/info/L3/cbm_mask", "f0f\n");
  auto info = readResctrlInfo(host.paths);
  REQUIRE_FALSE(info.ok());
  CHECK(has(info.error().message, host.root() + "/info/L3/cbm_mask"));
}

TEST_CASE("a malformed group schemata is reported and not written to") {
  Host host("resctrl.full");
  LogCapture cap;
  FakeKernel kernel(host.root());
  GroupOwnership own("", false);
  ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
  auto plan = host.plan(threeClasses());
  writer.apply(plan);
  const std::string garbage = "L3:0=0003f;1=0003f\nMB 0=40\n";
  FakeKernel::writeText(host.group("BE", "schemata"), garbage);
  kernel.calls.clear();
  auto config = threeClasses();
  config.be.resctrl.mbaPercent = 70;  // would need a write
  plan = host.plan(config);
  plan.groups[2].tids = {21};
  const auto stats = writer.apply(plan);
  CHECK(kernel.writesTo(host.group("BE", "schemata")).empty());
  CHECK(contents(host.group("BE", "schemata")) == garbage);
  CHECK(stats.schemataFailed == 1);
  CHECK(has(cap.log.str(), host.group("BE", "schemata") + ":2:"));
  // Its tasks are a separate part and still written.
  CHECK(kernel.writesTo(host.group("BE", "tasks")) == Strings{"21\n"});

  SECTION("a malformed tasks file likewise") {
    FakeKernel::writeText(host.group("BE", "tasks"), "21\nnot-a-tid\n");
    plan.groups[2].tids = {21, 22};
    kernel.calls.clear();
    const auto again = writer.apply(plan);
    CHECK(kernel.writesTo(host.group("BE", "tasks")).empty());
    CHECK(again.tasksFailed == 1);
    CHECK(has(cap.log.str(), host.group("BE", "tasks") + ":2:"));
  }
}

TEST_CASE("dry-run creates nothing and writes nothing") {
  Host host("resctrl.full");
  LogCapture cap;
  FakeKernel kernel(host.root());
  GroupOwnership own(host.stateFile(), true);
  auto plan = host.plan(threeClasses());
  plan.groups[1].tids = {5};

  SECTION("missing groups") {
    ResctrlWriter writer(host.root(), own, cap.failures, true, kernel.ops());
    const auto stats = writer.apply(plan);
    CHECK(kernel.calls.empty());
    CHECK(kernel.made.empty());
    CHECK_FALSE(std::filesystem::exists(host.root() + "/BE"));
    CHECK_FALSE(std::filesystem::exists(host.stateFile()));
    CHECK(stats.groupsCreated == 0);
    CHECK(has(cap.log.str(), "dry-run: would create resctrl group " + host.root() + "/BE"));
    CHECK(has(cap.log.str(), "dry-run: would write \"MB:0=40;1=40;2=40;3=40\""));
  }
  SECTION("an existing group, adoptable, with other values") {
    host.tree.write("resctrl/LS/schemata",
                    "L3:0=fffff;1=fffff;2=fffff;3=fffff\nMB:0=80;1=80;2=80;3=80\n");
    host.tree.write("resctrl/LS/tasks", "");
    ResctrlWriter writer(host.root(), own, cap.failures, true, kernel.ops());
    const auto stats = writer.apply(plan);
    CHECK(kernel.calls.empty());
    CHECK_FALSE(own.owns("LS"));  // not adopted either
    CHECK_FALSE(std::filesystem::exists(host.stateFile()));
    CHECK(contents(host.group("LS", "schemata")) ==
          "L3:0=fffff;1=fffff;2=fffff;3=fffff\nMB:0=80;1=80;2=80;3=80\n");
    CHECK(contents(host.group("LS", "tasks")).empty());
    CHECK(stats.schemataUnchanged == 1);  // the MB line
    CHECK(has(cap.log.str(), "dry-run: would write \"L3:0=fff;1=fff;2=fff;3=fff\" to " +
                                 host.group("LS", "schemata")));
    CHECK(has(cap.log.str(), "dry-run: would write 1 tids to " + host.group("LS", "tasks")));
  }
}

TEST_CASE("the root group is never written") {
  Host host("resctrl.full");
  LogCapture cap;
  FakeKernel kernel(host.root());
  GroupOwnership own("", true);
  ResctrlWriter writer(host.root(), own, cap.failures, false, kernel.ops());
  ResctrlPlan plan;
  for (const char* name : {"", ".", "..", "LS/.."}) {
    GroupPlan g;
    g.group = name;
    g.schemata = {"L3:0=3f;1=3f;2=3f;3=3f"};
    g.tids = {1};
    plan.groups.push_back(g);
  }
  const auto stats = writer.apply(plan);
  CHECK(stats.groupsRefused == 4);
  CHECK(kernel.calls.empty());
  CHECK(kernel.made.empty());
}

TEST_CASE("a group that cannot be created is skipped and logged once") {
  Host host("resctrl.full");
  LogCapture cap;
  FakeKernel kernel(host.root());
  auto ops = kernel.ops();
  ops.makeDir = [](const std::string&) { return ENOSPC; };  // out of CLOSIDs
  GroupOwnership own(host.stateFile(), false);
  ResctrlWriter writer(host.root(), own, cap.failures, false, ops);
  auto stats = writer.apply(host.plan(threeClasses()));
  CHECK(stats.groupsFailed == 3);
  CHECK(kernel.calls.empty());
  CHECK_FALSE(std::filesystem::exists(host.stateFile()));
  CHECK(cap.logLines() == 3);
  CHECK(has(cap.log.str(), "mkdir " + host.root() + "/BE: No space left on device"));
  stats = writer.apply(host.plan(threeClasses()));
  CHECK(cap.logLines() == 3);
}

TEST_CASE("the system file ops do one write each, appending for tasks, creating nothing") {
  TempTree dir({{"tasks", "1\n"}, {"schemata", "L3:0=fffff\n"}});
  const ResctrlFileOps ops = systemResctrlFileOps();
  CHECK(ops.write(dir.path("tasks"), "2\n", WriteMode::kTasks) == 0);
  CHECK(contents(dir.path("tasks")) == "1\n2\n");
  // schemata is opened without O_APPEND or O_TRUNC: the write lands at offset 0.
  CHECK(ops.write(dir.path("schemata"), "L3:0=3f\n", WriteMode::kSchemata) == 0);
  CHECK(contents(dir.path("schemata")) == "L3:0=3f\nff\n");
  CHECK(ops.write(dir.path("missing"), "1\n", WriteMode::kTasks) == ENOENT);
  CHECK_FALSE(std::filesystem::exists(dir.path("missing")));

  const mode_t old = ::umask(022);
  CHECK(ops.makeDir(dir.path("LS")) == 0);
  ::umask(old);
  struct stat st {};
  REQUIRE(::stat(dir.path("LS").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755);
  CHECK(ops.makeDir(dir.path("LS")) == EEXIST);
}

}  // namespace test_resctrl_resctrl_writer
