// The predict server on the injected clock: when it restores, trains and saves, what
// it reads from the metric cache, and the NodeMetric form of its answer.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>

#include "prediction/predict_server.h"
#include "tests/support/log_capture.h"
#include "tests/support/temp_tree.h"

namespace test_prediction_predict_server {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::prediction;
using namespace std::chrono;

namespace {

Pod runningPod(const std::string& uid) {
  Pod p;
  p.uid = uid;
  p.ns = "default";
  p.name = uid;
  p.phase = "Running";
  p.kubeQos = KubeQos::kBurstable;
  return p;
}

const char* kUid = "0f4d6c1e-3b1a-4a54-8f31-2b9a0c7d8e11";

}  // namespace

TEST_CASE("prodReclaimableMetric is koordlet's empty form on failure and quantities otherwise") {
  CHECK(prodReclaimableJson(makeError("no prediction")) ==
        nlohmann::json::parse(R"({"resource":{}})"));
  CHECK(prodReclaimableJson(ReclaimableResources{}) == nlohmann::json::parse(R"({"resource":{}})"));
  CHECK(prodReclaimableJson(ReclaimableResources{1500, int64_t{4} << 30}) ==
        nlohmann::json::parse(R"({"resource":{"resources":{"cpu":"1500m","memory":"4Gi"}}})"));
  CHECK(prodReclaimableJson(ReclaimableResources{2000, std::nullopt}) ==
        nlohmann::json::parse(R"({"resource":{"resources":{"cpu":"2"}}})"));
}

TEST_CASE("training takes the P90 of the last interval from the cache, pods without samples out") {
  test::LogCapture logs;
  MetricCache cache(MetricCache::Config{}, logs.clock.now());
  logs.clock.advance(minutes(5));
  const auto now = logs.clock.now();
  // 60 samples a second apart: 0.1 .. 6.0 cores; P90 = sorted[int(60 * 0.9) - 1] = 5.4.
  for (int i = 0; i < 60; ++i) {
    cache.append(MetricKind::kPodCpuCores, kUid, "", now - seconds(59 - i), 0.1 * (i + 1));
    cache.append(MetricKind::kPodMemoryBytes, kUid, "", now - seconds(59 - i), 1e9);
    cache.append(MetricKind::kNodeCpuCores, "", "", now - seconds(59 - i), 8.0);
    cache.append(MetricKind::kNodeMemoryBytes, "", "", now - seconds(59 - i), 4e9);
  }
  // An older, larger sample outside the minute does not count.
  cache.append(MetricKind::kPodCpuCores, kUid, "", now - seconds(90), 50.0);
  const std::vector<Pod> pods{runningPod(kUid), runningPod("no-samples")};
  const TrainingInput in = trainingInput(cache, pods, now, minutes(1));
  REQUIRE(in.pods.size() == 1);
  CHECK(in.pods[0].cpuCores == Approx(5.4).epsilon(1e-6));
  CHECK(in.pods[0].memoryBytes == Approx(1e9));
  CHECK(in.pods[0].priority == PriorityClass::kProd);
  CHECK(in.nodeCpuCores == Approx(8.0));
  CHECK(in.nodeMemoryBytes == Approx(4e9));
}

TEST_CASE("the server restores once, trains every interval and saves checkpoints every minute") {
  test::LogCapture logs;
  test::TempTree dir;
  MetricCache cache(MetricCache::Config{}, logs.clock.now());
  PredictionConfig config;
  config.trainingInterval = seconds(30);
  config.checkpointInterval = minutes(10);
  PredictServer server(config, dir.path(), logs.failures);
  const std::vector<Pod> pods{runningPod(kUid)};

  server.tick(cache, pods, /*podsKnown=*/false, logs.clock.now(), logs.clock.wallNow());
  CHECK(server.stats().trainings == 0);  // no pod list yet: nothing at all
  CHECK(server.checkpointStatus() == "waiting for the pod list");

  server.tick(cache, pods, true, logs.clock.now(), logs.clock.wallNow());
  CHECK(server.stats().trainings == 1);
  CHECK(server.checkpointStatus().rfind("restored 0 models from ", 0) == 0);
  logs.clock.advance(seconds(29));
  server.tick(cache, pods, true, logs.clock.now(), logs.clock.wallNow());
  CHECK(server.stats().trainings == 1);
  CHECK(server.stats().checkpointsSaved == 0);
  logs.clock.advance(seconds(1));
  server.tick(cache, pods, true, logs.clock.now(), logs.clock.wallNow());
  CHECK(server.stats().trainings == 2);
  // Maintenance at min(1 min, training interval) = 30 s: every model saved (6: no
  // node samples, so no __node__ and no pod model).
  CHECK(server.stats().checkpointsSaved == 6);
  CHECK(std::filesystem::exists(dir.path("__node-sys__")));
  logs.clock.advance(seconds(30));
  server.tick(cache, pods, true, logs.clock.now(), logs.clock.wallNow());
  CHECK(server.stats().checkpointsSaved == 6);  // none due: saved 30 s ago

  // A second server on the same directory starts from the files.
  PredictServer restarted(config, dir.path(), logs.failures);
  restarted.tick(cache, pods, true, logs.clock.now(), logs.clock.wallNow());
  CHECK(restarted.stats().checkpointsRestored == 6);
  CHECK(restarted.checkpointStatus().rfind("restored 6 models", 0) == 0);
}

TEST_CASE("without a checkpoint directory the server says so once, and saves once it exists") {
  test::LogCapture logs;
  MetricCache cache(MetricCache::Config{}, logs.clock.now());
  PredictServer server({}, "/nonexistent-koordlet-checkpoints", logs.failures);
  server.tick(cache, {runningPod(kUid)}, true, logs.clock.now(), logs.clock.wallNow());
  CHECK(server.checkpointStatus().rfind("not restored: /nonexistent-koordlet-checkpoints", 0) == 0);
  const size_t lines = logs.lines('W');
  CHECK(lines == 1);
  for (int i = 0; i < 5; ++i) {
    logs.clock.advance(minutes(1));
    server.tick(cache, {runningPod(kUid)}, true, logs.clock.now(), logs.clock.wallNow());
  }
  // The saves fail as one streak: one more line, not one a minute.
  CHECK(logs.lines('W') == lines + 1);
  CHECK(server.stats().checkpointSaveErrors > 0);
  CHECK(server.stats().trainings == 6);
  CHECK(server.models().size() == 6);
}

TEST_CASE("a checkpoint directory made after start is saved into") {
  test::LogCapture logs;
  test::TempTree tree;
  MetricCache cache(MetricCache::Config{}, logs.clock.now());
  PredictServer server({}, tree.path("later"), logs.failures);
  server.tick(cache, {runningPod(kUid)}, true, logs.clock.now(), logs.clock.wallNow());
  std::filesystem::create_directories(tree.path("later"));
  logs.clock.advance(minutes(1));
  server.tick(cache, {runningPod(kUid)}, true, logs.clock.now(), logs.clock.wallNow());
  CHECK(server.stats().checkpointsSaved == 6);
  CHECK(std::filesystem::exists(tree.path("later/__node-sys__")));
}

}  // namespace test_prediction_predict_server
