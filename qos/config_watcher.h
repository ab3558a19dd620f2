// ConfigWatcher: keeps the effective NodeSLO config for a --config file. It
// reloads when the file changes (checked on the caller's timer, by content, since
// a Kubernetes ConfigMap mount changes by swapping a symlink and inotify on the
// old inode would miss it), keeps the last good config when the new text is bad,
// and counts and logs each rejection once per distinct bad content.
//
// No file: the defaults, never reloaded. The first load's error is returned by
// load() so the agent can exit non-zero at start.
//
// Counting and logging: a rejection is counted and logged once per change of the
// file's content (or of the read error: a vanished or oversized file counts once,
// not once per poll), so reloadErrors() is "bad versions seen". Each accepted
// load or reload logs one INFO line (with the spec's notes); the first good
// content after a rejection is accepted and logged as a recovery. generation() is 0
// before load(), 1 once load() has applied the start config (the file's first
// content, or the built-in defaults when there is no file), then +1 per accepted
// new file content, even when it parses to the same spec. loadedAt() is the clock's
// wall time of the last acceptance (the construction time for the defaults).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/clock.h"
#include "base/result.h"
#include "qos/slo_config.h"

namespace koord {

class ConfigWatcher {
 public:
  // fileName "" = no file: defaults only.
  explicit ConfigWatcher(std::string fileName, const Clock& clock);

  // Reads and parses the file. On error nothing changes and the error (naming
  // file, field and reason) is returned.
  Status load();

  // Re-reads the file; when its content differs from the last one seen and
  // parses, it becomes current and true is returned. Unreadable or invalid content
  // keeps the current config, bumps reloadErrors() and logs one line for that
  // content (not again each poll).
  bool poll();

  const NodeSloSpec& current() const { return current_; }
  uint64_t generation() const { return generation_; }          // 1 after load(), +1 per reload
  uint64_t reloadErrors() const { return reloadErrors_; }      // rejected reloads
  const std::string& lastError() const { return lastError_; }  // "" when the last read was good
  Clock::Wall loadedAt() const { return loadedAt_; }
  const std::string& fileName() const { return fileName_; }

  // {"file": ..., "generation": N, "loadedAt": RFC3339, "lastError": ..., "spec": {...}}
  // plus "reloadErrors", "source" and "notes" (what the file held but is not applied).
  // loadedAt is UTC with seconds, e.g. "2023-11-14T22:13:20Z".
  nlohmann::json toJson() const;

 private:
  std::string fileName_;
  const Clock* clock_;
  NodeSloSpec current_;
  std::string lastText_;  // content of the last read (good or bad)
  std::string readBuf_;   // what poll() reads into, kept
  bool haveText_ = false;
  bool lastReadFailed_ = false;  // the last poll could not read the file (lastError_ says why)
  uint64_t generation_ = 0;
  uint64_t reloadErrors_ = 0;
  std::string lastError_;
  Clock::Wall loadedAt_{};
};

}  // namespace koord
