// The exporter's eviction families: koordlet's koordlet_pod_eviction{reason} and
// koordlet_pod_eviction_detail{pod_namespace,pod_name,reason} (reference §6; koordlet
// counts with reason "evicted" whatever the feature), and ours: every request's
// answer by feature and result, and whether eviction can happen at all.
#include <algorithm>

#include "metrics/exporter.h"

namespace koord {

void Exporter::initEviction() {
  evictionEnabled_ = &gaugeFamily("koordlet_eviction_enabled",
                                  "1 when an eviction feature gate is on and an API server "
                                  "is configured to evict through, else 0")
                          .Add({{"node", node_}});
  podEviction_ = &counterFamily("koordlet_pod_eviction",
                                "Number of eviction launched by koordlet (accepted by the API "
                                "server), by reason (always \"evicted\", as koordlet)");
  podEvictionDetail_ = &counterFamily(
      "koordlet_pod_eviction_detail",
      "Evictions launched by koordlet per pod; a series expires 5 minutes after its last "
      "increment");
  evictionRequests_ = &counterFamily(
      "koordlet_pod_eviction_requests_total",
      "Eviction decisions by feature gate and result: evicted, not_found, conflict (the UID "
      "changed), budget (a PodDisruptionBudget refused), throttled, forbidden, error, dropped "
      "(queue full), invalid (a name the API would refuse), dry_run");
}

void Exporter::setEvictionEnabled(bool enabled) { evictionEnabled_->Set(enabled ? 1 : 0); }

void Exporter::recordEviction(const std::string& ns, const std::string& name,
                              const std::string& feature, const std::string& result,
                              double unixNow) {
  evictionRequests_->Add({{"node", node_}, {"feature", feature}, {"result", result}}).Increment();
  if (result != "evicted") return;
  podEviction_->Add({{"node", node_}, {"reason", "evicted"}}).Increment();
  const auto key = std::make_pair(ns, name);
  auto it = evictionDetails_.find(key);
  if (it == evictionDetails_.end()) {
    if (evictionDetails_.size() >= kEvictionDetailMax) {
      // Bounded: the series least recently incremented goes first.
      auto oldest = std::min_element(
          evictionDetails_.begin(), evictionDetails_.end(),
          [](const auto& a, const auto& b) { return a.second.second < b.second.second; });
      podEvictionDetail_->Remove(oldest->second.first);
      evictionDetails_.erase(oldest);
    }
    auto& c = podEvictionDetail_->Add(
        {{"node", node_}, {"pod_namespace", ns}, {"pod_name", name}, {"reason", "evicted"}});
    it = evictionDetails_.emplace(key, std::make_pair(&c, unixNow)).first;
  }
  it->second.first->Increment();
  it->second.second = unixNow;
}

void Exporter::expireEvictionDetails(double unixNow) {
  for (auto it = evictionDetails_.begin(); it != evictionDetails_.end();) {
    if (unixNow - it->second.second >= kEvictionDetailTtl) {
      podEvictionDetail_->Remove(it->second.first);
      it = evictionDetails_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace koord
