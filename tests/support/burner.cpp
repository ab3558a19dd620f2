#include "tests/support/burner.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace koord::test {
namespace {

int64_t monotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Closes every descriptor but stdio and `keep`: the child must not hold the
// parent's end of its own socket (it would never see EOF) nor other burners'.
void closeAllBut(int keep) {
  const unsigned fd = static_cast<unsigned>(keep);
  if (fd > 3) ::close_range(3, fd - 1, 0);
  ::close_range(fd + 1, ~0U, 0);
}

// Stores to it keep the spin loop from being optimised away.
volatile uint32_t gSink = 0;

// Spins until `fd` is readable (a command, or EOF when the parent is gone),
// checking a few times a millisecond.
void spinUntilReadable(int fd) {
  for (;;) {
    for (uint32_t i = 0; i < (1u << 18); ++i) gSink = i;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) != 0) return;
  }
}

[[noreturn]] void childMain(int fd) {
  closeAllBut(fd);
  char command = 0;
  for (;;) {
    if (::read(fd, &command, 1) != 1) ::_exit(0);  // EOF: the parent is gone
    const int64_t at = monotonicNs();
    if (::write(fd, &at, sizeof at) != static_cast<ssize_t>(sizeof at)) ::_exit(1);
    if (command == 'b') spinUntilReadable(fd);
  }
}

}  // namespace

Burner::Burner(const std::function<void(pid_t)>& place, bool busy) {
  // One stream socket both ways: commands down, answers up. A socket rather than
  // pipes so that a command sent to a child that died is an error (MSG_NOSIGNAL),
  // not a SIGPIPE that would end the test.
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  }
  pid_ = ::fork();
  if (pid_ == 0) childMain(fds[1]);
  const int err = errno;
  ::close(fds[1]);
  fd_ = fds[0];
  if (pid_ < 0) {
    stop();
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  try {
    place(pid_);
    setBusy(busy);
  } catch (...) {
    stop();  // no destructor runs for a constructor that throws
    throw;
  }
}

Burner::~Burner() { stop(); }

void Burner::stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::chrono::steady_clock::time_point Burner::setBusy(bool busy) {
  const char command = busy ? 'b' : 'i';
  if (::send(fd_, &command, 1, MSG_NOSIGNAL) != 1) {
    throw std::runtime_error("burner " + std::to_string(pid_) + ": command not sent");
  }
  pollfd p{fd_, POLLIN, 0};
  int64_t at = 0;
  if (::poll(&p, 1, 5000) != 1 || ::recv(fd_, &at, sizeof at, MSG_WAITALL) != sizeof at) {
    throw std::runtime_error("burner " + std::to_string(pid_) + ": no answer in 5 s");
  }
  busy_ = busy;
  // libstdc++'s steady_clock is CLOCK_MONOTONIC in nanoseconds.
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(at));
}

}  // namespace koord::test
