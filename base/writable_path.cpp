#include "base/writable_path.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace koord {

Status probeWritableDir(const std::string& dir) {
  std::string path = dir;
  if (path.empty() || path.back() != '/') path += '/';
  path += ".koordlet-write-probe-" + std::to_string(::getpid());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    // A probe an earlier agent of the same pid left (killed in between): ours now.
    ::unlink(path.c_str());
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  }
  if (fd < 0) {
    const int err = errno;
    return makeError(dir + ": " + std::strerror(err), err);
  }
  ::close(fd);
  ::unlink(path.c_str());
  return Ok{};
}

Result<bool> readOnlyMount(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) {
    const int err = errno;
    return makeError(path + ": " + std::strerror(err), err);
  }
  return (st.f_flag & ST_RDONLY) != 0;
}

}  // namespace koord
