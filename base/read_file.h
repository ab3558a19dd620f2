// Whole-file I/O. readFile: procfs, sysfs and cgroupfs (and config) files read with
// a size cap (procfs files report size 0, so the size is found by reading). Errors
// carry the path and errno, so callers can treat ENOENT (a cgroup that just
// vanished) as normal and everything else as a failure. replaceFile: our own state
// and generated files, replaced whole or not at all (never kernel files: those go
// through the executor).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"

namespace koord {

// 4 MiB covers /proc/stat on a 1024-CPU host many times over.
inline constexpr size_t kDefaultReadCap = 4u << 20;

Result<std::string> readFile(const std::string& path, size_t maxBytes = kDefaultReadCap);
// Reads an open descriptor from offset 0 to the end into `buf` (grown as needed,
// never shrunk; the text is its first bytes). A seq_file hands out at most its
// internal buffer per read (a page, or one record), so a short read is not the
// end: it reads on at the offset reached until a read returns nothing; unless
// `shortIsEnd` (a kernel file made by one show, pinned_files.h), where it is.
// `positional` uses pread (a held descriptor, regenerated from 0); otherwise
// read(). Errors name `path`; past maxBytes, EFBIG.
Result<std::string_view> readDescriptor(int fd, bool positional, bool shortIsEnd,
                                        const std::string& path, std::string& buf, size_t maxBytes);

// The same into `out`, reusing its capacity: a file read again and again (a polled
// config, the executor's re-reads) costs no allocation once `out` is large enough.
// On error `out` is left empty.
Status readFileInto(const std::string& path, std::string& out, size_t maxBytes = kDefaultReadCap);

// Writes `content` to "<path>.tmp", fsyncs it and renames it over `path`, so a
// reader (or a crash) sees the old file or the new one, never a part. The
// directory must exist. On error the temporary file is removed and the message
// names the file.
Status replaceFile(const std::string& path, std::string_view content, mode_t mode = 0644);

// Prefixes an error message with the file it came from: "<path>: <message>".
inline Error inFile(const std::string& path, const Error& e) {
  return Error{path + ": " + e.message, e.sysErrno};
}

}  // namespace koord
