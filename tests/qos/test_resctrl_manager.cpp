// The resctrl manager end to end on a temp host: proc/cpuinfo, a goresctrl capture as
// <sys-fs>/resctrl, a kubepods cgroup tree, pods and a NodeSLO in; the groups, their
// schemata and tasks out. A fake kernel stands behind the writer's file ops (a new
// group starts with the root's schemata and an empty tasks file; a schemata write
// replaces its resource's line; a tid write appends). The plan's and writer's own
// rules have their tests; here the plumbing: detection states, when a round runs,
// which cgroup files give the threads, what is logged how often.
#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "qos/resctrl_manager.h"
#include "support/log_capture.h"
#include "support/temp_tree.h"

namespace test_qos_resctrl_manager {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::resctrl;
using namespace std::chrono_literals;
using koord::test::LogCapture;
using koord::test::TempTree;
namespace fs = std::filesystem;

namespace {

const std::string kIntelRdt =
    "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme cat_l3 cdp_l3 mba cqm_llc\n";
const std::string kNoRdt = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme\n";

const std::string kRootSchemata =
    "L3:0=fffff;1=fffff;2=fffff;3=fffff\nMB:0=100;1=100;2=100;3=100\n";
const std::string kLsSchemata = "L3:0=ffff;1=ffff;2=ffff;3=ffff\nMB:0=80;1=80;2=80;3=80\n";
const std::string kBeSchemata = "L3:0=3f;1=3f;2=3f;3=3f\nMB:0=50;1=50;2=50;3=50\n";

std::string contents(const std::string& path) {
  auto text = readFile(path);
  INFO(path);
  REQUIRE(text.ok());
  return *text;
}

bool anyMentions(const std::vector<std::string>& errors, const std::string& what) {
  for (const auto& e : errors) {
    if (e.find(what) != std::string::npos) return true;
  }
  return false;
}

// Acts as the resctrl kernel for the writer's mkdir and write() calls.
struct FakeKernel {
  std::vector<std::string> writes;  // "<path> <- <data>"

  ResctrlFileOps ops() {
    ResctrlFileOps o;
    o.makeDir = [](const std::string& path) -> int {
      std::error_code ec;
      if (!fs::create_directory(path, ec)) return ec ? ec.value() : EEXIST;
      std::ofstream(path + "/schemata") << kRootSchemata;
      std::ofstream(path + "/tasks");
      return 0;
    };
    o.write = [this](const std::string& path, std::string_view data, WriteMode mode) -> int {
      writes.push_back(path + " <- " + std::string(data));
      if (!fs::exists(path)) return ENOENT;
      if (mode == WriteMode::kTasks) {
        std::ofstream(path, std::ios::app) << data;
        return 0;
      }
      // Replace the line of the written resource, keep the others in place.
      const std::string line(data.substr(0, data.find('\n')));
      const std::string resource = line.substr(0, line.find(':') + 1);
      std::ifstream in(path);
      std::string out, have;
      while (std::getline(in, have)) out += (have.starts_with(resource) ? line : have) + "\n";
      std::ofstream(path, std::ios::trunc) << out;
      return 0;
    };
    return o;
  }
};

Pod makePod(const std::string& uid, KubeQos kube, KoordQos label,
            const std::string& phase = "Running") {
  Pod p;
  p.uid = uid;
  p.ns = "default";
  p.name = "pod-" + uid;
  p.phase = phase;
  p.kubeQos = kube;
  p.koordQos = label;
  p.labels["koordinator.sh/qosClass"] = toString(label);
  return p;
}

// NodeSLO: LS enabled at 0-80 % / MBA 80, BE enabled at 0-30 % / MBA 50, LSR disabled.
ResourceQosStrategy nodeSlo() {
  ResourceQosStrategy q;
  q.ls.resctrl = ResctrlQos{true, 0, 80, 80};
  q.be.resctrl = ResctrlQos{true, 0, 30, 50};
  q.lsr.resctrl = ResctrlQos{false, 0, 50, 20};  // disabled: reset to 0-100 %, MBA 100
  return q;
}

// A host under a temp tree with LS, BE and LSR pods whose cgroups hold threads.
struct Host {
  TempTree tree;
  LogCapture logs;
  FakeKernel kernel;
  HostPaths paths;
  CgroupLayout layout;
  std::vector<Pod> pods;
  std::vector<std::string> mounts;

  explicit Host(CgroupVersion version = CgroupVersion::kV1, bool mounted = true,
                const std::string& cpuinfo = kIntelRdt)
      : layout(version, CgroupDriver::kCgroupfs) {
    tree.write("proc/cpuinfo", cpuinfo);
    fs::create_directories(tree.path("sysfs/resctrl"));
    if (mounted) mount();
    paths.procRoot = tree.path("proc");
    paths.sysFsRoot = tree.path("sysfs");
    paths.cgroupRoot = tree.path("cgroup");
    pods.push_back(makePod("ls-1", KubeQos::kBurstable, KoordQos::kLS));
    pods.push_back(makePod("be-1", KubeQos::kBestEffort, KoordQos::kBE));
    pods.push_back(makePod("lsr-1", KubeQos::kGuaranteed, KoordQos::kLSR));
    // Pending and not started yet: no cgroup dir, which is no error.
    pods.push_back(makePod("ls-2", KubeQos::kBurstable, KoordQos::kLS, "Pending"));
    threads("ls-1", KubeQos::kBurstable, "", "101\n102\n", "100\n");
    threads("be-1", KubeQos::kBestEffort, "", "201\n", "200\n");
    threads("lsr-1", KubeQos::kGuaranteed, "", "301\n", "300\n");
  }

  void mount() const {
    fs::copy(test::fixturePath("resctrl/goresctrl/resctrl.full"), tree.path("sysfs/resctrl"),
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }

  std::string threadsFile() const {
    return layout.version() == CgroupVersion::kV1 ? "tasks" : "cgroup.threads";
  }

  // The pod dir's own file, a container's and the pause sandbox's.
  void threads(const std::string& uid, KubeQos kube, const std::string& podTids,
               const std::string& ctrTids, const std::string& pauseTids) const {
    const std::string dir = layout.podDir(kube, uid);
    const std::string prefix = layout.version() == CgroupVersion::kV1 ? "cgroup/cpu/" : "cgroup/";
    tree.write(prefix + dir + "/" + threadsFile(), podTids);
    tree.write(prefix + dir + "/ctr-" + uid + "/" + threadsFile(), ctrTids);
    tree.write(prefix + dir + "/pause/" + threadsFile(), pauseTids);
  }

  ResctrlManagerConfig config(bool allowMount = false) const {
    ResctrlManagerConfig c;
    c.paths = paths;
    c.allowMount = allowMount;
    return c;
  }

  ResctrlManager manager(bool allowMount = false) {
    Mounter mounter = [this](const std::string& target) -> Status {
      mounts.push_back(target);
      mount();
      return Ok{};
    };
    return ResctrlManager(config(allowMount), layout, logs.clock, logs.failures, mounter,
                          kernel.ops());
  }

  std::string group(const std::string& name, const std::string& file) const {
    return contents(tree.path("sysfs/resctrl/" + name + "/" + file));
  }
  bool groupExists(const std::string& name) const {
    return fs::exists(tree.path("sysfs/resctrl/" + name));
  }
};

}  // namespace

TEST_CASE("a ready host gets LSR, LS and BE groups with their schemata and pod threads") {
  Host host;
  ResctrlManager m = host.manager();
  CHECK_FALSE(m.supported().has_value());
  const ResctrlRound r = m.runDue(host.pods, nodeSlo());
  REQUIRE(r.ran);
  CHECK(r.status == ResctrlStatus::kReady);
  CHECK(r.errors.empty());
  CHECK(r.seconds.has_value());
  CHECK(m.supported() == true);
  CHECK(m.status() == ResctrlStatus::kReady);

  CHECK(r.writes.groupsCreated == 3);
  CHECK(host.group("LS", "schemata") == kLsSchemata);
  CHECK(host.group("BE", "schemata") == kBeSchemata);
  // LSR is disabled: its group holds koordlet's reset values, here the root's.
  CHECK(host.group("LSR", "schemata") == kRootSchemata);
  CHECK(r.writes.schemataWritten == 4);
  CHECK(r.writes.schemataUnchanged == 2);

  // The pod dir and both children (container, sandbox) of each enabled pod.
  CHECK(host.group("LS", "tasks") == "100\n101\n102\n");
  CHECK(host.group("BE", "tasks") == "200\n201\n");
  CHECK(host.group("LSR", "tasks").empty());
  CHECK(r.writes.tasksWritten == 5);
}

TEST_CASE("a second round over unchanged pods writes nothing") {
  Host host;
  ResctrlManager m = host.manager();
  REQUIRE(m.runDue(host.pods, nodeSlo()).writes.tasksWritten == 5);
  const size_t writes = host.kernel.writes.size();
  host.logs.clock.advance(1s);
  const ResctrlRound r = m.runDue(host.pods, nodeSlo());
  REQUIRE(r.ran);
  CHECK(host.kernel.writes.size() == writes);
  CHECK(r.writes.groupsCreated == 0);
  CHECK(r.writes.schemataWritten == 0);
  CHECK(r.writes.schemataUnchanged == 6);
  CHECK(r.writes.tasksWritten == 0);
  CHECK(r.writes.tasksUnchanged == 5);

  // A new thread in the LS container is the only write of the next round.
  host.threads("ls-1", KubeQos::kBurstable, "", "101\n102\n103\n", "100\n");
  host.logs.clock.advance(1s);
  CHECK(m.runDue(host.pods, nodeSlo()).writes.tasksWritten == 1);
  CHECK(host.kernel.writes.size() == writes + 1);
  CHECK(host.group("LS", "tasks") == "100\n101\n102\n103\n");
}

TEST_CASE("a cpu without RDT flags is final: nothing created, one log line") {
  Host host(CgroupVersion::kV1, true, kNoRdt);
  ResctrlManager m = host.manager(true);
  for (int i = 0; i < 20; ++i) {
    const ResctrlRound r = m.runDue(host.pods, nodeSlo());
    REQUIRE(r.ran);
    CHECK(r.status == ResctrlStatus::kNoCpuSupport);
    host.logs.clock.advance(1s);
    // cpuinfo is read once: a flags line appearing later changes nothing.
    if (i == 0) host.tree.write("proc/cpuinfo", kIntelRdt);
  }
  CHECK(m.supported() == false);
  CHECK(m.status() == ResctrlStatus::kNoCpuSupport);
  CHECK(host.logs.logLines() == 1);
  CHECK(host.logs.log.str().find("not supported") != std::string::npos);
  CHECK_FALSE(host.groupExists("LS"));
  CHECK_FALSE(host.groupExists("BE"));
  CHECK_FALSE(host.groupExists("LSR"));
  CHECK(host.kernel.writes.empty());
  CHECK(host.mounts.empty());
  CHECK(m.collect().samples.empty());
}

TEST_CASE("an unmounted tree is re-checked each round and logged once per streak") {
  Host host(CgroupVersion::kV1, false);
  ResctrlManager m = host.manager(false);
  for (int i = 0; i < 5; ++i) {
    const ResctrlRound r = m.runDue(host.pods, nodeSlo());
    REQUIRE(r.ran);
    CHECK(r.status == ResctrlStatus::kNotMounted);
    host.logs.clock.advance(1s);
  }
  CHECK(m.supported() == true);  // the CPU can; the tree is a separate condition
  CHECK(host.logs.logLines() == 1);
  CHECK(host.logs.log.str().find("not-mounted") != std::string::npos);
  CHECK(host.mounts.empty());
  CHECK(host.kernel.writes.empty());
  CHECK(m.collect().samples.empty());

  // Mounted by someone else: the next round finds it, works, and logs the recovery.
  host.mount();
  const ResctrlRound r = m.runDue(host.pods, nodeSlo());
  CHECK(r.status == ResctrlStatus::kReady);
  CHECK(r.writes.groupsCreated == 3);
  CHECK(host.logs.logLines() == 2);
}

TEST_CASE("with mounting allowed the tree is mounted once and used in the same round") {
  Host host(CgroupVersion::kV1, false);
  ResctrlManager m = host.manager(true);
  const ResctrlRound r = m.runDue(host.pods, nodeSlo());
  CHECK(r.status == ResctrlStatus::kReady);
  REQUIRE(host.mounts.size() == 1);
  CHECK(fs::equivalent(host.mounts[0], host.tree.path("sysfs/resctrl")));
  CHECK(host.group("BE", "schemata") == kBeSchemata);
  host.logs.clock.advance(1s);
  CHECK(m.runDue(host.pods, nodeSlo()).status == ResctrlStatus::kReady);
  CHECK(host.mounts.size() == 1);
}

TEST_CASE("a malformed info tree is bad-info and writes nothing") {
  Host host;
  host.tree.write("sysfs/resctrl/info/L3/cbm_mask", "f0f\n");
  ResctrlManager m = host.manager();
  const ResctrlRound r = m.runDue(host.pods, nodeSlo());
  CHECK(r.status == ResctrlStatus::kBadInfo);
  CHECK(host.kernel.writes.empty());
  CHECK(host.logs.log.str().find("info/L3/cbm_mask") != std::string::npos);
}

TEST_CASE("rounds run only when the gate is on and the interval is due") {
  Host host;
  SECTION("interval with a quarter of slack") {
    ResctrlManager m = host.manager();
    CHECK(m.runDue(host.pods, nodeSlo()).ran);
    host.logs.clock.advance(500ms);
    CHECK_FALSE(m.runDue(host.pods, nodeSlo()).ran);
    host.logs.clock.advance(300ms);  // 800 ms since the last round: within the slack
    CHECK(m.runDue(host.pods, nodeSlo()).ran);
    CHECK_FALSE(m.runDue(host.pods, nodeSlo()).ran);
  }
  SECTION("gate off") {
    ResctrlManagerConfig c = host.config();
    c.gate = false;
    ResctrlManager m(c, host.layout, host.logs.clock, host.logs.failures, systemMounter(),
                     host.kernel.ops());
    CHECK_FALSE(m.runDue(host.pods, nodeSlo()).ran);
    CHECK_FALSE(m.supported().has_value());
    CHECK_FALSE(host.groupExists("LS"));
  }
  SECTION("interval zero") {
    ResctrlManagerConfig c = host.config();
    c.interval = 0s;
    ResctrlManager m(c, host.layout, host.logs.clock, host.logs.failures, systemMounter(),
                     host.kernel.ops());
    CHECK_FALSE(m.runDue(host.pods, nodeSlo()).ran);
    CHECK_FALSE(host.groupExists("LS"));
  }
}

TEST_CASE("on cgroup v2 the threads come from cgroup.threads") {
  Host host(CgroupVersion::kV2);
  REQUIRE(fs::exists(host.tree.path("cgroup/kubepods/burstable/podls-1/pause/cgroup.threads")));
  ResctrlManager m = host.manager();
  const ResctrlRound r = m.runDue(host.pods, nodeSlo());
  CHECK(r.errors.empty());
  CHECK(host.group("LS", "tasks") == "100\n101\n102\n");
  CHECK(host.group("BE", "tasks") == "200\n201\n");
}

TEST_CASE("a malformed tasks file is an error naming it; other pods still move") {
  Host host;
  host.threads("be-1", KubeQos::kBestEffort, "", "201\nabc\n", "200\n");
  ResctrlManager m = host.manager();
  const ResctrlRound r = m.runDue(host.pods, nodeSlo());
  CHECK(r.status == ResctrlStatus::kReady);
  REQUIRE(r.errors.size() == 1);
  CHECK(anyMentions(r.errors, "podbe-1/ctr-be-1/tasks"));
  CHECK(host.group("LS", "tasks") == "100\n101\n102\n");
  CHECK(host.group("BE", "tasks") == "200\n");  // the readable sandbox
}

TEST_CASE("a pod uid that is not a path component is skipped with an error") {
  Host host;
  host.pods.push_back(makePod("../../evil", KubeQos::kBurstable, KoordQos::kLS));
  ResctrlManager m = host.manager();
  const ResctrlRound r = m.runDue(host.pods, nodeSlo());
  REQUIRE(r.errors.size() == 1);
  CHECK(anyMentions(r.errors, "../../evil"));
  CHECK(host.group("LS", "tasks") == "100\n101\n102\n");
}

TEST_CASE("threads of finished pods and of pods with their own group are not moved") {
  Host host;
  host.pods[0].phase = "Succeeded";
  host.pods[1].annotations[kPodResctrlAnnotation] = R"({"llc":{"schemata":{"range":[0,30]}}})";
  ResctrlManager m = host.manager();
  const ResctrlRound r = m.runDue(host.pods, nodeSlo());
  CHECK(r.errors.empty());
  CHECK(host.group("LS", "tasks").empty());
  CHECK(host.group("BE", "tasks").empty());
  CHECK(r.writes.tasksWritten == 0);
}

TEST_CASE("collect reads the groups' monitoring counters once the tree is ready") {
  Host host;
  ResctrlManager m = host.manager();
  CHECK(m.collect().samples.empty());  // before the first round
  REQUIRE(m.runDue(host.pods, nodeSlo()).status == ResctrlStatus::kReady);
  host.tree.write("sysfs/resctrl/LS/mon_data/mon_L3_00/llc_occupancy", "4096\n");
  const MonRead read = m.collect();
  CHECK(read.errors.empty());
  REQUIRE(read.samples.size() == 1);
  CHECK(read.samples[0].group == "LS");
  CHECK(read.samples[0].llcOccupancy == 4096u);
}

}  // namespace test_qos_resctrl_manager
