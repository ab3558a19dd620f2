#include "metrics/self_collector.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <dirent.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "base/read_file.h"
#include "metrics/proc_parsers.h"

namespace koord {

Result<size_t> countDirEntries(const std::string& dir) {
  // procfs (Linux 6.2+) gives a /proc/<pid>/fd directory the open fd count as its
  // size: no listing of thousands of entries (the pod collector holds ~3 fds per
  // cgroup, and this runs on every scrape). Elsewhere, and on older kernels (size 0),
  // the entries are counted.
  struct statfs fs {};
  struct stat st {};
  if (::statfs(dir.c_str(), &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC &&
      ::stat(dir.c_str(), &st) == 0 && st.st_size > 0) {
    return static_cast<size_t>(st.st_size);
  }
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    int err = errno;
    return makeError(dir + ": " + std::strerror(err), err);
  }
  size_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  }
  ::closedir(d);
  return n;
}

Result<SelfSample> SelfCollector::collect() const {
  std::string statPath = paths_.proc("self/stat");
  auto text = readFile(statPath);
  if (!text) return text.error();
  auto stat = parsePidStat(*text);
  if (!stat) return inFile(statPath, stat.error());

  SelfSample s;
  double ticks = static_cast<double>(ticksPerSecond_);
  s.cpuSeconds = static_cast<double>(stat->utimeTicks + stat->stimeTicks) / ticks;
  s.residentBytes = static_cast<double>(stat->rssPages) * static_cast<double>(pageSize_);
  s.virtualBytes = static_cast<double>(stat->vsizeBytes);
  s.threads = static_cast<double>(stat->numThreads);
  s.startTimeSeconds =
      static_cast<double>(bootTimeSeconds_) + static_cast<double>(stat->startTimeTicks) / ticks;

  // The fd directory lists one entry per open fd; the count includes the one
  // opendir() itself holds, which is ours too.
  auto fds = countDirEntries(paths_.proc("self/fd"));
  if (!fds) return fds.error();
  s.openFds = static_cast<double>(*fds);

  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    s.maxFds = lim.rlim_cur == RLIM_INFINITY ? 0 : static_cast<double>(lim.rlim_cur);
  }
  return s;
}

}  // namespace koord
