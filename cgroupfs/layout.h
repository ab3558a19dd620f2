// cgroup layout: which cgroup version and kubelet driver this node uses, and the
// directory of every kube QoS class, pod and container under the cgroup root,
// exactly as koordlet computes them (reference koordlet.md §2.4, §2.5).
//
// Paths are relative to --cgroup-root-dir: on v1 "<subsystem>/<dir>", on v2
// "<dir>". A layout may carry a prefix above the kubepods root, so integration
// tests can build a private kubepods tree inside the real hierarchy.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "kube/qos_class.h"

namespace koord {

enum class CgroupVersion { kV1, kV2 };
enum class CgroupDriver { kSystemd, kCgroupfs };

const char* toString(CgroupVersion v);
const char* toString(CgroupDriver d);

// v2 when <cgroupRoot>/cgroup.controllers exists (the unified hierarchy's root
// file; a v1 or hybrid /sys/fs/cgroup is a tmpfs of controller mounts without it).
Result<CgroupVersion> detectCgroupVersion(const std::string& cgroupRoot);

// Whether cgroupRoot holds a cgroup hierarchy at all: the unified root's
// cgroup.controllers (v2) or a cpu controller directory (v1). When it holds neither,
// the agent asks libcgroup where the mounts are (cgroup_mounts.h).
bool holdsCgroupHierarchy(const std::string& cgroupRoot);

// systemd when the kubepods root is "kubepods.slice", cgroupfs when "kubepods",
// probed under the cpu hierarchy (v1 <root>/cpu/, v2 <root>/) with prefix.
// Neither present is an error: the kubelet has not created its tree (yet).
Result<CgroupDriver> detectCgroupDriver(const std::string& cgroupRoot, CgroupVersion version,
                                        std::string_view prefix = "");

// Whether name can be one path component under the cgroup root: non-empty, no
// '/' or NUL, not "." or "..". Pod UIDs and container ids come from the kubelet;
// this keeps a hostile one from naming a cgroup outside the pod's directory.
bool isSafePathComponent(std::string_view name);

class CgroupLayout {
 public:
  CgroupLayout(CgroupVersion version, CgroupDriver driver, std::string prefix = "")
      : version_(version), driver_(driver), prefix_(std::move(prefix)) {}

  CgroupVersion version() const { return version_; }
  CgroupDriver driver() const { return driver_; }

  // Directories relative to the hierarchy root (no subsystem, no leading '/').
  std::string kubeRootDir() const;  // = Guaranteed QoS dir
  std::string qosDir(KubeQos qos) const;
  // podUid must pass isSafePathComponent (the caller checks; this cannot fail).
  std::string podDir(KubeQos qos, std::string_view podUid) const;
  // An unknown runtime is an error (koordlet: "unknown container protocol"), and
  // so is a containerId that fails isSafePathComponent.
  Result<std::string> containerDir(std::string_view podDir, std::string_view runtime,
                                   std::string_view containerId) const;

  // The full path of a file in a directory: v1 <root>/<subsystem>/<dir>/<file>,
  // v2 <root>/<dir>/<file>.
  std::string filePath(const std::string& cgroupRoot, std::string_view v1Subsystem,
                       std::string_view dir, std::string_view file) const;

 private:
  CgroupVersion version_;
  CgroupDriver driver_;
  std::string prefix_;
};

}  // namespace koord
