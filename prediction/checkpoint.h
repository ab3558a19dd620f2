// Prediction checkpoints: one file per model in --prediction-checkpoint-filepath, in
// koordlet's format (reference colocation.md §1.5), so a node that ran koordlet
// keeps its models when this agent replaces it, and the other way round.
//
// File `<dir>/<model id>`: one JSON object and a newline,
//   {"UID":..., "CPU":H, "Memory":H, "LastUpdated":"<RFC 3339, seconds>"}
//   H = {"referenceTimestamp":"<RFC3339Nano>", "bucketWeights":{"<bucket>":n},
//        "totalWeight":x}; empty weights and a zero total left out, as Go's omitempty.
// Written to `<id>.tmp`, flushed, then renamed over the file: a crash leaves the
// old checkpoint or the new one, never half of one.
//
// Restore (the directory is read once, at start):
//  * The model id is the file name (as koordlet), never the UID inside.
//  * Bounded: at most kMaxFiles files looked at and kMaxFileBytes read per file; a
//    bigger file is skipped unread. A full checkpoint is about 5 KB.
//  * Deleted, as koordlet does: `<id>.tmp` leftovers, and checkpoints that do not
//    decode or whose model is not known now (a pod gone while we were down).
//    Unlike koordlet, only files whose name is a model id (a pod UID, `__node__`,
//    `__node-...__`) are ever deleted: a directory flag pointed at the wrong place
//    costs one line per foreign file, not the files.
//  * Every skipped file is one entry in `skipped` (the caller logs them as one line).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "prediction/histogram.h"

namespace koord::prediction {

struct ModelCheckpoint {
  std::string uid;
  HistogramCheckpoint cpu;
  HistogramCheckpoint memory;
  Clock::Wall lastUpdated{};
};

std::string encodeCheckpoint(const ModelCheckpoint& checkpoint);
// `source` names the file in errors; the model id is the caller's (file name).
Result<ModelCheckpoint> decodeCheckpoint(std::string_view text, const std::string& source);

// A pod UID (32 hex digits: 8-4-4-4-12 as the API server makes them, or undashed as
// the kubelet hashes a static pod's) or a node model id: what our files are named.
bool isModelId(std::string_view name);

class CheckpointDir {
 public:
  static constexpr size_t kMaxFiles = 4096;
  static constexpr size_t kMaxFileBytes = 64 * 1024;

  explicit CheckpointDir(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  Status save(const ModelCheckpoint& checkpoint) const;
  // A missing file is no error.
  Status remove(std::string_view uid) const;

  struct Restored {
    std::vector<ModelCheckpoint> models;
    std::vector<std::string> skipped;  // "<file>: <why>"
    std::vector<std::string> deleted;  // file names
  };
  // Error only when the directory cannot be listed (koordlet logs it and goes on).
  Result<Restored> restore(const std::function<bool(std::string_view uid)>& known) const;

 private:
  std::string dir_;
};

}  // namespace koord::prediction
