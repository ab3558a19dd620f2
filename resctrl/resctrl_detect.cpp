#include "resctrl/resctrl_detect.h"

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/read_file.h"
#include "base/text_scan.h"

namespace koord::resctrl {

const char* statusName(ResctrlStatus status) {
  switch (status) {
    case ResctrlStatus::kReady:
      return "ready";
    case ResctrlStatus::kNoCpuSupport:
      return "no-cpu-support";
    case ResctrlStatus::kNotMounted:
      return "not-mounted";
    case ResctrlStatus::kMountFailed:
      return "mount-failed";
    case ResctrlStatus::kBadInfo:
      return "bad-info";
  }
  return "unknown";
}

Mounter systemMounter() {
  return [](const std::string& target) -> Status {
    if (::mount("resctrl", target.c_str(), "resctrl", MS_RELATIME, nullptr) != 0) {
      const int err = errno;
      return makeError(text::cat("mount resctrl on ", target, ": ", std::strerror(err)), err);
    }
    return Ok{};
  };
}

namespace {

// True when `path` exists; an error other than ENOENT (EACCES on a locked-down host)
// counts as absent, and the caller's reason says which file it looked for.
bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec) && !ec;
}

}  // namespace

Detection detectResctrl(const HostPaths& paths, bool allowMount, const Mounter& mounter,
                        std::optional<CpuRdtFlags> cpuinfo) {
  Detection d;
  if (cpuinfo) {
    d.flags = *cpuinfo;
  } else {
    // An unreadable cpuinfo reports no support: /proc/cpuinfo failing to read is not a
    // state that a later round would see differently.
    const std::string cpuinfoPath = paths.proc("cpuinfo");
    auto text = readFile(cpuinfoPath);
    if (!text) {
      d.status = ResctrlStatus::kNoCpuSupport;
      d.reason = inFile(cpuinfoPath, text.error()).message;
      return d;
    }
    d.flags = parseCpuInfoRdt(*text);
  }
  if (!d.flags.supported()) {
    d.status = ResctrlStatus::kNoCpuSupport;
    d.reason = text::cat(paths.proc("cpuinfo"), ": flags lack ", d.flags.catL3 ? "" : "cat_l3",
                         !d.flags.catL3 && !d.flags.mba ? " and " : "", d.flags.mba ? "" : "mba",
                         " (koordlet needs both L3 CAT and MBA)");
    return d;
  }

  // The root schemata exists exactly when the resctrl filesystem is mounted there.
  const std::string target = paths.sysFs("resctrl");
  const std::string schemata = paths.sysFs("resctrl/schemata");
  if (!exists(schemata)) {
    if (!allowMount) {
      d.status = ResctrlStatus::kNotMounted;
      d.reason =
          text::cat(schemata, " is missing: resctrl is not mounted (--resctrl-mount is off)");
      return d;
    }
    // The kernel creates the mountpoint itself when built with resctrl support; its
    // absence means the kernel cannot mount it, and we do not invent one.
    if (!exists(target)) {
      d.status = ResctrlStatus::kMountFailed;
      d.reason = text::cat(
          target, " does not exist (kernel without CONFIG_X86_CPU_RESCTRL?): not mounting");
      return d;
    }
    if (Status st = mounter(target); !st) {
      d.status = ResctrlStatus::kMountFailed;
      d.reason = st.error().message;
      return d;
    }
    if (!exists(schemata)) {
      d.status = ResctrlStatus::kMountFailed;
      d.reason = text::cat("mounted resctrl on ", target, " but ", schemata, " is missing");
      return d;
    }
  }

  auto info = readResctrlInfo(paths);
  if (!info) {
    d.status = ResctrlStatus::kBadInfo;
    d.reason = info.error().message;
    return d;
  }
  d.status = ResctrlStatus::kReady;
  d.info = std::move(*info);
  return d;
}

}  // namespace koord::resctrl
