#include "qos/config_watcher.h"

#include "base/time_format.h"

#include <ctime>
#include <utility>

#include "base/log.h"
#include "base/read_file.h"

namespace koord {
namespace {

std::string describeNotes(const NodeSloSpec& spec) {
  std::string out;
  for (const auto& note : spec.notes) out += "; " + note;
  return out;
}

}  // namespace

ConfigWatcher::ConfigWatcher(std::string fileName, const Clock& clock)
    : fileName_(std::move(fileName)),
      clock_(&clock),
      current_(defaultNodeSlo()),
      loadedAt_(clock.wallNow()) {}

Status ConfigWatcher::load() {
  if (fileName_.empty()) {
    // The defaults are the config applied at start: generation 1, as with a file.
    generation_ = 1;
    return Ok{};
  }
  auto text = readFile(fileName_, kMaxSloConfigBytes);
  if (!text.ok()) return text.error();  // the message names the file
  auto spec = parseNodeSlo(*text, fileName_);
  if (!spec.ok()) return spec.error();
  lastText_ = std::move(*text);
  haveText_ = true;
  lastReadFailed_ = false;
  current_ = std::move(spec).value();
  ++generation_;
  loadedAt_ = clock_->wallNow();
  lastError_.clear();
  KLOG_INFO << "config " << fileName_ << " loaded (" << current_.source << ", generation "
            << generation_ << ")" << describeNotes(current_);
  return Ok{};
}

bool ConfigWatcher::poll() {
  if (fileName_.empty()) return false;
  // Read into a kept buffer: an unchanged file (every poll but a few) allocates
  // nothing.
  Status text = readFileInto(fileName_, readBuf_, kMaxSloConfigBytes);
  if (!text.ok()) {
    // Vanished, unreadable or oversized: keep the last good config; count and log
    // once until the error changes or the file is readable again.
    const std::string& message = text.error().message;
    if (lastReadFailed_ && lastError_ == message) return false;
    lastReadFailed_ = true;
    lastError_ = message;
    ++reloadErrors_;
    KLOG_WARNING << "config " << fileName_ << " cannot be read, keeping generation " << generation_
                 << ": " << message;
    return false;
  }
  if (!lastReadFailed_ && haveText_ && readBuf_ == lastText_) return false;
  lastReadFailed_ = false;
  lastText_ = readBuf_;
  haveText_ = true;

  auto spec = parseNodeSlo(lastText_, fileName_);
  if (!spec.ok()) {
    lastError_ = spec.error().message;
    ++reloadErrors_;
    // One line per problem of the file, each saying what happened.
    logEachLine(Severity::kWarning,
                "config " + fileName_ + " rejected, keeping generation " +
                    std::to_string(generation_) + ": ",
                lastError_);
    return false;
  }
  bool recovered = !lastError_.empty();
  current_ = std::move(spec).value();
  ++generation_;
  loadedAt_ = clock_->wallNow();
  lastError_.clear();
  KLOG_INFO << "config " << fileName_ << (recovered ? " fixed and reloaded (" : " reloaded (")
            << current_.source << ", generation " << generation_ << ")" << describeNotes(current_);
  return true;
}

nlohmann::json ConfigWatcher::toJson() const {
  nlohmann::json j;
  j["file"] = fileName_;
  j["generation"] = generation_;
  j["loadedAt"] = rfc3339(loadedAt_);
  j["lastError"] = lastError_;
  j["reloadErrors"] = reloadErrors_;
  j["source"] = current_.source;
  j["notes"] = current_.notes;
  j["spec"] = current_.effective;
  return j;
}

}  // namespace koord
