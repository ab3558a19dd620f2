#include "qos/hook_decisions.h"

namespace koord {

HookDecisions::HookDecisions(size_t capacity, std::chrono::steady_clock::duration ttl)
    : capacity_(capacity == 0 ? 1 : capacity), ttl_(ttl) {}

std::string HookDecisions::key(std::string_view uid, std::string_view container,
                               std::string_view stage) {
  std::string k;
  k.reserve(uid.size() + container.size() + stage.size() + 2);
  k.append(uid).push_back('\n');
  k.append(container).push_back('\n');
  k.append(stage);
  return k;
}

void HookDecisions::dropExpired(TimePoint now) {
  while (!order_.empty()) {
    auto it = entries_.find(order_.front().first);
    if (it != entries_.end() && it->second.seq == order_.front().second) {
      if (now - it->second.at < ttl_ && entries_.size() <= capacity_) return;
      entries_.erase(it);
    }
    order_.pop_front();  // expired, over the bound, or already taken / replaced
  }
}

std::optional<HookIntent> HookDecisions::take(const std::string& key, HookPath taker,
                                              TimePoint now) {
  std::lock_guard lock(mu_);
  dropExpired(now);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.path == taker || now - it->second.at >= ttl_) {
    return std::nullopt;
  }
  HookIntent intent = std::move(it->second.intent);
  entries_.erase(it);
  return intent;
}

void HookDecisions::record(std::string key, HookPath path, const HookIntent& intent,
                           TimePoint now) {
  std::lock_guard lock(mu_);
  const uint64_t seq = ++seq_;
  order_.emplace_back(key, seq);
  entries_[std::move(key)] = Entry{intent, path, now, seq};
  dropExpired(now);
  // Replaced entries leave stale pairs behind; at most 2 × capacity pairs are kept.
  while (order_.size() > 2 * capacity_) {
    auto it = entries_.find(order_.front().first);
    if (it != entries_.end() && it->second.seq == order_.front().second) entries_.erase(it);
    order_.pop_front();
  }
}

size_t HookDecisions::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace koord
