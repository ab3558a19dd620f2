// See the header.
#include "cgroupfs/oom_score_adj_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

#include "base/host_paths.h"
#include "base/read_file.h"

namespace koord {
namespace {

std::optional<int64_t> parseValue(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

Result<std::vector<int>> parseProcs(std::string_view text, const std::string& file) {
  std::vector<int> out;
  size_t line = 0;
  while (!text.empty()) {
    ++line;
    const size_t nl = text.find('\n');
    const std::string_view l = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (l.empty()) continue;
    int pid = 0;
    auto [end, ec] = std::from_chars(l.data(), l.data() + l.size(), pid);
    if (ec != std::errc() || end != l.data() + l.size() || pid <= 0) {
      return Error{file + ": line " + std::to_string(line) + ": \"" + std::string(l) +
                   "\" is not a pid"};
    }
    out.push_back(pid);
  }
  return out;
}

OomScoreAdjOutcome applyOomScoreAdj(const std::string& procsPath, const std::string& procRoot,
                                    int64_t value) {
  OomScoreAdjOutcome out;
  if (value < -1000 || value > 1000) {
    out.error = "oom_score_adj " + std::to_string(value) + " is outside [-1000, 1000]";
    return out;
  }
  auto text = readFile(procsPath);
  if (!text) {
    out.gone = text.error().sysErrno == ENOENT;
    out.error = procsPath + ": " + text.error().message;
    return out;
  }
  auto pids = parseProcs(*text, procsPath);
  if (!pids) {
    out.error = pids.error().message;
    return out;
  }
  out.processes = pids->size();
  const std::string want = std::to_string(value);
  for (int pid : *pids) {
    const std::string path = HostPaths::join(procRoot, std::to_string(pid) + "/oom_score_adj");
    auto now = readFile(path, 64);
    if (!now) {
      ++out.failed;
      if (out.error.empty()) out.error = path + ": " + now.error().message;
      continue;
    }
    if (parseValue(*now) == value) {
      ++out.unchanged;
      continue;
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    const bool ok =
        fd >= 0 && ::write(fd, want.data(), want.size()) == static_cast<ssize_t>(want.size());
    const int err = errno;
    if (fd >= 0) ::close(fd);
    if (!ok) {
      ++out.failed;
      if (out.error.empty()) {
        out.error = path + ": " + std::strerror(err);
        // The kernel's rule: under a process's oom_score_adj_min only with the capability.
        if (err == EACCES) out.error += " (a value under the process's own needs CAP_SYS_RESOURCE)";
      }
      continue;
    }
    ++out.updated;
  }
  return out;
}

}  // namespace koord
