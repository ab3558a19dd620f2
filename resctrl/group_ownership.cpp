#include "resctrl/group_ownership.h"

#include <filesystem>

#include "base/log.h"
#include "base/read_file.h"
#include "base/text_scan.h"

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

Status GroupOwnership::forget(const std::string& group) {
  owned_.erase(group);
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
  return replaceFile(stateFile_, content);
}

}  // namespace koord::resctrl
