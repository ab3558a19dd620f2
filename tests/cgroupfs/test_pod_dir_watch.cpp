// Tests for cgroupfs/pod_dir_watch: the inotify record parser on hand-built buffers,
// the pod dir names of both drivers, and the watch on a real directory tree (inotify
// works on any filesystem; the kernel's cgroupfs is the e2e-agent-wake test's).
#include <sys/inotify.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cgroupfs/pod_dir_watch.h"
#include "tests/support/temp_tree.h"

namespace test_cgroupfs_pod_dir_watch {

using namespace koord;

namespace {

// One record as the kernel lays it out: the header, then the name NUL-padded to `len`.
void append(std::vector<char>& buf, int wd, uint32_t mask, const std::string& name, uint32_t len) {
  inotify_event e{};
  e.wd = wd;
  e.mask = mask;
  e.len = len;
  const size_t at = buf.size();
  buf.resize(at + sizeof e + len, '\0');
  std::memcpy(buf.data() + at, &e, sizeof e);
  std::memcpy(buf.data() + at + sizeof e, name.data(), name.size());
}

}  // namespace

TEST_CASE("inotify records parse with their padded names; a cut record ends the list",
          "[pod-dir-watch]") {
  std::vector<char> buf;
  append(buf, 1, IN_CREATE | IN_ISDIR, "pod1234", 16);
  append(buf, 2, IN_DELETE_SELF, "", 0);
  append(buf, 1, IN_DELETE | IN_ISDIR, "kubepods-besteffort-pod12_34.slice", 48);
  auto events = parseInotifyEvents(buf);
  REQUIRE(events.size() == 3);
  CHECK(events[0].wd == 1);
  CHECK(events[0].name == "pod1234");
  CHECK(events[1].name.empty());
  CHECK(events[1].mask == IN_DELETE_SELF);
  CHECK(events[2].name == "kubepods-besteffort-pod12_34.slice");
  buf.resize(buf.size() - 5);  // the last name cut
  CHECK(parseInotifyEvents(buf).size() == 2);
  CHECK(parseInotifyEvents({}).empty());
}

TEST_CASE("pod dirs are known by both drivers' names, and nothing else is", "[pod-dir-watch]") {
  CHECK(podUidOfDir("pod6f0c9d1e-2b3a-4c5d-8e7f-90a1b2c3d4e5") ==
        "6f0c9d1e-2b3a-4c5d-8e7f-90a1b2c3d4e5");
  CHECK(podUidOfDir("kubepods-besteffort-pod6f0c9d1e_2b3a_4c5d.slice") == "6f0c9d1e-2b3a-4c5d");
  CHECK(podUidOfDir("kubepods-burstable-podabc_def.slice") == "abc-def");
  CHECK(podUidOfDir("kubepods-podabc.slice") == "abc");  // Guaranteed, systemd
  for (const char* other :
       {"besteffort", "burstable", "kubepods-besteffort.slice", "kubepods-burstable.slice",
        "cri-containerd-abc.scope", "pod", "pod../x", "kubepods-pod.slice", "podabc_def",
        "kubepods-besteffort-podabc-def.slice", "cgroup.procs"}) {
    INFO(other);
    CHECK_FALSE(podUidOfDir(other));
  }
}

TEST_CASE("the watch reports pod dirs made and removed, and its tree's removal",
          "[pod-dir-watch]") {
  test::TempTree tmp;
  std::filesystem::create_directories(tmp.path("kubepods/besteffort"));
  PodDirWatch w;
  REQUIRE(w.open({tmp.path("kubepods"), tmp.path("kubepods/besteffort")}));
  auto nothing = w.read();
  REQUIRE(nothing);
  CHECK(nothing->added.empty());
  std::filesystem::create_directories(tmp.path("kubepods/besteffort/poda-1"));
  std::filesystem::create_directories(tmp.path("kubepods/podg-2"));
  tmp.write("kubepods/besteffort/pod-not-a-dir", "x");  // a file: not a pod
  auto made = w.read();
  REQUIRE(made);
  CHECK(made->added == std::vector<std::string>{"a-1", "g-2"});
  std::filesystem::remove(tmp.path("kubepods/besteffort/poda-1"));
  auto gone = w.read();
  REQUIRE(gone);
  CHECK(gone->removed == std::vector<std::string>{"a-1"});
  CHECK_FALSE(gone->treeGone);
  std::filesystem::remove_all(tmp.path("kubepods/besteffort"));
  auto tree = w.read();
  REQUIRE(tree);
  CHECK(tree->treeGone);
}

TEST_CASE("a watch on a dir that is not there names it and leaves nothing open",
          "[pod-dir-watch]") {
  test::TempTree tmp;
  PodDirWatch w;
  Status s = w.open({tmp.path("missing")});
  REQUIRE_FALSE(s);
  CHECK_THAT(s.error().message, Catch::Contains("missing") && Catch::Contains("No such file"));
  CHECK_FALSE(w.isOpen());
  CHECK(w.openErrno() == ENOENT);
}

}  // namespace test_cgroupfs_pod_dir_watch
