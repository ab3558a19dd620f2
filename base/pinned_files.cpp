#include "base/pinned_files.h"

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

// Reads fd from offset 0 to the end into buf. A seq_file hands out at most its
// internal buffer per read (a page, or one record), so a short read is not the
// end: read on at the offset reached until a read returns nothing; unless
// `shortIsEnd` (a kernel file made by one show, pinned_files.h), where it is.
// `positional` uses pread (a held descriptor, regenerated from 0); otherwise read().
Result<std::string_view> readAll(int fd, bool positional, bool shortIsEnd, const std::string& path,
                                 std::string& buf, size_t maxBytes) {
  size_t len = 0;
  for (;;) {
    if (buf.size() - len < 4096) buf.resize(std::max<size_t>(buf.size() * 2, 16384));
    const size_t asked = buf.size() - len;
    const ssize_t n = positional ? ::pread(fd, buf.data() + len, asked, static_cast<off_t>(len))
                                 : ::read(fd, buf.data() + len, asked);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fileError(path, "read: ", errno);
    if (n == 0) break;
    len += static_cast<size_t>(n);
    if (len > maxBytes) {
      return makeError(path + ": larger than " + std::to_string(maxBytes) + " bytes, not read",
                       EFBIG);
    }
    if (shortIsEnd && static_cast<size_t>(n) < asked) break;
  }
  return std::string_view(buf.data(), len);
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
        auto text = readAll(fd, false, oneShow_ && !regular_, path_, buf, maxBytes);
        ::close(fd);
        return text;
      }
    }
    auto text = readAll(fd_, true, oneShow_, path_, buf, maxBytes);
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
