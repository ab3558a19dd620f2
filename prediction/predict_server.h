// PredictServer: koordlet's peak predictor as the agent runs it (reference
// colocation.md §1). The agent calls tick() from its collection round; the server
// decides what is due:
//  * restore, once, on the first tick with the kubelet's pod list (koordlet: after
//    the informer syncs): checkpoints of pods not on the node are deleted;
//  * training every --prediction-training-interval, the first at that first tick,
//    from the P90 of the last interval's samples in the metric cache;
//  * expiry of stale models and checkpoint saves every minute (after the first
//    training), at most checkpointMaxPerStep files a round. With a training interval
//    under a minute (a test's, or an operator's choice) these run at that interval
//    instead, so what is trained is also saved that often.
// Everything runs on the loop thread: a save is one small file (about 5 KB).
// Without --prediction-checkpoint-filepath's directory (koordlet does not create
// it; neither do we: the DaemonSet mounts it) the models live in memory only, said
// once in the log and in checkpointStatus().
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "kube/pod.h"
#include "metrics/metric_cache.h"
#include "prediction/checkpoint.h"
#include "prediction/peak_models.h"
#include "prediction/reclaimable.h"

namespace koord::prediction {

// One training round's input from the cache: P90 over [now - window, now] of each
// pod's CPU and memory (without page cache) and of the node's (MemTotal -
// MemAvailable); a pod lacking either is left out, as koordlet's failed query.
TrainingInput trainingInput(const MetricCache& cache, const std::vector<Pod>& pods,
                            Clock::Monotonic now, std::chrono::nanoseconds window);

// status.prodReclaimableMetric as koordlet sends it: {"resource": {"resources":
// {"cpu": "1500m", "memory": "1Gi"}}}, or {"resource": {}} when the prediction failed.
nlohmann::json prodReclaimableJson(const Result<ReclaimableResources>& result);

class PredictServer {
 public:
  // `checkpointDir` empty: no checkpoints.
  PredictServer(PredictionConfig config, std::string checkpointDir, FailureLog& failures);
  static constexpr std::chrono::minutes kMaintenanceEvery{1};

  void tick(const MetricCache& cache, const std::vector<Pod>& pods, bool podsKnown,
            Clock::Monotonic now, Clock::Wall wallNow);

  const PeakModels& models() const { return models_; }

  struct Stats {
    uint64_t trainings = 0;
    uint64_t checkpointsSaved = 0;
    uint64_t checkpointSaveErrors = 0;
    uint64_t checkpointsRestored = 0;
    uint64_t checkpointsSkipped = 0;  // restore: foreign, corrupt, unreadable
    uint64_t modelsExpired = 0;
    uint64_t modelsFreed = 0;  // their pod left
    std::chrono::nanoseconds lastTrainingDuration{0};
    std::optional<Clock::Wall> lastTraining;
  };
  const Stats& stats() const { return stats_; }
  // "restored 12 models from <dir>", "off (no --prediction-checkpoint-filepath)", ...
  const std::string& checkpointStatus() const { return checkpointStatus_; }
  nlohmann::json json() const;

 private:
  void restore(const std::vector<Pod>& pods);
  void train(const MetricCache& cache, const std::vector<Pod>& pods, Clock::Monotonic now,
             Clock::Wall wallNow);
  void maintain(Clock::Wall wallNow);
  void removeCheckpoint(const std::string& uid);

  PeakModels models_;
  std::optional<CheckpointDir> dir_;
  FailureLog* failures_;
  bool restored_ = false;
  std::optional<Clock::Monotonic> nextTraining_;
  std::optional<Clock::Monotonic> nextMaintenance_;
  Clock::Monotonic::duration maintenanceEvery_;
  Stats stats_;
  std::string checkpointStatus_;
};

}  // namespace koord::prediction
