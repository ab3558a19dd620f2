// CgroupV1Tree: a private subtree in this machine's real cgroup v1 hierarchies,
// /sys/fs/cgroup/<controller>/<prefix>/ for each of cpu, cpuacct, cpuset and
// memory, for tests and benchmarks that run the agent against the kernel itself
// (quota writes the kernel must accept, CPU time the kernel accounts).
//
// The agent is pointed at it with --cgroup-root-dir=<linkDir>: a plain directory
// holding one symlink per controller, <linkDir>/cpu -> /sys/fs/cgroup/cpu/<prefix>.
// The agent then finds the v1 hierarchy (no cgroup.controllers at the root, a
// cpu directory) and the cgroupfs driver (<root>/cpu/kubepods), as it would on a
// node, and every path it reads or writes resolves into the private subtree. (A
// bind mount would do the same but needs a mount namespace to stay private; the
// agent's CgroupLayout has a prefix for in-process tests, but the binary has no
// flag for it.)
//
// The destructor removes the subtree bottom-up, moving any task still in a
// directory to its parent first (rmdir fails on a cgroup with tasks), so a test
// that fails half-way leaves nothing behind; a run killed outright leaves its
// tree to the next run, which removes trees whose process is gone. Needs root.
// Set-up failures throw.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace koord::test {

class CgroupV1Tree {
 public:
  static constexpr const char* kRoot = "/sys/fs/cgroup";
  static const std::vector<std::string>& controllers();  // cpu, cpuacct, cpuset, memory

  // "" when this machine can host a tree: root, and a v1 hierarchy for every
  // controller; otherwise why not (for a visible skip).
  static std::string unavailableReason();

  // Creates /sys/fs/cgroup/<controller>/koordlet-<tag>-<pid>-<random> and the
  // symlinks in linkDir (created if missing).
  CgroupV1Tree(const std::string& tag, const std::string& linkDir);
  ~CgroupV1Tree();
  CgroupV1Tree(const CgroupV1Tree&) = delete;
  CgroupV1Tree& operator=(const CgroupV1Tree&) = delete;

  const std::string& prefix() const { return prefix_; }
  // The directory to pass as --cgroup-root-dir.
  const std::string& linkDir() const { return linkDir_; }

  // Creates `dir` (relative to the private top, e.g. "kubepods/besteffort") and
  // its missing ancestors in every controller. cpuset directories get their
  // parent's cpuset.cpus and cpuset.mems, without which no task may join them.
  void mkdirs(const std::string& dir);

  // Removes `dir` (relative to the private top) and everything under it in every
  // controller, deepest first, tasks moved to the parent: a pod's cgroups going.
  void removeDirs(const std::string& dir);

  // The kernel's own path of `file` in `dir` under `controller`.
  std::string kernelPath(const std::string& controller, const std::string& dir,
                         const std::string& file) const;

  // Moves process `pid` into `dir` in every controller.
  void attach(pid_t pid, const std::string& dir) const;

  // SIGKILLs every process in the tree (a runtime, its shims and their containers)
  // until none is left or `limitMs` passes; returns how many were still there then.
  size_t killAll(int limitMs = 5000) const;

 private:
  void removeAll();
  // Removes `top` and everything under it, deepest first, tasks moved up.
  static void removeTree(const std::string& top);
  // Trees of this tag whose process is gone: a run killed by a timeout (SIGKILL
  // runs no destructor) is cleaned up by the next one.
  static void removeLeftovers(const std::string& tag);

  std::string prefix_;
  std::string linkDir_;
  std::vector<std::string> created_;  // top directories made, one per controller
};

}  // namespace koord::test
