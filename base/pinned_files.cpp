#include "base/pinned_files.h"

#include "base/read_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace koord {

namespace {

// Filesystems whose files are generated on read, so a descriptor kept open reads
// the current text at offset 0 and cannot be replaced by another file.
bool regeneratesOnRead(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
      return true;
    default:
      return false;
  }
}

Error fileError(const std::string& path, const char* what, int err) {
  return makeError(path + ": " + what + std::strerror(err), err);
}

}  // namespace

PinnedFile::PinnedFile(PinnedFile&& o) noexcept
    : path_(std::move(o.path_)),
      budget_(o.budget_),
      fd_(o.fd_),
      regular_(o.regular_),
      oneShow_(o.oneShow_) {
  o.fd_ = -1;
}

PinnedFile& PinnedFile::operator=(PinnedFile&& o) noexcept {
  if (this != &o) {
    close();
    path_ = std::move(o.path_);
    budget_ = o.budget_;
    fd_ = o.fd_;
    regular_ = o.regular_;
    oneShow_ = o.oneShow_;
    o.fd_ = -1;
  }
  return *this;
}

void PinnedFile::close() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  budget_->give();
}

Result<std::string_view> PinnedFile::read(std::string& buf, size_t maxBytes) {
  for (int attempt = 0;; ++attempt) {
    if (fd_ < 0) {
      const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return fileError(path_, "", errno);
      regular_ = regular_ || !regeneratesOnRead(fd);
      if (!regular_ && budget_->take()) {
        fd_ = fd;
      } else {
        // A regular file, or no budget left: read it the plain way and let it go.
        auto text = readDescriptor(fd, false, oneShow_ && !regular_, path_, buf, maxBytes);
        ::close(fd);
        return text;
      }
    }
    auto text = readDescriptor(fd_, true, oneShow_, path_, buf, maxBytes);
    if (text) return text;
    // The descriptor is dead (ENODEV: its cgroup was removed) or failed: close it,
    // and after ENODEV open the path once more.
    close();
    if (attempt > 0 || text.error().sysErrno != ENODEV) return text;
  }
}

uint64_t raiseOpenFileLimit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    struct rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(rl.rlim_cur);
}

}  // namespace koord
