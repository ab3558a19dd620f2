// cgroup version and driver detection and the kubelet's directory layout.
//
// Every path here is built from one injected cgroup root (--cgroup-root-dir)
// rather than asked of libcgroup (cgroup_mounts.h), which only knows the mount
// table of our own mount namespace: a DaemonSet sees the host's hierarchy at
// /host-cgroup/, which is a bind mount the table lists under another name, and
// test trees are plain directories it does not list at all. Plain paths under one
// root work the same on a host, in a pod and in a test.
#include "cgroupfs/layout.h"

#include <cerrno>
#include <filesystem>
#include <initializer_list>
#include <system_error>

#include "base/quote.h"

namespace koord {
namespace {

// Joins path parts with exactly one '/' between non-empty parts, keeping a
// leading '/' of the first part (an absolute root stays absolute).
std::string joinPath(std::initializer_list<std::string_view> parts) {
  // One allocation: paths here are 100-200 bytes, grown part by part they were four.
  size_t total = parts.size();
  for (std::string_view part : parts) total += part.size();
  std::string out;
  out.reserve(total);
  for (std::string_view part : parts) {
    const bool first = out.empty();
    if (!first) {
      while (!part.empty() && part.front() == '/') part.remove_prefix(1);
    }
    while (part.size() > 1 && part.back() == '/') part.remove_suffix(1);
    if (part.empty()) continue;
    if (!first && out.back() != '/') out.push_back('/');
    out.append(part);
  }
  return out;
}

std::string trimSlashes(std::string_view s) {
  while (!s.empty() && s.front() == '/') s.remove_prefix(1);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return std::string(s);
}

// Whether path is a directory (following symlinks: v1 "cpu" is usually a link
// to "cpu,cpuacct"). Not existing is "false"; other failures (EACCES) are errors.
Result<bool> isDirectory(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    return makeError(path + ": " + ec.message(), ec.value());
  }
  return !ec && std::filesystem::is_directory(status);
}

constexpr std::string_view kSystemdRoot = "kubepods.slice";
constexpr std::string_view kCgroupfsRoot = "kubepods";

}  // namespace

const char* toString(CgroupVersion v) {
  switch (v) {
    case CgroupVersion::kV1:
      return "v1";
    case CgroupVersion::kV2:
      return "v2";
  }
  return "unknown";
}

const char* toString(CgroupDriver d) {
  switch (d) {
    case CgroupDriver::kSystemd:
      return "systemd";
    case CgroupDriver::kCgroupfs:
      return "cgroupfs";
  }
  return "unknown";
}

// koordlet compares statfs(root).f_type with CGROUP2_SUPER_MAGIC. The root's
// cgroup.controllers gives the same answer on real hierarchies (it exists only
// in cgroup2) and also works on the tmpfs trees tests build.
Result<CgroupVersion> detectCgroupVersion(const std::string& cgroupRoot) {
  auto rootIsDir = isDirectory(cgroupRoot);
  if (!rootIsDir) return rootIsDir.error();
  if (!*rootIsDir) {
    return makeError("cgroup root " + cgroupRoot + ": not an existing directory", ENOENT);
  }
  std::error_code ec;
  const std::string controllers = joinPath({cgroupRoot, "cgroup.controllers"});
  const bool v2 = std::filesystem::is_regular_file(controllers, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return makeError(controllers + ": " + ec.message(), ec.value());
  }
  return v2 ? CgroupVersion::kV2 : CgroupVersion::kV1;
}

bool holdsCgroupHierarchy(const std::string& cgroupRoot) {
  auto version = detectCgroupVersion(cgroupRoot);
  if (!version) return false;
  if (*version == CgroupVersion::kV2) return true;
  auto cpu = isDirectory(joinPath({cgroupRoot, "cpu"}));
  return cpu && *cpu;
}

Result<CgroupDriver> detectCgroupDriver(const std::string& cgroupRoot, CgroupVersion version,
                                        std::string_view prefix) {
  const std::string base = version == CgroupVersion::kV1 ? joinPath({cgroupRoot, "cpu", prefix})
                                                         : joinPath({cgroupRoot, prefix});
  // systemd first, as koordlet: a node that switched drivers may keep both.
  const std::string systemdDir = joinPath({base, kSystemdRoot});
  auto systemd = isDirectory(systemdDir);
  if (!systemd) return systemd.error();
  if (*systemd) return CgroupDriver::kSystemd;
  const std::string cgroupfsDir = joinPath({base, kCgroupfsRoot});
  auto cgroupfs = isDirectory(cgroupfsDir);
  if (!cgroupfs) return cgroupfs.error();
  if (*cgroupfs) return CgroupDriver::kCgroupfs;
  return makeError("neither " + systemdDir + " (systemd driver) nor " + cgroupfsDir +
                       " (cgroupfs driver) exists: the kubelet has not created its cgroups (yet)",
                   ENOENT);
}

bool isSafePathComponent(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  // By hand: find_first_of calls memchr per byte for its set, and this runs for
  // every pod and container of every QoS round.
  for (const char c : name) {
    if (c == '/' || c == '\0') return false;
  }
  return true;
}

std::string CgroupLayout::kubeRootDir() const {
  return joinPath(
      {trimSlashes(prefix_), driver_ == CgroupDriver::kSystemd ? kSystemdRoot : kCgroupfsRoot});
}

std::string CgroupLayout::qosDir(KubeQos qos) const {
  const bool systemd = driver_ == CgroupDriver::kSystemd;
  switch (qos) {
    case KubeQos::kGuaranteed:
      break;
    case KubeQos::kBurstable:
      return joinPath({kubeRootDir(), systemd ? "kubepods-burstable.slice" : "burstable"});
    case KubeQos::kBestEffort:
      return joinPath({kubeRootDir(), systemd ? "kubepods-besteffort.slice" : "besteffort"});
  }
  return kubeRootDir();
}

std::string CgroupLayout::podDir(KubeQos qos, std::string_view podUid) const {
  if (driver_ == CgroupDriver::kCgroupfs)
    return joinPath({qosDir(qos), "pod" + std::string(podUid)});
  // systemd unit names cannot hold '-' inside a component: it is the slice
  // hierarchy separator, so the kubelet writes the UID with '_'.
  std::string uid(podUid);
  for (char& c : uid) {
    if (c == '-') c = '_';
  }
  std::string slice = "kubepods-";
  if (qos == KubeQos::kBurstable) slice += "burstable-";
  if (qos == KubeQos::kBestEffort) slice += "besteffort-";
  slice += "pod" + uid + ".slice";
  return joinPath({qosDir(qos), slice});
}

Result<std::string> CgroupLayout::containerDir(std::string_view podDir, std::string_view runtime,
                                               std::string_view containerId) const {
  // The systemd scope prefix of each runtime (koordlet's table, reference §2.5).
  std::string_view scopePrefix;
  if (runtime == "containerd") {
    scopePrefix = "cri-containerd-";
  } else if (runtime == "docker") {
    scopePrefix = "docker-";
  } else if (runtime == "cri-o") {
    scopePrefix = "crio-";
  } else if (runtime == "pouch") {
    scopePrefix = "pouch-";
  } else {
    return makeError("unknown container runtime " + quoteText(runtime, 40) +
                     " (known: containerd, docker, cri-o, pouch)");
  }
  if (!isSafePathComponent(containerId)) {
    return makeError("container id " + quoteText(containerId, 80) +
                     " is not a valid directory name");
  }
  if (driver_ == CgroupDriver::kCgroupfs) return joinPath({podDir, containerId});
  std::string scope(scopePrefix);
  scope.append(containerId);
  scope.append(".scope");
  return joinPath({podDir, scope});
}

std::string CgroupLayout::filePath(const std::string& cgroupRoot, std::string_view v1Subsystem,
                                   std::string_view dir, std::string_view file) const {
  if (version_ == CgroupVersion::kV1) return joinPath({cgroupRoot, v1Subsystem, dir, file});
  return joinPath({cgroupRoot, dir, file});
}

}  // namespace koord
