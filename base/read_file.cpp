#include "base/read_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace koord {

Result<std::string_view> readDescriptor(int fd, bool positional, bool shortIsEnd,
                                        const std::string& path, std::string& buf,
                                        size_t maxBytes) {
  size_t len = 0;
  for (;;) {
    if (buf.size() - len < 4096) buf.resize(std::max<size_t>(buf.size() * 2, 16384));
    const size_t asked = buf.size() - len;
    const ssize_t n = positional ? ::pread(fd, buf.data() + len, asked, static_cast<off_t>(len))
                                 : ::read(fd, buf.data() + len, asked);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      return makeError(path + ": read: " + std::strerror(err), err);
    }
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

Status readFileInto(const std::string& path, std::string& out, size_t maxBytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    out.clear();
    return makeError(path + ": " + std::strerror(err), err);
  }
  auto text = readDescriptor(fd, false, false, path, out, maxBytes);
  ::close(fd);
  if (!text) {
    out.clear();
    return text.error();
  }
  out.resize(text->size());
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
