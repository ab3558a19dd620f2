#include "base/pinned_files.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

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

Error readError(const std::string& path, const char* what, int err) {
  return makeError(path + ": " + what + std::strerror(err), err);
}

}  // namespace

PinnedFiles::~PinnedFiles() {
  for (auto& [path, e] : files_) ::close(e.fd);
}

Result<std::string_view> PinnedFiles::readPlain(const std::string& path, size_t maxBytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return readError(path, "", errno);
  size_t len = 0;
  for (;;) {
    if (buf_.size() - len < 4096) buf_.resize(std::max<size_t>(buf_.size() * 2, 16384));
    const ssize_t n = ::read(fd, buf_.data() + len, buf_.size() - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return readError(path, "read: ", err);
    }
    if (n == 0) break;
    len += static_cast<size_t>(n);
    if (len > maxBytes) {
      ::close(fd);
      return makeError(path + ": larger than " + std::to_string(maxBytes) + " bytes, not read",
                       EFBIG);
    }
  }
  ::close(fd);
  return std::string_view(buf_.data(), len);
}

Result<std::string_view> PinnedFiles::read(const std::string& path, size_t maxBytes) {
  for (int attempt = 0;; ++attempt) {
    auto it = files_.find(path);
    if (it == files_.end()) {
      if (files_.size() >= maxOpen_) return readPlain(path, maxBytes);
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return readError(path, "", errno);
      if (!regeneratesOnRead(fd)) {
        ::close(fd);
        return readPlain(path, maxBytes);
      }
      it = files_.emplace(path, Entry{fd, round_}).first;
    }
    Entry& e = it->second;
    e.round = round_;
    auto text = readAt(e.fd, path, maxBytes);
    if (text) return text;
    // The descriptor is dead (ENODEV: its cgroup was removed) or failed: close it. A cgroup made
    // again under the same name is read through a fresh open, once; a removed one answers ENOENT
    // there.
    ::close(e.fd);
    files_.erase(it);
    if (attempt > 0 || text.error().sysErrno != ENODEV) return text;
  }
}

Result<std::string_view> PinnedFiles::readAt(int fd, const std::string& path, size_t maxBytes) {
  // From offset 0 the kernel generates the text afresh. A seq_file hands out at most
  // its internal buffer per read (a page, or one record), so a short read is not the
  // end: read on at the offset reached until a read returns nothing.
  size_t len = 0;
  for (;;) {
    if (buf_.size() - len < 4096) buf_.resize(std::max<size_t>(buf_.size() * 2, 16384));
    const ssize_t n = ::pread(fd, buf_.data() + len, buf_.size() - len, static_cast<off_t>(len));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return readError(path, "read: ", errno);
    if (n == 0) break;
    len += static_cast<size_t>(n);
    if (len > maxBytes) {
      return makeError(path + ": larger than " + std::to_string(maxBytes) + " bytes, not read",
                       EFBIG);
    }
  }
  return std::string_view(buf_.data(), len);
}

void PinnedFiles::sweep() {
  std::erase_if(files_, [this](auto& kv) {
    if (kv.second.round == round_) return false;
    ::close(kv.second.fd);
    return true;
  });
  ++round_;
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
