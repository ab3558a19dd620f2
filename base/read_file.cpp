#include "base/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace koord {

Result<std::string> readFile(const std::string& path, size_t maxBytes) {
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
