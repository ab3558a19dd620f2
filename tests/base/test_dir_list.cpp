#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "base/dir_list.h"
#include "tests/support/temp_tree.h"

namespace test_base_dir_list {  // this file's own names: tests build as unity chunks

using namespace koord;

TEST_CASE("listSubdirs gives the subdirectories sorted and skips files", "[dir_list]") {
  test::TempTree tree({{"b.slice/cpu.max", "max 100000\n"},
                       {"a.slice/x.scope/cgroup.procs", ""},
                       {"cpu.max", "max 100000\n"},
                       {"memory.stat", "anon 0\n"}});
  REQUIRE(::mkdir(tree.path("c.slice").c_str(), 0755) == 0);
  auto dirs = listSubdirs(tree.path());
  REQUIRE(dirs.ok());
  CHECK(*dirs == std::vector<std::string>{"a.slice", "b.slice", "c.slice"});

  auto inner = listSubdirs(tree.path("a.slice"));
  REQUIRE(inner.ok());
  CHECK(*inner == std::vector<std::string>{"x.scope"});
  auto none = listSubdirs(tree.path("b.slice"));
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("listSubdirs counts a symlink to a directory and not one to a file", "[dir_list]") {
  test::TempTree tree({{"real/f", "x"}, {"file", "y"}});
  REQUIRE(::symlink("real", tree.path("link-to-dir").c_str()) == 0);
  REQUIRE(::symlink("file", tree.path("link-to-file").c_str()) == 0);
  REQUIRE(::symlink("nowhere", tree.path("dangling").c_str()) == 0);
  auto dirs = listSubdirs(tree.path());
  REQUIRE(dirs.ok());
  CHECK(*dirs == std::vector<std::string>{"link-to-dir", "real"});
}

TEST_CASE("listSubdirs of a missing dir or a file is an error naming it", "[dir_list]") {
  test::TempTree tree({{"file", "y"}});
  auto missing = listSubdirs(tree.path("nope"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().sysErrno == ENOENT);
  CHECK(missing.error().message.rfind(tree.path("nope") + ": ", 0) == 0);
  auto file = listSubdirs(tree.path("file"));
  REQUIRE_FALSE(file.ok());
  CHECK(file.error().sysErrno == ENOTDIR);
}

TEST_CASE("listSubdirs reads a real cgroup directory's child cgroups", "[dir_list]") {
  // procfs and sysfs fill d_type as kernfs does for cgroupfs: /sys/fs/cgroup exists
  // on every host this runs on, v1 or v2, and holds directories.
  auto dirs = listSubdirs("/sys/fs/cgroup");
  REQUIRE(dirs.ok());
  CHECK_FALSE(dirs->empty());
  for (const std::string& d : *dirs) {
    struct stat st {};
    REQUIRE(::stat(("/sys/fs/cgroup/" + d).c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
  }
}

}  // namespace test_base_dir_list
