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
