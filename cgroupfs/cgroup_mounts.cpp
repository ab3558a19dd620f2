#include "cgroupfs/cgroup_mounts.h"

#include "cgroupfs/layout.h"

#include <libcgroup.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string_view>

namespace koord {
namespace {

// cgroup_init() reads /proc/cgroups and the mount table into libcgroup's global
// cache, and it is not safe against concurrent calls or against other libcgroup
// calls running meanwhile. It runs once per process, at the first call here
// (start-up, before any other thread uses libcgroup): the function-local static
// makes that one call thread-safe. Its answer is never refreshed, so mounts made
// later are not seen, which is fine for a root chosen once at start-up.
int initLibcgroupOnce() {
  static const int result = [] {
    // Our error carries the cause; libcgroup's default logger would also print
    // it to stdout, which belongs to the agent's log.
    cgroup_set_logger(nullptr, -1, nullptr);
    return cgroup_init();
  }();
  return result;
}

std::string libcgroupError(std::string_view what, int code) {
  std::string out = "libcgroup: ";
  out.append(what);
  out.append(": ");
  out.append(cgroup_strerror(code));
  return out;
}

// On cgroup v2, libcgroup 2.0 lists each controller of the unified root's
// cgroup.controllers with the unified mount point as its path. The cpu
// controller is there on every v2 kernel built with it; if it is missing
// (cgroup_disable=cpu), any controller mounted on a cgroup2 root gives the same
// unified mount, which holds cgroup.controllers.
std::string findUnifiedMount() {
  void* handle = nullptr;
  cgroup_mount_point info{};
  std::string found;
  for (int rc = cgroup_get_controller_begin(&handle, &info); rc == 0;
       rc = cgroup_get_controller_next(&handle, &info)) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(std::filesystem::path(info.path) / "cgroup.controllers",
                                         ec)) {
      found = info.path;
      break;
    }
  }
  if (handle != nullptr) cgroup_get_controller_end(&handle);
  return found;
}

}  // namespace

Result<std::string> findCgroupRootWithLibcgroup() {
  if (const int rc = initLibcgroupOnce(); rc != 0) return makeError(libcgroupError("init", rc));

  char* raw = nullptr;
  const int rc = cgroup_get_subsys_mount_point("cpu", &raw);
  std::unique_ptr<char, decltype(&std::free)> mount(raw, &std::free);
  if (rc != 0 || mount == nullptr) {
    std::string unified = findUnifiedMount();
    if (!unified.empty()) return unified;
    return makeError(libcgroupError("mount point of the cpu controller", rc != 0 ? rc : ECGFAIL));
  }
  std::filesystem::path path(mount.get());
  // "/sys/fs/cgroup/cpu/" would give the wrong parent.
  while (path.has_relative_path() && !path.has_filename()) path = path.parent_path();
  std::error_code ec;
  // cgroup v2: cpu sits on the unified mount, which is the root itself.
  if (std::filesystem::is_regular_file(path / "cgroup.controllers", ec)) return path.string();
  // cgroup v1: /sys/fs/cgroup/cpu (or .../cpu,cpuacct) -> /sys/fs/cgroup.
  return path.parent_path().string();
}

std::string effectiveCgroupRoot(const std::string& configured, std::string* said) {
  if (holdsCgroupHierarchy(configured)) return configured;
  auto found = findCgroupRootWithLibcgroup();
  if (!found) {
    *said = "no cgroup hierarchy under " + configured +
            " and libcgroup found none: " + found.error().message;
    return configured;
  }
  *said = "no cgroup hierarchy under " + configured + "; libcgroup found it at " + *found;
  return *found;
}

}  // namespace koord
