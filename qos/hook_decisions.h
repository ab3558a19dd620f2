// One decision per container when both hook paths see the same call: containerd
// 1.7 behind koord-runtime-proxy asks the proxy's hook server first, then NRI,
// within milliseconds. Whichever path decides first records the intent; the
// *other* path takes it (and it is dropped) if it asks within `ttl`. A path never
// takes its own record back: a second call on the same path (a retried create, an
// in-place resize sending memory then CPU) is decided afresh from what it asks.
// Bounded: at most `capacity` entries, the oldest dropped first. Thread-safe; time
// comes in as arguments (the caller's injected clock).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "qos/runtime_hooks.h"

namespace koord {

enum class HookPath { kNri, kProxy };

class HookDecisions {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  explicit HookDecisions(size_t capacity = 1024,
                         std::chrono::steady_clock::duration ttl = std::chrono::seconds(5));

  // The intent the other path recorded for `key` within ttl of `now`, taken out.
  std::optional<HookIntent> take(const std::string& key, HookPath taker, TimePoint now);
  // Records `path`'s decision, replacing any earlier one for `key`.
  void record(std::string key, HookPath path, const HookIntent& intent, TimePoint now);
  // Pod uid, container name and stage name, as one key.
  static std::string key(std::string_view uid, std::string_view container, std::string_view stage);
  size_t size() const;

 private:
  struct Entry {
    HookIntent intent;
    HookPath path;
    TimePoint at;
    uint64_t seq;
  };
  void dropExpired(TimePoint now);  // and the oldest past capacity

  size_t capacity_;
  std::chrono::steady_clock::duration ttl_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  // Insertion order for the bound: (key, seq); a pair whose seq no longer matches
  // its entry (taken or replaced) is skipped when it reaches the front.
  std::deque<std::pair<std::string, uint64_t>> order_;
  uint64_t seq_ = 0;
};

}  // namespace koord
