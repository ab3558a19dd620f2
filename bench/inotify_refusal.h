// fs.inotify.max_user_instances held at 0 while an agent starts, so its pod cgroup
// wake-up is refused and falls back to polling (the benchmarks' "inotify refused"
// runs, as e2e-agent-wake's test): refuse() before the agent starts, restore() once
// it has said so, and on any exit path that can (the benchmarks call it before
// std::exit). Root only. Benchmark code.
#pragma once

#include <fstream>
#include <string>

namespace koord::bench {

class InotifyRefusal {
 public:
  static constexpr const char* kSysctl = "/proc/sys/fs/inotify/max_user_instances";
  void refuse() {
    std::ifstream(kSysctl) >> old_;
    std::ofstream(kSysctl) << "0";
  }
  void restore() {
    if (old_.empty()) return;
    std::ofstream(kSysctl) << old_;
    old_.clear();
  }
  ~InotifyRefusal() { restore(); }

 private:
  std::string old_;  // the host's limit while refused
};

}  // namespace koord::bench
