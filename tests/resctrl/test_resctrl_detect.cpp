// resctrl_detect over temp host trees: cpuinfo flags, the mounted check, the mount
// path through a fake mounter (it copies a goresctrl capture into place, or fails),
// and malformed info files.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "resctrl/resctrl_detect.h"
#include "support/temp_tree.h"

namespace test_resctrl_resctrl_detect {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::resctrl;
using koord::test::TempTree;

namespace {

const std::string kIntelRdt =
    "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu cat_l3 cdp_l3 mba cqm_llc\n";
const std::string kAmdRdt =
    "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu cat_l3 mba cqm_llc\n";

void copyCapture(const std::string& capture, const std::string& to) {
  std::filesystem::create_directories(to);
  std::filesystem::copy(test::fixturePath("resctrl/goresctrl/" + capture), to,
                        std::filesystem::copy_options::recursive);
}

// A host under `tree`: proc/cpuinfo, and sys-fs/resctrl as an empty mountpoint.
HostPaths host(const TempTree& tree, const std::string& cpuinfo) {
  tree.write("proc/cpuinfo", cpuinfo);
  std::filesystem::create_directories(tree.path("sysfs/resctrl"));
  HostPaths paths;
  paths.procRoot = tree.path("proc");
  paths.sysFsRoot = tree.path("sysfs");
  return paths;
}

// Records its calls; "mounts" a capture by copying it onto the target, or fails.
struct FakeMounter {
  std::vector<std::string> calls;
  std::string capture = "resctrl.full";
  bool fail = false;
  Mounter get() {
    return [this](const std::string& target) -> Status {
      calls.push_back(target);
      if (fail) return makeError("mount resctrl on " + target + ": Operation not permitted", 1);
      copyCapture(capture, target);
      return Ok{};
    };
  }
};

bool mentions(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("status names are the documented strings") {
  CHECK(std::string(statusName(ResctrlStatus::kReady)) == "ready");
  CHECK(std::string(statusName(ResctrlStatus::kNoCpuSupport)) == "no-cpu-support");
  CHECK(std::string(statusName(ResctrlStatus::kNotMounted)) == "not-mounted");
  CHECK(std::string(statusName(ResctrlStatus::kMountFailed)) == "mount-failed");
  CHECK(std::string(statusName(ResctrlStatus::kBadInfo)) == "bad-info");
}

TEST_CASE("a cpu without cat_l3 and mba is unsupported and nothing is mounted") {
  for (const char* flags : {"flags : fpu vme\n", "flags : fpu cat_l3\n", "flags : fpu mba\n"}) {
    INFO(flags);
    TempTree tree;
    FakeMounter mounter;
    const Detection d = detectResctrl(host(tree, flags), true, mounter.get());
    CHECK(d.status == ResctrlStatus::kNoCpuSupport);
    CHECK(mounter.calls.empty());
    CHECK_FALSE(d.info.has_value());
    CHECK(mentions(d.reason, "cpuinfo"));
  }
}

TEST_CASE("flags handed in are used instead of reading cpuinfo") {
  TempTree tree;
  const HostPaths paths = host(tree, "flags : fpu\n");
  copyCapture("resctrl.full", tree.path("sysfs/resctrl"));
  FakeMounter mounter;
  const Detection d = detectResctrl(paths, false, mounter.get(), parseCpuInfoRdt(kIntelRdt));
  CHECK(d.status == ResctrlStatus::kReady);
  CHECK(d.flags.supported());
}

TEST_CASE("a mounted tree is read without mounting") {
  TempTree tree;
  const HostPaths paths = host(tree, kIntelRdt);
  copyCapture("resctrl.full", tree.path("sysfs/resctrl"));
  FakeMounter mounter;
  const Detection d = detectResctrl(paths, true, mounter.get());
  REQUIRE(d.status == ResctrlStatus::kReady);
  CHECK(mounter.calls.empty());
  REQUIRE(d.info.has_value());
  REQUIRE(d.info->l3.has_value());
  CHECK(d.info->l3->ways == 20);
  CHECK(d.info->mb.has_value());
  CHECK(d.flags.vendor == CpuVendor::kIntel);
  CHECK(d.reason.empty());
}

TEST_CASE("an unmounted tree with mounting disallowed is not-mounted and never mounts") {
  TempTree tree;
  FakeMounter mounter;
  const Detection d = detectResctrl(host(tree, kIntelRdt), false, mounter.get());
  CHECK(d.status == ResctrlStatus::kNotMounted);
  CHECK(mounter.calls.empty());
  CHECK(mentions(d.reason, "resctrl/schemata"));
}

TEST_CASE("an unmounted tree with mounting allowed is mounted once on sys-fs/resctrl") {
  TempTree tree;
  const HostPaths paths = host(tree, kIntelRdt);
  FakeMounter mounter;
  const Detection d = detectResctrl(paths, true, mounter.get());
  CHECK(d.status == ResctrlStatus::kReady);
  REQUIRE(mounter.calls.size() == 1);
  CHECK(std::filesystem::equivalent(mounter.calls[0], tree.path("sysfs/resctrl")));
  CHECK(d.info.has_value());
}

TEST_CASE("a failing mount is mount-failed with the mounter's message") {
  TempTree tree;
  FakeMounter mounter;
  mounter.fail = true;
  const Detection d = detectResctrl(host(tree, kIntelRdt), true, mounter.get());
  CHECK(d.status == ResctrlStatus::kMountFailed);
  CHECK(mounter.calls.size() == 1);
  CHECK(mentions(d.reason, "Operation not permitted"));
  CHECK_FALSE(d.info.has_value());
}

TEST_CASE("a missing mountpoint is mount-failed without calling the mounter") {
  TempTree tree;
  const HostPaths paths = host(tree, kIntelRdt);
  tree.remove("sysfs/resctrl");
  FakeMounter mounter;
  const Detection d = detectResctrl(paths, true, mounter.get());
  CHECK(d.status == ResctrlStatus::kMountFailed);
  CHECK(mounter.calls.empty());
  CHECK(mentions(d.reason, "does not exist"));
}

TEST_CASE("a mount that succeeds but leaves no schemata is mount-failed") {
  TempTree tree;
  const HostPaths paths = host(tree, kIntelRdt);
  std::vector<std::string> calls;
  const Mounter noop = [&](const std::string& target) -> Status {
    calls.push_back(target);
    return Ok{};
  };
  const Detection d = detectResctrl(paths, true, noop);
  CHECK(d.status == ResctrlStatus::kMountFailed);
  CHECK(calls.size() == 1);
  CHECK(mentions(d.reason, "schemata"));
}

TEST_CASE("a malformed info file is bad-info naming the file") {
  TempTree tree;
  const HostPaths paths = host(tree, kIntelRdt);
  copyCapture("resctrl.full", tree.path("sysfs/resctrl"));
  tree.write("sysfs/resctrl/info/L3/cbm_mask", "f0f\n");
  FakeMounter mounter;
  const Detection d = detectResctrl(paths, true, mounter.get());
  CHECK(d.status == ResctrlStatus::kBadInfo);
  CHECK(mentions(d.reason, "info/L3/cbm_mask"));
  CHECK_FALSE(d.info.has_value());
}

TEST_CASE("a malformed root schemata is bad-info naming the file") {
  TempTree tree;
  const HostPaths paths = host(tree, kIntelRdt);
  copyCapture("resctrl.full", tree.path("sysfs/resctrl"));
  tree.write("sysfs/resctrl/schemata", "L3:0=fffff\nMB 0=100\n");
  const Detection d = detectResctrl(paths, false, FakeMounter().get());
  CHECK(d.status == ResctrlStatus::kBadInfo);
  CHECK(mentions(d.reason, "resctrl/schemata:2"));
}

TEST_CASE("an AMD cpuinfo reports the AMD vendor") {
  TempTree tree;
  const HostPaths paths = host(tree, kAmdRdt);
  copyCapture("resctrl.full", tree.path("sysfs/resctrl"));
  const Detection d = detectResctrl(paths, false, FakeMounter().get());
  CHECK(d.status == ResctrlStatus::kReady);
  CHECK(d.flags.vendor == CpuVendor::kAmd);
}

TEST_CASE("an unreadable cpuinfo is no-cpu-support naming the file") {
  TempTree tree;
  HostPaths paths = host(tree, kIntelRdt);
  tree.remove("proc/cpuinfo");
  FakeMounter mounter;
  const Detection d = detectResctrl(paths, true, mounter.get());
  CHECK(d.status == ResctrlStatus::kNoCpuSupport);
  CHECK(mentions(d.reason, "proc/cpuinfo"));
  CHECK(mounter.calls.empty());
}

}  // namespace test_resctrl_resctrl_detect
