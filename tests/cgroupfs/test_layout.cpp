// Tests for cgroupfs/layout and cgroupfs/cgroup_mounts: the kubelet's directory
// table for both drivers, version and driver detection on throw-away trees built
// from real captures (an EKS node's v1 tree, v2 cgroup files; see
// tests/fixtures/SOURCES.md), and on this machine's own /sys/fs/cgroup.
#include <catch2/catch.hpp>

#include <linux/magic.h>
#include <sys/vfs.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/cgroup_mounts.h"
#include "cgroupfs/cgroup_parsers.h"
#include "cgroupfs/layout.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"

namespace test_cgroupfs_layout {  // this file's own names: tests build as unity chunks

using namespace koord;
namespace fs = std::filesystem;

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

// The EKS capture's Burstable pod and its containerd container.
constexpr const char* kEksUid = "7a96c459-d529-44ae-9f99-90d3798d6426";
constexpr const char* kEksContainerId =
    "1d3d308a7d48a27814a68bf33a44acf4441c9c02463ca0bc1cdfdc8c0b4a8496";
constexpr const char* kUid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
const std::string kSessionScope =
    "cgroup/v2/elastic-session-scope/sys/fs/cgroup/user.slice/user-1000.slice/session-520.scope/";
const std::string kTelegraf = "cgroup/v2/telegraf/";

const std::vector<std::string> kRuntimes = {"containerd", "docker", "cri-o", "pouch"};

std::string fixture(const std::string& rel) {
  const std::string path = test::fixturePath(rel);
  auto text = readFile(path);
  INFO(path << ": " << (text.ok() ? "" : text.error().message));
  REQUIRE(text.ok());
  return *text;
}

std::string readOrFail(const std::string& path) {
  auto text = readFile(path);
  INFO(path << ": " << (text.ok() ? "" : text.error().message));
  REQUIRE(text.ok());
  return *text;
}

template <typename T>
std::string messageOf(const Result<T>& r) {
  return r.ok() ? "" : r.error().message;
}

// A copy of the EKS node's /sys/fs/cgroup. The capture holds the combined
// "cpu,cpuacct" hierarchy only; on a real host systemd mounts it there and adds
// "cpu" and "cpuacct" symlinks to it, which koordlet's paths (and ours) go
// through, so the copy gets them too.
void buildEksTree(const test::TempTree& tree) {
  fs::copy(test::fixturePath("cgroup/v1/elastic-amzn2-eks-node/sys/fs/cgroup"), tree.path(),
           fs::copy_options::recursive);
  fs::create_directory_symlink("cpu,cpuacct", tree.path("cpu"));
  fs::create_directory_symlink("cpu,cpuacct", tree.path("cpuacct"));
}

}  // namespace

// ---- the directory table (reference §2.5) ----

TEST_CASE("versions and drivers have the names koordlet logs") {
  CHECK_THAT(toString(CgroupVersion::kV1), Equals("v1"));
  CHECK_THAT(toString(CgroupVersion::kV2), Equals("v2"));
  CHECK_THAT(toString(CgroupDriver::kSystemd), Equals("systemd"));
  CHECK_THAT(toString(CgroupDriver::kCgroupfs), Equals("cgroupfs"));
}

TEST_CASE("kube root, QoS and pod dirs follow the systemd table, with '_' for '-' in the UID") {
  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kSystemd);
  CHECK(layout.kubeRootDir() == "kubepods.slice");
  CHECK(layout.qosDir(KubeQos::kGuaranteed) == "kubepods.slice");
  CHECK(layout.qosDir(KubeQos::kBurstable) == "kubepods.slice/kubepods-burstable.slice");
  CHECK(layout.qosDir(KubeQos::kBestEffort) == "kubepods.slice/kubepods-besteffort.slice");
  CHECK(layout.podDir(KubeQos::kGuaranteed, kUid) ==
        "kubepods.slice/kubepods-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice");
  CHECK(layout.podDir(KubeQos::kBurstable, kUid) ==
        "kubepods.slice/kubepods-burstable.slice/"
        "kubepods-burstable-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice");
  CHECK(layout.podDir(KubeQos::kBestEffort, kUid) ==
        "kubepods.slice/kubepods-besteffort.slice/"
        "kubepods-besteffort-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice");
}

TEST_CASE("kube root, QoS and pod dirs follow the cgroupfs table, with the UID as is") {
  for (CgroupVersion version : {CgroupVersion::kV1, CgroupVersion::kV2}) {
    const CgroupLayout layout(version, CgroupDriver::kCgroupfs);
    CHECK(layout.kubeRootDir() == "kubepods");
    CHECK(layout.qosDir(KubeQos::kGuaranteed) == "kubepods");
    CHECK(layout.qosDir(KubeQos::kBurstable) == "kubepods/burstable");
    CHECK(layout.qosDir(KubeQos::kBestEffort) == "kubepods/besteffort");
    CHECK(layout.podDir(KubeQos::kGuaranteed, kUid) == "kubepods/pod" + std::string(kUid));
    CHECK(layout.podDir(KubeQos::kBurstable, kUid) == "kubepods/burstable/pod" + std::string(kUid));
    CHECK(layout.podDir(KubeQos::kBestEffort, kUid) ==
          "kubepods/besteffort/pod" + std::string(kUid));
  }
}

TEST_CASE("container dirs follow the table for containerd, docker, cri-o and pouch") {
  const std::string pod = "kubepods.slice/kubepods-pod1.slice";
  const CgroupLayout systemd(CgroupVersion::kV2, CgroupDriver::kSystemd);
  const CgroupLayout cgroupfs(CgroupVersion::kV2, CgroupDriver::kCgroupfs);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"containerd", pod + "/cri-containerd-abc.scope"},
      {"docker", pod + "/docker-abc.scope"},
      {"cri-o", pod + "/crio-abc.scope"},
      {"pouch", pod + "/pouch-abc.scope"},
  };
  for (const auto& [runtime, dir] : expected) {
    INFO(runtime);
    auto s = systemd.containerDir(pod, runtime, "abc");
    REQUIRE(s.ok());
    CHECK(*s == dir);
    // cgroupfs: the bare id, whatever the runtime.
    auto c = cgroupfs.containerDir("kubepods/pod1", runtime, "abc");
    REQUIRE(c.ok());
    CHECK(*c == "kubepods/pod1/abc");
  }
}

TEST_CASE("an unknown runtime or an unsafe container id is an error that quotes it") {
  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kSystemd);
  CHECK_THAT(messageOf(layout.containerDir("kubepods.slice", "rkt", "abc")),
             Equals("unknown container runtime \"rkt\" (known: containerd, docker, cri-o, pouch)"));
  CHECK_THAT(messageOf(layout.containerDir("kubepods.slice", "", "abc")),
             Contains("unknown container runtime \"\""));
  // koordlet's runtime names are exact: "crio" is cri-o's scope prefix, not its name.
  CHECK_THAT(messageOf(layout.containerDir("kubepods.slice", "crio", "abc")),
             Contains("unknown container runtime \"crio\""));
  CHECK_THAT(messageOf(layout.containerDir("kubepods.slice", "docker\n\x01", "abc")),
             Contains("\"docker\\x0a\\x01\""));
  for (const std::string& id :
       std::vector<std::string>{"", ".", "..", "../../etc", "a/b", std::string("a\0b", 3)}) {
    INFO(id);
    CHECK_THAT(messageOf(layout.containerDir("kubepods.slice", "containerd", id)),
               Contains("is not a valid directory name"));
  }
  CHECK(isSafePathComponent("1d3d308a"));
  CHECK_FALSE(isSafePathComponent(".."));
}

TEST_CASE("a prefix goes in front of the kube root dir") {
  const CgroupLayout cgroupfs(CgroupVersion::kV1, CgroupDriver::kCgroupfs, "t1");
  CHECK(cgroupfs.kubeRootDir() == "t1/kubepods");
  CHECK(cgroupfs.podDir(KubeQos::kBestEffort, kUid) ==
        "t1/kubepods/besteffort/pod" + std::string(kUid));
  const CgroupLayout systemd(CgroupVersion::kV2, CgroupDriver::kSystemd, "/koordlet-test/t1/");
  CHECK(systemd.qosDir(KubeQos::kBurstable) ==
        "koordlet-test/t1/kubepods.slice/kubepods-burstable.slice");
  CHECK(systemd.filePath("/sys/fs/cgroup/", "cpu", systemd.kubeRootDir(), "cpu.max") ==
        "/sys/fs/cgroup/koordlet-test/t1/kubepods.slice/cpu.max");
}

TEST_CASE("filePath puts the subsystem after the root on v1 only") {
  const CgroupLayout v1(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  const CgroupLayout v2(CgroupVersion::kV2, CgroupDriver::kCgroupfs);
  CHECK(v1.filePath("/host-cgroup/", "cpuacct", "kubepods/besteffort", "cpuacct.usage") ==
        "/host-cgroup/cpuacct/kubepods/besteffort/cpuacct.usage");
  CHECK(v2.filePath("/host-cgroup/", "cpuacct", "kubepods/besteffort", "cpu.stat") ==
        "/host-cgroup/kubepods/besteffort/cpu.stat");
  // The hierarchy root itself: an empty dir adds no "//".
  CHECK(v1.filePath("/sys/fs/cgroup", "cpu", "", "cpu.shares") == "/sys/fs/cgroup/cpu/cpu.shares");
  CHECK(v2.filePath("/", "cpu", "", "cgroup.controllers") == "/cgroup.controllers");
}

// ---- detection ----

TEST_CASE("a tree of controller dirs is v1 and a tree with cgroup.controllers is v2") {
  test::TempTree v1;
  buildEksTree(v1);
  auto version1 = detectCgroupVersion(v1.path());
  REQUIRE(version1.ok());
  CHECK(*version1 == CgroupVersion::kV1);

  test::TempTree v2({{"cgroup.controllers", fixture(kSessionScope + "cgroup.controllers")}});
  auto version2 = detectCgroupVersion(v2.path());
  REQUIRE(version2.ok());
  CHECK(*version2 == CgroupVersion::kV2);

  auto missing = detectCgroupVersion(v2.path("absent"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().sysErrno == ENOENT);
  CHECK_THAT(missing.error().message, Contains("absent") && Contains("not an existing directory"));
  auto file = detectCgroupVersion(v2.path("cgroup.controllers"));
  REQUIRE_FALSE(file.ok());
  CHECK_THAT(file.error().message, Contains("not an existing directory"));
}

// koordlet asks statfs for CGROUP2_SUPER_MAGIC; our cgroup.controllers probe must
// agree with it. This machine is v1 with a hybrid "unified" cgroup2 mount, which
// is still v1 for the kubelet: the controllers live in the v1 hierarchies.
TEST_CASE("this machine's /sys/fs/cgroup is detected as statfs says") {
  struct statfs st {};
  if (::statfs("/sys/fs/cgroup", &st) != 0) {
    KOORDLET_SKIP("statfs(/sys/fs/cgroup) failed: no cgroup filesystem mounted here");
  }
  const CgroupVersion expected =
      st.f_type == CGROUP2_SUPER_MAGIC ? CgroupVersion::kV2 : CgroupVersion::kV1;
  auto version = detectCgroupVersion("/sys/fs/cgroup");
  INFO(messageOf(version));
  REQUIRE(version.ok());
  CHECK(*version == expected);
  if (fs::exists("/sys/fs/cgroup/unified")) CHECK(*version == CgroupVersion::kV1);
}

TEST_CASE("the driver is systemd with kubepods.slice, cgroupfs with kubepods, else an error") {
  SECTION("v1, probed under cpu/") {
    test::TempTree systemd({{"cpu/kubepods.slice/cpu.shares", "1024\n"}});
    auto s = detectCgroupDriver(systemd.path(), CgroupVersion::kV1);
    REQUIRE(s.ok());
    CHECK(*s == CgroupDriver::kSystemd);

    test::TempTree cgroupfs({{"cpu/kubepods/cpu.shares", "1024\n"}});
    auto c = detectCgroupDriver(cgroupfs.path(), CgroupVersion::kV1);
    REQUIRE(c.ok());
    CHECK(*c == CgroupDriver::kCgroupfs);

    // kubepods under memory/ only: the cpu hierarchy decides, as in koordlet.
    test::TempTree neither(
        {{"cpu/system.slice/cpu.shares", "1024\n"}, {"memory/kubepods/memory.stat", "cache 0\n"}});
    auto n = detectCgroupDriver(neither.path(), CgroupVersion::kV1);
    REQUIRE_FALSE(n.ok());
    CHECK_THAT(n.error().message, Contains(neither.path("cpu/kubepods.slice")) &&
                                      Contains(neither.path("cpu/kubepods")) &&
                                      Contains("the kubelet has not created its cgroups"));
    CHECK(n.error().sysErrno == ENOENT);
  }
  SECTION("v2, probed at the root") {
    test::TempTree systemd(
        {{"cgroup.controllers", "cpu memory\n"}, {"kubepods.slice/cpu.max", ""}});
    auto s = detectCgroupDriver(systemd.path(), CgroupVersion::kV2);
    REQUIRE(s.ok());
    CHECK(*s == CgroupDriver::kSystemd);
    test::TempTree cgroupfs({{"cgroup.controllers", "cpu memory\n"}, {"kubepods/cpu.max", ""}});
    auto c = detectCgroupDriver(cgroupfs.path(), CgroupVersion::kV2);
    REQUIRE(c.ok());
    CHECK(*c == CgroupDriver::kCgroupfs);
    // A file named kubepods is not the kubelet's directory.
    test::TempTree file({{"cgroup.controllers", "cpu\n"}, {"kubepods", ""}});
    CHECK_FALSE(detectCgroupDriver(file.path(), CgroupVersion::kV2).ok());
  }
  SECTION("under a prefix") {
    test::TempTree tree(
        {{"cpu/kubepods.slice/cpu.shares", "1024\n"}, {"cpu/t1/kubepods/cpu.shares", "1024\n"}});
    auto prefixed = detectCgroupDriver(tree.path(), CgroupVersion::kV1, "t1");
    REQUIRE(prefixed.ok());
    CHECK(*prefixed == CgroupDriver::kCgroupfs);
    CHECK_FALSE(detectCgroupDriver(tree.path(), CgroupVersion::kV1, "t2").ok());
  }
}

// ---- real trees through the layout ----

TEST_CASE("the EKS node's container dir is found from its pod UID and container id") {
  test::TempTree tree;
  buildEksTree(tree);
  auto version = detectCgroupVersion(tree.path());
  REQUIRE(version.ok());
  REQUIRE(*version == CgroupVersion::kV1);
  auto driver = detectCgroupDriver(tree.path(), *version);
  REQUIRE(driver.ok());
  REQUIRE(*driver == CgroupDriver::kSystemd);

  const CgroupLayout layout(*version, *driver);
  const std::string pod = layout.podDir(KubeQos::kBurstable, kEksUid);
  auto container = layout.containerDir(pod, "containerd", kEksContainerId);
  REQUIRE(container.ok());
  for (const char* subsystem : {"cpu", "cpuacct", "memory", "cpuset", "cpu,cpuacct"}) {
    INFO(subsystem);
    CHECK(fs::is_directory(layout.filePath(tree.path(), subsystem, *container, "")));
  }

  auto usage = parseSingleUint(
      readOrFail(layout.filePath(tree.path(), "cpuacct", *container, "cpuacct.usage")));
  REQUIRE(usage.ok());
  CHECK(*usage == 124659500367000u);

  auto cpuStat =
      parseFlatKeyed(readOrFail(layout.filePath(tree.path(), "cpu", *container, "cpu.stat")));
  REQUIRE(cpuStat.ok());
  CHECK(cpuStat->at("nr_periods") == 0);
  CHECK(cpuStat->at("nr_throttled") == 0);
  CHECK(cpuStat->at("throttled_time") == 0);

  auto quota = parseCfsQuotaPeriod(
      readOrFail(layout.filePath(tree.path(), "cpu", *container, "cpu.cfs_quota_us")),
      readOrFail(layout.filePath(tree.path(), "cpu", *container, "cpu.cfs_period_us")));
  REQUIRE(quota.ok());
  CHECK_FALSE(quota->quotaUs.has_value());
  CHECK(quota->periodUs == 100000u);

  auto memStat =
      parseFlatKeyed(readOrFail(layout.filePath(tree.path(), "memory", *container, "memory.stat")));
  REQUIRE(memStat.ok());
  // koordlet's v1 container memory usage, without page cache.
  CHECK(memStat->at("total_inactive_anon") + memStat->at("total_active_anon") +
            memStat->at("total_unevictable") ==
        1119498240u);

  auto cpus =
      parseCpuList(readOrFail(layout.filePath(tree.path(), "cpuset", *container, "cpuset.cpus")));
  REQUIRE(cpus.ok());
  CHECK(cpus->size() == 8);

  // The other QoS classes' dirs are absent from this capture.
  CHECK_FALSE(fs::exists(
      layout.filePath(tree.path(), "cpu", layout.podDir(KubeQos::kBestEffort, kEksUid), "")));
}

TEST_CASE("v2 pod trees of either driver and every runtime read real v2 files through the layout") {
  for (CgroupDriver driverKind : {CgroupDriver::kSystemd, CgroupDriver::kCgroupfs}) {
    for (const std::string& runtime : kRuntimes) {
      INFO(toString(driverKind) << " " << runtime);
      const CgroupLayout planned(CgroupVersion::kV2, driverKind);
      const std::string pod = planned.podDir(KubeQos::kBestEffort, kUid);
      auto container = planned.containerDir(pod, runtime, "c0ffee");
      REQUIRE(container.ok());
      test::TempTree tree({
          {"cgroup.controllers", fixture(kSessionScope + "cgroup.controllers")},
          {*container + "/cpu.stat", fixture(kTelegraf + "cpu.stat")},
          {*container + "/memory.stat", fixture(kTelegraf + "memory.stat")},
          {*container + "/cpu.max", fixture(kTelegraf + "cpu.max")},
          {*container + "/cpuset.cpus.effective", fixture(kTelegraf + "cpuset.cpus.effective")},
          {pod + "/cpu.stat", fixture(kSessionScope + "cpu.stat")},
          {pod + "/cpu.max", fixture(kSessionScope + "cpu.max")},
      });

      auto version = detectCgroupVersion(tree.path());
      REQUIRE(version.ok());
      CHECK(*version == CgroupVersion::kV2);
      auto driver = detectCgroupDriver(tree.path(), *version);
      REQUIRE(driver.ok());
      CHECK(*driver == driverKind);
      const CgroupLayout layout(*version, *driver);

      auto cpuStat = parseFlatKeyed(
          readOrFail(layout.filePath(tree.path(), "cpuacct", *container, "cpu.stat")));
      REQUIRE(cpuStat.ok());
      CHECK(cpuStat->at("usage_usec") == 98701325189u);
      CHECK(cpuStat->at("nr_periods") == 3936904u);
      CHECK(cpuStat->at("nr_throttled") == 6004u);
      CHECK(cpuStat->at("throttled_usec") == 19175137007u);

      auto memStat = parseFlatKeyed(
          readOrFail(layout.filePath(tree.path(), "memory", *container, "memory.stat")));
      REQUIRE(memStat.ok());
      // koordlet's v2 usage: inactive_anon + active_anon + unevictable.
      CHECK(memStat->at("inactive_anon") + memStat->at("active_anon") +
                memStat->at("unevictable") ==
            2471739392u);

      auto cpuMax =
          parseCpuMax(readOrFail(layout.filePath(tree.path(), "cpu", *container, "cpu.max")));
      REQUIRE(cpuMax.ok());
      CHECK(cpuMax->quotaUs == std::optional<int64_t>(4800000));
      CHECK(cpuMax->periodUs == 100000u);

      auto cpus = parseCpuList(
          readOrFail(layout.filePath(tree.path(), "cpuset", *container, "cpuset.cpus.effective")));
      REQUIRE(cpus.ok());
      CHECK(cpus->size() == 96);

      auto podStat =
          parseFlatKeyed(readOrFail(layout.filePath(tree.path(), "cpu", pod, "cpu.stat")));
      REQUIRE(podStat.ok());
      CHECK(podStat->at("usage_usec") == 3611347518u);
      auto podMax = parseCpuMax(readOrFail(layout.filePath(tree.path(), "cpu", pod, "cpu.max")));
      REQUIRE(podMax.ok());
      CHECK_FALSE(podMax->quotaUs.has_value());
    }
  }
}

// ---- libcgroup ----

TEST_CASE("libcgroup finds /sys/fs/cgroup as the cgroup root on this machine") {
  auto root = findCgroupRootWithLibcgroup();
  if (!root.ok() && root.error().message.rfind("libcgroup: init:", 0) == 0) {
    KOORDLET_SKIP("libcgroup cannot initialise here: " << root.error().message);
  }
  INFO(messageOf(root));
  REQUIRE(root.ok());
  CHECK(*root == "/sys/fs/cgroup");
  // A second call answers from libcgroup's cache, the same.
  auto again = findCgroupRootWithLibcgroup();
  REQUIRE(again.ok());
  CHECK(*again == *root);
  // The root it names is one detectCgroupVersion accepts.
  CHECK(detectCgroupVersion(*root).ok());
}

TEST_CASE("a root holds a cgroup hierarchy only with cgroup.controllers or a cpu controller dir",
          "[layout]") {
  koord::test::TempTree empty;
  CHECK_FALSE(koord::holdsCgroupHierarchy(empty.path()));
  CHECK_FALSE(koord::holdsCgroupHierarchy(empty.path("missing")));
  koord::test::TempTree v1({{"cpu/cpu.shares", "1024\n"}});
  CHECK(koord::holdsCgroupHierarchy(v1.path()));
  koord::test::TempTree v2({{"cgroup.controllers", "cpu memory\n"}});
  CHECK(koord::holdsCgroupHierarchy(v2.path()));
}

}  // namespace test_cgroupfs_layout
