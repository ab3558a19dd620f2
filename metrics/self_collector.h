// SelfCollector: the agent's own footprint (CPU seconds, RSS, virtual memory, open
// and maximum fds, threads, start time), read from <proc>/self at scrape time, as
// falcosecurity/libs and Go's process collector report theirs.
#pragma once

#include <optional>

#include "base/host_paths.h"
#include "base/result.h"

namespace koord {

struct SelfSample {
  double cpuSeconds = 0;
  double residentBytes = 0;
  double virtualBytes = 0;
  double threads = 0;
  double openFds = 0;
  double maxFds = 0;
  double startTimeSeconds = 0;  // unix time
};

class SelfCollector {
 public:
  // bootTimeSeconds: btime of /proc/stat, to turn the start tick count into unix time.
  SelfCollector(HostPaths paths, long ticksPerSecond, long pageSize, uint64_t bootTimeSeconds)
      : paths_(std::move(paths)),
        ticksPerSecond_(ticksPerSecond),
        pageSize_(pageSize),
        bootTimeSeconds_(bootTimeSeconds) {}

  Result<SelfSample> collect() const;

 private:
  HostPaths paths_;
  long ticksPerSecond_;
  long pageSize_;
  uint64_t bootTimeSeconds_;
};

// Entries in a directory other than "." and "..": the open fd count for <proc>/self/fd
// (from the directory's size where procfs gives it).
Result<size_t> countDirEntries(const std::string& dir);

}  // namespace koord
