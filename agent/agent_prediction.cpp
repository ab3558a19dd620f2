// The agent's side of the peak predictor (prediction/): when it runs, what it is
// given, and where its answer goes (NodeMetric's prodReclaimableMetric, the
// prediction gauges, /config).
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include "agent/agent.h"

namespace koord {

void Agent::startPrediction() {
  predictor_ = std::make_unique<prediction::PredictServer>(
      opts_.prediction, opts_.predictionCheckpointFilepath, failures_);
  KLOG_INFO << "peak prediction: training every "
            << std::chrono::duration<double>(opts_.prediction.trainingInterval).count()
            << " s, checkpoints " << predictor_->checkpointStatus();
}

void Agent::runPrediction() {
  if (!predictor_) return;
  predictor_->tick(cache_, informer_.pods(), informer_.synced(), clock_->now(), clock_->wallNow());
  const auto& st = predictor_->stats();
  exporter_.recordPredictor({predictor_->models().size(), predictor_->models().bytesUsed(),
                             st.checkpointsSaved, st.checkpointSaveErrors,
                             std::chrono::duration<double>(st.lastTrainingDuration).count()});
}

// koordlet's getNodeAllocatable: the raw-allocatable annotation when it parses,
// else status.allocatable; nullopt before the Node is seen.
std::optional<prediction::ReclaimableResources> Agent::nodeAllocatable() const {
  if (!nodeInfo_) return std::nullopt;
  const NodeResources& r =
      nodeInfo_->rawAllocatable ? *nodeInfo_->rawAllocatable : nodeInfo_->allocatable;
  return prediction::ReclaimableResources{r.cpuMilli, r.memoryBytes};
}

nlohmann::json Agent::prodReclaimable(const std::vector<const Pod*>& reported) {
  if (!predictor_) return nlohmann::json{{"resource", nlohmann::json::object()}};
  const auto result = prediction::predictProdReclaimable(predictor_->models(), reported,
                                                         nodeAllocatable(), clock_->wallNow());
  ReclaimableSample sample;
  const std::pair<const char*, const Result<prediction::ReclaimableResources>*> predictors[] = {
      {"podReclaimablePredictor", &result.pod},
      {"priorityReclaimablePredictor", &result.priority},
      {"minPredictor", &result.min}};
  for (const auto& [name, r] : predictors) {
    if (!r->ok()) continue;
    ReclaimableSample::Resources res;
    if ((*r)->cpuMilli) res.cpuCores = static_cast<double>(*(*r)->cpuMilli) / 1000;
    if ((*r)->memoryBytes) res.memoryBytes = static_cast<double>(*(*r)->memoryBytes);
    sample.predicted.emplace(name, res);
  }
  sample.ok = result.min.ok();
  exporter_.recordReclaimable(sample);
  if (!result.min.ok()) {
    // Expected for the first training interval after start: not a warning until the
    // predictor has trained and still cannot answer.
    failures_.failure("prod reclaimable prediction",
                      predictor_->models().synced() ? Severity::kWarning : Severity::kInfo,
                      "prod reclaimable not predicted: " + result.min.error().message +
                          " (NodeMetric carries prodReclaimableMetric {\"resource\":{}}, which "
                          "koord-manager reads as 0)");
  } else {
    failures_.success("prod reclaimable prediction");
  }
  return prediction::prodReclaimableJson(result.min);
}

nlohmann::json Agent::predictionJson() const {
  if (!predictor_) {
    return nlohmann::json{
        {"enabled", false},
        {"why", opts_.enableNodeMetricReport ? "no API server: no NodeMetric to report it in"
                                             : "--enable-node-metric-report=false"}};
  }
  nlohmann::json j = predictor_->json();
  j["enabled"] = true;
  return j;
}

}  // namespace koord
