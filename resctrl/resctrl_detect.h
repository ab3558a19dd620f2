// resctrl_detect: is RDT usable on this host, and what does it offer? From
// <proc>/cpuinfo (cat_l3 and mba both needed, as koordlet) and the resctrl tree at
// <sys-fs-root>/resctrl; mounts the tree when it is absent only if allowMount
// (--resctrl-mount), through an injected Mounter so tests never mount.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "base/host_paths.h"
#include "base/result.h"
#include "resctrl/resctrl_info.h"

namespace koord::resctrl {

enum class ResctrlStatus {
  kReady,         // info read
  kNoCpuSupport,  // cpuinfo lacks cat_l3 or mba: permanent, never retried
  kNotMounted,    // no <sys-fs>/resctrl/schemata and mounting not allowed
  kMountFailed,   // mounting was allowed and failed
  kBadInfo,       // the tree is there but a file is malformed (message names it)
};

const char* statusName(ResctrlStatus status);  // "ready", "no-cpu-support", ...

// mount("resctrl", target, "resctrl", MS_RELATIME, nullptr).
using Mounter = std::function<Status(const std::string& target)>;
Mounter systemMounter();

struct Detection {
  ResctrlStatus status = ResctrlStatus::kNoCpuSupport;
  CpuRdtFlags flags;
  std::optional<ResctrlInfo> info;  // set when kReady
  std::string reason;               // for the one log line: names the file
};

// cpuinfo: the flags already parsed (read once at start by the caller), or nullopt to
// read <proc>/cpuinfo here.
Detection detectResctrl(const HostPaths& paths, bool allowMount, const Mounter& mounter,
                        std::optional<CpuRdtFlags> cpuinfo = std::nullopt);

}  // namespace koord::resctrl
