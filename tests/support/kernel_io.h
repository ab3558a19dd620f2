// Raw file I/O for the real-kernel tests: a write exactly as the shell makes it
// (so a test can show what the kernel itself refuses, without the executor), and
// a read of a cgroup file without its trailing newline.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <string>

#include "base/read_file.h"

namespace koord::test {

// Returns errno, 0 on success.
inline int rawWrite(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = n < 0 ? errno : 0;
  ::close(fd);
  return err;
}

inline std::string readTrimmed(const std::string& path) {
  auto text = readFile(path);
  INFO(path);
  REQUIRE(text.ok());
  std::string s = *text;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace koord::test
