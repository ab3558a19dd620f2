// PeakModels: koordlet's predict server without its I/O (reference colocation.md
// §1.3, §1.5). Each training round takes the P90 of the last training interval's
// usage of every pod, of the node, of each priority class summed and of the system
// (node minus all pods), and adds it with weight 1 to that model's two decaying
// histograms (CPU half-life 12 h, memory 24 h by default). Predictions read p60,
// p90, p95, p98 and max off them (CPU in milli-cores, truncated; memory in bytes).
//
// Model ids: the pod UID; `__node__`; `__node-sys__`; `__node-<class>__` for
// koord-prod, koord-mid, koord-batch, koord-free and `__node-__` (no class).
//
// Decisions beyond koordlet's:
//  * A pod's model is freed in the round its pod leaves the kubelet's list (koordlet
//    waits for the 30 min expiry): a pod UID never comes back, and a 500-pod churn
//    would otherwise hold 30 min of dead models. Its checkpoint goes with it.
//  * At most kMaxModels models: past it a new pod gets no model (counted), so a
//    runaway pod list cannot grow memory without bound. A model is ~3 KB (363
//    doubles of weights).
//  * Time: wall time for the histograms and expiry (checkpoints outlive the
//    process); the caller passes it, tests inject it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "kube/qos_class.h"
#include "prediction/checkpoint.h"
#include "prediction/histogram.h"

namespace koord::prediction {

// koordlet's --prediction-* flags, with their defaults.
struct PredictionConfig {
  std::chrono::nanoseconds coldStart = std::chrono::hours(24);
  int safetyMarginPercent = 10;
  std::chrono::nanoseconds memoryHalfLife = std::chrono::hours(24);
  std::chrono::nanoseconds cpuHalfLife = std::chrono::hours(12);
  std::chrono::nanoseconds trainingInterval = std::chrono::minutes(1);
  std::chrono::nanoseconds modelExpiration = std::chrono::minutes(30);
  std::chrono::nanoseconds checkpointInterval = std::chrono::minutes(10);
  int checkpointMaxPerStep = 12;
};

inline constexpr std::string_view kNodeModel = "__node__";
inline constexpr std::string_view kSystemModel = "__node-sys__";
// "__node-koord-prod__", and "__node-__" for PriorityClass::kNone.
std::string classModelId(PriorityClass priority);
// The classes koordlet trains, in its order (KnownPriorityClasses).
inline constexpr PriorityClass kKnownClasses[] = {PriorityClass::kProd, PriorityClass::kMid,
                                                  PriorityClass::kBatch, PriorityClass::kFree,
                                                  PriorityClass::kNone};

// One model's percentiles.
struct Prediction {
  struct Point {
    int64_t cpuMilli = 0;
    int64_t memoryBytes = 0;
  };
  Point p60, p90, p95, p98, max;
};

// What one training round learned (the caller reads the metric cache).
struct TrainingInput {
  struct PodUsage {
    std::string uid;
    PriorityClass priority = PriorityClass::kNone;  // with its QoS default
    double cpuCores = 0;
    double memoryBytes = 0;
  };
  std::vector<PodUsage> pods;  // pods whose two P90 queries found samples
  // Node P90s; nullopt when either query found nothing.
  std::optional<double> nodeCpuCores;
  std::optional<double> nodeMemoryBytes;
};

class PeakModels {
 public:
  static constexpr size_t kMaxModels = 4096;

  explicit PeakModels(PredictionConfig config) : config_(config) {}
  const PredictionConfig& config() const { return config_; }

  // koordlet's training(): every pod, the node (when known), each class (0 when no
  // pod of it had data) and the system. `livePods` are the UIDs in the kubelet's
  // list: other pod models are freed and their ids appended to `freed`.
  void train(const TrainingInput& input, const std::vector<std::string>& livePods, Clock::Wall now,
             std::vector<std::string>& freed);
  bool synced() const { return synced_; }

  std::optional<Prediction> predict(std::string_view uid) const;

  // Models not updated for modelExpiration; removed and returned (nothing before
  // the first round, as koordlet).
  std::vector<std::string> expire(Clock::Wall now);
  // The models to save now, oldest save first: at most checkpointMaxPerStep, and
  // none saved less than checkpointInterval ago. Each is marked saved at `now`
  // whether or not the caller's write succeeds (koordlet's rule).
  std::vector<ModelCheckpoint> checkpointsDue(Clock::Wall now);
  // A restored checkpoint; refused (naming the histogram) when a bucket is out of
  // range. Its LastUpdated is the model's, as in koordlet.
  Status restore(const ModelCheckpoint& checkpoint);

  size_t size() const { return models_.size(); }
  size_t refusedModels() const { return refused_; }  // pods past kMaxModels, ever
  // Heap bytes held: the weights, ids and map nodes (an upper bound).
  size_t bytesUsed() const;

 private:
  struct Model {
    Model(const PredictionConfig& c)
        : cpu(HistogramOptions::cpu(), c.cpuHalfLife),
          memory(HistogramOptions::memory(), c.memoryHalfLife) {}
    DecayingHistogram cpu;
    DecayingHistogram memory;
    Clock::Wall lastUpdated{};
    std::optional<Clock::Wall> lastCheckpointed;  // nullopt: never (Go's zero time)
  };
  void update(const std::string& uid, double cpu, double memory, Clock::Wall now);

  PredictionConfig config_;
  std::unordered_map<std::string, Model> models_;
  bool synced_ = false;
  size_t refused_ = 0;
};

}  // namespace koord::prediction
