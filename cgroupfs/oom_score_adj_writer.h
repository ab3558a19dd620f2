// The OOMScoreAdj hook's hot update (qos/oom_score_adj.h has the rule): the
// oom_score_adj of every process in one container's cgroup, written to
// <proc root>/<pid>/oom_score_adj. koordlet does the same from its reconciler.
//
// The agent's only writes outside cgroupfs for a container, so held tight: a pid
// comes only from that container's own cgroup.procs (a dir under kubepods, from the
// layout), read just before; a value outside [-1000, 1000] is refused before any
// file is touched; a process already at the value is left alone (no write); one
// whose file cannot be read or written (it exited meanwhile) is counted and skipped.
// The sandbox (pause) container is never asked for: its value is the runtime's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord {

// The pids of a cgroup.procs file, one decimal a line; an error names the file and line.
Result<std::vector<int>> parseProcs(std::string_view text, const std::string& file);

struct OomScoreAdjOutcome {
  size_t processes = 0;  // listed in cgroup.procs
  size_t updated = 0;    // written
  size_t unchanged = 0;  // already at the value
  size_t failed = 0;     // could not be read or written
  bool gone = false;     // no cgroup.procs: the container is not (or no longer) there
  std::string error;     // the first failure, or why nothing was done
};

OomScoreAdjOutcome applyOomScoreAdj(const std::string& procsPath, const std::string& procRoot,
                                    int64_t value);

}  // namespace koord
