// HostPaths: the one set of host roots every reader and writer is built from.
// In a DaemonSet the host's trees are mounted under /host-*; on a host they are
// the real ones. Handed around by value; nothing below main() reads flags or env.
#pragma once

#include <string>
#include <string_view>

namespace koord {

struct HostPaths {
  std::string procRoot = "/proc/";
  std::string sysRoot = "/host-sys/";
  std::string sysFsRoot = "/host-sys-fs/";  // resctrl is <sysFsRoot>/resctrl
  std::string cgroupRoot = "/host-cgroup/";
  std::string varRunRoot = "/host-var-run/";
  std::string runRoot = "/host-run/";
  std::string varLibKubeletRoot = "/var/lib/kubelet/";

  // Joins a root and a relative path with exactly one '/' between them.
  static std::string join(std::string_view root, std::string_view rel) {
    std::string out(root);
    while (!out.empty() && out.back() == '/') out.pop_back();
    while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
    out.push_back('/');
    out.append(rel);
    return out;
  }

  std::string proc(std::string_view rel) const { return join(procRoot, rel); }
  std::string sys(std::string_view rel) const { return join(sysRoot, rel); }
  std::string sysFs(std::string_view rel) const { return join(sysFsRoot, rel); }
  std::string cgroup(std::string_view rel) const { return join(cgroupRoot, rel); }
  std::string varRun(std::string_view rel) const { return join(varRunRoot, rel); }
};

}  // namespace koord
