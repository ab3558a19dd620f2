// Host applications: processes outside Kubernetes (the node's own daemons, an
// out-of-band database) that the NodeSLO names in spec.hostApplications, each with
// a priority class, a QoS class and the cgroup it runs in (reference colocation.md
// §2). koordlet reports their usage in NodeMetric (koord-manager subtracts it from
// what batch and mid resources may take) and applies two knobs to them.
//
// Parsing decisions: the list is validated entry by entry; a bad entry is named
// in the spec's notes ("spec.hostApplications[2] (name \"db\"): qos: ...") and
// skipped, the others kept (koordlet's API server would refuse the whole object;
// a host app list edited on one node should not stop the others being reported).
// Refused: a missing or duplicate name, a name or path part that is not a plain
// path component ("", ".", "..", '/', NUL) in name, a parentDir or relativePath
// that climbs ("..") or is absolute, a cgroupPath that names its base itself (the
// cgroup root or a kubepods dir: every pod's usage, and no app's), a priority or QoS that is not
// one of koordinator's, a field of the wrong type. An unknown cgroupPath.base reads as CgroupRoot,
// as koordlet's switch does (with a note). `strategy` is an empty placeholder in every koordinator
// version: ignored.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cgroupfs/layout.h"
#include "kube/qos_class.h"

namespace koord {

enum class HostAppBase { kCgroupRoot, kKubepods, kKubepodsBurstable, kKubepodsBesteffort };

struct HostApplication {
  std::string name;
  PriorityClass priority = PriorityClass::kNone;
  std::string priorityText;  // as given ("" when absent), for NodeMetric and metrics
  KoordQos qos = KoordQos::kNone;
  std::string qosText;
  bool hasCgroupPath = false;
  HostAppBase base = HostAppBase::kCgroupRoot;
  std::string parentDir;
  std::string relativePath;
  bool operator==(const HostApplication&) const = default;
};

// spec.hostApplications (null/absent: none). Problems are appended to `notes`.
std::vector<HostApplication> parseHostApplications(const nlohmann::json& list,
                                                   std::vector<std::string>& notes);

// The app's cgroup directory relative to each hierarchy's root (v1: every
// subsystem; v2: the unified root), koordlet's rules: without cgroupPath, LSE/LSR/LS
// under host-latency-sensitive/<name>, BE under host-best-effort/<name>, others
// <name>; with it, base/parentDir/relativePath (the name not appended), base
// Kubepods* being the layout's kubepods, burstable and besteffort dirs. "" when that
// dir would be the cgroup root, a kube-QoS dir or above the kubepods root (every
// pod's cgroup, not an app's): callers read and write nothing for it.
std::string hostAppCgroupDir(const HostApplication& app, const CgroupLayout& layout);

}  // namespace koord
