// MetricCache: the samples the QoS manager decides from and the NodeMetric status
// reports (metrics/node_metric.h), in fixed-size in-memory rings, one per series,
// sized from retention / collection interval.
//
// A ring is indexed by time slot, not by arrival: slot = round((t - epoch) /
// interval), so a missed round leaves an empty slot (NaN) instead of shifting
// history, and storage is one float per slot (4 bytes). Memory is bounded and
// stated: bytesUsed() = Σ series (capacity × 4 + kSeriesOverheadBytes + key bytes).
// With the defaults (1 s, node 30 min, pods 5 min) a node series is 1,800 slots
// (7,392 bytes with its overhead) and a pod or container series 300 (1,392 bytes
// plus its key). Queries hold nothing between calls: a percentile or summary query
// allocates one transient buffer of at most the ring's capacity (7.2 KB for a node
// series), freed before it returns, which bytesUsed() does not count.
//
// Queries follow koordlet's aggregation (reference koordlet.md §3.1): avg is the
// mean; pN sorts ascending and takes index int(n × p) − 1 clamped to 0 (no
// interpolation); last is the newest point; count the number of points.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"

namespace koord {

enum class MetricKind : uint8_t {
  // Node level (owner ""), kept for nodeRetention.
  kNodeCpuCores,
  kNodeMemoryBytes,               // MemTotal - MemAvailable (koordlet's node_memory_usage)
  kNodeMemoryWithPageCacheBytes,  // MemTotal - MemFree (node_memory_usage_with_page_cache)
  kSystemCpuCores,
  kSystemMemoryBytes,
  kBeCpuUsageMilli,
  kBeCpuRequestMilli,
  kBeCpuRealLimitMilli,
  kNodeGpuCore,         // detail = GPU minor; percent of the time a kernel ran
  kNodeGpuMemoryBytes,  // detail = GPU minor
  // Pod level (owner = pod uid), kept for podRetention.
  kPodCpuCores,
  kPodMemoryBytes,
  kPodCpuThrottledRatio,
  kPodPsi,  // detail = "<resource>/<degree>/<window>", e.g. "cpu/some/avg10"
  // Container level (owner = container id), kept for podRetention.
  kContainerCpuCores,
  kContainerMemoryBytes,
  kContainerCpuThrottledRatio,
  kContainerPsi,
  // GPU use by a pod (owner pod uid) or container (owner container id), detail = minor.
  kPodGpuCore,
  kPodGpuMemoryBytes,
  kContainerGpuCore,
  kContainerGpuMemoryBytes,
  // Host application level (owner = "hostapp/<name>"), kept for podRetention.
  kHostAppCpuCores,
  kHostAppMemoryBytes,               // memory.stat anon + unevictable
  kHostAppMemoryWithPageCacheBytes,  // memory.usage_in_bytes / memory.current
  // A pod's memory with page cache (memory.stat anon + unevictable + active_file +
  // inactive_file), kept only while the NodeMetric asks for usageWithPageCache.
  kPodMemoryWithPageCacheBytes,
};

bool isNodeLevel(MetricKind kind);

struct SeriesKey {
  MetricKind kind;
  std::string owner;   // "" (node), pod uid or container id
  std::string detail;  // "" unless the kind has sub-series (PSI)
  bool operator<(const SeriesKey& o) const;
};

enum class Aggregation { kLast, kAvg, kP50, kP90, kP95, kP99, kCount };

class MetricCache {
 public:
  struct Config {
    std::chrono::nanoseconds interval = std::chrono::seconds(1);
    std::chrono::nanoseconds nodeRetention = std::chrono::minutes(30);
    std::chrono::nanoseconds podRetention = std::chrono::minutes(5);
  };
  // Bookkeeping per series besides its ring and key text: the hash node with its
  // bucket slot (about 140 bytes by its layout: the key, the ring's header, the
  // next pointer and cached hash), allocator headers of the node, the ring and long
  // keys. Chosen
  // so bytesUsed() is an upper bound, not an estimate.
  static constexpr size_t kSeriesOverheadBytes = 192;

  MetricCache(Config config, Clock::Monotonic epoch);

  // Records one sample. A sample older than the ring's window is dropped; one in
  // an already filled slot replaces it. NaN and infinities are ignored.
  void append(const SeriesKey& key, Clock::Monotonic at, double value);
  // The same, without building a key: the hot path appends thousands a second.
  void append(MetricKind kind, std::string_view owner, std::string_view detail, Clock::Monotonic at,
              double value);

  // Aggregates the points with timestamps in [from, to]; nullopt when none.
  std::optional<double> query(const SeriesKey& key, Aggregation agg, Clock::Monotonic from,
                              Clock::Monotonic to) const;

  // The newest point of a series with its time (the centre of its slot, so within
  // half an interval of when it was taken); nullopt when the series has none.
  // Strategies judge freshness from it (koordlet: "last" samples at most 2 s old).
  struct Point {
    double value;
    Clock::Monotonic at;
  };
  std::optional<Point> latest(const SeriesKey& key) const;
  // The same, without building a key (a QoS snapshot asks for thousands a second).
  std::optional<Point> latest(MetricKind kind, std::string_view owner,
                              std::string_view detail = {}) const;

  // Everything NodeMetric reports of one series over [from, to], from one pass and
  // one sort: the mean, koordlet's percentiles (same index rule as query()) and the
  // times of the first and last point (slot centres), whose difference is the data
  // span koordlet's cold-start filter compares with the window. nullopt when none.
  struct Summary {
    size_t count = 0;
    double avg = 0;
    double p50 = 0;
    double p90 = 0;
    double p95 = 0;
    double p99 = 0;
    Clock::Monotonic first{};
    Clock::Monotonic last{};
    Clock::Monotonic::duration span() const { return last - first; }
  };
  std::optional<Summary> summarize(const SeriesKey& key, Clock::Monotonic from,
                                   Clock::Monotonic to) const;

  // Frees every series of owners not in `live` (pods or containers that are gone).
  // Node-level series are never dropped. Returns the number of series freed.
  size_t retainOwners(const std::set<std::string, std::less<>>& live);
  // The same with a predicate, so callers need not copy every owner into a set.
  size_t retainOwnersIf(const std::function<bool(std::string_view)>& isLive);

  size_t seriesCount() const { return series_.size(); }
  size_t bytesUsed() const;
  // Slots of one ring of this kind (retention / interval, at least 1).
  size_t capacity(MetricKind kind) const;

 private:
  struct Ring {
    int64_t lastSlot = 0;
    std::vector<float> values;  // capacity; NaN = no sample in that slot
    size_t filled = 0;          // non-empty slots, so count needs no scan
  };
  int64_t slotOf(Clock::Monotonic t) const;
  Clock::Monotonic timeOfSlot(int64_t slot) const;
  // The filled-or-not slots of a ring inside [from, to]: lo..lo+n-1, n >= 1.
  struct SlotRange {
    int64_t lo = 0;
    uint64_t n = 0;
  };
  std::optional<SlotRange> rangeOf(const Ring& ring, Clock::Monotonic from,
                                   Clock::Monotonic to) const;

  struct SeriesKeyView {
    MetricKind kind;
    std::string_view owner;
    std::string_view detail;
  };
  // Hashed, and found by view: a round's thousands of appends compare no string
  // but the one they find, and copy none (an ordered map compared ~12 a lookup).
  struct SeriesHash {
    using is_transparent = void;
    size_t operator()(const SeriesKey& k) const;
    size_t operator()(const SeriesKeyView& k) const;
  };
  struct SeriesEqual {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return a.kind == b.kind && std::string_view(a.owner) == std::string_view(b.owner) &&
             std::string_view(a.detail) == std::string_view(b.detail);
    }
  };

  Config config_;
  Clock::Monotonic epoch_;
  std::unordered_map<SeriesKey, Ring, SeriesHash, SeriesEqual> series_;
};

}  // namespace koord
