// Eviction requests and what became of them: the contract between the eviction
// strategies (qos/memory_evict.h, qos/cpu_evict.h), which decide which pods must go,
// and the PodEvictor (kube/pod_evictor.h), which asks the API server to evict them.
//
// The ledger is the strategies' memory of earlier rounds, per pod UID:
//   in flight  an Eviction was sent and has no answer yet;
//   evicted    the API server accepted it (201), or the pod was already gone (404,
//              or a 409 UID mismatch: that UID no longer exists); kept kEvictedTtl
//              (koordlet's 2-minute cache of evicted UIDs);
//   refused    the API server said no (429 from a PodDisruptionBudget or throttling,
//              401/403, 5xx, no connection): not asked again before its back-off.
// A pod in flight or evicted counts as released (koordlet's "pending release"): a
// strategy does not pick another victim for pressure that pod's eviction will relieve,
// and never asks for it twice. A refused pod is skipped until its back-off ends, so
// the next round picks the next victim instead of asking for the same pod in a loop.
//
// Pure and clocked: the owner passes `now`; state for pods no longer listed is freed
// by retain() (an in-flight entry waits for its answer). Not thread-safe: the loop
// thread owns it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace koord {

struct EvictionRequest {
  std::string uid;
  std::string ns;
  std::string name;
  // The feature gate that decided it ("BEMemoryEvict"): the eviction-policy
  // annotation's vocabulary and the request's reason.
  std::string feature;
  // koordlet's text: "trigger by koordlet feature BEMemoryEvict, kill pod: be-1".
  std::string message;
};

class EvictionLedger {
 public:
  // koordlet's expire cache of evicted UIDs.
  static constexpr std::chrono::minutes kEvictedTtl{2};
  // A refused pod's first back-off, doubled per refusal up to kRefusedMax.
  static constexpr std::chrono::seconds kRefusedFirst{10};
  static constexpr std::chrono::minutes kRefusedMax{5};

  enum class State { kNone, kInFlight, kEvicted, kRefused };

  State state(std::string_view uid, Clock::Monotonic now) const;
  // In flight, or evicted within kEvictedTtl: its release is already counted.
  bool pending(std::string_view uid, Clock::Monotonic now) const;
  // Refused and its back-off not over: not to be picked now.
  bool blocked(std::string_view uid, Clock::Monotonic now) const;

  void requested(std::string_view uid, Clock::Monotonic now);
  void evicted(std::string_view uid, Clock::Monotonic now);
  // retryAfter (a throttling 429's header) lengthens the back-off, never shortens it.
  void refused(std::string_view uid, Clock::Monotonic now,
               std::optional<std::chrono::seconds> retryAfter = std::nullopt);
  // Forgets a pod entirely (a request abandoned before it was sent).
  void forget(std::string_view uid);

  // Frees the entries of pods `live` says are gone, except those in flight. Returns
  // how many were freed.
  size_t retain(const std::function<bool(std::string_view uid)>& live);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    State state = State::kNone;
    Clock::Monotonic since{};             // when it entered this state
    Clock::Monotonic until{};             // kEvicted: expiry; kRefused: end of back-off
    std::chrono::nanoseconds backoff{0};  // the last refusal's back-off
  };
  const Entry* find(std::string_view uid) const;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace koord
