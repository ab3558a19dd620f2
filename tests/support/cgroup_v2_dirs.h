// The cgroup v2 kernel tests' own cgroups (tests/rig/): where they go, whether this
// machine can make them, and their removal, deepest first, whatever the test's end.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/kernel_io.h"

namespace koord::test {

inline const std::string kCgroupV2Root = "/sys/fs/cgroup";

// Why this machine cannot run a cgroup v2 kernel test, or "" when it can.
inline std::string cgroupV2UnavailableReason() {
  if (!std::filesystem::exists(kCgroupV2Root + "/cgroup.controllers")) {
    return "no cgroup v2 at " + kCgroupV2Root + " (tests/rig/run.sh runs this in a v2 VM)";
  }
  if (::geteuid() != 0) return "not root: cannot create cgroups";
  return "";
}

// Cgroups made under kCgroupV2Root, named relative to it. Removed in reverse order
// of creation (rmdir takes only an empty cgroup) when this goes, so as a member it
// also cleans up after a REQUIRE that throws out of its owner's constructor.
class CgroupV2Dirs {
 public:
  CgroupV2Dirs() = default;
  ~CgroupV2Dirs() { removeAll(); }
  CgroupV2Dirs(const CgroupV2Dirs&) = delete;
  CgroupV2Dirs& operator=(const CgroupV2Dirs&) = delete;

  static std::string path(const std::string& dir) { return kCgroupV2Root + "/" + dir; }
  static std::string file(const std::string& dir, const char* name) {
    return path(dir) + "/" + name;
  }

  // Makes `dir`; with `controllers` ("+cpu +memory") enables them for its children,
  // which the kernel must accept.
  void make(const std::string& dir, const char* controllers = "") {
    const std::string p = path(dir);
    if (::mkdir(p.c_str(), 0755) != 0) FAIL("mkdir " << p << ": " << std::strerror(errno));
    created_.push_back(p);
    if (*controllers != '\0') {
      INFO(p);
      REQUIRE(rawWrite(p + "/cgroup.subtree_control", controllers) == 0);
    }
  }
  // Removes one (empty) cgroup now; the kernel must accept.
  void remove(const std::string& dir) {
    const std::string p = path(dir);
    INFO(p);
    CHECK(::rmdir(p.c_str()) == 0);
    created_.erase(std::remove(created_.begin(), created_.end(), p), created_.end());
  }
  void removeAll() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::rmdir(it->c_str());
    created_.clear();
  }

 private:
  std::vector<std::string> created_;  // absolute paths, in creation order
};

}  // namespace koord::test
