#include "metrics/exporter.h"

#include <sstream>

#include <prometheus/text_serializer.h>

namespace koord {

using prometheus::BuildCounter;
using prometheus::BuildGauge;

Exporter::Exporter(std::string nodeName, std::string version)
    : node_(std::move(nodeName)), registry_(std::make_shared<prometheus::Registry>()) {
  auto& reg = *registry_;
  const prometheus::Labels node{{"node", node_}};

  startTime_ = &BuildGauge()
                    .Name("koordlet_start_time")
                    .Help("the start time of koordlet")
                    .Register(reg)
                    .Add(node);
  nodeCpu_ = &BuildGauge()
                  .Name("koordlet_node_used_cpu_cores")
                  .Help("Number of cpu cores used by node in realtime")
                  .Register(reg)
                  .Add(node);
  nodeMemory_ = &BuildGauge()
                     .Name("koordlet_node_used_memory_bytes")
                     .Help("Number of memory used by node in realtime")
                     .Register(reg)
                     .Add(node);
  nodeMemoryTotal_ = &BuildGauge()
                          .Name("koordlet_node_memory_total_bytes")
                          .Help("MemTotal of the node from /proc/meminfo")
                          .Register(reg)
                          .Add(node);
  const char* loadNames[] = {"koordlet_node_load1", "koordlet_node_load5", "koordlet_node_load15"};
  const char* loadHelp[] = {"1-minute load average of the node",
                            "5-minute load average of the node",
                            "15-minute load average of the node"};
  for (int i = 0; i < 3; ++i) {
    load_[i] = &BuildGauge().Name(loadNames[i]).Help(loadHelp[i]).Register(reg).Add(node);
  }
  psi_ = &BuildGauge()
              .Name("koordlet_node_psi")
              .Help(
                  "Node pressure stall information: percent of time stalled, by resource, "
                  "window and degree (labels as koordlet's pod_psi)")
              .Register(reg);
  psiStalled_ = &BuildCounter()
                     .Name("koordlet_node_psi_stalled_seconds_total")
                     .Help("Cumulative time tasks on the node were stalled, from the PSI total")
                     .Register(reg);
  featureSupported_ = &BuildGauge()
                           .Name("koordlet_feature_supported")
                           .Help(
                               "Whether this host supports an optional kernel feature the "
                               "agent uses (1) or it is skipped (0)")
                           .Register(reg);
  collectorDuration_ = &BuildGauge()
                            .Name("koordlet_collector_duration_seconds")
                            .Help("Duration of the last round of a collector")
                            .Register(reg);
  collectorErrors_ = &BuildCounter()
                          .Name("koordlet_collector_errors_total")
                          .Help("Errors met by a collector: files unreadable or malformed")
                          .Register(reg);
  kubeletUp_ = &BuildGauge()
                    .Name("koordlet_kubelet_up")
                    .Help("Whether the kubelet answered the last probe (pods are known)")
                    .Register(reg)
                    .Add(node);

  BuildGauge()
      .Name("koordlet_build_info")
      .Help("Build information of the agent; the value is always 1")
      .Register(reg)
      .Add({{"version", version}, {"compiler", "g++ " __VERSION__}})
      .Set(1);

  processCpu_ = &BuildCounter()
                     .Name("process_cpu_seconds_total")
                     .Help("Total user and system CPU time spent in seconds")
                     .Register(reg)
                     .Add({});
  processRss_ = &BuildGauge()
                     .Name("process_resident_memory_bytes")
                     .Help("Resident memory size in bytes")
                     .Register(reg)
                     .Add({});
  processVirtual_ = &BuildGauge()
                         .Name("process_virtual_memory_bytes")
                         .Help("Virtual memory size in bytes")
                         .Register(reg)
                         .Add({});
  processOpenFds_ = &BuildGauge()
                         .Name("process_open_fds")
                         .Help("Number of open file descriptors")
                         .Register(reg)
                         .Add({});
  processMaxFds_ = &BuildGauge()
                        .Name("process_max_fds")
                        .Help("Maximum number of open file descriptors")
                        .Register(reg)
                        .Add({});
  processStart_ = &BuildGauge()
                       .Name("process_start_time_seconds")
                       .Help("Start time of the process since unix epoch in seconds")
                       .Register(reg)
                       .Add({});
  processThreads_ = &BuildGauge()
                         .Name("koordlet_process_threads")
                         .Help("Number of OS threads of the agent")
                         .Register(reg)
                         .Add({});

  httpRequests_ = &BuildCounter()
                       .Name("koordlet_http_requests_total")
                       .Help("HTTP requests served, by route and status code")
                       .Register(reg);
  httpOpen_ = &BuildGauge()
                   .Name("koordlet_http_open_connections")
                   .Help("HTTP connections open now")
                   .Register(reg)
                   .Add({});
  httpTimeouts_ = &BuildCounter()
                       .Name("koordlet_http_connection_timeouts_total")
                       .Help("HTTP connections closed by a read, write or idle timeout")
                       .Register(reg)
                       .Add({});
  httpRejected_ = &BuildCounter()
                       .Name("koordlet_http_rejected_requests_total")
                       .Help("HTTP requests refused as too large or malformed")
                       .Register(reg)
                       .Add({});
}

void Exporter::mirror(prometheus::Counter& counter, double& last, double now) {
  if (now >= last) {
    counter.Increment(now - last);
  } else {
    counter.Increment(now);
  }
  last = now;
}

void Exporter::setStartTime(double unixSeconds) { startTime_->Set(unixSeconds); }

void Exporter::recordNode(const NodeSample& s) {
  if (s.cpuUsedCores) nodeCpu_->Set(*s.cpuUsedCores);
  if (s.memory) {
    nodeMemory_->Set(static_cast<double>(s.memory->usedBytes()));
    nodeMemoryTotal_->Set(static_cast<double>(s.memory->memTotalBytes));
  }
  if (s.load) {
    load_[0]->Set(s.load->load1);
    load_[1]->Set(s.load->load5);
    load_[2]->Set(s.load->load15);
  }
  for (int r = 0; r < 3; ++r) {
    if (!s.pressure[r]) continue;
    const std::string resource = kPsiResourceNames[r];
    auto record = [&](const PressureLine& line, const char* degree) {
      const std::pair<const char*, double> windows[] = {
          {"avg10", line.avg10}, {"avg60", line.avg60}, {"avg300", line.avg300}};
      for (const auto& [window, value] : windows) {
        psi_->Add({{"node", node_},
                   {"psi_resource_type", resource},
                   {"psi_precision", window},
                   {"psi_degree", degree}})
            .Set(value);
      }
      auto key = resource + "/" + degree;
      auto it = psiStalledLast_.find(key);
      if (it == psiStalledLast_.end()) {
        auto& c = psiStalled_->Add(
            {{"node", node_}, {"psi_resource_type", resource}, {"psi_degree", degree}});
        it = psiStalledLast_.emplace(key, std::make_pair(&c, 0.0)).first;
      }
      mirror(*it->second.first, it->second.second, static_cast<double>(line.totalMicros) / 1e6);
    };
    record(s.pressure[r]->some, "some");
    if (s.pressure[r]->full) record(*s.pressure[r]->full, "full");
  }
}

void Exporter::setFeatureSupported(const std::string& feature, bool supported) {
  featureSupported_->Add({{"node", node_}, {"feature", feature}}).Set(supported ? 1 : 0);
}

void Exporter::recordCollector(const std::string& collector, double seconds, size_t errors) {
  const prometheus::Labels labels{{"node", node_}, {"collector", collector}};
  collectorDuration_->Add(labels).Set(seconds);
  // Add() also creates the series at 0, so a healthy collector shows an explicit 0.
  collectorErrors_->Add(labels).Increment(static_cast<double>(errors));
}

void Exporter::recordSelf(const SelfSample& s) {
  mirror(*processCpu_, processCpuLast_, s.cpuSeconds);
  processRss_->Set(s.residentBytes);
  processVirtual_->Set(s.virtualBytes);
  processOpenFds_->Set(s.openFds);
  processMaxFds_->Set(s.maxFds);
  processStart_->Set(s.startTimeSeconds);
  processThreads_->Set(s.threads);
}

void Exporter::recordHttp(const HttpStats& stats) {
  for (const auto& [key, count] : stats.requests) {
    auto it = httpLast_.find(key);
    if (it == httpLast_.end()) {
      auto& c = httpRequests_->Add({{"path", key.first}, {"code", std::to_string(key.second)}});
      it = httpLast_.emplace(key, std::make_pair(&c, 0.0)).first;
    }
    mirror(*it->second.first, it->second.second, static_cast<double>(count));
  }
  httpOpen_->Set(static_cast<double>(stats.connectionsOpen));
  mirror(*httpTimeouts_, httpTimeoutsLast_, static_cast<double>(stats.timeouts));
  mirror(*httpRejected_, httpRejectedLast_,
         static_cast<double>(stats.rejectedTooLarge + stats.badRequests));
}

void Exporter::setKubeletUp(bool up) { kubeletUp_->Set(up ? 1 : 0); }

std::string Exporter::render() const {
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, registry_->Collect());
  return os.str();
}

}  // namespace koord
