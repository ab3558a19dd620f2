#include "base/dir_list.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace koord {

Result<std::vector<std::string>> listSubdirs(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    const int err = errno;
    return makeError(dir + ": " + std::strerror(err), err);
  }
  std::vector<std::string> out;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const char* name = e->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    bool isDir = e->d_type == DT_DIR;
    // Filesystems that do not fill d_type (DT_UNKNOWN), and symlinks, are asked.
    if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
      struct stat st {};
      isDir = ::fstatat(::dirfd(d), name, &st, 0) == 0 && S_ISDIR(st.st_mode);
    }
    if (isDir) out.emplace_back(name);
    errno = 0;
  }
  const int err = errno;  // readdir returns null at the end and on error alike
  ::closedir(d);
  if (err != 0) return makeError(dir + ": reading the directory: " + std::strerror(err), err);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace koord
