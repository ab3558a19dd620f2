// The exporter's colocation families: the peak prediction's three of koordlet
// (reference colocation.md §1.9) and ours on the predictor's own footprint; the host
// applications' usage (§6).
#include <tuple>

#include "metrics/exporter.h"

namespace koord {

void Exporter::initPrediction() {
  predictedReclaimable_ = &gaugeFamily(
      "koordlet_node_predicted_resource_reclaimable",
      "the node predicted resource reclaimable by each predictor (podReclaimablePredictor, "
      "priorityReclaimablePredictor, minPredictor), cpu in cores and memory in bytes");
  priorityReclaimable_ = &gaugeFamily(
      "koordlet_node_priority_resource_reclaimable",
      "the node prod reclaimable resource reported in NodeMetric's prodReclaimableMetric (0 "
      "when the prediction failed)");
  // Its series appears with the first report, as koordlet's: a 0 before any
  // prediction would read as "succeeded".
  priorityReclaimableStatus_ =
      &gaugeFamily("koordlet_node_resource_priority_reclaimable_status",
                   "0 when the node's prod reclaimable prediction succeeded, 1 when it failed");
  predictionModels_ = &gaugeFamily("koordlet_prediction_models",
                                   "peak predictor models held (one per pod, the node, each "
                                   "priority class and the system)")
                           .Add({{"node", node_}});
  predictionModelBytes_ = &gaugeFamily("koordlet_prediction_model_bytes",
                                       "heap bytes held by the peak predictor's models (an upper "
                                       "bound)")
                               .Add({{"node", node_}});
  predictionTrainingSeconds_ = &gaugeFamily("koordlet_prediction_training_duration_seconds",
                                            "how long the last training round took")
                                    .Add({{"node", node_}});
  hostAppUsage_ = &gaugeFamily("koordlet_host_application_resource_usage",
                               "the resource usage of host applications (cpu in cores, memory in "
                               "bytes without page cache)");
  nodeAllocatable_ = &gaugeFamily("koordlet_node_resource_allocatable",
                                  "the node allocatable of batch and mid resources from its Node "
                                  "(cpu as an integer of milli-cores, memory in bytes)");
  cpuInfoStatus_ = &counterFamily("koordlet_collect_node_cpu_info_status",
                                  "the count of node cpu info collections by status");
  numaInfoStatus_ = &counterFamily("koordlet_collect_node_numa_info_status",
                                   "the count of node numa info collections by status");
  sharePoolCpus_ = &gaugeFamily("koordlet_cpuset_share_pool_cpu_cores",
                                "the number of cpus in the LS share pools")
                        .Add({{"node", node_}});
  beSharePoolCpus_ = &gaugeFamily("koordlet_cpuset_be_share_pool_cpu_cores",
                                  "the number of cpus in the BE share pools")
                          .Add({{"node", node_}});
  auto& saves = counterFamily("koordlet_prediction_checkpoint_saves_total",
                              "prediction checkpoints written, by result (ok, error)");
  checkpointsSaved_ = &saves.Add({{"node", node_}, {"result", "ok"}});
  checkpointSaveErrors_ = &saves.Add({{"node", node_}, {"result", "error"}});
}

void Exporter::recordReclaimable(const ReclaimableSample& sample) {
  for (const auto& [predictor, r] : sample.predicted) {
    if (r.cpuCores) {
      predictedReclaimable_
          ->Add({{"node", node_}, {"predictor", predictor}, {"resource", "cpu"}, {"unit", "core"}})
          .Set(*r.cpuCores);
    }
    if (r.memoryBytes) {
      predictedReclaimable_
          ->Add(
              {{"node", node_}, {"predictor", predictor}, {"resource", "memory"}, {"unit", "byte"}})
          .Set(*r.memoryBytes);
    }
  }
  const auto it = sample.predicted.find("minPredictor");
  const bool ok = sample.ok && it != sample.predicted.end();
  auto value = [&](std::optional<double> ReclaimableSample::Resources::*field) {
    return ok ? (it->second.*field).value_or(0) : 0.0;
  };
  priorityReclaimable_
      ->Add({{"node", node_}, {"priority", "koord-prod"}, {"resource", "cpu"}, {"unit", "core"}})
      .Set(value(&ReclaimableSample::Resources::cpuCores));
  priorityReclaimable_
      ->Add({{"node", node_}, {"priority", "koord-prod"}, {"resource", "memory"}, {"unit", "byte"}})
      .Set(value(&ReclaimableSample::Resources::memoryBytes));
  priorityReclaimableStatus_->Add({{"node", node_}, {"priority", "koord-prod"}}).Set(ok ? 0 : 1);
}

void Exporter::recordHostApps(const std::vector<HostAppUsageRow>& rows) {
  for (prometheus::Gauge* g : hostAppSeries_) hostAppUsage_->Remove(g);
  hostAppSeries_.clear();
  for (const HostAppUsageRow& r : rows) {
    for (const auto& [resource, value] :
         {std::pair{"cpu", r.cpuCores}, std::pair{"memory", r.memoryBytes}}) {
      prometheus::Gauge& g = hostAppUsage_->Add({{"node", node_},
                                                 {"host_application_name", r.name},
                                                 {"resource", resource},
                                                 {"priority_class", r.priority},
                                                 {"qos", r.qos}});
      g.Set(value);
      hostAppSeries_.push_back(&g);
    }
  }
}

void Exporter::recordNodeAllocatable(const NodeAllocatable& a) {
  const std::tuple<const char*, const char*, std::optional<int64_t>> rows[] = {
      {"kubernetes.io/batch-cpu", "integer", a.batchCpuMilli},
      {"kubernetes.io/batch-memory", "byte", a.batchMemoryBytes},
      {"kubernetes.io/mid-cpu", "integer", a.midCpuMilli},
      {"kubernetes.io/mid-memory", "byte", a.midMemoryBytes}};
  for (const auto& [resource, unit, value] : rows) {
    nodeAllocatable_->Add({{"node", node_}, {"resource", resource}, {"unit", unit}})
        .Set(static_cast<double>(value.value_or(0)));
  }
}

void Exporter::countNodeInfoCollection(bool cpuOk, bool numaOk) {
  cpuInfoStatus_->Add({{"node", node_}, {"status", cpuOk ? "succeeded" : "failed"}}).Increment();
  numaInfoStatus_->Add({{"node", node_}, {"status", numaOk ? "succeeded" : "failed"}}).Increment();
}

void Exporter::recordSharePools(size_t lsCpus, size_t beCpus) {
  sharePoolCpus_->Set(static_cast<double>(lsCpus));
  beSharePoolCpus_->Set(static_cast<double>(beCpus));
}

void Exporter::recordPredictor(const PredictorSample& s) {
  predictionModels_->Set(static_cast<double>(s.models));
  predictionModelBytes_->Set(static_cast<double>(s.modelBytes));
  predictionTrainingSeconds_->Set(s.lastTrainingSeconds);
  mirror(*checkpointsSaved_, lastCheckpointsSaved_, static_cast<double>(s.checkpointsSaved));
  mirror(*checkpointSaveErrors_, lastCheckpointSaveErrors_,
         static_cast<double>(s.checkpointSaveErrors));
}

}  // namespace koord
