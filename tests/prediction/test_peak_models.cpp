#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>

#include "prediction/peak_models.h"
#include "prediction/reclaimable.h"

namespace test_prediction_peak_models {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::prediction;
using namespace std::chrono;

namespace {

const Clock::Wall kT0 = Clock::Wall(duration_cast<Clock::Wall::duration>(seconds(1795564800)));

// Upper bound of the bucket `value` falls in: what every percentile of a histogram
// fed only `value` reads (koordlet's formula, by hand).
double upper(double first, double value) {
  const int b = static_cast<int>(std::log(value * 0.05 / first + 1) / std::log(1.05));
  return first * (std::pow(1.05, b + 1) - 1) / 0.05;
}
int64_t cpuPeak(double cores) { return static_cast<int64_t>(upper(0.025, cores) * 1000); }
int64_t memPeak(double bytes) { return static_cast<int64_t>(upper(5.0 * (1 << 20), bytes)); }

Pod pod(std::string uid, PriorityClass pc, int64_t cpuReq, int64_t memReq, Clock::Wall created) {
  Pod p;
  p.uid = uid;
  p.ns = "default";
  p.name = uid;
  p.phase = "Running";
  p.kubeQos = KubeQos::kBurstable;
  p.priorityClass = pc;
  p.created = created;
  Container c;
  c.name = "main";
  c.requests.cpuMilli = cpuReq;
  c.requests.memoryBytes = memReq;
  p.containers.push_back(c);
  return p;
}

TrainingInput::PodUsage usage(const Pod& p, double cpu, double mem) {
  return {p.uid, p.priorityWithDefault(), cpu, mem};
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

}  // namespace

TEST_CASE("a training round feeds each pod, the node, every class and the system") {
  PeakModels m({});
  const Pod a = pod("a", PriorityClass::kProd, 4000, 0, kT0);
  const Pod b = pod("b", PriorityClass::kBatch, 1000, 0, kT0);
  TrainingInput in;
  in.pods = {usage(a, 1.0, kGiB), usage(b, 0.5, kGiB / 2)};
  in.nodeCpuCores = 2.0;
  in.nodeMemoryBytes = 2 * kGiB;
  std::vector<std::string> freed;
  CHECK_FALSE(m.synced());
  m.train(in, {"a", "b"}, kT0, freed);
  CHECK(m.synced());
  CHECK(freed.empty());
  // a, b, __node__, 5 classes, __node-sys__
  CHECK(m.size() == 9);
  CHECK(m.predict("a")->p95.cpuMilli == cpuPeak(1.0));
  CHECK(m.predict("__node__")->max.cpuMilli == cpuPeak(2.0));
  CHECK(m.predict("__node-koord-prod__")->p95.cpuMilli == cpuPeak(1.0));
  CHECK(m.predict("__node-koord-batch__")->p95.cpuMilli == cpuPeak(0.5));
  // No pod of the class: a 0 sample, which reads as bucket 0's upper bound.
  CHECK(m.predict("__node-koord-mid__")->p95.cpuMilli == 25);
  CHECK(m.predict("__node-__")->p95.memoryBytes == 5 << 20);
  // system = node - all pods = 0.5 cores, 0.5 GiB
  CHECK(m.predict("__node-sys__")->p95.cpuMilli == cpuPeak(0.5));
  CHECK(m.predict("__node-sys__")->p98.memoryBytes == memPeak(kGiB / 2));
  CHECK_FALSE(m.predict("c"));
}

TEST_CASE("without a node sample the system model learns 0, as koordlet's quirk") {
  PeakModels m({});
  TrainingInput in;
  in.pods = {usage(pod("a", PriorityClass::kProd, 1000, 0, kT0), 1.0, kGiB)};
  std::vector<std::string> freed;
  m.train(in, {"a"}, kT0, freed);
  CHECK_FALSE(m.predict("__node__"));
  CHECK(m.predict("__node-sys__")->p95.cpuMilli == cpuPeak(0));  // 25m: a 0 sample
}

TEST_CASE("a pod's model is freed in the round its pod leaves the list") {
  PeakModels m({});
  TrainingInput in;
  in.pods = {usage(pod("a", PriorityClass::kProd, 1000, 0, kT0), 1.0, kGiB)};
  std::vector<std::string> freed;
  m.train(in, {"a"}, kT0, freed);
  REQUIRE(m.predict("a"));
  m.train({}, {}, kT0 + minutes(1), freed);
  CHECK(freed == std::vector<std::string>{"a"});
  CHECK_FALSE(m.predict("a"));
  CHECK(m.predict("__node-sys__"));  // node models stay
}

TEST_CASE("models not updated for the expiry are dropped, but never before the first round") {
  PredictionConfig c;
  c.modelExpiration = minutes(30);
  PeakModels m(c);
  CHECK(m.expire(kT0 + hours(5)).empty());
  TrainingInput in;
  in.pods = {usage(pod("a", PriorityClass::kProd, 1000, 0, kT0), 1.0, kGiB)};
  std::vector<std::string> freed;
  m.train(in, {"a"}, kT0, freed);
  // "a" keeps its place in the list but stops having samples.
  m.train({}, {"a"}, kT0 + minutes(20), freed);
  CHECK(m.expire(kT0 + minutes(30)).empty());
  CHECK(m.expire(kT0 + minutes(31)) == std::vector<std::string>{"a"});
  CHECK(m.size() == 6);  // 5 classes and the system; no node sample ever
}

TEST_CASE(
    "checkpoints go oldest first, at most the step's maximum, none saved within the interval") {
  PredictionConfig c;
  c.checkpointMaxPerStep = 4;
  c.checkpointInterval = minutes(10);
  PeakModels m(c);
  CHECK(m.checkpointsDue(kT0).empty());  // not synced
  std::vector<std::string> freed;
  m.train({}, {}, kT0, freed);  // 6 models
  auto first = m.checkpointsDue(kT0);
  REQUIRE(first.size() == 4);
  CHECK(first[0].lastUpdated == kT0);
  auto second = m.checkpointsDue(kT0 + minutes(1));
  CHECK(second.size() == 2);  // the two never saved; the 4 others are a minute old
  CHECK(m.checkpointsDue(kT0 + minutes(2)).empty());
  CHECK(m.checkpointsDue(kT0 + minutes(10)).size() == 4);
}

TEST_CASE("a restored model predicts what was saved and takes its save time as updated") {
  PeakModels m({});
  TrainingInput in;
  in.pods = {usage(pod("a", PriorityClass::kProd, 1000, 0, kT0), 1.0, kGiB)};
  std::vector<std::string> freed;
  m.train(in, {"a"}, kT0, freed);
  const auto saved = m.checkpointsDue(kT0 + minutes(5));
  PeakModels restored({});
  for (const auto& c : saved) REQUIRE(restored.restore(c).ok());
  CHECK(restored.size() == m.size());
  CHECK(restored.predict("a")->p95.cpuMilli == m.predict("a")->p95.cpuMilli);
  CHECK(restored.predict("a")->p98.memoryBytes == m.predict("a")->p98.memoryBytes);
  restored.train({}, {"a"}, kT0 + minutes(30), freed);  // synced; "a" got no sample
  CHECK(restored.expire(kT0 + minutes(30)).empty());    // saved at +5: 25 min
  CHECK(restored.expire(kT0 + minutes(36)) == std::vector<std::string>{"a"});
}

TEST_CASE("a pod model past the cap is refused and counted") {
  PeakModels m({});
  TrainingInput in;
  std::vector<std::string> live;
  for (size_t i = 0; i < PeakModels::kMaxModels; ++i) {
    live.push_back(std::to_string(i));
    live.back().insert(0, 1, 'p');
    in.pods.push_back({live.back(), PriorityClass::kProd, 0.1, 1e6});
  }
  std::vector<std::string> freed;
  m.train(in, live, kT0, freed);
  CHECK(m.size() == PeakModels::kMaxModels);
  CHECK(m.refusedModels() == 6);  // 6 node models first (no node sample), then 4090 pods
  CHECK(m.predict("__node-sys__"));
  CHECK(m.predict("__node-koord-prod__"));
  CHECK_FALSE(m.predict(live.back()));
}

// ---- the reclaimable formula ------------------------------------------------------

TEST_CASE("prod reclaimable is the smaller of the pod and the priority predictions") {
  PeakModels m({});  // margin 10 %, cold start 24 h
  const Clock::Wall now = kT0 + hours(48);
  const Pod a = pod("a", PriorityClass::kProd, 4000, 4 * int64_t(kGiB), kT0);
  const Pod b = pod("b", PriorityClass::kNone, 2000, 2 * int64_t(kGiB), kT0);
  Pod young = pod("young", PriorityClass::kProd, 1000, int64_t(kGiB), now - hours(1));
  const Pod batch = pod("batch", PriorityClass::kBatch, 8000, 8 * int64_t(kGiB), kT0);
  TrainingInput in;
  in.pods = {usage(a, 1.0, kGiB), usage(b, 0.5, kGiB / 2), usage(young, 0.2, kGiB / 4),
             usage(batch, 3.0, 3 * kGiB)};
  in.nodeCpuCores = 6.0;
  in.nodeMemoryBytes = 6 * kGiB;
  std::vector<std::string> freed;
  m.train(in, {"a", "b", "young", "batch"}, now, freed);

  const ReclaimableResources alloc{16000, 32 * int64_t(kGiB)};
  const auto r = predictProdReclaimable(m, {&a, &b, &young, &batch}, alloc, now);
  REQUIRE(r.pod.ok());
  REQUIRE(r.priority.ok());
  REQUIRE(r.min.ok());

  // pod: a and b are past their cold start; young is not; batch is not prod.
  const int64_t peakA = int64_t(cpuPeak(1.0) * 1.1), peakB = int64_t(cpuPeak(0.5) * 1.1);
  const int64_t memA = int64_t(memPeak(kGiB) * 1.1), memB = int64_t(memPeak(kGiB / 2) * 1.1);
  CHECK(*r.pod->cpuMilli == (4000 - peakA) + (2000 - peakB));
  CHECK(*r.pod->memoryBytes == (4 * int64_t(kGiB) - memA) + (2 * int64_t(kGiB) - memB));

  // priority: (system + prod class + no class) x 1.1 against all live prod requests.
  // b has no class but is Burstable: LS, so koord-prod. No pod is left without one.
  const double sysCpu = 6.0 - (1.0 + 0.5 + 0.2 + 3.0);
  const int64_t prioPeak =
      int64_t(double(cpuPeak(sysCpu) + cpuPeak(1.0 + 0.5 + 0.2) + cpuPeak(0)) * 1.1);
  CHECK(*r.priority->cpuMilli == (4000 + 2000 + 1000) - prioPeak);
  CHECK(*r.min->cpuMilli == std::min(*r.pod->cpuMilli, *r.priority->cpuMilli));
  CHECK(*r.min->memoryBytes == std::min(*r.pod->memoryBytes, *r.priority->memoryBytes));
}

TEST_CASE("allocatable caps the reclaimable and a missing model leaves the pod out") {
  PeakModels m({});
  const Clock::Wall now = kT0 + hours(48);
  const Pod a = pod("a", PriorityClass::kProd, 4000, 4 * int64_t(kGiB), kT0);
  const Pod ghost = pod("ghost", PriorityClass::kProd, 4000, 0, kT0);
  TrainingInput in;
  in.pods = {usage(a, 1.0, kGiB)};
  in.nodeCpuCores = 1.0;
  in.nodeMemoryBytes = kGiB;
  std::vector<std::string> freed;
  m.train(in, {"a", "ghost"}, now, freed);
  // Allocatable 1.2 cores: alloc - Σpeak = 1200 - peakA, under the 4000 - peakA reclaimable.
  const auto r =
      predictProdReclaimable(m, {&a, &ghost}, ReclaimableResources{1200, std::nullopt}, now);
  REQUIRE(r.min.ok());
  const int64_t peakA = int64_t(cpuPeak(1.0) * 1.1);
  CHECK(*r.pod->cpuMilli == 1200 - peakA);
  CHECK_FALSE(r.pod->memoryBytes);  // not in allocatable: not in the result
  CHECK_FALSE(r.min->memoryBytes);
  CHECK(r.podsWithoutModel == std::vector<std::string>{"default/ghost"});
}

TEST_CASE("the prediction fails without allocatable or before the first training, and says why") {
  PeakModels m({});
  const Pod a = pod("a", PriorityClass::kProd, 4000, 0, kT0);
  auto r = predictProdReclaimable(m, {&a}, std::nullopt, kT0);
  CHECK_FALSE(r.min.ok());
  CHECK(r.min.error().message == "node allocatable not known");
  r = predictProdReclaimable(m, {&a}, ReclaimableResources{1000, 1000}, kT0);
  REQUIRE(r.pod.ok());  // a is cold: nothing, no error
  CHECK_FALSE(r.priority.ok());
  CHECK(r.min.error().message == "no prediction of __node-sys__ yet");
}

TEST_CASE("deleting and finished pods count in neither predictor") {
  PeakModels m({});
  const Clock::Wall now = kT0 + hours(48);
  Pod done = pod("done", PriorityClass::kProd, 4000, 0, kT0);
  done.phase = "Succeeded";
  Pod leaving = pod("leaving", PriorityClass::kProd, 4000, 0, kT0);
  leaving.terminating = true;
  std::vector<std::string> freed;
  TrainingInput in;
  in.nodeCpuCores = 0.0;
  in.nodeMemoryBytes = 0.0;
  m.train(in, {"done", "leaving"}, now, freed);
  const auto r = predictProdReclaimable(m, {&done, &leaving}, ReclaimableResources{8000, 0}, now);
  REQUIRE(r.min.ok());
  CHECK(*r.pod->cpuMilli == 0);
  CHECK(*r.priority->cpuMilli == 0);
  CHECK(r.podsWithoutModel.empty());
}

}  // namespace test_prediction_peak_models
