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
  switch (e->state) {
    case State::kEvicted:
    case State::kRefused:
      // An expired mark is as good as none: the pod may be evicted (again).
      return now < e->until ? e->state : State::kNone;
    default:
      return e->state;
  }
}

bool EvictionLedger::pending(std::string_view uid, Clock::Monotonic now) const {
  const State s = state(uid, now);
  return s == State::kInFlight || s == State::kEvicted;
}

bool EvictionLedger::blocked(std::string_view uid, Clock::Monotonic now) const {
  return state(uid, now) == State::kRefused;
}

void EvictionLedger::requested(std::string_view uid, Clock::Monotonic now) {
  Entry& e = entries_[std::string(uid)];
  e.state = State::kInFlight;
  e.since = now;
}

void EvictionLedger::evicted(std::string_view uid, Clock::Monotonic now) {
  Entry& e = entries_[std::string(uid)];
  e.state = State::kEvicted;
  e.since = now;
  e.until = now + kEvictedTtl;
  e.backoff = std::chrono::nanoseconds(0);
}

void EvictionLedger::refused(std::string_view uid, Clock::Monotonic now,
                             std::optional<std::chrono::seconds> retryAfter) {
  Entry& e = entries_[std::string(uid)];
  std::chrono::nanoseconds next = e.backoff.count() > 0 ? e.backoff * 2 : kRefusedFirst;
  next = std::min<std::chrono::nanoseconds>(next, kRefusedMax);
  e.backoff = next;
  if (retryAfter) next = std::max<std::chrono::nanoseconds>(next, *retryAfter);
  e.state = State::kRefused;
  e.since = now;
  e.until = now + next;
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
