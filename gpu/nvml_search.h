// Where the driver's NVML library is in the agent's container when the loader does
// not find it by name. The NVIDIA container toolkit puts it in one of two ways:
//   - its legacy hook (nvidia-container-cli) into the container's own library dir
//     (/usr/lib/x86_64-linux-gnu in this Debian image) with the libnvidia-ml.so.1
//     link and a refreshed ld.so.cache: found by name;
//   - CDI (containerd's own, or the toolkit's runtime in cdi mode) at the host's
//     path (/usr/lib64 on RPM hosts, /usr/lib/x86_64-linux-gnu on Debian ones), with
//     the link made by its create-symlinks hook; the cache update needs an ldconfig
//     this image does not carry, so a dir outside the loader's defaults is searched.
// And where no toolkit serves the pod: GKE's driver installer at /usr/local/nvidia,
// the GPU operator's driver container at <run-root>/nvidia/driver (the host's /run,
// mounted read-only at /host-run/ by both charts).
// Parsing apart from I/O: the search order is a pure function; the look is one
// listing per dir, at start only.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace koord {

// The dirs searched, in order, for a machine of this architecture ("x86_64",
// "aarch64"); runRoot is the host's /run as the agent sees it.
std::vector<std::string> nvmlSearchDirs(const std::string& runRoot, const std::string& arch);

// Of the file names in one dir, the NVML libraries to try, in order:
// libnvidia-ml.so.1 when there, then the versioned libnvidia-ml.so.<major>.<minor>...
// files, highest first (CDI mounts the versioned file; its link may be missing or
// dangling). Empty when none.
std::vector<std::string> pickNvmlFiles(const std::vector<std::string>& names);

// Every library found searching `dirs` with `list` (a dir's file names; empty when
// it does not exist), as paths, dir by dir in the search's order: the caller loads
// the first that loads.
std::vector<std::string> findNvml(
    const std::vector<std::string>& dirs,
    const std::function<std::vector<std::string>(const std::string&)>& list);

// The names in a dir (files and links; nothing when it cannot be read).
std::vector<std::string> listDirNames(const std::string& dir);

}  // namespace koord
