#include "base/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace koord {

Status AuditLog::append(std::string_view line) const {
  namespace fs = std::filesystem;
  std::string text(line);
  text += '\n';
  std::error_code ec;
  const fs::path path(path_);
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && st.st_size > 0 &&
      static_cast<size_t>(st.st_size) + text.size() > maxBytes_) {
    ::rename(path_.c_str(), (path_ + ".1").c_str());
  }
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    const int err = errno;
    return makeError("audit log " + path_ + ": open: " + std::strerror(err), err);
  }
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = n < 0 ? errno : EIO;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return makeError("audit log " + path_ + ": write: " + std::strerror(err), err);
  }
  return Ok{};
}

}  // namespace koord
