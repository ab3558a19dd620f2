// Thin file reader for procfs, sysfs and cgroupfs: reads a whole file with a size
// cap (procfs files report size 0, so the size is found by reading). Errors carry
// the path and errno, so callers can treat ENOENT (a cgroup that just vanished) as
// normal and everything else as a failure.
#pragma once

#include <cstddef>
#include <string>

#include "agent/result.h"

namespace koord {

// 4 MiB covers /proc/stat on a 1024-CPU host many times over.
inline constexpr size_t kDefaultReadCap = 4u << 20;

Result<std::string> readFile(const std::string& path, size_t maxBytes = kDefaultReadCap);

// Prefixes an error message with the file it came from: "<path>: <message>".
inline Error inFile(const std::string& path, const Error& e) {
  return Error{path + ": " + e.message, e.sysErrno};
}

}  // namespace koord
