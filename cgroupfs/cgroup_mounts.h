// Where the cgroup hierarchies are mounted. In a DaemonSet the host's tree is at
// --cgroup-root-dir (/host-cgroup/) and its layout is known; on a host run without a
// root prefix the mounts can be anywhere (/sys/fs/cgroup on systemd hosts, /cgroup
// on some older distributions), and libcgroup, which parses the mount table the
// same way the cgroup tools do, answers that question.
#pragma once

#include <string>

#include "base/result.h"

namespace koord {

// The directory holding the controller mounts (v1: the parent of the cpu
// controller's mount point; v2: the unified mount point), found through libcgroup.
// Call it at start-up, before other threads run: the first call runs
// cgroup_init(), which parses the mount table into libcgroup's global cache and
// is not thread-safe; later calls reuse that cache (later mounts are not seen).
Result<std::string> findCgroupRootWithLibcgroup();

// The root the agent and its commands use: `configured` when it holds a hierarchy,
// else libcgroup's (a host run with the DaemonSet's default /host-cgroup/). `said`
// gets one line on what was chosen when it is not `configured`.
std::string effectiveCgroupRoot(const std::string& configured, std::string* said);

}  // namespace koord
