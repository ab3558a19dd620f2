#include "kube/eviction_ledger.h"

#include <algorithm>

namespace koord {

const EvictionLedger::Entry* EvictionLedger::find(std::string_view uid) const {
  auto it = entries_.find(uid);
  return it == entries_.end() ? nullptr : &it->second;
}

EvictionLedger::State EvictionLedger::state(std::string_view uid, Clock::Monotonic now) const {
  const Entry* e = find(uid);
  if (e == nullptr) return State::kNone;
  // An expired mark is as good as none: the pod may be evicted (again).
  if (e->state == State::kInFlight) return e->state;
  return now < e->until ? e->state : State::kNone;
}

bool EvictionLedger::pending(std::string_view uid, Clock::Monotonic now) const {
  const State s = state(uid, now);
  return s == State::kInFlight || s == State::kEvicted || s == State::kFailed;
}

bool EvictionLedger::blocked(std::string_view uid, Clock::Monotonic now) const {
  const State s = state(uid, now);
  return s == State::kRefused || s == State::kGone;
}

void EvictionLedger::requested(std::string_view uid, Clock::Monotonic now) {
  Entry& e = entries_[std::string(uid)];
  e.state = State::kInFlight;
  e.since = now;
}

void EvictionLedger::markFor(std::string_view uid, State state, Clock::Monotonic now,
                             std::chrono::nanoseconds ttl) {
  Entry& e = entries_[std::string(uid)];
  e.state = state;
  e.since = now;
  e.until = now + ttl;
  e.backoff = std::chrono::nanoseconds(0);
}

void EvictionLedger::evicted(std::string_view uid, Clock::Monotonic now) {
  markFor(uid, State::kEvicted, now, kEvictedTtl);
}

void EvictionLedger::backOff(std::string_view uid, State state, Clock::Monotonic now,
                             std::optional<std::chrono::seconds> retryAfter) {
  Entry& e = entries_[std::string(uid)];
  std::chrono::nanoseconds next = e.backoff.count() > 0 ? e.backoff * 2 : kRefusedFirst;
  next = std::min<std::chrono::nanoseconds>(next, kRefusedMax);
  e.backoff = next;
  // A Retry-After lengthens it, but a proxy's "31 years" must not block a pod for good.
  if (retryAfter) {
    next = std::max<std::chrono::nanoseconds>(
        next, std::min<std::chrono::nanoseconds>(*retryAfter, kRefusedMax));
  }
  e.state = state;
  e.since = now;
  e.until = now + next;
}

void EvictionLedger::failed(std::string_view uid, Clock::Monotonic now,
                            std::optional<std::chrono::seconds> retryAfter) {
  backOff(uid, State::kFailed, now, retryAfter);
}

void EvictionLedger::refused(std::string_view uid, Clock::Monotonic now,
                             std::optional<std::chrono::seconds> retryAfter) {
  backOff(uid, State::kRefused, now, retryAfter);
}

void EvictionLedger::gone(std::string_view uid, Clock::Monotonic now) {
  markFor(uid, State::kGone, now, kEvictedTtl);
}

void EvictionLedger::forget(std::string_view uid) {
  auto it = entries_.find(uid);
  if (it != entries_.end()) entries_.erase(it);
}

size_t EvictionLedger::retain(const std::function<bool(std::string_view uid)>& live) {
  return std::erase_if(entries_, [&](const auto& kv) {
    return kv.second.state != State::kInFlight && !live(kv.first);
  });
}

}  // namespace koord
