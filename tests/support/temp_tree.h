// TempTree: a throw-away directory tree built from (relative path, content) pairs,
// removed when the test ends. Used to stand in for /proc, /sys or a cgroup root.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/host_paths.h"

namespace koord::test {

class TempTree {
 public:
  TempTree(std::initializer_list<std::pair<std::string, std::string>> files = {}) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "koordlet-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
    for (const auto& [rel, content] : files) write(rel, content);
  }
  ~TempTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  void write(const std::string& rel, const std::string& content) const {
    auto path = root_ / rel;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  }
  void remove(const std::string& rel) const { std::filesystem::remove_all(root_ / rel); }
  std::string path(const std::string& rel = "") const { return (root_ / rel).string(); }

 private:
  std::filesystem::path root_;
};

// Reads a fixture from tests/fixtures (KOORDLET_FIXTURES, set by tests/meson.build).
inline std::string fixturePath(const std::string& rel) {
  const char* dir = std::getenv("KOORDLET_FIXTURES");
  if (dir == nullptr) throw std::runtime_error("KOORDLET_FIXTURES is not set");
  return std::string(dir) + "/" + rel;
}

// The host roots of a sysfs capture under tests/fixtures/sysfs/<name>: its tree as the
// sys root, its proc/ (cpuinfo, when captured) as the proc root, and no resctrl.
inline HostPaths sysfsCapture(const std::string& name) {
  HostPaths paths;
  paths.sysRoot = fixturePath("sysfs/" + name);
  paths.procRoot = paths.sysRoot + "/proc";
  paths.sysFsRoot = paths.sysRoot + "/no-such-dir";
  return paths;
}

}  // namespace koord::test
