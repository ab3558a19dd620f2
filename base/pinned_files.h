// PinnedFiles: reads the same kernel files round after round through descriptors
// kept open. The kernel's pseudo-files (cgroupfs, procfs, sysfs) regenerate their
// text whenever they are read from offset 0, so pread from 0 until it returns
// nothing gives what open + read + read (EOF) + close would, without the open's
// path walk and the close: at 110 pods the
// path walk (dentry lookup, kernfs revalidation and permission checks on every
// component) was the largest part of the agent's kernel time.
//
// Only files on those filesystems are kept open (checked once, by fstatfs, when
// the file is first opened): a regular file can be replaced behind an open
// descriptor, so it is read the plain way every time. A descriptor that fails
// (ENODEV once its cgroup is removed) is closed and the error returned; sweep()
// closes those not read since the previous sweep, so a gone cgroup's files are
// let go a round after it stops being read. At most maxOpen are held; past that,
// files are read the plain way. Not thread-safe: one owner, one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/result.h"

namespace koord {

class PinnedFiles {
 public:
  explicit PinnedFiles(size_t maxOpen) : maxOpen_(maxOpen) {}
  ~PinnedFiles();
  PinnedFiles(const PinnedFiles&) = delete;
  PinnedFiles& operator=(const PinnedFiles&) = delete;

  // The file's whole text, valid until the next read(). Errors carry the errno
  // (ENOENT, ENODEV...) and name the path, as readFile's do; a file over
  // maxBytes is EFBIG.
  Result<std::string_view> read(const std::string& path, size_t maxBytes = 1u << 20);

  // Closes the descriptors not read since the previous sweep.
  void sweep();

  size_t openCount() const { return files_.size(); }

 private:
  struct Entry {
    int fd = -1;
    uint64_t round = 0;
  };
  Result<std::string_view> readPlain(const std::string& path, size_t maxBytes);
  Result<std::string_view> readAt(int fd, const std::string& path, size_t maxBytes);
  size_t maxOpen_;
  uint64_t round_ = 0;
  std::unordered_map<std::string, Entry> files_;
  std::string buf_;
};

// Raises this process's soft limit on open files to its hard limit (as Go's runtime
// does for koordlet) and returns the soft limit now in force.
uint64_t raiseOpenFileLimit();

}  // namespace koord
