// The start-time write checks (base/writable_path.h) on real filesystems: a temp dir,
// an absent one, a read-only bind mount (root) and this host's /proc/sys.
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>

#include "base/writable_path.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"

namespace test_base_writable_path {  // this file's own names: tests build as unity chunks

using namespace koord;

TEST_CASE("a dir the agent can write passes the probe and keeps no probe file", "[base]") {
  test::TempTree tree({{"d/keep", "x"}});
  REQUIRE(probeWritableDir(tree.path() + "/d"));
  REQUIRE(probeWritableDir(tree.path() + "/d/"));
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tree.path() + "/d")) {
    ++n;
  }
  CHECK(n == 1);
}

TEST_CASE("an absent dir fails the probe with its name and ENOENT", "[base]") {
  test::TempTree tree;
  auto st = probeWritableDir(tree.path() + "/absent");
  REQUIRE_FALSE(st);
  CHECK(st.error().sysErrno == ENOENT);
  CHECK(st.error().message.find(tree.path() + "/absent") != std::string::npos);
  auto ro = readOnlyMount(tree.path() + "/absent");
  REQUIRE_FALSE(ro);
  CHECK(ro.error().sysErrno == ENOENT);
}

TEST_CASE("a read-only bind mount is seen as one and fails the probe", "[base][root]") {
  if (::geteuid() != 0) {
    KOORDLET_SKIP("needs root to bind-mount a dir read-only");
  }
  test::TempTree tree({{"ro/f", "x"}});
  const std::string dir = tree.path() + "/ro";
  REQUIRE(::mount(dir.c_str(), dir.c_str(), nullptr, MS_BIND, nullptr) == 0);
  const bool remounted =
      ::mount(nullptr, dir.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) == 0;
  auto ro = readOnlyMount(dir);
  auto st = probeWritableDir(dir);
  ::umount2(dir.c_str(), MNT_DETACH);
  REQUIRE(remounted);
  REQUIRE(ro);
  CHECK(*ro);
  REQUIRE_FALSE(st);
  CHECK(st.error().sysErrno == EROFS);
  auto rw = readOnlyMount(dir);
  REQUIRE(rw);
  CHECK_FALSE(*rw);
}

}  // namespace test_base_writable_path
