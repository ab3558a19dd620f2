// The exporter's GPU families (exporter.h "GPUs"): the devices the driver lists and
// the use the last round read, by the node, each pod and each container.
#include "metrics/exporter.h"

namespace koord {

void Exporter::initGpu() {
  gpuInfo_ = &gaugeFamily("koordlet_gpu_device_info",
                          "a GPU of the node as the driver names it (always 1)");
  gpuHealthy_ = &gaugeFamily("koordlet_gpu_device_healthy",
                             "whether the GPU is healthy (1) or not (0), as the Device reports it");
  nodeGpuCore_ = &gaugeFamily("koordlet_node_gpu_core_usage",
                              "the percent of the time a kernel ran on the GPU");
  nodeGpuMemory_ =
      &gaugeFamily("koordlet_node_gpu_memory_usage_bytes", "the GPU's memory in use, bytes");
  nodeGpuMemoryTotal_ =
      &gaugeFamily("koordlet_node_gpu_memory_total_bytes", "the GPU's memory, bytes");
  podGpuCore_ = swept("koordlet_pod_gpu_core_usage",
                      "the pod's processes' share of the GPU's cores, percent of one GPU");
  podGpuMemory_ = swept("koordlet_pod_gpu_memory_usage_bytes",
                        "the GPU memory the pod's processes hold, bytes");
  containerGpuCore_ =
      swept("koordlet_container_gpu_core_usage",
            "the container's processes' share of the GPU's cores, percent of one GPU");
  gpuCriticalErrors_ = &counterFamily(
      "koordlet_gpu_critical_errors_total",
      "the driver's critical-error events on the GPU (error: \"Xid <n>\", \"double-bit ECC "
      "error\", \"GPU lost\"; an event naming no GPU has empty GPU labels); application Xids "
      "(13, 31, 43, 45, 68) counted without making the GPU unhealthy");
  containerGpuMemory_ = swept("koordlet_container_gpu_memory_usage_bytes",
                              "the GPU memory the container's processes hold, bytes");
  for (SweptGauges* g : {&podGpuCore_, &podGpuMemory_, &containerGpuCore_, &containerGpuMemory_}) {
    swept_.push_back(g);
  }
}

void Exporter::recordGpus(const std::vector<GpuInventory>& gpus, const GpuSystemInfo& system,
                          const GpuRound& round) {
  for (auto& [family, gauge] : gpuSeries_) family->Remove(gauge);
  gpuSeries_.clear();
  auto set = [&](prometheus::Family<prometheus::Gauge>* family, prometheus::Labels labels,
                 double value) {
    labels.emplace("node", node_);
    prometheus::Gauge& g = family->Add(labels);
    g.Set(value);
    gpuSeries_.emplace_back(family, &g);
  };
  std::map<unsigned, std::string> uuidOf;
  for (const GpuInventory& g : gpus) {
    const std::string minor = std::to_string(g.info.minor);
    uuidOf[g.info.minor] = g.info.uuid;
    set(gpuInfo_,
        {{"gpu_minor", minor},
         {"gpu_device_uuid", g.info.uuid},
         {"model", g.info.model},
         {"driver_version", system.driverVersion},
         {"bus_id", g.info.busId},
         {"numa_node", std::to_string(g.place.numaNode)}},
        1);
    const prometheus::Labels device{{"gpu_minor", minor}, {"gpu_device_uuid", g.info.uuid}};
    set(gpuHealthy_, device, g.info.healthy ? 1 : 0);
    set(nodeGpuMemoryTotal_, device, static_cast<double>(g.info.memoryTotal));
  }
  auto deviceLabels = [&](unsigned minor) {
    return prometheus::Labels{{"gpu_minor", std::to_string(minor)},
                              {"gpu_device_uuid", uuidOf[minor]}};
  };
  for (const auto& [minor, use] : round.node) {
    set(nodeGpuCore_, deviceLabels(minor), use.core);
    set(nodeGpuMemory_, deviceLabels(minor), static_cast<double>(use.memory));
  }
  // Each pod's (container's) use of each GPU: a series per owner and GPU, swept.
  // Named variables, not structured bindings: clang before 16 cannot capture those.
  auto perOwner = [&](const auto& owners, const char* label, SweptGauges& core,
                      SweptGauges& memory) {
    std::string key;
    for (const auto& owner : owners) {
      const std::string& name = owner.first;
      for (const auto& gpu : owner.second) {
        const unsigned minor = gpu.first;
        key = name + '/' + std::to_string(minor);
        auto labels = [&] {
          prometheus::Labels l = deviceLabels(minor);
          l.emplace(label, name);
          l.emplace("node", node_);
          return l;
        };
        core.set(key, labels, gpu.second.core);
        memory.set(key, labels, static_cast<double>(gpu.second.memory));
      }
    }
    core.sweep();
    memory.sweep();
  };
  perOwner(round.pods, "pod_uid", podGpuCore_, podGpuMemory_);
  perOwner(round.containers, "container_id", containerGpuCore_, containerGpuMemory_);
}

void Exporter::countGpuCriticalError(const std::string& minor, const std::string& uuid,
                                     const std::string& error) {
  // Bounded: a GPU's Xids are a short list; past kMaxGpuErrorSeries a new pair is
  // counted as "other".
  const bool known = gpuErrorSeries_.contains({minor, error});
  const bool room = gpuErrorSeries_.size() < kMaxGpuErrorSeries;
  const std::string label = known || room ? error : "other";
  if (!known && room) gpuErrorSeries_.insert({minor, error});
  gpuCriticalErrors_
      ->Add({{"gpu_minor", minor}, {"gpu_device_uuid", uuid}, {"error", label}, {"node", node_}})
      .Increment();
}

}  // namespace koord
