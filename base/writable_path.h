// Whether the agent can write where it will write, asked once at start so that a
// pod whose mounts or security context forbid a writer says which, and why, before
// the first write would fail (chart README "Privileges"; issue 45).
//   - probeWritableDir: a file created (O_EXCL) and removed in the dir itself: what
//     a read-only mount, a missing dir, a full disk or a denying LSM would refuse;
//   - readOnlyMount: the mount holding a path is read-only (statvfs ST_RDONLY): for
//     trees where a probe file cannot be made (cgroupfs, /proc/sys).
#pragma once

#include <string>

#include "base/result.h"

namespace koord {

// Ok when a file can be created in `dir`; else the error names the dir and errno.
Status probeWritableDir(const std::string& dir);

// True when the filesystem holding `path` is mounted read-only; an error when the
// path cannot be looked at (ENOENT: absent).
Result<bool> readOnlyMount(const std::string& path);

}  // namespace koord
