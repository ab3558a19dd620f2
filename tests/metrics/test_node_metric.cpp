// NodeMetric: the spec as koordlet reads it and the status built from a MetricCache
// filled with known samples on a ManualClock (reference koordlet.md §3.1, §3.3).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/time_format.h"
#include "kube/pod.h"
#include "metrics/metric_cache.h"
#include "metrics/node_metric.h"

namespace test_metrics_node_metric {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

std::string readFixture(const std::string& rel) {
  const char* dir = std::getenv("KOORDLET_FIXTURES");
  REQUIRE(dir != nullptr);
  std::ifstream in(std::string(dir) + "/" + rel);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json objectWithPolicy(json policy) {
  return json{{"apiVersion", "slo.koordinator.sh/v1alpha1"},
              {"kind", "NodeMetric"},
              {"metadata", {{"name", "rig-node"}}},
              {"spec", {{"metricCollectPolicy", std::move(policy)}}}};
}

std::string specError(const json& policy) {
  auto r = parseNodeMetricSpec(objectWithPolicy(policy));
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

// Appends value(i) for i = 0..n-1 at now - (n-1-i) s: n samples a second apart, the
// last at `now`.
void fill(MetricCache& cache, MetricKind kind, const std::string& owner, Clock::Monotonic now,
          int n, const std::function<double(int)>& value) {
  for (int i = 0; i < n; ++i) {
    cache.append({kind, owner, ""}, now - std::chrono::seconds(n - 1 - i), value(i));
  }
}

Pod makePod(std::string uid, std::string ns, std::string name, KubeQos kube,
            KoordQos koord = KoordQos::kNone, PriorityClass priority = PriorityClass::kNone) {
  Pod p;
  p.uid = std::move(uid);
  p.ns = std::move(ns);
  p.name = std::move(name);
  p.phase = "Running";
  p.kubeQos = kube;
  p.koordQos = koord;
  p.priorityClass = priority;
  return p;
}

NodeMetricSpec specWith(std::chrono::seconds aggregate, std::vector<std::chrono::nanoseconds> d) {
  NodeMetricSpec s;
  s.aggregateDuration = aggregate;
  s.aggregateDurations = std::move(d);
  return s;
}

json usageOf(const std::string& cpu, const std::string& memory) {
  return json{{"resources", {{"cpu", cpu}, {"memory", memory}}}};
}

struct Rig {
  ManualClock clock;
  MetricCache cache{MetricCache::Config{}, clock.now()};
  Clock::Monotonic now;
  Rig() {
    clock.advance(1h);  // leave room behind `now` for 30 min of history
    now = clock.now();
  }
  json build(const NodeMetricSpec& spec, const std::vector<Pod>& pods = {}) {
    return buildNodeMetricStatus(cache, pods, spec, now, clock.wallNow());
  }
};

}  // namespace

// ---- spec ----

TEST_CASE("a NodeMetric without a collect policy reads as koordlet's defaults", "[nodemetric]") {
  for (const json& object : {json{{"metadata", {{"name", "n"}}}}, json{{"spec", json::object()}},
                             json{{"spec", {{"metricCollectPolicy", nullptr}}}},
                             objectWithPolicy({{"reportIntervalSeconds", nullptr}})}) {
    auto spec = parseNodeMetricSpec(object);
    REQUIRE(spec.ok());
    CHECK(spec->aggregateDuration == 300s);
    CHECK(spec->reportInterval == 60s);
    CHECK(spec->aggregateDurations == std::vector<std::chrono::nanoseconds>{5min, 10min, 30min});
    CHECK(spec->memoryPolicy == NodeMemoryPolicy::kWithoutPageCache);
    CHECK(spec->adjustments.empty());
  }
}

TEST_CASE("the spec koord-manager creates reads as written", "[nodemetric]") {
  auto spec = parseNodeMetricSpec(json::parse(readFixture("kube-api/nodemetric-get.body")));
  REQUIRE(spec.ok());
  CHECK(spec->aggregateDuration == 60s);
  CHECK(spec->reportInterval == 30s);
  CHECK(spec->aggregateDurations == std::vector<std::chrono::nanoseconds>{5min, 10min, 30min});
  CHECK(spec->memoryPolicy == NodeMemoryPolicy::kWithoutPageCache);
  CHECK(spec->adjustments.empty());
}

TEST_CASE("values under the minimums are raised to them with a note", "[nodemetric]") {
  auto spec = parseNodeMetricSpec(
      objectWithPolicy({{"aggregateDurationSeconds", 10}, {"reportIntervalSeconds", -5}}));
  REQUIRE(spec.ok());
  CHECK(spec->aggregateDuration == 60s);
  CHECK(spec->reportInterval == 30s);
  REQUIRE(spec->adjustments.size() == 2);
  CHECK(spec->adjustments[0] ==
        "spec.metricCollectPolicy.aggregateDurationSeconds 10 is under the minimum 60; using 60");
  CHECK(spec->adjustments[1] ==
        "spec.metricCollectPolicy.reportIntervalSeconds -5 is under the minimum 30; using 30");

  auto exact = parseNodeMetricSpec(
      objectWithPolicy({{"aggregateDurationSeconds", 60}, {"reportIntervalSeconds", 31}}));
  REQUIRE(exact.ok());
  CHECK(exact->aggregateDuration == 60s);
  CHECK(exact->reportInterval == 31s);
  CHECK(exact->adjustments.empty());
}

TEST_CASE("a spec field of the wrong JSON type is an error naming the object and field",
          "[nodemetric]") {
  CHECK(specError({{"reportIntervalSeconds", "60"}}) ==
        "NodeMetric rig-node: spec.metricCollectPolicy.reportIntervalSeconds: expected an "
        "integer, got a string");
  // Go's json refuses a float for an int64 even when it is whole.
  CHECK(specError({{"aggregateDurationSeconds", 60.0}}) ==
        "NodeMetric rig-node: spec.metricCollectPolicy.aggregateDurationSeconds: expected an "
        "integer, got a number");
  CHECK(specError({{"aggregateDurationSeconds", 18446744073709551615ULL}}) ==
        "NodeMetric rig-node: spec.metricCollectPolicy.aggregateDurationSeconds: out of int64 "
        "range: 18446744073709551615");
  CHECK(specError({{"nodeAggregatePolicy", {{"durations", "5m"}}}}) ==
        "NodeMetric rig-node: spec.metricCollectPolicy.nodeAggregatePolicy.durations: expected "
        "an array, got a string");
  CHECK(specError({{"nodeAggregatePolicy", {{"durations", {"5m0s", 300}}}}}) ==
        "NodeMetric rig-node: spec.metricCollectPolicy.nodeAggregatePolicy.durations[1]: "
        "expected a string, got a number");
  CHECK(specError({{"nodeAggregatePolicy", true}}) ==
        "NodeMetric rig-node: spec.metricCollectPolicy.nodeAggregatePolicy: expected an object, "
        "got a boolean");
  CHECK(specError({{"nodeMemoryCollectPolicy", 1}}) ==
        "NodeMetric rig-node: spec.metricCollectPolicy.nodeMemoryCollectPolicy: expected a "
        "string, got a number");
  CHECK(specError("often") ==
        "NodeMetric rig-node: spec.metricCollectPolicy: expected an object, got a string");

  auto notObject = parseNodeMetricSpec(json::array());
  REQUIRE_FALSE(notObject.ok());
  CHECK(notObject.error().message == "NodeMetric: expected an object, got an array");
}

TEST_CASE("aggregate durations are Go durations, positive, kept in spec order", "[nodemetric]") {
  auto spec = parseNodeMetricSpec(
      objectWithPolicy({{"nodeAggregatePolicy", {{"durations", {"1h30m", "90s", "5m0s"}}}}}));
  REQUIRE(spec.ok());
  CHECK(spec->aggregateDurations == std::vector<std::chrono::nanoseconds>{90min, 90s, 5min});

  auto none = parseNodeMetricSpec(
      objectWithPolicy({{"nodeAggregatePolicy", {{"durations", json::array()}}}}));
  REQUIRE(none.ok());
  CHECK(none->aggregateDurations.empty());

  const std::string bad = specError({{"nodeAggregatePolicy", {{"durations", {"5m", "5x"}}}}});
  CHECK(bad.rfind("NodeMetric rig-node: spec.metricCollectPolicy.nodeAggregatePolicy."
                  "durations[1]: invalid duration \"5x\"",
                  0) == 0);
  CHECK(specError({{"nodeAggregatePolicy", {{"durations", {"0s"}}}}}) ==
        "NodeMetric rig-node: spec.metricCollectPolicy.nodeAggregatePolicy.durations[0]: must "
        "be positive, got \"0s\"");
}

TEST_CASE("memory policies map to their series; unknown and hot page cache fall back",
          "[nodemetric]") {
  auto policyOf = [](const char* text) {
    auto spec = parseNodeMetricSpec(objectWithPolicy({{"nodeMemoryCollectPolicy", text}}));
    REQUIRE(spec.ok());
    return *spec;
  };
  CHECK(policyOf("usageWithoutPageCache").memoryPolicy == NodeMemoryPolicy::kWithoutPageCache);
  CHECK(policyOf("usageWithPageCache").memoryPolicy == NodeMemoryPolicy::kWithPageCache);
  CHECK(policyOf("usageWithPageCache").adjustments.empty());

  const auto hot = policyOf("usageWithHotPageCache");
  CHECK(hot.memoryPolicy == NodeMemoryPolicy::kWithHotPageCache);
  CHECK(nodeMemoryKind(hot.memoryPolicy) == MetricKind::kNodeMemoryBytes);
  REQUIRE(hot.adjustments.size() == 1);
  CHECK(hot.adjustments[0].find("not collected") != std::string::npos);

  const auto unknown = policyOf("usageWithColdPages");
  CHECK(unknown.memoryPolicy == NodeMemoryPolicy::kWithoutPageCache);
  REQUIRE(unknown.adjustments.size() == 1);
  CHECK(unknown.adjustments[0] ==
        "spec.metricCollectPolicy.nodeMemoryCollectPolicy \"usageWithColdPages\" is unknown; "
        "using usageWithoutPageCache");

  CHECK(nodeMemoryKind(NodeMemoryPolicy::kWithPageCache) ==
        MetricKind::kNodeMemoryWithPageCacheBytes);
  CHECK(nodeMemoryKind(NodeMemoryPolicy::kWithoutPageCache) == MetricKind::kNodeMemoryBytes);
}

// ---- status ----

TEST_CASE("nodeUsage is the mean over the aggregate duration only", "[nodemetric]") {
  Rig rig;
  // 120 samples: the 59 older than the 60 s window are 100 cores / 1 GiB, the 61 in
  // [now - 60 s, now] (bounds inclusive) are 1.25 cores / 3 GiB.
  fill(rig.cache, MetricKind::kNodeCpuCores, "", rig.now, 120,
       [](int i) { return i < 59 ? 100.0 : 1.25; });
  fill(rig.cache, MetricKind::kNodeMemoryBytes, "", rig.now, 120,
       [](int i) { return i < 59 ? kGiB : 3 * kGiB; });
  const json status = rig.build(specWith(60s, {}));
  CHECK(status["nodeMetric"]["nodeUsage"] == usageOf("1250m", "3Gi"));
  CHECK(status["nodeMetric"]["aggregatedNodeUsages"] == json::array());
  // No system samples: an empty ResourceMap, as koordlet's failed query.
  CHECK(status["nodeMetric"]["systemUsage"] == json::object());
}

TEST_CASE("percentiles take koordlet's index int(n*p)-1 of the sorted window", "[nodemetric]") {
  Rig rig;
  // 600 samples in a 10 min window cycling through 1..100 (×0.125 cores, × 1 MiB),
  // each value 6 times: sorted, index k holds k/6 + 1. p50: int(300)-1 = 299 -> 50;
  // p90: 539 -> 90; p95: 569 -> 95; p99: 593 -> 99. The mean is 50.5.
  fill(rig.cache, MetricKind::kNodeCpuCores, "", rig.now, 600,
       [](int i) { return (i % 100 + 1) * 0.125; });
  fill(rig.cache, MetricKind::kNodeMemoryBytes, "", rig.now, 600,
       [](int i) { return (i % 100 + 1) * kMiB; });
  const json status = rig.build(specWith(300s, {10min}));
  const json& agg = status["nodeMetric"]["aggregatedNodeUsages"];
  REQUIRE(agg.size() == 1);
  CHECK(agg[0]["duration"] == "10m0s");
  const json& usage = agg[0]["usage"];
  CHECK(usage["p50"] == usageOf("6250m", "50Mi"));
  CHECK(usage["p90"] == usageOf("11250m", "90Mi"));
  CHECK(usage["p95"] == usageOf("11875m", "95Mi"));
  CHECK(usage["p99"] == usageOf("12375m", "99Mi"));
  // 6.3125 cores truncate to 6312m; 50.5 MiB = 51712 Ki.
  CHECK(usage["avg"] == usageOf("6312m", "51712Ki"));
  CHECK(usage.size() == 5);
}

TEST_CASE("a window whose data spans under half of it reports empty usages", "[nodemetric]") {
  auto statusWith = [](int seconds) {
    Rig rig;
    fill(rig.cache, MetricKind::kNodeCpuCores, "", rig.now, seconds, [](int) { return 2.0; });
    fill(rig.cache, MetricKind::kNodeMemoryBytes, "", rig.now, seconds, [](int) { return kGiB; });
    return rig.build(specWith(300s, {10min}));
  };
  const json empty = {{"avg", json::object()},
                      {"p50", json::object()},
                      {"p90", json::object()},
                      {"p95", json::object()},
                      {"p99", json::object()}};
  // 4 minutes of data in a 10 minute window: cold.
  CHECK(statusWith(240)["nodeMetric"]["aggregatedNodeUsages"][0]["usage"] == empty);
  // 6 minutes: reported.
  const json six = statusWith(360)["nodeMetric"]["aggregatedNodeUsages"][0];
  CHECK(six["duration"] == "10m0s");
  CHECK(six["usage"]["p99"] == usageOf("2", "1Gi"));
  // The edge: 300 samples span 299 s (< 300: cold), 301 span 300 s (reported).
  CHECK(statusWith(300)["nodeMetric"]["aggregatedNodeUsages"][0]["usage"] == empty);
  CHECK(statusWith(301)["nodeMetric"]["aggregatedNodeUsages"][0]["usage"]["avg"] ==
        usageOf("2", "1Gi"));
}

TEST_CASE("the span is judged on the CPU series and both series must have data", "[nodemetric]") {
  Rig rig;
  // CPU for 2 minutes only, memory for the full window: cold (koordlet judges CPU).
  fill(rig.cache, MetricKind::kNodeCpuCores, "", rig.now, 120, [](int) { return 1.0; });
  fill(rig.cache, MetricKind::kNodeMemoryBytes, "", rig.now, 600, [](int) { return kGiB; });
  // System CPU for the full window, no system memory: every map empty too.
  fill(rig.cache, MetricKind::kSystemCpuCores, "", rig.now, 600, [](int) { return 0.5; });
  const json status = rig.build(specWith(60s, {10min}));
  CHECK(status["nodeMetric"]["aggregatedNodeUsages"][0]["usage"]["p50"] == json::object());
  CHECK(status["nodeMetric"]["aggregatedSystemUsages"][0]["usage"]["p50"] == json::object());
  CHECK(status["nodeMetric"]["systemUsage"] == json::object());
  CHECK(status["nodeMetric"]["nodeUsage"] == usageOf("1", "1Gi"));
}

TEST_CASE("a full 30 minute window is reported from the cache's node retention", "[nodemetric]") {
  Rig rig;
  // 1,800 samples a second apart fill the ring (the oldest at now - 29m59s); the
  // window [now - 30m, now] holds all of them, a span of 29m59s.
  fill(rig.cache, MetricKind::kNodeCpuCores, "", rig.now, 1800, [](int) { return 4.0; });
  fill(rig.cache, MetricKind::kNodeMemoryBytes, "", rig.now, 1800, [](int) { return 8 * kGiB; });
  fill(rig.cache, MetricKind::kSystemCpuCores, "", rig.now, 1800, [](int) { return 0.25; });
  fill(rig.cache, MetricKind::kSystemMemoryBytes, "", rig.now, 1800,
       [](int i) { return i % 2 == 0 ? 512 * kMiB : 1024 * kMiB; });
  NodeMetricSpec spec;
  spec.aggregateDuration = 299s;  // 300 samples: 150 of each system memory value
  const json status = rig.build(spec);
  const json& nm = status["nodeMetric"];
  REQUIRE(nm["aggregatedNodeUsages"].size() == 3);
  CHECK(nm["aggregatedNodeUsages"][0]["duration"] == "5m0s");
  CHECK(nm["aggregatedNodeUsages"][1]["duration"] == "10m0s");
  CHECK(nm["aggregatedNodeUsages"][2]["duration"] == "30m0s");
  CHECK(nm["aggregatedNodeUsages"][2]["usage"]["p95"] == usageOf("4", "8Gi"));
  CHECK(nm["systemUsage"] == usageOf("250m", "768Mi"));
  CHECK(nm["aggregatedSystemUsages"][2]["usage"]["p50"] == usageOf("250m", "512Mi"));
  CHECK(nm["aggregatedSystemUsages"][2]["usage"]["p90"] == usageOf("250m", "1Gi"));
}

TEST_CASE("node memory follows the collect policy; system memory does not", "[nodemetric]") {
  Rig rig;
  fill(rig.cache, MetricKind::kNodeCpuCores, "", rig.now, 400, [](int) { return 1.0; });
  fill(rig.cache, MetricKind::kNodeMemoryBytes, "", rig.now, 400, [](int) { return kGiB; });
  fill(rig.cache, MetricKind::kNodeMemoryWithPageCacheBytes, "", rig.now, 400,
       [](int) { return 5 * kGiB; });
  NodeMetricSpec spec = specWith(300s, {5min});
  CHECK(rig.build(spec)["nodeMetric"]["nodeUsage"] == usageOf("1", "1Gi"));
  spec.memoryPolicy = NodeMemoryPolicy::kWithPageCache;
  const json withCache = rig.build(spec);
  CHECK(withCache["nodeMetric"]["nodeUsage"] == usageOf("1", "5Gi"));
  CHECK(withCache["nodeMetric"]["aggregatedNodeUsages"][0]["usage"]["p99"] == usageOf("1", "5Gi"));
  spec.memoryPolicy = NodeMemoryPolicy::kWithHotPageCache;
  CHECK(rig.build(spec)["nodeMetric"]["nodeUsage"] == usageOf("1", "1Gi"));
}

TEST_CASE("podsMetric is sorted by namespace and name and skips pods without samples",
          "[nodemetric]") {
  Rig rig;
  const std::vector<Pod> pods = {
      makePod("u-web", "colo", "web-ls", KubeQos::kBurstable, KoordQos::kLS),
      makePod("u-batch", "batch", "spark", KubeQos::kBestEffort, KoordQos::kBE),
      makePod("u-db", "colo", "db", KubeQos::kGuaranteed),  // no label: LSR, koord-prod
      makePod("u-mid", "a-team", "mid", KubeQos::kBurstable, KoordQos::kLS, PriorityClass::kMid),
      makePod("u-new", "colo", "fresh", KubeQos::kBurstable),  // no samples at all
      makePod("u-half", "colo", "half", KubeQos::kBurstable),  // CPU only
  };
  for (const char* uid : {"u-web", "u-batch", "u-db", "u-mid", "u-half"}) {
    // Older samples outside the 60 s window are ten times larger and must not count.
    fill(rig.cache, MetricKind::kPodCpuCores, uid, rig.now, 120,
         [](int i) { return i < 59 ? 2.5 : 0.25; });
  }
  for (const char* uid : {"u-web", "u-batch", "u-db", "u-mid"}) {
    fill(rig.cache, MetricKind::kPodMemoryBytes, uid, rig.now, 120,
         [](int i) { return i < 59 ? 2000 * kMiB : 200 * kMiB; });
  }
  const json list = rig.build(specWith(60s, {}), pods)["podsMetric"];
  REQUIRE(list.size() == 4);
  CHECK(list[0] == json{{"namespace", "a-team"},
                        {"name", "mid"},
                        {"priority", "koord-mid"},
                        {"qos", "LS"},
                        {"podUsage", usageOf("250m", "200Mi")}});
  CHECK(list[1]["namespace"] == "batch");
  CHECK(list[1]["priority"] == "koord-batch");
  CHECK(list[1]["qos"] == "BE");
  CHECK(list[2]["name"] == "db");
  CHECK(list[2]["priority"] == "koord-prod");
  CHECK(list[2]["qos"] == "LSR");
  CHECK(list[3] == json{{"namespace", "colo"},
                        {"name", "web-ls"},
                        {"priority", "koord-prod"},
                        {"qos", "LS"},
                        {"podUsage", usageOf("250m", "200Mi")}});
}

TEST_CASE("an empty cache gives empty maps, empty lists and the update time", "[nodemetric]") {
  Rig rig;
  const json status = rig.build(NodeMetricSpec{}, {makePod("u", "ns", "p", KubeQos::kBurstable)});
  // ManualClock's wall time starts at 1,700,000,000 s; the rig moved it 1 h on.
  CHECK(status["updateTime"] == "2023-11-14T23:13:20Z");
  CHECK(status["nodeMetric"]["nodeUsage"] == json::object());
  CHECK(status["nodeMetric"]["systemUsage"] == json::object());
  CHECK(status["nodeMetric"]["aggregatedNodeUsages"].size() == 3);
  CHECK(status["nodeMetric"]["aggregatedNodeUsages"][1]["usage"]["p90"] == json::object());
  CHECK(status["podsMetric"] == json::array());
}

TEST_CASE("updateTime is RFC3339 UTC truncated to the second", "[nodemetric]") {
  const Clock::Wall t{std::chrono::seconds(1'764'000'000) + std::chrono::milliseconds(999)};
  CHECK(rfc3339(t) == "2025-11-24T16:00:00Z");
  CHECK(rfc3339(Clock::Wall{}) == "1970-01-01T00:00:00Z");
}

TEST_CASE("an absurd aggregate duration saturates to since-forever, not a wrapped window",
          "[nodemetric]") {
  Rig rig;
  fill(rig.cache, MetricKind::kNodeCpuCores, "", rig.now, 10, [](int) { return 3.0; });
  fill(rig.cache, MetricKind::kNodeMemoryBytes, "", rig.now, 10, [](int) { return kGiB; });
  auto spec =
      parseNodeMetricSpec(objectWithPolicy({{"aggregateDurationSeconds", 9'000'000'000'000LL}}));
  REQUIRE(spec.ok());
  REQUIRE(spec->adjustments.size() == 1);
  const json status = rig.build(*spec);
  CHECK(status["nodeMetric"]["nodeUsage"] == usageOf("3", "1Gi"));
}

// ---- shape ----

namespace {

// Every key we produce exists at the same place in the CRD's status schema.
void checkAgainstSchema(const json& v, const YAML::Node& schema, const std::string& path,
                        std::vector<std::string>& unknown) {
  if (v.is_object()) {
    for (const auto& [key, child] : v.items()) {
      const std::string at = path + "." + key;
      if (schema["properties"] && schema["properties"][key]) {
        checkAgainstSchema(child, schema["properties"][key], at, unknown);
      } else if (schema["additionalProperties"] && schema["additionalProperties"].IsMap()) {
        checkAgainstSchema(child, schema["additionalProperties"], at, unknown);
      } else {
        unknown.push_back(at);
      }
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      checkAgainstSchema(v[i], schema["items"], path + "[" + std::to_string(i) + "]", unknown);
    }
  } else if (v.is_string()) {
    const bool stringOk = (schema["type"] && schema["type"].as<std::string>() == "string") ||
                          schema["x-kubernetes-int-or-string"];
    if (!stringOk) unknown.push_back(path + " (not a string in the schema)");
  }
}

// Every key of the captured status exists at the same place in ours (first array
// elements compared).
void checkCovered(const json& theirs, const json& ours, const std::string& path,
                  std::vector<std::string>& missing) {
  if (theirs.is_object()) {
    for (const auto& [key, child] : theirs.items()) {
      if (!ours.is_object() || !ours.contains(key)) {
        missing.push_back(path + "." + key);
        continue;
      }
      checkCovered(child, ours[key], path + "." + key, missing);
    }
  } else if (theirs.is_array() && !theirs.empty()) {
    if (!ours.is_array() || ours.empty()) {
      missing.push_back(path + "[0]");
      return;
    }
    checkCovered(theirs[0], ours[0], path + "[0]", missing);
  }
}

json fullStatus() {
  Rig rig;
  for (MetricKind k : {MetricKind::kNodeCpuCores, MetricKind::kNodeMemoryBytes,
                       MetricKind::kSystemCpuCores, MetricKind::kSystemMemoryBytes}) {
    fill(rig.cache, k, "", rig.now, 1800, [](int i) { return 1000.0 + i; });
  }
  fill(rig.cache, MetricKind::kPodCpuCores, "u-web", rig.now, 300, [](int) { return 0.25; });
  fill(rig.cache, MetricKind::kPodMemoryBytes, "u-web", rig.now, 300,
       [](int) { return 200 * kMiB; });
  return rig.build(NodeMetricSpec{},
                   {makePod("u-web", "colo", "web-ls", KubeQos::kBurstable, KoordQos::kLS)});
}

}  // namespace

TEST_CASE("every status field we write is in the NodeMetric CRD's schema", "[nodemetric]") {
  const YAML::Node crd =
      YAML::Load(readFixture("koordinator/crd/slo.koordinator.sh_nodemetrics.yaml"));
  const YAML::Node status =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
  REQUIRE(status["properties"]["nodeMetric"]);
  std::vector<std::string> unknown;
  const json ours = fullStatus();
  checkAgainstSchema(ours, status, "status", unknown);
  CHECK(unknown.empty());
  for (const auto& u : unknown) UNSCOPED_INFO(u);

  // The checker itself: a misspelt field is caught.
  json wrong = ours;
  wrong["nodeMetric"]["nodeusage"] = json::object();
  wrong["podsMetric"][0]["qosClass"] = "LS";
  std::vector<std::string> caught;
  checkAgainstSchema(wrong, status, "status", caught);
  CHECK(caught ==
        std::vector<std::string>{"status.nodeMetric.nodeusage", "status.podsMetric[0].qosClass"});
}

TEST_CASE("our status has every field of a status the apiserver stored", "[nodemetric]") {
  const json stored = json::parse(readFixture("kube-api/nodemetric-status-patch.body"))["status"];
  REQUIRE(stored.contains("podsMetric"));
  std::vector<std::string> missing;
  const json ours = fullStatus();
  checkCovered(stored, ours, "status", missing);
  CHECK(missing.empty());
  for (const auto& m : missing) UNSCOPED_INFO(m);
  // The same object shape: ResourceMap {"resources": {"cpu", "memory"}} throughout.
  CHECK(ours["podsMetric"][0]["podUsage"] == usageOf("250m", "200Mi"));
  CHECK(ours["nodeMetric"]["nodeUsage"]["resources"].size() == 2);
}

TEST_CASE("hostApplicationMetric averages each app over the window, by name, memory by policy",
          "[nodemetric]") {
  Rig rig;
  for (const char* app : {"hostapp/nginx", "hostapp/db"}) {
    fill(rig.cache, MetricKind::kHostAppCpuCores, app, rig.now, 120,
         [](int i) { return i < 59 ? 4.0 : 0.5; });
    fill(rig.cache, MetricKind::kHostAppMemoryBytes, app, rig.now, 120,
         [](int) { return 100.0 * kMiB; });
    fill(rig.cache, MetricKind::kHostAppMemoryWithPageCacheBytes, app, rig.now, 120,
         [](int) { return 300.0 * kMiB; });
  }
  const std::vector<HostAppInfo> apps = {
      {"nginx", "koord-prod", "LS"}, {"db", "", "LSR"}, {"absent", "koord-mid", ""}};
  auto status = buildNodeMetricStatus(rig.cache, {}, specWith(60s, {}), rig.now,
                                      rig.clock.wallNow(), {}, apps);
  REQUIRE(status["hostApplicationMetric"].size() == 2);  // "absent" has no samples
  CHECK(status["hostApplicationMetric"][0] ==
        json{{"name", "db"}, {"usage", usageOf("500m", "100Mi")}, {"qos", "LSR"}});
  CHECK(status["hostApplicationMetric"][1] == json{{"name", "nginx"},
                                                   {"usage", usageOf("500m", "100Mi")},
                                                   {"priority", "koord-prod"},
                                                   {"qos", "LS"}});
  NodeMetricSpec withCache = specWith(60s, {});
  withCache.memoryPolicy = NodeMemoryPolicy::kWithPageCache;
  status = buildNodeMetricStatus(rig.cache, {}, withCache, rig.now, rig.clock.wallNow(), {}, apps);
  CHECK(status["hostApplicationMetric"][0]["usage"] == usageOf("500m", "300Mi"));
  // None given, or none with samples: the key is left out (koordlet's omitempty).
  CHECK_FALSE(rig.build(specWith(60s, {})).contains("hostApplicationMetric"));
  CHECK_FALSE(buildNodeMetricStatus(rig.cache, {}, specWith(60s, {}), rig.now, rig.clock.wallNow(),
                                    {}, {{"absent", "", ""}})
                  .contains("hostApplicationMetric"));
}

TEST_CASE(
    "under usageWithPageCache a pod's memory is its memory with page cache, as koordlet's; "
    "without that series the pod is left out",
    "[nodemetric]") {
  Rig rig;
  const std::vector<Pod> pods = {makePod("u-web", "colo", "web", KubeQos::kBurstable),
                                 makePod("u-old", "colo", "old", KubeQos::kBurstable)};
  for (const char* uid : {"u-web", "u-old"}) {
    fill(rig.cache, MetricKind::kPodCpuCores, uid, rig.now, 120, [](int) { return 0.25; });
    fill(rig.cache, MetricKind::kPodMemoryBytes, uid, rig.now, 120, [](int) { return 200 * kMiB; });
  }
  fill(rig.cache, MetricKind::kPodMemoryWithPageCacheBytes, "u-web", rig.now, 120,
       [](int) { return 700 * kMiB; });
  NodeMetricSpec withCache = specWith(60s, {});
  withCache.memoryPolicy = NodeMemoryPolicy::kWithPageCache;
  const json list = rig.build(withCache, pods)["podsMetric"];
  REQUIRE(list.size() == 1);  // u-old has no page-cache series yet
  CHECK(list[0]["name"] == "web");
  CHECK(list[0]["podUsage"] == usageOf("250m", "700Mi"));
  const json without = rig.build(specWith(60s, {}), pods)["podsMetric"];
  REQUIRE(without.size() == 2);
  CHECK(without[1]["podUsage"] == usageOf("250m", "200Mi"));
}

TEST_CASE("GPU use is reported as devices of nodeUsage, its aggregates and podUsage",
          "[nodemetric]") {
  Rig rig;
  auto gpuFill = [&](MetricKind kind, const std::string& owner, unsigned minor, double value) {
    for (int i = 0; i < 600; ++i) {
      rig.cache.append({kind, owner, std::to_string(minor)},
                       rig.now - std::chrono::seconds(599 - i), value);
    }
  };
  fill(rig.cache, MetricKind::kNodeCpuCores, "", rig.now, 600, [](int) { return 2.0; });
  fill(rig.cache, MetricKind::kNodeMemoryBytes, "", rig.now, 600, [](int) { return 8 * kGiB; });
  fill(rig.cache, MetricKind::kPodCpuCores, "pod-a", rig.now, 600, [](int) { return 1.0; });
  fill(rig.cache, MetricKind::kPodMemoryBytes, "pod-a", rig.now, 600, [](int) { return kGiB; });
  const uint64_t total = 85520809984ULL;  // H100 80GB HBM3: 81559 MiB
  gpuFill(MetricKind::kNodeGpuCore, "", 0, 87.5);
  gpuFill(MetricKind::kNodeGpuMemoryBytes, "", 0, 30 * kGiB);
  gpuFill(MetricKind::kPodGpuCore, "pod-a", 0, 70);
  gpuFill(MetricKind::kPodGpuMemoryBytes, "pod-a", 0, 18 * kGiB);
  // GPU 1 has no samples (its use could not be read): left out.
  const std::vector<NodeMetricGpu> gpus = {{0, "GPU-6b1f", total}, {1, "GPU-702e", total}};
  const json status =
      buildNodeMetricStatus(rig.cache, {makePod("pod-a", "ml", "train", KubeQos::kBurstable)},
                            specWith(300s, {5min}), rig.now, rig.clock.wallNow(), {}, {}, gpus);
  const json want = json::parse(R"([{"type": "gpu", "id": "GPU-6b1f", "minor": 0,
      "health": false, "resources": {"koordinator.sh/gpu-core": "87",
      "koordinator.sh/gpu-memory": "30Gi", "koordinator.sh/gpu-memory-ratio": "37"}}])");
  CHECK(status["nodeMetric"]["nodeUsage"]["devices"] == want);
  CHECK(status["nodeMetric"]["aggregatedNodeUsages"][0]["usage"]["p99"]["devices"] == want);
  CHECK_FALSE(status["nodeMetric"]["systemUsage"].contains("devices"));
  CHECK(status["podsMetric"][0]["podUsage"]["devices"] ==
        json::parse(R"([{"type": "gpu", "id": "GPU-6b1f", "minor": 0, "health": false,
          "resources": {"koordinator.sh/gpu-core": "70", "koordinator.sh/gpu-memory": "18Gi",
          "koordinator.sh/gpu-memory-ratio": "22"}}])"));
  // Without GPUs given, no devices anywhere.
  const json plain =
      buildNodeMetricStatus(rig.cache, {makePod("pod-a", "ml", "train", KubeQos::kBurstable)},
                            specWith(300s, {5min}), rig.now, rig.clock.wallNow());
  CHECK_FALSE(plain["nodeMetric"]["nodeUsage"].contains("devices"));
  CHECK_FALSE(plain["podsMetric"][0]["podUsage"].contains("devices"));
}

}  // namespace test_metrics_node_metric
