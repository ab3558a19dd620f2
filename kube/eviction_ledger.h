// Eviction requests and what became of them: the contract between the eviction
// strategies (qos/memory_evict.h, qos/cpu_evict.h), which decide which pods must go,
// and the PodEvictor (kube/pod_evictor.h), which asks the API server to evict them.
//
// The ledger is the strategies' memory of earlier rounds, per pod UID:
//   in flight  an Eviction was sent and has no answer yet;
//   evicted    the API server accepted it (201); kept kEvictedTtl (koordlet's
//              2-minute cache of evicted UIDs);
//   failed     the answer says nothing about the pod: no connection, a timeout, 5xx, a
//              throttling 429, 401/403. The eviction may or may not have happened, and
//              asking another pod would fail the same way: the pod stays counted as
//              released during a back-off, then the same pod is asked again. An API
//              outage costs one request per back-off, not one per victim;
//   refused    a PodDisruptionBudget said no (429, cause DisruptionBudget): skipped,
//              not counted, during a back-off, so the next victim is asked instead;
//   gone       404, or 409 on the UID precondition: the API has no pod of that UID (a
//              static pod's kubelet UID is never its mirror pod's). Skipped, not
//              counted, for kEvictedTtl: if the kubelet still lists it, its usage is
//              still there and the next victim must go.
// A pod in flight, evicted or failed counts as released (koordlet's "pending
// release"): a strategy does not pick another victim for pressure that pod's eviction
// will relieve, and never asks for it twice at once. A refused or gone pod is skipped,
// so the next round picks the next victim instead of asking for the same pod in a loop.
// Back-offs start at kRefusedFirst and double per answer up to kRefusedMax; a
// Retry-After lengthens one (never past kRefusedMax), never shortens it.
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

  enum class State { kNone, kInFlight, kEvicted, kFailed, kRefused, kGone };

  State state(std::string_view uid, Clock::Monotonic now) const;
  // In flight, evicted within kEvictedTtl, or failed within its back-off: its release
  // is counted.
  bool pending(std::string_view uid, Clock::Monotonic now) const;
  // Refused within its back-off, or gone within kEvictedTtl: not to be picked now.
  bool blocked(std::string_view uid, Clock::Monotonic now) const;

  void requested(std::string_view uid, Clock::Monotonic now);
  void evicted(std::string_view uid, Clock::Monotonic now);
  void failed(std::string_view uid, Clock::Monotonic now,
              std::optional<std::chrono::seconds> retryAfter = std::nullopt);
  void refused(std::string_view uid, Clock::Monotonic now,
               std::optional<std::chrono::seconds> retryAfter = std::nullopt);
  void gone(std::string_view uid, Clock::Monotonic now);
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
    Clock::Monotonic until{};             // when the mark ends (all but kInFlight)
    std::chrono::nanoseconds backoff{0};  // the last refusal's back-off
  };
  const Entry* find(std::string_view uid) const;
  void backOff(std::string_view uid, State state, Clock::Monotonic now,
               std::optional<std::chrono::seconds> retryAfter);
  // `state` for `ttl` from now, the back-off reset.
  void markFor(std::string_view uid, State state, Clock::Monotonic now,
               std::chrono::nanoseconds ttl);
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace koord
