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
//
// Then the peak predictor (issue 32) at the same pod counts: a day of training rounds
// (1,440 at koordlet's 1 min interval, each pod's P90 moving so its histograms fill
// many buckets), then: one training round's time (trainingInput + train, what the
// agent spends once a minute), the heap the models hold (malloc's own count before
// and after, and the models' stated bytesUsed()), every model's checkpoint bytes, one
// prod reclaimable prediction's time, and the status bytes with prodReclaimableMetric
// and 3 host applications against without.
//   node_metric_bench [ROUNDS] [PODS...]      (defaults: 20 rounds, 110 and 500 pods)
#include <malloc.h>

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
#include "metrics/host_app_collector.h"
#include "metrics/metric_cache.h"
#include "metrics/node_metric.h"
#include "prediction/predict_server.h"

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

// The predictor's figures at podCount (see the header).
int runPrediction(size_t podCount) {
  using namespace prediction;
  ManualClock clock;
  clock.advance(1h);
  const Clock::Monotonic now = clock.now();
  MetricCache cache(MetricCache::Config{}, now - 1h);
  std::vector<Pod> pods = makePods(podCount);
  for (Pod& p : pods) {
    p.created = clock.wallNow() - std::chrono::hours(48);
    Container c;
    c.name = "main";
    c.requests.cpuMilli = 2000;
    c.requests.memoryBytes = int64_t{4} << 30;
    p.containers.push_back(c);
  }
  fill(cache, pods, now);

  const size_t heapBefore = ::mallinfo2().uordblks;
  PredictionConfig config;  // koordlet's defaults, but every model due at once below
  config.checkpointMaxPerStep = 1 << 20;
  PeakModels models(config);
  Lcg rng;
  std::vector<std::string> live;
  for (const Pod& p : pods) live.push_back(p.uid);
  std::vector<std::string> freed;
  const Clock::Wall dayAgo = clock.wallNow() - std::chrono::hours(24);
  for (int r = 0; r < 1440; ++r) {
    TrainingInput in;
    for (const Pod& p : pods) {
      in.pods.push_back(
          {p.uid, p.priorityWithDefault(), 0.05 + 1.5 * rng.next(), (0.2 + 2 * rng.next()) * kGiB});
    }
    in.nodeCpuCores = 20 + 10 * rng.next();
    in.nodeMemoryBytes = 24 * kGiB + 4 * kGiB * rng.next();
    models.train(in, live, dayAgo + std::chrono::minutes(r), freed);
  }
  const size_t heapModels = ::mallinfo2().uordblks - heapBefore;

  std::vector<double> trainMs;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const TrainingInput in = trainingInput(cache, pods, now, std::chrono::minutes(1));
    models.train(in, live, clock.wallNow(), freed);
    trainMs.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  size_t checkpointBytes = 0;
  size_t checkpoints = 0;
  PeakModels copy = models;  // checkpointsDue marks them saved
  for (const auto& c : copy.checkpointsDue(clock.wallNow())) {
    checkpointBytes += encodeCheckpoint(c).size();
    ++checkpoints;
  }

  std::vector<const Pod*> reported;
  for (const Pod& p : pods) reported.push_back(&p);
  std::vector<double> predictMs;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = predictProdReclaimable(
        models, reported, ReclaimableResources{64000, int64_t{256} << 30}, clock.wallNow());
    predictMs.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!r.min.ok()) {
      std::fprintf(stderr, "prediction failed: %s\n", r.min.error().message.c_str());
      return 1;
    }
  }
  const NodeMetricSpec spec;
  const size_t before =
      buildNodeMetricStatus(cache, pods, spec, now, clock.wallNow()).dump().size();
  const std::vector<HostAppInfo> apps = {
      {"nginx", "koord-prod", "LS"}, {"mysql", "koord-prod", "LSR"}, {"backup", "", "BE"}};
  for (const auto& a : apps) {
    for (int i = 0; i < 300; ++i) {
      const auto at = now - std::chrono::seconds(299 - i);
      cache.append(MetricKind::kHostAppCpuCores, HostAppCollector::owner(a.name), "", at, 0.5);
      cache.append(MetricKind::kHostAppMemoryBytes, HostAppCollector::owner(a.name), "", at, 1e9);
    }
  }
  const size_t after =
      buildNodeMetricStatus(
          cache, pods, spec, now, clock.wallNow(),
          [&](const std::vector<const Pod*>& r) {
            return prodReclaimableJson(
                predictProdReclaimable(models, r, ReclaimableResources{64000, int64_t{256} << 30},
                                       clock.wallNow())
                    .min);
          },
          apps)
          .dump()
          .size();
  std::printf(
      "| %zu | %zu | %.3f / %.3f | %.4f | %zu / %zu | %zu (%zu files, %.0f each) | %.3f | %zu -> "
      "%zu |\n",
      podCount, models.size(), percentile(trainMs, 0.5),
      *std::max_element(trainMs.begin(), trainMs.end()), percentile(trainMs, 0.5) / 60.0,
      heapModels, models.bytesUsed(), checkpointBytes, checkpoints,
      static_cast<double>(checkpointBytes) / static_cast<double>(checkpoints),
      percentile(predictMs, 0.5), before, after);
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
  std::printf(
      "\n| pods | models | train p50 / max ms | CPU ms per s (1 min interval) | model heap / "
      "stated bytes | checkpoint bytes | predict p50 ms | status bytes without -> with |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (size_t n : counts) {
    if (int rc = runPrediction(n); rc != 0) return rc;
  }
  return 0;
}
