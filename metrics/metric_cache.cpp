// MetricCache: slot-indexed rings of floats; see metric_cache.h for the design.
//
// Precision: values are stored as float (24-bit significand), which is what keeps a
// series at 4 bytes a slot. Integers up to 2^24 are exact; above that a stored value
// is within half a float spacing of the sample: memory bytes near 16 GiB (2^34) are
// 2 KiB apart, so a reading is off by at most 1 KiB (about 6e-8 relative); CPU
// cores near 64 by at most 4e-6 cores. QoS thresholds are percentages of node
// capacity, so this never changes a decision. Finite doubles beyond float range
// (over 3.4e38, no real metric) would become infinities and are ignored like them.
//
// Slot arithmetic is overflow-safe: time points far from the epoch (such as
// Monotonic::min() as "since forever" in a query) saturate instead of wrapping.
#include "metrics/metric_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace koord {

namespace {

constexpr float kEmpty = std::numeric_limits<float>::quiet_NaN();
constexpr int64_t kMinSlot = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxSlot = std::numeric_limits<int64_t>::max();

// Ring position of a slot; slots before the epoch are negative, so this is the
// mathematical modulo (always in [0, cap)), not C++'s truncating %.
size_t positionOf(int64_t slot, size_t cap) {
  const auto c = static_cast<int64_t>(cap);
  int64_t r = slot % c;
  if (r < 0) r += c;
  return static_cast<size_t>(r);
}

// koordlet's percentile rule (metriccache/util.go): sort ascending, take index
// int(n × p) − 1 clamped to 0, no interpolation. koordlet multiplies in float32
// (float32(len) * percentile with percentile a float32), so we do too, which keeps
// the index identical for every n rather than only for the round ones.
size_t percentileIndex(size_t n, float p) {
  const auto idx = static_cast<int64_t>(static_cast<float>(n) * p) - 1;
  return static_cast<size_t>(std::clamp<int64_t>(idx, 0, static_cast<int64_t>(n) - 1));
}

float percentileOf(Aggregation agg) {
  switch (agg) {
    case Aggregation::kP50:
      return 0.5F;
    case Aggregation::kP90:
      return 0.9F;
    case Aggregation::kP95:
      return 0.95F;
    case Aggregation::kP99:
      return 0.99F;
    default:
      return 0.0F;
  }
}

}  // namespace

bool isNodeLevel(MetricKind kind) {
  switch (kind) {
    case MetricKind::kNodeCpuCores:
    case MetricKind::kNodeMemoryBytes:
    case MetricKind::kNodeMemoryWithPageCacheBytes:
    case MetricKind::kSystemCpuCores:
    case MetricKind::kSystemMemoryBytes:
    case MetricKind::kBeCpuUsageMilli:
    case MetricKind::kBeCpuRequestMilli:
    case MetricKind::kBeCpuRealLimitMilli:
    case MetricKind::kNodeGpuCore:
    case MetricKind::kNodeGpuMemoryBytes:
      return true;
    case MetricKind::kPodCpuCores:
    case MetricKind::kPodMemoryBytes:
    case MetricKind::kPodCpuThrottledRatio:
    case MetricKind::kPodPsi:
    case MetricKind::kContainerCpuCores:
    case MetricKind::kContainerMemoryBytes:
    case MetricKind::kContainerCpuThrottledRatio:
    case MetricKind::kContainerPsi:
    case MetricKind::kPodGpuCore:
    case MetricKind::kPodGpuMemoryBytes:
    case MetricKind::kContainerGpuCore:
    case MetricKind::kContainerGpuMemoryBytes:
    case MetricKind::kHostAppCpuCores:
    case MetricKind::kHostAppMemoryBytes:
    case MetricKind::kHostAppMemoryWithPageCacheBytes:
    case MetricKind::kPodMemoryWithPageCacheBytes:
      return false;
  }
  return false;
}

bool SeriesKey::operator<(const SeriesKey& o) const {
  return std::tie(kind, owner, detail) < std::tie(o.kind, o.owner, o.detail);
}

namespace {
size_t hashKey(MetricKind kind, std::string_view owner, std::string_view detail) {
  const std::hash<std::string_view> h;
  size_t seed = h(owner);
  seed ^= h(detail) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
  return seed ^ (static_cast<size_t>(kind) * 0x9e3779b97f4a7c15ULL);
}
}  // namespace

size_t MetricCache::SeriesHash::operator()(const SeriesKey& k) const {
  return hashKey(k.kind, k.owner, k.detail);
}
size_t MetricCache::SeriesHash::operator()(const SeriesKeyView& k) const {
  return hashKey(k.kind, k.owner, k.detail);
}

// A non-positive interval would make every slot computation divide by zero; it is a
// configuration error caught at flag validation, so here it only degrades to 1 ns.
MetricCache::MetricCache(Config config, Clock::Monotonic epoch) : config_(config), epoch_(epoch) {
  if (config_.interval.count() <= 0) config_.interval = std::chrono::nanoseconds(1);
}

size_t MetricCache::capacity(MetricKind kind) const {
  const auto retention = isNodeLevel(kind) ? config_.nodeRetention : config_.podRetention;
  const int64_t slots = retention / config_.interval;
  return static_cast<size_t>(std::max<int64_t>(slots, 1));
}

// round((t − epoch) / interval), ties upwards: slot k holds [k·i − i/2, k·i + i/2),
// the same width on both sides of the epoch, so jitter below half an interval
// never moves a sample into a neighbour's slot.
int64_t MetricCache::slotOf(Clock::Monotonic t) const {
  const int64_t interval = config_.interval.count();
  const int64_t tn =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const int64_t en =
      std::chrono::duration_cast<std::chrono::nanoseconds>(epoch_.time_since_epoch()).count();
  int64_t d = 0;
  if (__builtin_sub_overflow(tn, en, &d)) return tn < en ? kMinSlot : kMaxSlot;
  int64_t q = d / interval;
  int64_t r = d % interval;
  if (r < 0) {  // floor division
    q -= 1;
    r += interval;
  }
  if (r >= interval - r) q += 1;  // r >= interval / 2 without overflow
  return q;
}

void MetricCache::append(const SeriesKey& key, Clock::Monotonic at, double value) {
  append(key.kind, key.owner, key.detail, at, value);
}

void MetricCache::append(MetricKind kind, std::string_view owner, std::string_view detail,
                         Clock::Monotonic at, double value) {
  if (!std::isfinite(value)) return;
  const auto stored = static_cast<float>(value);
  if (!std::isfinite(stored)) return;

  const int64_t slot = slotOf(at);
  const size_t cap = capacity(kind);
  // Found by view: the key's strings are copied only when the series is created.
  auto it = series_.find(SeriesKeyView{kind, owner, detail});
  if (it == series_.end()) {
    it = series_.emplace(SeriesKey{kind, std::string(owner), std::string(detail)}, Ring{}).first;
    it->second.values.assign(cap, kEmpty);
    it->second.lastSlot = slot;
  }
  Ring& ring = it->second;

  if (slot > ring.lastSlot) {
    // Advance: the slots between the old newest and this one had no sample (a
    // missed round) and hold whatever they held one lap ago, so they are cleared.
    // A gap of a lap or more clears the whole ring: O(capacity), not O(gap).
    const uint64_t gap = static_cast<uint64_t>(slot) - static_cast<uint64_t>(ring.lastSlot);
    if (gap >= cap) {
      std::fill(ring.values.begin(), ring.values.end(), kEmpty);
      ring.filled = 0;
    } else {
      size_t pos = positionOf(ring.lastSlot, cap);
      for (uint64_t k = 0; k < gap; ++k) {
        pos = pos + 1 == cap ? 0 : pos + 1;
        if (!std::isnan(ring.values[pos])) --ring.filled;
        ring.values[pos] = kEmpty;
      }
    }
    ring.lastSlot = slot;
  } else if (static_cast<uint64_t>(ring.lastSlot) - static_cast<uint64_t>(slot) >= cap) {
    return;  // older than the ring's window: that slot's storage belongs to a newer one
  }

  float& cell = ring.values[positionOf(slot, cap)];
  if (std::isnan(cell)) ++ring.filled;
  cell = stored;
}

std::optional<MetricCache::Point> MetricCache::latest(const SeriesKey& key) const {
  return latest(key.kind, key.owner, key.detail);
}

std::optional<MetricCache::Point> MetricCache::latest(MetricKind kind, std::string_view owner,
                                                      std::string_view detail) const {
  const auto it = series_.find(SeriesKeyView{kind, owner, detail});
  if (it == series_.end() || it->second.filled == 0) return std::nullopt;
  const Ring& ring = it->second;
  // append() never leaves the newest slot empty (NaN is refused), so lastSlot holds
  // the newest point.
  const float v = ring.values[positionOf(ring.lastSlot, ring.values.size())];
  if (std::isnan(v)) return std::nullopt;
  return Point{v, timeOfSlot(ring.lastSlot)};
}

// Slots that hold samples are within a ring's length of a real sample time, so the
// product cannot overflow.
Clock::Monotonic MetricCache::timeOfSlot(int64_t slot) const {
  const auto offset = std::chrono::nanoseconds(slot * config_.interval.count());
  return epoch_ + std::chrono::duration_cast<Clock::Monotonic::duration>(offset);
}

std::optional<MetricCache::SlotRange> MetricCache::rangeOf(const Ring& ring, Clock::Monotonic from,
                                                           Clock::Monotonic to) const {
  const size_t cap = ring.values.size();
  // The live window is (lastSlot − cap, lastSlot]; intersect [from, to] with it.
  int64_t oldest = 0;
  if (__builtin_sub_overflow(ring.lastSlot, static_cast<int64_t>(cap) - 1, &oldest)) {
    oldest = kMinSlot;
  }
  const int64_t lo = std::max(slotOf(from), oldest);
  const int64_t hi = std::min(slotOf(to), ring.lastSlot);
  if (lo > hi) return std::nullopt;
  return SlotRange{lo, static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1};  // n <= cap
}

std::optional<double> MetricCache::query(const SeriesKey& key, Aggregation agg,
                                         Clock::Monotonic from, Clock::Monotonic to) const {
  const auto it = series_.find(key);
  if (it == series_.end()) return std::nullopt;
  const Ring& ring = it->second;
  const size_t cap = ring.values.size();
  const auto range = rangeOf(ring, from, to);
  if (!range) return std::nullopt;
  const int64_t hi = range->lo + static_cast<int64_t>(range->n) - 1;
  const uint64_t n = range->n;
  const size_t first = positionOf(range->lo, cap);

  // Visits the slots lo..hi in time order (newest last), skipping empty ones.
  auto forEach = [&](auto&& fn) {
    size_t pos = first;
    for (uint64_t k = 0; k < n; ++k) {
      if (!std::isnan(ring.values[pos])) fn(ring.values[pos]);
      pos = pos + 1 == cap ? 0 : pos + 1;
    }
  };

  switch (agg) {
    case Aggregation::kLast: {
      size_t pos = positionOf(hi, cap);
      for (uint64_t k = 0; k < n; ++k) {
        if (!std::isnan(ring.values[pos])) return ring.values[pos];
        pos = pos == 0 ? cap - 1 : pos - 1;
      }
      return std::nullopt;
    }
    case Aggregation::kCount: {
      size_t count = 0;
      if (n == cap) {
        count = ring.filled;  // the whole ring is in range
      } else {
        forEach([&](float) { ++count; });
      }
      if (count == 0) return std::nullopt;
      return static_cast<double>(count);
    }
    case Aggregation::kAvg: {
      double sum = 0;
      size_t count = 0;
      forEach([&](float v) {
        sum += v;
        ++count;
      });
      if (count == 0) return std::nullopt;
      return sum / static_cast<double>(count);
    }
    case Aggregation::kP50:
    case Aggregation::kP90:
    case Aggregation::kP95:
    case Aggregation::kP99: {
      // The one allocation a query makes. Selecting the k-th smallest gives the
      // element a full ascending sort would put at index k.
      std::vector<float> points;
      points.reserve(static_cast<size_t>(n));
      forEach([&](float v) { points.push_back(v); });
      if (points.empty()) return std::nullopt;
      const size_t idx = percentileIndex(points.size(), percentileOf(agg));
      std::nth_element(points.begin(), points.begin() + static_cast<ptrdiff_t>(idx), points.end());
      return points[idx];
    }
  }
  return std::nullopt;
}

std::optional<MetricCache::Summary> MetricCache::summarize(const SeriesKey& key,
                                                           Clock::Monotonic from,
                                                           Clock::Monotonic to) const {
  const auto it = series_.find(key);
  if (it == series_.end()) return std::nullopt;
  const Ring& ring = it->second;
  const size_t cap = ring.values.size();
  const auto range = rangeOf(ring, from, to);
  if (!range) return std::nullopt;

  std::vector<float> points;
  points.reserve(static_cast<size_t>(range->n));
  double sum = 0;
  int64_t firstSlot = 0;
  int64_t lastSlot = 0;
  size_t pos = positionOf(range->lo, cap);
  for (uint64_t k = 0; k < range->n; ++k) {
    const float v = ring.values[pos];
    if (!std::isnan(v)) {
      const int64_t slot = range->lo + static_cast<int64_t>(k);
      if (points.empty()) firstSlot = slot;
      lastSlot = slot;
      points.push_back(v);
      sum += v;
    }
    pos = pos + 1 == cap ? 0 : pos + 1;
  }
  if (points.empty()) return std::nullopt;

  // One full sort serves the four indices (nth_element four times would not be
  // cheaper at these sizes and gives the same elements).
  std::sort(points.begin(), points.end());
  const size_t n = points.size();
  Summary s;
  s.count = n;
  s.avg = sum / static_cast<double>(n);
  s.p50 = points[percentileIndex(n, 0.5F)];
  s.p90 = points[percentileIndex(n, 0.9F)];
  s.p95 = points[percentileIndex(n, 0.95F)];
  s.p99 = points[percentileIndex(n, 0.99F)];
  s.first = timeOfSlot(firstSlot);
  s.last = timeOfSlot(lastSlot);
  return s;
}

size_t MetricCache::retainOwners(const std::set<std::string, std::less<>>& live) {
  return retainOwnersIf([&](std::string_view o) { return live.contains(o); });
}

size_t MetricCache::retainOwnersIf(const std::function<bool(std::string_view)>& isLive) {
  size_t freed = 0;
  for (auto it = series_.begin(); it != series_.end();) {
    const SeriesKey& k = it->first;
    if (!isNodeLevel(k.kind) && !k.owner.empty() && !isLive(k.owner)) {
      it = series_.erase(it);
      ++freed;
    } else {
      ++it;
    }
  }
  return freed;
}

size_t MetricCache::bytesUsed() const {
  size_t total = 0;
  for (const auto& [key, ring] : series_) {
    total += capacity(key.kind) * sizeof(float) + kSeriesOverheadBytes + key.owner.size() +
             key.detail.size();
  }
  return total;
}

}  // namespace koord
