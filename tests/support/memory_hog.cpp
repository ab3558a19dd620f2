#include "tests/support/memory_hog.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace koord::test {
namespace {

[[noreturn]] void childMain(int fd, size_t bytes) {
  const unsigned keep = static_cast<unsigned>(fd);
  if (keep > 3) ::close_range(3, keep - 1, 0);
  ::close_range(keep + 1, ~0U, 0);
  char go = 0;
  if (::read(fd, &go, 1) != 1) ::_exit(0);  // the parent is gone before placing us
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) ::_exit(2);
  auto* bytesPtr = static_cast<volatile char*>(p);
  const long page = ::sysconf(_SC_PAGESIZE);
  // Distinct non-zero bytes: a zero page could be shared, and KSM could merge
  // identical ones; either would hide the charge.
  for (size_t off = 0; off < bytes; off += static_cast<size_t>(page)) {
    bytesPtr[off] = static_cast<char>(1 + (off / static_cast<size_t>(page)) % 251);
  }
  const char done = 'd';
  if (::write(fd, &done, 1) != 1) ::_exit(1);
  // Hold the memory until EOF (the parent closed its end or died).
  while (::read(fd, &go, 1) == 1) {
  }
  ::_exit(0);
}

}  // namespace

MemoryHog::MemoryHog(const std::function<void(pid_t)>& place, size_t bytes) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  }
  pid_ = ::fork();
  if (pid_ == 0) childMain(fds[1], bytes);
  const int err = errno;
  ::close(fds[1]);
  fd_ = fds[0];
  if (pid_ < 0) {
    release();
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  try {
    place(pid_);
    const char go = 'g';
    if (::send(fd_, &go, 1, MSG_NOSIGNAL) != 1) throw std::runtime_error("memory hog: not started");
    pollfd p{fd_, POLLIN, 0};
    char done = 0;
    if (::poll(&p, 1, 30000) != 1 || ::recv(fd_, &done, 1, 0) != 1 || done != 'd') {
      throw std::runtime_error("memory hog " + std::to_string(pid_) +
                               ": did not fault in its memory in 30 s");
    }
  } catch (...) {
    release();
    throw;
  }
}

MemoryHog::~MemoryHog() { release(); }

void MemoryHog::release() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace koord::test
