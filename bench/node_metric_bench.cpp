// NodeMetric status benchmark (not a test): the cost of one report at N pods with a
// full cache. The MetricCache is filled as the agent fills it at the default 1 s
// interval: 30 min of the 8 node series (CPU, both memory figures, system CPU and
// memory, BE usage/request/limit) and, for each pod, the last 5 min (its retention)
// of pod CPU, memory and throttling plus 3 containers × the same 3 series. Then the
// status is built ROUNDS times with koordlet's default spec (aggregate 300 s,
// windows 5m/10m/30m) and serialised.
//
// Prints per pod count: build time p50 / p90 / max, serialisation time p50, the
// status JSON's bytes, and the cache's bytesUsed() and series count.
//   node_metric_bench [ROUNDS] [PODS...]      (defaults: 20 rounds, 110 and 500 pods)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "bench/synthetic_ids.h"
#include "kube/pod.h"
#include "metrics/metric_cache.h"
#include "metrics/node_metric.h"

using namespace koord;
using namespace std::chrono_literals;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// A cheap deterministic jitter in [0, 1).
struct Lcg {
  uint64_t s = 0x9e3779b97f4a7c15ULL;
  double next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  }
};

using bench::cidOf;
using bench::uidOf;

std::vector<Pod> makePods(size_t n) {
  std::vector<Pod> pods;
  pods.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    Pod p;
    p.uid = uidOf(i);
    p.ns = "team-" + std::to_string(i % 17);
    p.name = "app-" + std::to_string(i * 7919 % 100000);  // not in uid order
    p.phase = "Running";
    if (i % 10 < 2) {
      p.kubeQos = KubeQos::kGuaranteed;
      p.koordQos = KoordQos::kLSR;
    } else if (i % 10 < 7) {
      p.kubeQos = KubeQos::kBurstable;
      p.koordQos = KoordQos::kLS;
    } else {
      p.kubeQos = KubeQos::kBestEffort;
      p.koordQos = KoordQos::kBE;
    }
    pods.push_back(std::move(p));
  }
  return pods;
}

void fill(MetricCache& cache, const std::vector<Pod>& pods, Clock::Monotonic now) {
  Lcg rng;
  const MetricKind nodeKinds[] = {MetricKind::kNodeCpuCores,
                                  MetricKind::kNodeMemoryBytes,
                                  MetricKind::kNodeMemoryWithPageCacheBytes,
                                  MetricKind::kSystemCpuCores,
                                  MetricKind::kSystemMemoryBytes,
                                  MetricKind::kBeCpuUsageMilli,
                                  MetricKind::kBeCpuRequestMilli,
                                  MetricKind::kBeCpuRealLimitMilli};
  const MetricKind podKinds[] = {MetricKind::kPodCpuCores, MetricKind::kPodMemoryBytes,
                                 MetricKind::kPodCpuThrottledRatio};
  const MetricKind containerKinds[] = {MetricKind::kContainerCpuCores,
                                       MetricKind::kContainerMemoryBytes,
                                       MetricKind::kContainerCpuThrottledRatio};
  std::vector<std::vector<std::string>> cids(pods.size());
  for (size_t p = 0; p < pods.size(); ++p) {
    for (size_t c = 0; c < 3; ++c) cids[p].push_back(cidOf(p, c));
  }
  const int rounds = 1800;
  for (int r = 0; r < rounds; ++r) {
    const Clock::Monotonic at = now - std::chrono::seconds(rounds - 1 - r);
    for (MetricKind k : nodeKinds) {
      const bool memory = k == MetricKind::kNodeMemoryBytes ||
                          k == MetricKind::kNodeMemoryWithPageCacheBytes ||
                          k == MetricKind::kSystemMemoryBytes;
      cache.append(k, "", "", at, memory ? (20 + 8 * rng.next()) * kGiB : 12 + 20 * rng.next());
    }
    if (r < rounds - 300) continue;  // pod series keep 5 minutes
    for (size_t p = 0; p < pods.size(); ++p) {
      cache.append(podKinds[0], pods[p].uid, "", at, 0.05 + rng.next());
      cache.append(podKinds[1], pods[p].uid, "", at, (0.1 + rng.next()) * kGiB);
      cache.append(podKinds[2], pods[p].uid, "", at, 0.1 * rng.next());
      for (const std::string& cid : cids[p]) {
        cache.append(containerKinds[0], cid, "", at, 0.02 + 0.3 * rng.next());
        cache.append(containerKinds[1], cid, "", at, (0.03 + 0.3 * rng.next()) * kGiB);
        cache.append(containerKinds[2], cid, "", at, 0.1 * rng.next());
      }
    }
  }
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[idx];
}

int run(size_t podCount, int rounds) {
  ManualClock clock;
  clock.advance(1h);
  const Clock::Monotonic now = clock.now();
  MetricCache cache(MetricCache::Config{}, now - 1h);
  const std::vector<Pod> pods = makePods(podCount);
  fill(cache, pods, now);
  const NodeMetricSpec spec;  // koordlet's defaults

  std::vector<double> buildMs;
  std::vector<double> dumpMs;
  size_t bytes = 0;
  size_t reported = 0;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const nlohmann::json status = buildNodeMetricStatus(cache, pods, spec, now, clock.wallNow());
    const auto t1 = std::chrono::steady_clock::now();
    const std::string text = status.dump();
    const auto t2 = std::chrono::steady_clock::now();
    buildMs.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    dumpMs.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    bytes = text.size();
    reported = status["podsMetric"].size();
    if (status["nodeMetric"]["aggregatedNodeUsages"][2]["usage"]["p99"].empty()) {
      std::fprintf(stderr, "the 30m window came out cold: the cache fill is wrong\n");
      return 1;
    }
  }
  if (reported != podCount) {
    std::fprintf(stderr, "%zu of %zu pods reported\n", reported, podCount);
    return 1;
  }
  std::printf("| %zu | %.2f / %.2f / %.2f | %.2f | %zu | %zu | %zu |\n", podCount,
              percentile(buildMs, 0.5), percentile(buildMs, 0.9),
              *std::max_element(buildMs.begin(), buildMs.end()), percentile(dumpMs, 0.5), bytes,
              cache.bytesUsed(), cache.seriesCount());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  std::vector<size_t> counts;
  for (int i = 2; i < argc; ++i) counts.push_back(static_cast<size_t>(std::atoll(argv[i])));
  if (counts.empty()) counts = {110, 500};
  if (rounds <= 0) {
    std::fprintf(stderr, "usage: node_metric_bench [ROUNDS] [PODS...]\n");
    return 2;
  }
  std::printf(
      "| pods | build p50 / p90 / max ms | dump p50 ms | status bytes | cache bytesUsed | series "
      "|\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (size_t n : counts) {
    if (int rc = run(n, rounds); rc != 0) return rc;
  }
  return 0;
}
