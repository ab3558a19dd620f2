// AuditLog: a bounded JSON-lines file that records what the agent changed on the
// node: the executor's cgroup writes and the evictions it asked for (koordlet's
// audit log, --audit-log-dir, --audit-max-disk-space-mb). Each append() is one
// line, written with O_APPEND in one write(2). Before a line would take the file
// past maxBytes, the file is renamed to <path>.1 (one old file is kept), so the log
// takes at most 2 x maxBytes, plus one line when a single line is larger.
//
// Several AuditLogs may share a path on one thread: each checks the size before it
// appends. The caller formats the line (base has no JSON library).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"

namespace koord {

class AuditLog {
 public:
  AuditLog(std::string path, size_t maxBytes) : path_(std::move(path)), maxBytes_(maxBytes) {}

  // Appends `line` and a newline; creates the parent directory when missing. The
  // error names the file and the system call's reason.
  Status append(std::string_view line) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  size_t maxBytes_;
};

}  // namespace koord
