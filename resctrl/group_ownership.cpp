#include "resctrl/group_ownership.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "agent/log.h"
#include "agent/read_file.h"
#include "agent/text_scan.h"

namespace koord::resctrl {
namespace {

// A name the kernel would accept as one resctrl group dir, and that we can store one
// per line.
bool validGroupName(std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.size() > 255) return false;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || u <= ' ' || u >= 0x7f) return false;
  }
  return true;
}

Result<std::set<std::string>> parseRecord(std::string_view content, const std::string& file) {
  std::set<std::string> out;
  text::Lines lines(content);
  std::string_view line;
  bool terminated = false;
  int lineNo = 0;
  while (lines.next(line, terminated)) {
    ++lineNo;
    if (!validGroupName(line)) {
      return makeError(text::cat(file, ":", std::to_string(lineNo),
                                 ": not a resctrl group name (empty, '/', blank or control "
                                 "byte); the file is ignored"));
    }
    out.insert(std::string(line));
  }
  return out;
}

Status writeAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return makeError(std::strerror(errno), errno);
    }
    done += static_cast<size_t>(n);
  }
  return Ok{};
}

}  // namespace

GroupOwnership::GroupOwnership(std::string stateFile, bool adoptExisting)
    : stateFile_(std::move(stateFile)), adopt_(adoptExisting), loadStatus_(Ok{}) {
  if (stateFile_.empty()) return;
  auto text = readFile(stateFile_);
  if (!text) {
    if (text.error().sysErrno != ENOENT) loadStatus_ = inFile(stateFile_, text.error());
    return;
  }
  auto record = parseRecord(*text, stateFile_);
  if (!record) {
    loadStatus_ = record.error();
    return;
  }
  owned_ = std::move(*record);
}

bool GroupOwnership::wouldUse(const std::string& group, bool exists) const {
  return !exists || owns(group) || adopt_;
}

bool GroupOwnership::mayUse(const std::string& group, bool exists) {
  if (!wouldUse(group, exists)) return false;
  if (exists && !owns(group)) {
    auto saved = created(group);
    if (!saved) {
      KLOG_WARNING << "resctrl: adopted group " << group
                   << " is not recorded: " << saved.error().message;
    }
  }
  return true;
}

Status GroupOwnership::created(const std::string& group) {
  if (!validGroupName(group)) return makeError("not a resctrl group name: \"" + group + "\"");
  owned_.insert(group);
  return save();
}

Status GroupOwnership::save() const {
  if (stateFile_.empty()) return Ok{};
  const std::filesystem::path path(stateFile_);
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    return makeError(text::cat(path.parent_path().string(), ": ", ec.message()), ec.value());
  }
  std::string content;
  for (const auto& g : owned_) content += g + "\n";
  const std::string tmp = stateFile_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return makeError(text::cat(tmp, ": ", std::strerror(errno)), errno);
  Status st = writeAll(fd, content);
  // fsync before rename: on a disk-backed state dir the rename must not land before
  // the data (on tmpfs /var/run it is free).
  if (st && ::fsync(fd) != 0) st = makeError(std::strerror(errno), errno);
  ::close(fd);
  if (st && ::rename(tmp.c_str(), stateFile_.c_str()) != 0) {
    st = makeError(text::cat("rename to ", stateFile_, ": ", std::strerror(errno)), errno);
  }
  if (!st) {
    ::unlink(tmp.c_str());
    return inFile(tmp, st.error());
  }
  return Ok{};
}

}  // namespace koord::resctrl
