// Burner: a child process that keeps one CPU busy, or sleeps, as the test says,
// standing in for a container's workload on the real kernel. It is placed in its
// cgroups before it runs its first instruction of work, and each switch returns
// the moment (CLOCK_MONOTONIC, as steady_clock) the child itself saw the command,
// so a latency measured from it starts at the real load step, not at the parent's
// write.
//
// The child is forked from a process that may have threads, so it only makes
// async-signal-safe calls (read, write, poll, clock_gettime, _exit). It exits on
// its own when the parent goes away (its socket reaches EOF), so even a
// SIGKILLed test leaves no burner spinning; the destructor kills and reaps it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>

namespace koord::test {

class Burner {
 public:
  // Forks the child, calls place(pid) (e.g. CgroupV1Tree::attach) while the child
  // waits, then starts it busy or idle. Throws std::runtime_error if the child
  // cannot be started or does not answer; a throwing place() kills it.
  Burner(const std::function<void(pid_t)>& place, bool busy);
  ~Burner();
  Burner(const Burner&) = delete;
  Burner& operator=(const Burner&) = delete;

  pid_t pid() const { return pid_; }
  bool busy() const { return busy_; }

  // Switches the child and waits (up to 5 s, else throws) for its answer: the
  // time it started spinning or went to sleep.
  std::chrono::steady_clock::time_point setBusy(bool busy);

 private:
  void stop();

  pid_t pid_ = -1;
  int fd_ = -1;  // our end: 'b' (busy) or 'i' (idle) down, the child's CLOCK_MONOTONIC ns up
  bool busy_ = false;
};

}  // namespace koord::test
