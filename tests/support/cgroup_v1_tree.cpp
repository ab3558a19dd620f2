#include "tests/support/cgroup_v1_tree.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "tests/support/agent_process.h"

namespace koord::test {
namespace {

namespace fs = std::filesystem;

// One write(2) of the whole value, as the kernel wants for cgroup files (a
// buffered stream may split it). Returns errno, 0 on success.
int writeCgroupFile(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = n == static_cast<ssize_t>(value.size()) ? 0 : (n < 0 ? errno : EIO);
  ::close(fd);
  return err;
}

void mustWrite(const std::string& path, const std::string& value) {
  if (const int err = writeCgroupFile(path, value); err != 0) {
    throw std::runtime_error("write '" + value + "' to " + path + ": " + std::strerror(err));
  }
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

const std::vector<std::string>& CgroupV1Tree::controllers() {
  static const std::vector<std::string> kControllers = {"cpu", "cpuacct", "cpuset", "memory"};
  return kControllers;
}

std::string CgroupV1Tree::unavailableReason() {
  if (::geteuid() != 0) return std::string("needs root to create cgroups under ") + kRoot;
  std::error_code ec;
  if (fs::exists(std::string(kRoot) + "/cgroup.controllers", ec)) {
    return std::string(kRoot) + " is a cgroup v2 hierarchy; this needs cgroup v1 controllers";
  }
  for (const std::string& c : controllers()) {
    if (!fs::exists(std::string(kRoot) + "/" + c + "/cgroup.procs", ec)) {
      return "no cgroup v1 " + c + " controller at " + kRoot + "/" + c;
    }
  }
  if (!fs::exists(std::string(kRoot) + "/cpu/cpu.cfs_quota_us", ec)) {
    return std::string("no cpu.cfs_quota_us under ") + kRoot + "/cpu: kernel without CFS bandwidth";
  }
  return "";
}

CgroupV1Tree::CgroupV1Tree(const std::string& tag, const std::string& linkDir) : linkDir_(linkDir) {
  removeLeftovers(tag);
  std::random_device rd;
  prefix_ =
      "koordlet-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd() % 100000);
  try {
    fs::create_directories(linkDir_);
    for (const std::string& c : controllers()) {
      const fs::path top = fs::path(kRoot) / c / prefix_;
      fs::create_directory(top);
      created_.push_back(top.string());
      fs::create_symlink(top, fs::path(linkDir_) / c);
    }
    mkdirs("");  // the top's cpuset files
  } catch (...) {
    removeAll();  // no destructor runs for a constructor that throws
    throw;
  }
}

CgroupV1Tree::~CgroupV1Tree() { removeAll(); }

void CgroupV1Tree::removeAll() {
  for (const std::string& top : created_) removeTree(top);
  created_.clear();
  // A runtime in the tree (runc under containerd) makes the pods' directories in every
  // hierarchy (devices, freezer, pids, blkio, name=systemd...), not only in ours.
  if (prefix_.empty()) return;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kRoot, ec)) {
    const fs::path top = entry.path() / prefix_;
    if (!entry.is_symlink(ec) && fs::is_directory(top, ec)) removeTree(top.string());
  }
}

void CgroupV1Tree::removeTree(const std::string& top) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(top, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) dirs.push_back(it->path());
  }
  // Deepest first, the top last.
  std::sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) {
    return std::distance(a.begin(), a.end()) > std::distance(b.begin(), b.end());
  });
  dirs.emplace_back(top);
  for (const fs::path& dir : dirs) {
    std::istringstream procs(readTextFile((dir / "cgroup.procs").string()));
    const std::string parentProcs = (dir.parent_path() / "cgroup.procs").string();
    for (std::string pid; procs >> pid;) writeCgroupFile(parentProcs, pid);
    ::rmdir(dir.c_str());
  }
}

void CgroupV1Tree::removeLeftovers(const std::string& tag) {
  const std::string start = "koordlet-" + tag + "-";
  std::error_code ec;
  for (const auto& hierarchy : fs::directory_iterator(kRoot, ec)) {  // every one: see removeAll
    if (hierarchy.is_symlink(ec) || !hierarchy.is_directory(ec)) continue;
    for (const auto& entry : fs::directory_iterator(hierarchy.path(), ec)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with(start)) continue;
      const std::string pid =
          name.substr(start.size(), name.find('-', start.size()) - start.size());
      if (pid.empty() || fs::exists("/proc/" + pid, ec)) continue;  // its owner still runs
      removeTree(entry.path().string());
    }
  }
}

void CgroupV1Tree::removeDirs(const std::string& dir) {
  for (const std::string& c : controllers()) {
    const fs::path path = fs::path(kRoot) / c / prefix_ / dir;
    std::error_code ec;
    if (fs::exists(path, ec)) removeTree(path.string());
  }
}

void CgroupV1Tree::mkdirs(const std::string& dir) {
  for (const std::string& c : controllers()) {
    fs::path path = fs::path(kRoot) / c / prefix_;
    std::istringstream parts(dir);
    // Walk down one component at a time: each new cpuset needs its parent's
    // cpus and mems before it can have children with tasks.
    std::vector<fs::path> chain{path};
    for (std::string part; std::getline(parts, part, '/');) {
      if (part.empty()) continue;
      path /= part;
      chain.push_back(path);
    }
    for (const fs::path& p : chain) {
      fs::create_directories(p);
      if (c != "cpuset") continue;
      for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
        const std::string mine = trimmed(readTextFile((p / file).string()));
        if (!mine.empty()) continue;
        mustWrite((p / file).string(), trimmed(readTextFile((p.parent_path() / file).string())));
      }
    }
  }
}

std::string CgroupV1Tree::kernelPath(const std::string& controller, const std::string& dir,
                                     const std::string& file) const {
  return (fs::path(kRoot) / controller / prefix_ / dir / file).string();
}

void CgroupV1Tree::attach(pid_t pid, const std::string& dir) const {
  for (const std::string& c : controllers()) {
    mustWrite(kernelPath(c, dir, "cgroup.procs"), std::to_string(pid));
  }
}

size_t CgroupV1Tree::killAll(int limitMs) const {
  const fs::path top = fs::path(kRoot) / "cpu" / prefix_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(limitMs);
  for (;;) {
    std::vector<std::string> pids;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(top, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename() != "cgroup.procs") continue;
      std::istringstream procs(readTextFile(it->path().string()));
      for (std::string pid; procs >> pid;) pids.push_back(pid);
    }
    if (pids.empty() || std::chrono::steady_clock::now() >= deadline) return pids.size();
    for (const std::string& pid : pids) ::kill(std::stoi(pid), SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace koord::test
