// Listing the subdirectories of a directory, for the loop's hot path (the QoS
// snapshot lists the besteffort tier every round). Plain opendir/readdir with the
// entry type the kernel hands back: on cgroupfs (kernfs) every entry has a d_type,
// so files are skipped without a stat and without building a path per entry. A
// cgroup v2 dir holds 60-80 interface files beside its few child cgroups, so the
// per-entry cost of std::filesystem::directory_iterator (a path object each) was
// most of the listing (bench/RESULTS.md, issue 20).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace koord {

// The names of the subdirectories of `dir` (symlinks to directories count, as
// stat() sees them; "." and ".." do not), sorted. An error names `dir` and
// carries errno (ENOENT: no such dir yet).
Result<std::vector<std::string>> listSubdirs(const std::string& dir);

}  // namespace koord
