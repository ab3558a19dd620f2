#include "prediction/predict_server.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "base/time_format.h"
#include "metrics/quantity_format.h"

namespace koord::prediction {

namespace {

Clock::Monotonic windowStart(Clock::Monotonic now, std::chrono::nanoseconds window) {
  return now - std::chrono::duration_cast<Clock::Monotonic::duration>(window);
}

}  // namespace

TrainingInput trainingInput(const MetricCache& cache, const std::vector<Pod>& pods,
                            Clock::Monotonic now, std::chrono::nanoseconds window) {
  TrainingInput in;
  const Clock::Monotonic from = windowStart(now, window);
  in.pods.reserve(pods.size());
  for (const Pod& pod : pods) {
    const auto cpu =
        cache.query({MetricKind::kPodCpuCores, pod.uid, ""}, Aggregation::kP90, from, now);
    if (!cpu) continue;
    const auto mem =
        cache.query({MetricKind::kPodMemoryBytes, pod.uid, ""}, Aggregation::kP90, from, now);
    if (!mem) continue;
    in.pods.push_back({pod.uid, pod.priorityWithDefault(), *cpu, *mem});
  }
  in.nodeCpuCores = cache.query({MetricKind::kNodeCpuCores, "", ""}, Aggregation::kP90, from, now);
  in.nodeMemoryBytes =
      cache.query({MetricKind::kNodeMemoryBytes, "", ""}, Aggregation::kP90, from, now);
  return in;
}

nlohmann::json prodReclaimableJson(const Result<ReclaimableResources>& result) {
  nlohmann::json resource = nlohmann::json::object();
  if (result.ok() && (result->cpuMilli || result->memoryBytes)) {
    nlohmann::json resources = nlohmann::json::object();
    if (result->cpuMilli) resources["cpu"] = formatMilliQuantityDecimalSI(*result->cpuMilli);
    if (result->memoryBytes) resources["memory"] = formatQuantityBinarySI(*result->memoryBytes);
    resource["resources"] = std::move(resources);
  }
  return nlohmann::json{{"resource", std::move(resource)}};
}

PredictServer::PredictServer(PredictionConfig config, std::string checkpointDir,
                             FailureLog& failures)
    : models_(config),
      failures_(&failures),
      maintenanceEvery_(std::min<Clock::Monotonic::duration>(
          kMaintenanceEvery,
          std::chrono::duration_cast<Clock::Monotonic::duration>(config.trainingInterval))) {
  if (checkpointDir.empty()) {
    checkpointStatus_ = "off (no --prediction-checkpoint-filepath)";
  } else {
    dir_.emplace(std::move(checkpointDir));
    checkpointStatus_ = "waiting for the pod list";
  }
}

void PredictServer::removeCheckpoint(const std::string& uid) {
  if (!dir_ || !restored_) return;
  if (auto st = dir_->remove(uid); !st) {
    failures_->failure("prediction checkpoint remove", Severity::kWarning, st.error().message);
  }
}

void PredictServer::restore(const std::vector<Pod>& pods) {
  restored_ = true;
  if (!dir_) return;
  std::unordered_set<std::string_view> live;
  for (const Pod& p : pods) live.insert(p.uid);
  auto known = [&](std::string_view uid) {
    if (uid == kNodeModel || uid == kSystemModel) return true;
    for (const PriorityClass c : kKnownClasses) {
      if (uid == classModelId(c)) return true;
    }
    return live.count(uid) > 0;
  };
  auto r = dir_->restore(known);
  if (!r) {
    // koordlet logs and carries on; the saves will fail (and say so) the same way.
    checkpointStatus_ = "not restored: " + r.error().message;
    KLOG_WARNING << "prediction checkpoints: " << r.error().message
                 << " (models start cold; saves are tried every round and succeed once the "
                    "directory is there)";
    return;
  }
  std::vector<std::string> refused;
  for (const auto& c : r->models) {
    if (auto st = models_.restore(c); !st) {
      refused.push_back(c.uid + ": " + st.error().message);
      (void)dir_->remove(c.uid);
      continue;
    }
    ++stats_.checkpointsRestored;
  }
  stats_.checkpointsSkipped = r->skipped.size() + refused.size();
  checkpointStatus_ =
      "restored " + std::to_string(stats_.checkpointsRestored) + " models from " + dir_->dir();
  KLOG_INFO << "prediction: " << checkpointStatus_ << ", deleted " << r->deleted.size()
            << " (pods gone or unfinished saves)";
  if (!r->skipped.empty() || !refused.empty()) {
    std::string all;
    for (const auto* list : {&r->skipped, &refused}) {
      for (const auto& s : *list) {
        if (all.size() > 2000) {
          all += "; ...";
          break;
        }
        all += (all.empty() ? "" : "; ") + s;
      }
    }
    KLOG_WARNING << "prediction checkpoints skipped in " << dir_->dir() << ": " << all;
  }
}

void PredictServer::train(const MetricCache& cache, const std::vector<Pod>& pods,
                          Clock::Monotonic now, Clock::Wall wallNow) {
  const auto started = std::chrono::steady_clock::now();
  const TrainingInput in = trainingInput(cache, pods, now, models_.config().trainingInterval);
  std::vector<std::string> live;
  live.reserve(pods.size());
  for (const Pod& p : pods) live.push_back(p.uid);
  std::vector<std::string> freed;
  models_.train(in, live, wallNow, freed);
  for (const auto& uid : freed) removeCheckpoint(uid);
  stats_.modelsFreed += freed.size();
  ++stats_.trainings;
  stats_.lastTraining = wallNow;
  stats_.lastTrainingDuration = std::chrono::steady_clock::now() - started;
}

void PredictServer::maintain(Clock::Wall wallNow) {
  const auto expired = models_.expire(wallNow);
  for (const auto& uid : expired) removeCheckpoint(uid);
  stats_.modelsExpired += expired.size();
  if (!dir_) return;
  for (const auto& c : models_.checkpointsDue(wallNow)) {
    if (auto st = dir_->save(c); !st) {
      ++stats_.checkpointSaveErrors;
      failures_->failure("prediction checkpoint save", Severity::kWarning, st.error().message);
      continue;
    }
    failures_->success("prediction checkpoint save");
    ++stats_.checkpointsSaved;
  }
}

void PredictServer::tick(const MetricCache& cache, const std::vector<Pod>& pods, bool podsKnown,
                         Clock::Monotonic now, Clock::Wall wallNow) {
  if (!podsKnown) return;
  if (!restored_) restore(pods);
  if (!nextTraining_ || now >= *nextTraining_) {
    train(cache, pods, now, wallNow);
    nextTraining_ = now + std::chrono::duration_cast<Clock::Monotonic::duration>(
                              models_.config().trainingInterval);
  }
  if (!nextMaintenance_) {
    nextMaintenance_ = now + maintenanceEvery_;
  } else if (now >= *nextMaintenance_) {
    maintain(wallNow);
    nextMaintenance_ = now + maintenanceEvery_;
  }
}

nlohmann::json PredictServer::json() const {
  nlohmann::json j;
  j["models"] = models_.size();
  j["modelBytes"] = models_.bytesUsed();
  j["synced"] = models_.synced();
  j["trainings"] = stats_.trainings;
  j["lastTraining"] = stats_.lastTraining ? rfc3339(*stats_.lastTraining) : "";
  j["lastTrainingSeconds"] = std::chrono::duration<double>(stats_.lastTrainingDuration).count();
  j["modelsFreed"] = stats_.modelsFreed;
  j["modelsExpired"] = stats_.modelsExpired;
  j["modelsRefused"] = models_.refusedModels();
  j["checkpoints"] = {{"status", checkpointStatus_},
                      {"saved", stats_.checkpointsSaved},
                      {"saveErrors", stats_.checkpointSaveErrors},
                      {"restored", stats_.checkpointsRestored},
                      {"skipped", stats_.checkpointsSkipped}};
  return j;
}

}  // namespace koord::prediction
