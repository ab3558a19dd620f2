#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "base/clock.h"
#include "metrics/metric_cache.h"

namespace test_metrics_metric_cache {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

const SeriesKey kNodeCpu{MetricKind::kNodeCpuCores, "", ""};
const SeriesKey kPodCpu{MetricKind::kPodCpuCores, "pod-a", ""};

constexpr auto kForever = Clock::Monotonic::min();
constexpr auto kEnd = Clock::Monotonic::max();

// Default config: interval 1s, node retention 30m (1800 slots), pod 5m (300 slots).
MetricCache::Config defaults() { return MetricCache::Config{}; }

// Appends value(i) once a second for n rounds, the first at the clock's current time,
// and leaves the clock at the last sample.
template <typename F>
void appendEverySecond(MetricCache& cache, ManualClock& clock, const SeriesKey& key, int n,
                       F value) {
  for (int i = 0; i < n; ++i) {
    if (i > 0) clock.advance(1s);
    cache.append(key, clock.now(), value(i));
  }
}

double q(const MetricCache& cache, const SeriesKey& key, Aggregation agg, Clock::Monotonic from,
         Clock::Monotonic to) {
  const auto r = cache.query(key, agg, from, to);
  REQUIRE(r.has_value());
  return *r;
}

// The formula bytesUsed() promises for one series.
size_t seriesBytes(size_t capacity, const SeriesKey& key) {
  return capacity * sizeof(float) + MetricCache::kSeriesOverheadBytes + key.owner.size() +
         key.detail.size();
}

std::string podUid(int i) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-0000-4000-8000-%012x", static_cast<unsigned>(i),
                static_cast<unsigned>(i));
  return buf;  // 36 characters, the shape of a Kubernetes uid
}

std::string containerId(int pod, int c) {
  std::string id(64, '0');  // containerd/docker ids are 64 hex digits
  const std::string tail = std::to_string(pod) + "c" + std::to_string(c);
  id.replace(id.size() - tail.size(), tail.size(), tail);
  return id;
}

}  // namespace

TEST_CASE("last, avg and count aggregate only the points inside the query window", "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);
  appendEverySecond(cache, clock, kNodeCpu, 10, [](int i) { return i + 1.0; });  // 1..10

  CHECK(q(cache, kNodeCpu, Aggregation::kLast, t0, t0 + 9s) == 10.0);
  CHECK(q(cache, kNodeCpu, Aggregation::kAvg, t0, t0 + 9s) == Approx(5.5));
  CHECK(q(cache, kNodeCpu, Aggregation::kCount, t0, t0 + 9s) == 10.0);

  // [3s, 5s] holds the samples 4, 5, 6; the bounds are inclusive.
  CHECK(q(cache, kNodeCpu, Aggregation::kLast, t0 + 3s, t0 + 5s) == 6.0);
  CHECK(q(cache, kNodeCpu, Aggregation::kAvg, t0 + 3s, t0 + 5s) == Approx(5.0));
  CHECK(q(cache, kNodeCpu, Aggregation::kCount, t0 + 3s, t0 + 5s) == 3.0);

  // Open-ended bounds saturate instead of overflowing.
  CHECK(q(cache, kNodeCpu, Aggregation::kCount, kForever, kEnd) == 10.0);

  CHECK_FALSE(cache.query(kNodeCpu, Aggregation::kAvg, t0 + 20s, t0 + 30s).has_value());
  CHECK_FALSE(cache.query(kNodeCpu, Aggregation::kLast, t0 + 5s, t0 + 3s).has_value());
  CHECK_FALSE(cache.query(kPodCpu, Aggregation::kCount, kForever, kEnd).has_value());
}

TEST_CASE("percentiles take koordlet's sorted index int(n*p)-1 without interpolation", "[cache]") {
  // Values are 10·(rank+1), written in a scrambled time order (stride 7 is coprime
  // with every n here), so the answer names the sorted index it came from.
  auto fill = [](MetricCache& cache, ManualClock& clock, int n) {
    appendEverySecond(cache, clock, kNodeCpu, n, [n](int i) { return 10.0 * ((i * 7) % n + 1); });
  };
  auto pct = [](const MetricCache& cache, Aggregation agg) {
    return q(cache, kNodeCpu, agg, kForever, kEnd);
  };

  SECTION("one point: every percentile is that point (index 0)") {
    ManualClock clock;
    MetricCache cache(defaults(), clock.now());
    fill(cache, clock, 1);
    CHECK(pct(cache, Aggregation::kP50) == 10.0);
    CHECK(pct(cache, Aggregation::kP90) == 10.0);
    CHECK(pct(cache, Aggregation::kP95) == 10.0);
    CHECK(pct(cache, Aggregation::kP99) == 10.0);
  }
  SECTION("two points: int(2p)-1 is 0 for every p below 1, the smaller point") {
    ManualClock clock;
    MetricCache cache(defaults(), clock.now());
    fill(cache, clock, 2);
    CHECK(pct(cache, Aggregation::kP50) == 10.0);  // int(1.0) - 1 = 0
    CHECK(pct(cache, Aggregation::kP90) == 10.0);  // int(1.8) - 1 = 0
    CHECK(pct(cache, Aggregation::kP95) == 10.0);  // int(1.9) - 1 = 0
    CHECK(pct(cache, Aggregation::kP99) == 10.0);  // int(1.98) - 1 = 0
  }
  SECTION("ten points") {
    ManualClock clock;
    MetricCache cache(defaults(), clock.now());
    fill(cache, clock, 10);
    CHECK(pct(cache, Aggregation::kP50) == 50.0);  // int(5.0) - 1 = 4
    CHECK(pct(cache, Aggregation::kP90) == 90.0);  // int(9.0) - 1 = 8
    CHECK(pct(cache, Aggregation::kP95) == 90.0);  // int(9.5) - 1 = 8
    CHECK(pct(cache, Aggregation::kP99) == 90.0);  // int(9.9) - 1 = 8, not the max
  }
  SECTION("a hundred points") {
    ManualClock clock;
    MetricCache cache(defaults(), clock.now());
    fill(cache, clock, 100);
    CHECK(pct(cache, Aggregation::kP50) == 500.0);  // index 49
    CHECK(pct(cache, Aggregation::kP90) == 900.0);  // index 89
    CHECK(pct(cache, Aggregation::kP95) == 950.0);  // index 94
    CHECK(pct(cache, Aggregation::kP99) == 990.0);  // index 98
    CHECK(pct(cache, Aggregation::kAvg) == Approx(505.0));
  }
}

TEST_CASE("a window reaching past retention sees only the retained slots", "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);
  REQUIRE(cache.capacity(kPodCpu.kind) == 300);
  appendEverySecond(cache, clock, kPodCpu, 400, [](int i) { return double(i); });  // slot i = i

  // Slots 100..399 are retained.
  CHECK(q(cache, kPodCpu, Aggregation::kCount, t0, t0 + 399s) == 300.0);
  CHECK(q(cache, kPodCpu, Aggregation::kAvg, t0, t0 + 399s) == Approx(249.5));
  CHECK(q(cache, kPodCpu, Aggregation::kCount, t0 - 100s, t0 + 150s) == 51.0);  // 100..150
  CHECK(q(cache, kPodCpu, Aggregation::kAvg, t0 - 100s, t0 + 150s) == Approx(125.0));
  CHECK(q(cache, kPodCpu, Aggregation::kP50, t0 - 100s, t0 + 150s) == 124.0);  // index 24
  CHECK(q(cache, kPodCpu, Aggregation::kLast, t0 + 350s, t0 + 1h) == 399.0);
  CHECK_FALSE(cache.query(kPodCpu, Aggregation::kCount, t0, t0 + 99s).has_value());
}

TEST_CASE("a missed round leaves an empty slot instead of shifting history", "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);
  for (int i = 0; i < 6; ++i) {
    if (i != 3) cache.append(kNodeCpu, clock.now(), 100.0 + i);  // round 3 is missed
    clock.advance(1s);
  }

  CHECK(q(cache, kNodeCpu, Aggregation::kCount, t0, t0 + 5s) == 5.0);
  CHECK_FALSE(cache.query(kNodeCpu, Aggregation::kLast, t0 + 3s, t0 + 3s).has_value());
  CHECK(q(cache, kNodeCpu, Aggregation::kLast, t0, t0 + 3s) == 102.0);
  CHECK(q(cache, kNodeCpu, Aggregation::kLast, t0 + 4s, t0 + 4s) == 104.0);
  CHECK(q(cache, kNodeCpu, Aggregation::kAvg, t0, t0 + 5s) ==
        Approx((100 + 101 + 102 + 104 + 105) / 5.0));
}

TEST_CASE("timestamps jittered by up to 30% of the interval land in their own slots", "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);
  const std::chrono::milliseconds jitter[] = {-300ms, 300ms, -299ms, 0ms, 250ms, -150ms, 300ms};
  for (int i = 0; i < 100; ++i) {
    const auto j = jitter[i % 7];
    clock.advance(j);
    cache.append(kNodeCpu, clock.now(), double(i));
    clock.advance(1s - j);
  }

  CHECK(q(cache, kNodeCpu, Aggregation::kCount, kForever, kEnd) == 100.0);
  for (int i = 0; i < 100; ++i) {
    INFO("slot " << i);
    const auto at = t0 + std::chrono::seconds(i);
    CHECK(q(cache, kNodeCpu, Aggregation::kLast, at, at) == double(i));
  }

  SECTION("a slot spans [k - 1/2, k + 1/2) intervals around its centre") {
    MetricCache edges(defaults(), t0);
    edges.append(kNodeCpu, t0 - 500ms, 1.0);  // slot 0
    edges.append(kNodeCpu, t0 + 499ms, 2.0);  // slot 0, replaces
    edges.append(kNodeCpu, t0 + 500ms, 3.0);  // slot 1
    CHECK(q(edges, kNodeCpu, Aggregation::kCount, kForever, kEnd) == 2.0);
    CHECK(q(edges, kNodeCpu, Aggregation::kLast, t0, t0) == 2.0);
    CHECK(q(edges, kNodeCpu, Aggregation::kLast, t0 + 1s, t0 + 1s) == 3.0);
  }
}

TEST_CASE("a second sample for a slot replaces the first", "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);
  appendEverySecond(cache, clock, kNodeCpu, 6, [](int i) { return double(i); });  // 0..5

  cache.append(kNodeCpu, t0 + 5s + 200ms, 50.0);  // the newest slot
  cache.append(kNodeCpu, t0 + 2s, 20.0);          // an older slot, still retained
  CHECK(q(cache, kNodeCpu, Aggregation::kCount, kForever, kEnd) == 6.0);
  CHECK(q(cache, kNodeCpu, Aggregation::kLast, kForever, kEnd) == 50.0);
  CHECK(q(cache, kNodeCpu, Aggregation::kLast, t0 + 2s, t0 + 2s) == 20.0);
  CHECK(q(cache, kNodeCpu, Aggregation::kAvg, kForever, kEnd) ==
        Approx((0 + 1 + 20 + 3 + 4 + 50) / 6.0));
}

TEST_CASE("late samples inside the window are kept and older ones dropped", "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);  // pod rings: 300 slots

  cache.append(kPodCpu, t0 + 10s, 10.0);
  cache.append(kPodCpu, t0 + 5s, 5.0);  // out of order, within the window
  CHECK(q(cache, kPodCpu, Aggregation::kCount, kForever, kEnd) == 2.0);
  CHECK(q(cache, kPodCpu, Aggregation::kLast, kForever, kEnd) == 10.0);  // newest slot wins

  cache.append(kPodCpu, t0 + 400s, 400.0);  // the window is now slots 101..400
  cache.append(kPodCpu, t0 + 100s, 100.0);  // too old: dropped
  CHECK(q(cache, kPodCpu, Aggregation::kCount, kForever, kEnd) == 1.0);
  CHECK_FALSE(cache.query(kPodCpu, Aggregation::kLast, kForever, t0 + 399s).has_value());

  cache.append(kPodCpu, t0 + 101s, 101.0);  // the oldest retained slot: kept
  CHECK(q(cache, kPodCpu, Aggregation::kCount, kForever, kEnd) == 2.0);
  CHECK(q(cache, kPodCpu, Aggregation::kLast, kForever, t0 + 399s) == 101.0);
  CHECK(q(cache, kPodCpu, Aggregation::kLast, kForever, kEnd) == 400.0);
}

TEST_CASE("advancing past a gap clears the skipped slots and a gap of hours clears the ring",
          "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);

  SECTION("a short gap clears only what it skips") {
    appendEverySecond(cache, clock, kPodCpu, 300, [](int i) { return double(i); });  // 0..299
    cache.append(kPodCpu, t0 + 310s, 310.0);  // window 11..310: 11..299 retained, 300..309 empty
    CHECK(q(cache, kPodCpu, Aggregation::kCount, kForever, kEnd) == 290.0);
    CHECK(q(cache, kPodCpu, Aggregation::kCount, t0 + 12s, kEnd) == 289.0);
    CHECK_FALSE(cache.query(kPodCpu, Aggregation::kCount, t0 + 300s, t0 + 309s).has_value());
    CHECK(q(cache, kPodCpu, Aggregation::kLast, t0, t0 + 309s) == 299.0);
  }
  SECTION("hours of silence leave only the new sample") {
    appendEverySecond(cache, clock, kNodeCpu, 1800, [](int) { return 1.0; });
    CHECK(q(cache, kNodeCpu, Aggregation::kCount, kForever, kEnd) == 1800.0);
    clock.advance(3h);
    cache.append(kNodeCpu, clock.now(), 7.0);
    CHECK(q(cache, kNodeCpu, Aggregation::kCount, kForever, kEnd) == 1.0);
    CHECK(q(cache, kNodeCpu, Aggregation::kAvg, clock.now() - 30min, clock.now()) == 7.0);
    CHECK_FALSE(cache.query(kNodeCpu, Aggregation::kCount, kForever, t0 + 1h).has_value());
  }
}

TEST_CASE("node series keep node retention and pod and container series pod retention", "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);
  CHECK(cache.capacity(MetricKind::kNodeCpuCores) == 1800);
  CHECK(cache.capacity(MetricKind::kBeCpuRealLimitMilli) == 1800);
  CHECK(cache.capacity(MetricKind::kPodCpuCores) == 300);
  CHECK(cache.capacity(MetricKind::kContainerPsi) == 300);
  CHECK(isNodeLevel(MetricKind::kSystemMemoryBytes));
  CHECK(isNodeLevel(MetricKind::kNodeMemoryWithPageCacheBytes));
  CHECK_FALSE(isNodeLevel(MetricKind::kPodPsi));
  CHECK_FALSE(isNodeLevel(MetricKind::kContainerMemoryBytes));

  const SeriesKey container{MetricKind::kContainerCpuCores, "c-1", ""};
  for (int i = 0; i < 2000; ++i) {
    const auto at = t0 + std::chrono::seconds(i);
    cache.append(kNodeCpu, at, 1.0);
    cache.append(kPodCpu, at, 1.0);
    cache.append(container, at, 1.0);
  }
  CHECK(q(cache, kNodeCpu, Aggregation::kCount, kForever, kEnd) == 1800.0);
  CHECK(q(cache, kPodCpu, Aggregation::kCount, kForever, kEnd) == 300.0);
  CHECK(q(cache, container, Aggregation::kCount, kForever, kEnd) == 300.0);

  SECTION("capacity is retention over interval, at least one slot") {
    MetricCache::Config c;
    c.interval = 10s;
    CHECK(MetricCache(c, t0).capacity(MetricKind::kNodeMemoryBytes) == 180);
    CHECK(MetricCache(c, t0).capacity(MetricKind::kPodMemoryBytes) == 30);
    c.podRetention = 3s;
    CHECK(MetricCache(c, t0).capacity(MetricKind::kPodMemoryBytes) == 1);
  }
}

TEST_CASE("retainOwners frees vanished pods and containers but never node series", "[cache]") {
  ManualClock clock;
  MetricCache cache(defaults(), clock.now());
  const SeriesKey be{MetricKind::kBeCpuUsageMilli, "", ""};
  const SeriesKey podA{MetricKind::kPodMemoryBytes, "pod-a", ""};
  const SeriesKey podAPsi{MetricKind::kPodPsi, "pod-a", "cpu/some/avg10"};
  const SeriesKey podB{MetricKind::kPodMemoryBytes, "pod-b", ""};
  const SeriesKey podBPsi{MetricKind::kPodPsi, "pod-b", "mem/full/avg10"};
  const SeriesKey c1{MetricKind::kContainerCpuCores, "c-1", ""};
  const SeriesKey c2{MetricKind::kContainerCpuCores, "c-2", ""};
  for (const auto& k : {kNodeCpu, be, podA, podAPsi, podB, podBPsi, c1, c2}) {
    cache.append(k, clock.now(), 1.0);
  }
  REQUIRE(cache.seriesCount() == 8);
  const size_t before = cache.bytesUsed();

  CHECK(cache.retainOwners({"pod-a", "c-1"}) == 3);  // podB, podBPsi, c2
  CHECK(cache.seriesCount() == 5);
  CHECK(cache.bytesUsed() ==
        before - seriesBytes(300, podB) - seriesBytes(300, podBPsi) - seriesBytes(300, c2));
  CHECK_FALSE(cache.query(podB, Aggregation::kLast, kForever, kEnd).has_value());
  CHECK_FALSE(cache.query(c2, Aggregation::kLast, kForever, kEnd).has_value());
  CHECK(cache.query(podAPsi, Aggregation::kLast, kForever, kEnd).has_value());

  CHECK(cache.retainOwners({}) == 3);  // every pod and container is gone
  CHECK(cache.seriesCount() == 2);
  CHECK(cache.bytesUsed() == seriesBytes(1800, kNodeCpu) + seriesBytes(1800, be));
  CHECK(q(cache, kNodeCpu, Aggregation::kLast, kForever, kEnd) == 1.0);
  CHECK(cache.retainOwners({}) == 0);
}

TEST_CASE("bytesUsed equals capacity x 4 + overhead + key bytes summed over series", "[cache]") {
  ManualClock clock;
  MetricCache cache(defaults(), clock.now());
  CHECK(cache.bytesUsed() == 0);

  const SeriesKey pod{MetricKind::kPodCpuCores, "pod-uid-1", ""};           // owner 9
  const SeriesKey psi{MetricKind::kPodPsi, "pod-uid-1", "cpu/some/avg10"};  // 9 + 14
  appendEverySecond(cache, clock, kNodeCpu, 3, [](int) { return 1.0; });
  cache.append(pod, clock.now(), 1.0);
  cache.append(psi, clock.now(), 1.0);

  // node: 1800×4 + 192 = 7392; pod: 300×4 + 192 + 9 = 1401; psi: 1200 + 192 + 23 = 1415.
  CHECK(MetricCache::kSeriesOverheadBytes == 192);
  CHECK(cache.bytesUsed() == 7392 + 1401 + 1415);

  // Rings are allocated whole: more samples never change the figure.
  appendEverySecond(cache, clock, kNodeCpu, 2000, [](int) { return 2.0; });
  CHECK(cache.bytesUsed() == 10208);
}

TEST_CASE("NaN and infinite samples are ignored", "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);
  cache.append(kNodeCpu, t0, 1.0);
  cache.append(kNodeCpu, t0 + 1s, std::numeric_limits<double>::quiet_NaN());
  cache.append(kNodeCpu, t0 + 2s, std::numeric_limits<double>::infinity());
  cache.append(kNodeCpu, t0 + 3s, -std::numeric_limits<double>::infinity());
  cache.append(kNodeCpu, t0 + 4s, 1e300);  // finite, but beyond float range
  cache.append(kNodeCpu, t0, std::numeric_limits<double>::quiet_NaN());  // no overwrite

  CHECK(q(cache, kNodeCpu, Aggregation::kCount, kForever, kEnd) == 1.0);
  CHECK(q(cache, kNodeCpu, Aggregation::kLast, kForever, kEnd) == 1.0);
  CHECK_FALSE(cache.query(kNodeCpu, Aggregation::kCount, t0 + 1s, kEnd).has_value());

  // A series whose samples were all ignored is never created.
  cache.append(kPodCpu, t0, std::numeric_limits<double>::quiet_NaN());
  CHECK(cache.seriesCount() == 1);
}

TEST_CASE("samples before the epoch get negative slots and are kept", "[cache]") {
  ManualClock clock;
  const auto epoch = clock.now();
  MetricCache cache(defaults(), epoch);
  for (int i = -350; i <= -1; ++i) {
    cache.append(kPodCpu, epoch + std::chrono::seconds(i), double(i));
  }
  // Pod rings hold 300 slots: -300..-1.
  CHECK(q(cache, kPodCpu, Aggregation::kCount, kForever, kEnd) == 300.0);
  CHECK(q(cache, kPodCpu, Aggregation::kLast, kForever, kEnd) == -1.0);
  CHECK(q(cache, kPodCpu, Aggregation::kLast, epoch - 5s, epoch - 5s) == -5.0);
  CHECK(q(cache, kPodCpu, Aggregation::kAvg, epoch - 10s, epoch - 1s) == Approx(-5.5));
  CHECK_FALSE(cache.query(kPodCpu, Aggregation::kCount, kForever, epoch - 301s).has_value());

  // Crossing the epoch keeps history continuous.
  cache.append(kPodCpu, epoch - 600ms, 100.0);  // rounds to slot -1
  cache.append(kPodCpu, epoch - 400ms, 200.0);  // rounds to slot 0
  CHECK(q(cache, kPodCpu, Aggregation::kLast, epoch - 1s, epoch - 1s) == 100.0);
  CHECK(q(cache, kPodCpu, Aggregation::kLast, kForever, kEnd) == 200.0);
  CHECK(q(cache, kPodCpu, Aggregation::kCount, kForever, kEnd) == 300.0);  // -299..0
}

TEST_CASE("memory bytes are stored as floats within 1 KiB at 16 GiB", "[cache]") {
  ManualClock clock;
  MetricCache cache(defaults(), clock.now());
  const SeriesKey mem{MetricKind::kNodeMemoryBytes, "", ""};
  const double sixteenGiB = 16.0 * 1024 * 1024 * 1024;

  cache.append(mem, clock.now(), sixteenGiB + 1500);  // floats here are 2 KiB apart
  const double stored = q(cache, mem, Aggregation::kLast, kForever, kEnd);
  CHECK(stored == sixteenGiB + 2048);
  CHECK(std::abs(stored - (sixteenGiB + 1500)) <= 1024);

  clock.advance(1s);
  cache.append(mem, clock.now(), 16777216.0);  // 2^24: still exact
  CHECK(q(cache, mem, Aggregation::kLast, kForever, kEnd) == 16777216.0);
}

TEST_CASE("500 pods of 3 containers stay under 9 MiB at the default config", "[cache]") {
  ManualClock clock;
  MetricCache cache(defaults(), clock.now());
  const MetricKind podKinds[] = {MetricKind::kPodCpuCores, MetricKind::kPodMemoryBytes,
                                 MetricKind::kPodCpuThrottledRatio};
  const MetricKind containerKinds[] = {MetricKind::kContainerCpuCores,
                                       MetricKind::kContainerMemoryBytes,
                                       MetricKind::kContainerCpuThrottledRatio};
  for (int round = 0; round < 2; ++round) {
    for (int p = 0; p < 500; ++p) {
      for (auto kind : podKinds) cache.append({kind, podUid(p), ""}, clock.now(), 1.0);
      for (int c = 0; c < 3; ++c) {
        for (auto kind : containerKinds) {
          cache.append({kind, containerId(p, c), ""}, clock.now(), 1.0);
        }
      }
    }
    clock.advance(1s);
  }
  REQUIRE(cache.seriesCount() == 500 * (3 + 3 * 3));
  REQUIRE(podUid(499).size() == 36);
  REQUIRE(containerId(499, 2).size() == 64);

  // Per pod: 3 × (300×4 + 192 + 36) + 9 × (300×4 + 192 + 64) = 4284 + 13104 = 17388.
  const size_t expected = 500 * (3 * (300 * 4 + 192 + 36) + 9 * (300 * 4 + 192 + 64));
  CHECK(expected == 8'694'000);
  CHECK(cache.bytesUsed() == expected);
  CHECK(cache.bytesUsed() < 9u * 1024 * 1024);
  WARN("500 pods x (3 pod + 3 containers x 3) series: " << cache.bytesUsed() << " bytes");

  // The eight node series add 8 × (1800×4 + 192) = 59136 bytes, still under 9 MiB.
  for (int k = 0; k <= static_cast<int>(MetricKind::kBeCpuRealLimitMilli); ++k) {
    cache.append({static_cast<MetricKind>(k), "", ""}, clock.now(), 1.0);
  }
  CHECK(cache.bytesUsed() == expected + 59'136);
  CHECK(cache.bytesUsed() < 9u * 1024 * 1024);
  WARN("with the 8 node series: " << cache.bytesUsed() << " bytes");
}

TEST_CASE("latest gives the newest point with its slot time, so callers can judge freshness",
          "[cache]") {
  ManualClock clock;
  const auto epoch = clock.now();
  MetricCache cache(defaults(), epoch);
  CHECK_FALSE(cache.latest(kNodeCpu).has_value());
  cache.append(kNodeCpu, epoch + 3s + 100ms, 1.5);
  cache.append(kNodeCpu, epoch + 5s - 200ms, 2.5);
  auto p = cache.latest(kNodeCpu);
  REQUIRE(p.has_value());
  CHECK(p->value == Approx(2.5));
  CHECK(p->at == epoch + 5s);  // the slot's centre, 200 ms from when it was taken
  // A later round that produced no sample leaves the newest point where it was.
  CHECK(cache.latest(kNodeCpu)->at == epoch + 5s);
  CHECK_FALSE(cache.latest(kPodCpu).has_value());
}

TEST_CASE("summarize gives the mean, the percentiles and the data span in one pass", "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);
  // 1..100 in a shuffled order (37 is coprime to 100), one a second.
  appendEverySecond(cache, clock, kNodeCpu, 100, [](int i) { return (i * 37) % 100 + 1.0; });

  auto s = cache.summarize(kNodeCpu, t0, t0 + 99s);
  REQUIRE(s.has_value());
  CHECK(s->count == 100);
  CHECK(s->avg == Approx(50.5));
  CHECK(s->p50 == 50.0);  // sorted index int(100 × 0.5) − 1 = 49
  CHECK(s->p90 == 90.0);
  CHECK(s->p95 == 95.0);
  CHECK(s->p99 == 99.0);
  CHECK(s->first == t0);
  CHECK(s->last == t0 + 99s);
  CHECK(s->span() == 99s);

  // A missed round inside the window does not shorten the span; one at the edge does.
  cache.append(kNodeCpu, t0 + 100s, 7.0);  // 101st point
  auto tail = cache.summarize(kNodeCpu, t0 + 95s, t0 + 200s);
  REQUIRE(tail.has_value());
  CHECK(tail->first == t0 + 95s);
  CHECK(tail->last == t0 + 100s);
  CHECK(tail->count == 6);

  CHECK_FALSE(cache.summarize(kNodeCpu, t0 + 101s, t0 + 200s).has_value());
  CHECK_FALSE(cache.summarize(kPodCpu, kForever, kEnd).has_value());
}

TEST_CASE("summarize agrees with query for every aggregation on uneven windows", "[cache]") {
  ManualClock clock;
  const auto t0 = clock.now();
  MetricCache cache(defaults(), t0);
  // 2,000 rounds wrap the 1,800-slot ring; every seventh round is missed.
  for (int i = 0; i < 2000; ++i) {
    if (i % 7 != 3) cache.append(kNodeCpu, t0 + std::chrono::seconds(i), (i * 7919) % 1013 * 0.5);
  }
  for (int len : {1, 2, 7, 13, 100, 299, 1000, 1799, 1800, 5000}) {
    const auto to = t0 + 1999s;
    const auto from = to - std::chrono::seconds(len - 1);
    auto s = cache.summarize(kNodeCpu, from, to);
    REQUIRE(s.has_value());
    INFO("window of " << len << " s");
    CHECK(static_cast<double>(s->count) == q(cache, kNodeCpu, Aggregation::kCount, from, to));
    CHECK(s->avg == q(cache, kNodeCpu, Aggregation::kAvg, from, to));
    CHECK(s->p50 == q(cache, kNodeCpu, Aggregation::kP50, from, to));
    CHECK(s->p90 == q(cache, kNodeCpu, Aggregation::kP90, from, to));
    CHECK(s->p95 == q(cache, kNodeCpu, Aggregation::kP95, from, to));
    CHECK(s->p99 == q(cache, kNodeCpu, Aggregation::kP99, from, to));
  }
}

}  // namespace test_metrics_metric_cache
