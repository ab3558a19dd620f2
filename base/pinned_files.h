// PinnedFile: one kernel file read round after round through a descriptor kept
// open. The kernel's pseudo-files (cgroupfs, procfs, sysfs) regenerate their text
// whenever they are read from offset 0, so pread from 0 until it returns nothing
// gives what open + read + read (EOF) + close would, without the open's path walk
// and the close: at 110 pods the path walk (dentry lookup, kernfs revalidation and
// permission checks on every component) was the largest part of the agent's
// kernel time.
//
// Only files on those filesystems are kept open (checked once, by fstatfs, at the
// first open): a regular file can be replaced behind an open descriptor, so it is
// read the plain way every time. A descriptor that fails (ENODEV once its cgroup
// is removed) is closed and the error returned; after ENODEV the path is opened
// afresh once, so a cgroup made again under the same name is read, and a removed
// one answers ENOENT. Descriptors held are bounded by a shared FileBudget; a file
// that finds the budget spent is read the plain way. Not thread-safe.
//
// A file made by one show (Whole::kOneShow) saves the read that returns nothing:
// the kernel writes such a file's whole text in one call (growing its buffer until
// it fits) and a read hands out all of it that fits, so a read that returns less
// than it asked for has returned the end. Every cgroup interface file is made so
// but cgroup.procs, tasks and cgroup.threads (they list record by record, a page
// at a time), as are procfs single_open files (/proc/stat, /proc/meminfo,
// /proc/pressure/*). On a file made record by record this would stop after the
// first page: say it only of files known to be made in one show. The mode counts
// only on kernel files; a regular file is read to the end. (The read saved is ~0.3
// µs: 1,440 files a round at 110 pods.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace koord {

// How many descriptors PinnedFiles may hold together.
class FileBudget {
 public:
  explicit FileBudget(size_t max) : max_(max) {}
  bool take() {
    if (open_ >= max_) return false;
    ++open_;
    return true;
  }
  void give() { --open_; }
  size_t open() const { return open_; }

 private:
  size_t max_;
  size_t open_ = 0;
};

class PinnedFile {
 public:
  enum class Whole { kToEmptyRead, kOneShow };
  PinnedFile(std::string path, FileBudget& budget, Whole whole = Whole::kToEmptyRead)
      : path_(std::move(path)), budget_(&budget), oneShow_(whole == Whole::kOneShow) {}
  ~PinnedFile() { close(); }
  PinnedFile(PinnedFile&& o) noexcept;
  PinnedFile& operator=(PinnedFile&& o) noexcept;
  PinnedFile(const PinnedFile&) = delete;
  PinnedFile& operator=(const PinnedFile&) = delete;

  // The file's whole text in `buf` (reused, grown as needed). Errors carry the
  // errno (ENOENT, ENODEV...) and name the path, as readFile's do; a file over
  // maxBytes is EFBIG.
  Result<std::string_view> read(std::string& buf, size_t maxBytes = 1u << 20);

  const std::string& path() const { return path_; }
  bool held() const { return fd_ >= 0; }

 private:
  void close();
  std::string path_;
  FileBudget* budget_;
  int fd_ = -1;
  bool regular_ = false;  // not a kernel file: never held
  bool oneShow_ = false;
};

// Raises this process's soft limit on open files to its hard limit (as Go's runtime
// does for koordlet) and returns the soft limit now in force.
uint64_t raiseOpenFileLimit();

}  // namespace koord
