// HostAppCollector: the usage of host applications (processes outside Kubernetes
// the NodeSLO names, qos/host_apps.h) from their cgroups, each
// --collect-res-used-interval, as koordlet's host application collector
// (reference colocation.md §2.2):
//  - CPU cores from the cumulative usage (v1 cpuacct.usage ns, v2 cpu.stat
//    usage_usec) over the injected clock's elapsed time; the first read of an app
//    only stores its counter (no sample);
//  - memory without page cache from memory.stat (v1 total_inactive_anon +
//    total_active_anon + total_unevictable, v2 inactive_anon + active_anon +
//    unevictable), and with it from memory.usage_in_bytes / memory.current.
// Any of the three files unreadable skips the app this round (koordlet's rule). A
// missing cgroup is said once per streak by the caller (the errors name the file);
// an app's counter is dropped when the app leaves the list or its cgroup goes.
// The collector knows names and directories only; which apps, from the NodeSLO,
// is the caller's.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "cgroupfs/layout.h"

namespace koord {

struct HostAppTarget {
  std::string name;
  std::string dir;  // relative to each hierarchy's root (qos/host_apps.h)
};

struct HostAppUsage {
  std::string name;
  std::optional<double> cpuCores;  // from the second read on
  double memoryBytes = 0;
  double memoryWithPageCacheBytes = 0;
};

class HostAppCollector {
 public:
  HostAppCollector(std::string cgroupRoot, CgroupLayout layout)
      : root_(std::move(cgroupRoot)), layout_(std::move(layout)) {}

  struct Outcome {
    std::vector<HostAppUsage> apps;  // those read whole this round
    std::vector<Error> errors;       // one per app not read (the file and why)
  };
  Outcome collect(const std::vector<HostAppTarget>& targets, Clock::Monotonic now);

  // The cache's owner of an app's series.
  static std::string owner(const std::string& name) { return "hostapp/" + name; }
  size_t stateEntries() const { return last_.size(); }

 private:
  struct Last {
    std::string dir;
    uint64_t usageNs = 0;
    Clock::Monotonic at{};
  };
  std::string root_;
  CgroupLayout layout_;
  std::unordered_map<std::string, Last> last_;  // by name
  std::string buf_;
};

}  // namespace koord
