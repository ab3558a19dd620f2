// MemoryHog: a child process that holds anonymous memory, standing in for a
// container's workload on the real kernel: it is placed in its cgroups first, then
// touches every page of `bytes` (so the memory cgroup charges them as anon and the
// node's MemAvailable drops), answers, and holds them until it is killed or the
// parent goes away (its socket reaches EOF). Like Burner, the child only makes
// async-signal-safe calls (and mmap). The destructor kills and reaps it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>

namespace koord::test {

class MemoryHog {
 public:
  // Forks the child, calls place(pid) while it waits, then has it fault in `bytes`
  // and waits (up to 30 s, else throws) until every page is touched.
  MemoryHog(const std::function<void(pid_t)>& place, size_t bytes);
  ~MemoryHog();
  MemoryHog(const MemoryHog&) = delete;
  MemoryHog& operator=(const MemoryHog&) = delete;

  pid_t pid() const { return pid_; }
  // Kills the child: its memory goes back to the node (as a pod's would on eviction).
  void release();

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

}  // namespace koord::test
