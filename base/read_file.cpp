#include "base/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace koord {

Status readFileInto(const std::string& path, std::string& out, size_t maxBytes) {
  out.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return makeError(path + ": " + std::strerror(err), err);
  }
  size_t len = 0;
  for (;;) {
    // Read into the string itself, in at least 4 KiB steps, up to one past the cap
    // (so a file of exactly maxBytes is not refused).
    if (out.size() - len < 4096) out.resize(std::max(out.capacity(), len + 4096));
    const size_t room = std::min(out.size() - len, maxBytes + 1 - len);
    const ssize_t n = ::read(fd, out.data() + len, room);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      out.clear();
      return makeError(path + ": read: " + std::strerror(err), err);
    }
    if (n == 0) break;
    len += static_cast<size_t>(n);
    if (len > maxBytes) {
      ::close(fd);
      out.clear();
      return makeError(path + ": larger than " + std::to_string(maxBytes) + " bytes, not read",
                       EFBIG);
    }
  }
  ::close(fd);
  out.resize(len);
  return Ok{};
}

Result<std::string> readFile(const std::string& path, size_t maxBytes) {
  // Through a stack buffer, so the string returned is no larger than the text (the
  // caller may keep it); readFileInto is for a buffer kept and reused.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return makeError(path + ": " + std::strerror(err), err);
  }
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return makeError(path + ": read: " + std::strerror(err), err);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > maxBytes) {
      ::close(fd);
      return makeError(path + ": larger than " + std::to_string(maxBytes) + " bytes, not read",
                       EFBIG);
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Status replaceFile(const std::string& path, std::string_view content, mode_t mode) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    return makeError(tmp + ": " + std::strerror(err), err);
  }
  std::string failed;  // the step that failed, "" when none did
  int err = 0;
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      failed = "write";
      break;
    }
    done += static_cast<size_t>(n);
  }
  // fsync before rename: on a disk-backed directory the rename must not land before
  // the data (on tmpfs it is free).
  if (failed.empty() && ::fsync(fd) != 0) {
    err = errno;
    failed = "fsync";
  }
  ::close(fd);
  if (failed.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    failed = "rename to " + path;
  }
  if (!failed.empty()) {
    ::unlink(tmp.c_str());
    return makeError(tmp + ": " + failed + ": " + std::strerror(err), err);
  }
  return Ok{};
}

}  // namespace koord
