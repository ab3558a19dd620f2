#include "metrics/exporter.h"

#include "metrics/text_exposition.h"

#include <algorithm>

namespace koord {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

prometheus::Family<prometheus::Gauge>& Exporter::gaugeFamily(const std::string& name,
                                                             const std::string& help) {
  families_.push_back(name);
  return BuildGauge().Name(name).Help(help).Register(*registry_);
}

prometheus::Family<prometheus::Counter>& Exporter::counterFamily(const std::string& name,
                                                                 const std::string& help) {
  families_.push_back(name);
  return BuildCounter().Name(name).Help(help).Register(*registry_);
}

prometheus::Family<prometheus::Histogram>& Exporter::histogramFamily(const std::string& name,
                                                                     const std::string& help) {
  families_.push_back(name);
  return BuildHistogram().Name(name).Help(help).Register(*registry_);
}

SweptGauges Exporter::swept(const std::string& name, const std::string& help) {
  families_.push_back(name);
  return SweptGauges(name, help);
}

Exporter::Exporter(std::string nodeName, std::string version)
    : node_(std::move(nodeName)),
      registry_(std::make_shared<prometheus::Registry>()),
      podCpu_(swept("koordlet_pod_cpu_usage_cores", "CPU used by a pod's cgroup, in cores")),
      podMemory_(swept("koordlet_pod_memory_usage_bytes",
                       "Memory used by a pod's cgroup without page cache "
                       "(anon + unevictable), in bytes")),
      podThrottled_(swept("koordlet_pod_cpu_throttled_ratio",
                          "Share of CFS periods in which a pod was throttled")),
      containerCpu_(
          swept("koordlet_container_cpu_usage_cores", "CPU used by a container, in cores")),
      containerMemory_(swept("koordlet_container_memory_usage_bytes",
                             "Memory used by a container without page cache, in bytes")),
      containerThrottled_(swept("koordlet_container_cpu_throttled_ratio",
                                "Share of CFS periods in which a container was throttled")),
      containerRequests_(swept("koordlet_container_resource_requests",
                               "the container requests of resources updated by koordinator")),
      containerLimits_(swept("koordlet_container_resource_limits",
                             "the container limits of resources updated by koordinator")),
      podPsi_(swept("koordlet_pod_psi", "Pod psi collected by koordlet")),
      containerPsi_(swept("koordlet_container_psi", "Container psi collected by koordlet")),
      scaledBurst_(swept("koordlet_container_scaled_cfs_burst_us",
                         "cpu.cfs_burst_us the CPU burst strategy intends for a container")),
      scaledQuota_(swept("koordlet_container_scaled_cfs_quota_us",
                         "cpu.cfs_quota_us the CPU burst strategy intends for a container")),
      oomScoreAdj_(swept("koordlet_container_oom_score_adj",
                         "oom_score_adj set on a container's processes (OOMScoreAdj)")),
      resctrlLlc_(swept("koordlet_resctrl_llc_occupancy",
                        "resctrl default qos(LSR, LS, BE) llc occupancy collected by koordlet, "
                        "in bytes, per L3 cache id")),
      resctrlMb_(swept("koordlet_resctrl_memory_bandwidth",
                       "resctrl default qos(LSR, LS, BE) memory bandwidth collected by "
                       "koordlet: the kernel's cumulative MBM byte counter, per L3 cache id "
                       "and mb_type")) {
  swept_ = {&podCpu_,          &podMemory_,          &podThrottled_,      &containerCpu_,
            &containerMemory_, &containerThrottled_, &containerRequests_, &containerLimits_,
            &podPsi_,          &containerPsi_,       &scaledBurst_,       &scaledQuota_,
            &oomScoreAdj_,     &resctrlLlc_,         &resctrlMb_};
  const prometheus::Labels node{{"node", node_}};

  startTime_ = &gaugeFamily("koordlet_start_time", "the start time of koordlet").Add(node);
  nodeCpu_ =
      &gaugeFamily("koordlet_node_used_cpu_cores", "Number of cpu cores used by node in realtime")
           .Add(node);
  nodeMemory_ =
      &gaugeFamily("koordlet_node_used_memory_bytes", "Number of memory used by node in realtime")
           .Add(node);
  nodeMemoryTotal_ =
      &gaugeFamily("koordlet_node_memory_total_bytes", "MemTotal of the node from /proc/meminfo")
           .Add(node);
  const char* loadNames[] = {"koordlet_node_load1", "koordlet_node_load5", "koordlet_node_load15"};
  const char* loadHelp[] = {"1-minute load average of the node",
                            "5-minute load average of the node",
                            "15-minute load average of the node"};
  for (int i = 0; i < 3; ++i) {
    load_[i] = &gaugeFamily(loadNames[i], loadHelp[i]).Add(node);
  }
  psi_ = &gaugeFamily("koordlet_node_psi",
                      "Node pressure stall information: percent of time stalled, by resource, "
                      "window and degree (labels as koordlet's pod_psi)");
  psiStalled_ =
      &counterFamily("koordlet_node_psi_stalled_seconds_total",
                     "Cumulative time tasks on the node were stalled, from the PSI total");
  paused_ = &gaugeFamily("koordlet_agent_paused",
                         "1 once koordlet restore paused this agent (SIGUSR2): it writes nothing "
                         "and its hooks set nothing until it restarts; 0 otherwise")
                 .Add(node);
  paused_->Set(0);
  featureSupported_ = &gaugeFamily("koordlet_feature_supported",
                                   "Whether this host supports an optional kernel feature the "
                                   "agent uses (1) or it is skipped (0)");
  collectorDuration_ = &gaugeFamily("koordlet_collector_duration_seconds",
                                    "Duration of the last round of a collector");
  collectorErrors_ = &counterFamily("koordlet_collector_errors_total",
                                    "Errors met by a collector: files unreadable or malformed");
  collectorRounds_ = &counterFamily("koordlet_collect_rounds_total",
                                    "Rounds a collector has completed: its rate against the "
                                    "collect interval shows whether the loop keeps time");
  resourceUpdate_ = &histogramFamily(
      "koordlet_resource_update_duration_milliseconds",
      "Time of one cgroup write attempt by the executor (read, compare, write), by outcome");
  runtimeHook_ = &histogramFamily(
      "koordlet_runtime_hook_invoked_duration_milliseconds",
      "Time of one runtime hook run inside an NRI or runtime proxy call, by hook, stage and "
      "outcome");
  hookReconciler_ = &histogramFamily(
      "koordlet_runtime_hook_reconciler_invoked_duration_milliseconds",
      "Time the runtime hooks' reconciler took to decide one pod's or container's value of "
      "one cgroup file, by level, resource type and outcome");
  hookServerEnabled_ = &gaugeFamily("koordlet_runtime_hook_server_enabled",
                                    "1 when koord-runtime-proxy's hook server is turned on "
                                    "(--enable-runtime-hook-server)")
                            .Add({{"node", node_}});
  hookServerServing_ = &gaugeFamily("koordlet_runtime_hook_server_serving",
                                    "1 while the runtime proxy's hook server listens")
                            .Add({{"node", node_}});
  hookServerRequests_ = &counterFamily(
      "koordlet_runtime_hook_server_requests_total",
      "Calls the runtime proxy's hook server answered, by method and gRPC code (OK, "
      "InvalidArgument: a malformed request; FailedPrecondition: a hook failed under the Fail "
      "plugin policy; ResourceExhausted: too many calls in flight)");
  nriEnabled_ = &gaugeFamily("koordlet_nri_enabled",
                             "1 when the NRI plugin is turned on (--enable-nri-runtime-hook)")
                     .Add({{"node", node_}});
  nriConnected_ =
      &gaugeFamily(
           "koordlet_nri_connected",
           "1 while the NRI plugin is registered and synchronized with the container runtime")
           .Add({{"node", node_}});
  nriState_ = &gaugeFamily("koordlet_nri_state",
                           "The NRI client's state, one series per state, 1 for the current one");
  nriAttempts_ = &counterFamily("koordlet_nri_connection_attempts_total",
                                "Connection attempts to the container runtime's NRI socket")
                      .Add({{"node", node_}});
  nriConnects_ =
      &counterFamily("koordlet_nri_connects_total", "NRI sessions that registered and synchronized")
           .Add({{"node", node_}});
  nriDisconnects_ =
      &counterFamily(
           "koordlet_nri_disconnects_total",
           "Synchronized NRI sessions that ended (runtime restart, protocol error, timeout)")
           .Add({{"node", node_}});
  {
    auto& closes = counterFamily("koordlet_nri_limit_closes_total",
                                 "NRI connections the plugin closed because the runtime broke a "
                                 "limit: stopped reading what the plugin sends (write_queue), or "
                                 "sent a Synchronize over its pod, container or byte limit "
                                 "(synchronize), or sent what the protocol forbids: a frame or "
                                 "message over its limit, or one that does not parse (protocol)");
    nriWriteQueueCloses_ = &closes.Add({{"node", node_}, {"limit", "write_queue"}});
    nriSyncCloses_ = &closes.Add({{"node", node_}, {"limit", "synchronize"}});
    nriProtocolCloses_ = &closes.Add({{"node", node_}, {"limit", "protocol"}});
  }
  beSuppress_ = &gaugeFamily("koordlet_be_suppress_cpu_cores",
                             "CPU cores best-effort pods may use under CPU suppress, by policy");
  beSuppressLsFamily_ = &gaugeFamily("koordlet_be_suppress_ls_used_cpu_cores",
                                     "CPU cores used by non-BE pods, as CPU suppress saw them");
  beSuppressBeFamily_ = &gaugeFamily("koordlet_be_suppress_be_used_cpu_cores",
                                     "CPU cores used by BE pods, as CPU suppress saw them");
  beSuppressThresholdFamily_ = &gaugeFamily(
      "koordlet_be_suppress_threshold_cpu_cores",
      "The node's CPU capacity x cpuSuppressThresholdPercent: what LS, system and BE usage "
      "together are held to while CPU suppress runs (ours)");
  resctrlWrites_ = &counterFamily(
      "koordlet_resctrl_writes_total",
      "resctrl group creations, schemata lines and task moves by the resctrl writer, by outcome");
  strategyDuration_ = &gaugeFamily("koordlet_qos_strategy_duration_seconds",
                                   "Duration of the last run of a QoS strategy, writes included");
  configGeneration_ =
      &gaugeFamily("koordlet_config_generation",
                   "Generation of the config in force: 1 after start (the --config file, or "
                   "koordlet's defaults without one), +1 per accepted reload")
           .Add(node);
  configErrors_ =
      &counterFamily("koordlet_config_reload_errors_total",
                     "NodeSLO versions rejected (--config file contents and cluster NodeSLO "
                     "objects); the last good config stays")
           .Add(node);
  configGood_ = &gaugeFamily("koordlet_config_last_reload_successful",
                             "1 when the last read of the --config file was accepted, else 0")
                     .Add(node);
  initKubeApi();
  initEviction();
  initPrediction();
  initGpu();
  kubeletUp_ = &gaugeFamily("koordlet_kubelet_up",
                            "Whether the kubelet answered the last probe (pods are known)")
                    .Add(node);

  resourceRefused_ = &counterFamily(
      "koordlet_resource_update_refused_total",
      "cgroup writes the executor refused before any attempt, by reason: outside_kubepods, "
      "second_owner, out_of_range (a value that cannot be right is refused, never clamped)");
  // Every reason from the start, at 0: a rate or an alert sees the series before the
  // first refusal.
  for (const char* reason : {"outside_kubepods", "second_owner", "out_of_range"}) {
    resourceRefused_->Add({{"node", node_}, {"reason", reason}});
  }
  resourceDrift_ = &counterFamily(
      "koordlet_resource_drift_total",
      "cgroup files found holding another value than the agent last wrote there (changed "
      "behind its back; repaired by the same write), by file (GET /explain shows which)");
  kubeletTls_ = &gaugeFamily("koordlet_kubelet_tls_verified",
                             "1 when the kubelet's serving certificate is verified, 0 when the "
                             "HTTPS connection to it is not (--kubelet-skip-tls-verify, the "
                             "default, as koordlet); absent over plain HTTP");

  kubeletDuration_ = &histogramFamily("koordlet_kubelet_request_duration_seconds",
                                      "kubelet http request duration in seconds");
  kubeletErrors_ = &counterFamily(
      "koordlet_kubelet_request_errors_total",
      "kubelet /pods/ requests whose reply was refused, by reason: transport, status, invalid, "
      "empty. For transport errors (no reply) koordlet_kubelet_request_duration_seconds has "
      "code timeout, dns, connect, tls, token, io, too_large, malformed or other");
  podCount_ =
      &gaugeFamily("koordlet_kubelet_pods", "Pods in the last good pod list from the kubelet")
           .Add(node);
  beCpu_ = &gaugeFamily("koordlet_be_cpu_cores",
                        "Best-effort CPU on the node: usage of the besteffort QoS cgroup, the sum "
                        "of BE pods' batch-cpu requests, and the real limit, in cores");
  cacheSeries_ =
      &gaugeFamily("koordlet_metric_cache_series", "Series held in the in-memory metric cache")
           .Add({});
  cacheBytes_ = &gaugeFamily("koordlet_metric_cache_bytes",
                             "Bytes held by the in-memory metric cache (rings and keys)")
                     .Add({});

  stateEntries_ = &gaugeFamily("koordlet_state_entries",
                               "Entries the agent keeps per pod, cgroup or key, by holder: flat "
                               "while pods come and go, else state is not freed");

  gaugeFamily("koordlet_build_info", "Build information of the agent; the value is always 1")
      .Add({{"node", node_}, {"version", version}, {"compiler", "g++ " __VERSION__}})
      .Set(1);

  processCpu_ =
      &counterFamily("process_cpu_seconds_total", "Total user and system CPU time spent in seconds")
           .Add({});
  processRss_ =
      &gaugeFamily("process_resident_memory_bytes", "Resident memory size in bytes").Add({});
  processVirtual_ =
      &gaugeFamily("process_virtual_memory_bytes", "Virtual memory size in bytes").Add({});
  processOpenFds_ = &gaugeFamily("process_open_fds", "Number of open file descriptors").Add({});
  processMaxFds_ =
      &gaugeFamily("process_max_fds", "Maximum number of open file descriptors").Add({});
  processStart_ = &gaugeFamily("process_start_time_seconds",
                               "Start time of the process since unix epoch in seconds")
                       .Add({});
  processThreads_ =
      &gaugeFamily("koordlet_process_threads", "Number of OS threads of the agent").Add({});

  httpRequests_ = &counterFamily("koordlet_http_requests_total",
                                 "HTTP requests served, by route and status code");
  httpOpen_ = &gaugeFamily("koordlet_http_open_connections", "HTTP connections open now").Add({});
  httpTimeouts_ = &counterFamily("koordlet_http_connection_timeouts_total",
                                 "HTTP connections closed by a read, write or idle timeout")
                       .Add({});
  httpRejected_ = &counterFamily("koordlet_http_rejected_requests_total",
                                 "HTTP requests refused as too large or malformed")
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

void Exporter::setPaused(bool paused) { paused_->Set(paused ? 1 : 0); }

void Exporter::setFeatureSupported(const std::string& feature, bool supported) {
  featureSupported_->Add({{"node", node_}, {"feature", feature}}).Set(supported ? 1 : 0);
}

void Exporter::recordCollector(const std::string& collector, double seconds, size_t errors) {
  const prometheus::Labels labels{{"node", node_}, {"collector", collector}};
  collectorDuration_->Add(labels).Set(seconds);
  // Add() also creates the series at 0, so a healthy collector shows an explicit 0.
  collectorErrors_->Add(labels).Increment(static_cast<double>(errors));
  collectorRounds_->Add(labels).Increment();
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

void Exporter::recordHttp(const HttpCounts& stats) {
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

void Exporter::setKubeletTlsVerified(bool verified) {
  kubeletTls_->Add({{"node", node_}}).Set(verified ? 1 : 0);
}

void Exporter::recordKubeletRequest(const KubeletRequestSample& r) {
  // koordlet's buckets: 0.001 × 4^k, k = 0..6.
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.001, 0.004, 0.016, 0.064,
                                                                   0.256, 1.024, 4.096};
  kubeletDuration_->Add({{"verb", "GET"}, {"path", "/pods/"}, {"code", r.code}}, kBuckets)
      .Observe(r.seconds);
  if (!r.failure.empty()) kubeletErrors_->Add({{"reason", r.failure}}).Increment();
}

void Exporter::setPodCount(size_t pods) { podCount_->Set(static_cast<double>(pods)); }

void Exporter::recordStateEntries(const std::vector<std::pair<std::string, size_t>>& holders) {
  for (const auto& [holder, entries] : holders) {
    stateEntries_->Add({{"node", node_}, {"state", holder}}).Set(static_cast<double>(entries));
  }
}

void Exporter::recordCache(size_t series, size_t bytes) {
  cacheSeries_->Set(static_cast<double>(series));
  cacheBytes_->Set(static_cast<double>(bytes));
}

namespace {

// koordlet's PSI labels: resource, window ("precision") and degree, plus whether
// the kernel reports "full" for CPU (absent before 5.13). `key` names the owner.
void setPsi(SweptGauges& gauges, const std::string& key, const prometheus::Labels& base,
            const std::array<std::optional<Pressure>, 3>& pressure) {
  const bool cpuFull = pressure[0] && pressure[0]->full.has_value();
  std::string k;
  for (int r = 0; r < 3; ++r) {
    if (!pressure[r]) continue;
    auto put = [&](const PressureLine& line, const char* degree) {
      const std::pair<const char*, double> windows[] = {
          {"avg10", line.avg10}, {"avg60", line.avg60}, {"avg300", line.avg300}};
      // Not a structured binding: clang 14 cannot capture one in the lambda below.
      for (const auto& w : windows) {
        const char* window = w.first;
        const double value = w.second;
        k.assign(key).append("/").append(kPsiResourceNames[r]).append("/").append(degree);
        k.append("/").append(window).append(cpuFull ? "/t" : "/f");
        gauges.set(
            k,
            [&] {
              prometheus::Labels l = base;
              l["psi_resource_type"] = kPsiResourceNames[r];
              l["psi_precision"] = window;
              l["psi_degree"] = degree;
              l["cpu_full_supported"] = cpuFull ? "true" : "false";
              return l;
            },
            value);
      }
    };
    put(pressure[r]->some, "some");
    if (pressure[r]->full) put(*pressure[r]->full, "full");
  }
}

}  // namespace

void Exporter::recordPods(const PodsSample& sample, uint64_t podsVersion) {
  std::string key;
  const std::pair<uint64_t, uint64_t> specsFrom{podsVersion, sample.ownersVersion};
  // Unchanged specs: their series stand as they are, unswept.
  const bool specs = specsFrom != specsFrom_;
  specsFrom_ = specsFrom;
  for (const PodUsage& pu : sample.pods) {
    const Pod& pod = *pu.pod;
    auto podLabels = [&] {
      return prometheus::Labels{
          {"node", node_}, {"pod_uid", pod.uid}, {"pod_name", pod.name}, {"pod_namespace", pod.ns}};
    };
    if (pu.usage.cpuCores) podCpu_.set(pod.uid, podLabels, *pu.usage.cpuCores);
    if (pu.usage.memoryBytes) {
      podMemory_.set(pod.uid, podLabels, static_cast<double>(*pu.usage.memoryBytes));
    }
    if (pu.usage.throttledRatio) podThrottled_.set(pod.uid, podLabels, *pu.usage.throttledRatio);
    if (std::any_of(pu.usage.pressure.begin(), pu.usage.pressure.end(),
                    [](const auto& p) { return p.has_value(); })) {
      setPsi(podPsi_, pod.uid, podLabels(), pu.usage.pressure);
    }

    for (const ContainerUsage& cu : pu.containers) {
      auto labels = [&] {
        prometheus::Labels l = podLabels();
        l["container_id"] = cu.id;
        l["container_name"] = cu.container->name;
        return l;
      };
      if (cu.usage.cpuCores) containerCpu_.set(cu.id, labels, *cu.usage.cpuCores);
      if (cu.usage.memoryBytes) {
        containerMemory_.set(cu.id, labels, static_cast<double>(*cu.usage.memoryBytes));
      }
      if (cu.usage.throttledRatio) {
        containerThrottled_.set(cu.id, labels, *cu.usage.throttledRatio);
      }
      if (std::any_of(cu.usage.pressure.begin(), cu.usage.pressure.end(),
                      [](const auto& p) { return p.has_value(); })) {
        setPsi(containerPsi_, cu.id, labels(), cu.usage.pressure);
      }

      // koordlet records batch-cpu (its value, i.e. milli-cores, unit integer) and
      // batch-memory (bytes); cpu (cores) and memory (bytes) are recorded as well.
      auto resources = [&](SweptGauges& gauges, const ResourceList& list) {
        auto put = [&](const char* resource, const char* unit, std::optional<int64_t> v,
                       double scale) {
          if (!v) return;
          key.assign(cu.id).append("/").append(resource);
          gauges.set(
              key,
              [&] {
                prometheus::Labels l = labels();
                l["resource"] = resource;
                l["unit"] = unit;
                return l;
              },
              static_cast<double>(*v) * scale);
        };
        put("cpu", "core", list.cpuMilli, 0.001);
        put("memory", "byte", list.memoryBytes, 1);
        put(kBatchCpuResource, "integer", list.batchCpuMilli, 1);
        put(kBatchMemoryResource, "byte", list.batchMemoryBytes, 1);
      };
      if (specs) {
        resources(containerRequests_, cu.container->requests);
        resources(containerLimits_, cu.container->limits);
      }
    }
  }
  for (SweptGauges* g : {&podCpu_, &podMemory_, &podThrottled_, &containerCpu_, &containerMemory_,
                         &containerThrottled_, &podPsi_, &containerPsi_}) {
    g->sweep();
  }
  if (specs) {
    containerRequests_.sweep();
    containerLimits_.sweep();
  }

  const BeUsage& be = sample.be;
  auto beSet = [&](const char* kind, std::optional<double> milli) {
    if (milli) beCpu_->Add({{"node", node_}, {"kind", kind}}).Set(*milli / 1000.0);
  };
  beSet("usage", be.usageMilli);
  beSet("request", be.requestMilli);
  beSet("real_limit", be.realLimitMilli);
}

std::string Exporter::render() const {
  std::string out;
  out.reserve(lastRenderBytes_ + lastRenderBytes_ / 8);
  appendTextExposition(out, registry_->Collect());
  for (const SweptGauges* g : swept_) g->appendText(out);
  lastRenderBytes_ = out.size();
  return out;
}

std::vector<prometheus::MetricFamily> Exporter::collect() const {
  std::vector<prometheus::MetricFamily> out = registry_->Collect();
  for (const SweptGauges* g : swept_) {
    if (auto family = g->collect()) out.push_back(std::move(*family));
  }
  return out;
}

}  // namespace koord

namespace koord {

void Exporter::recordResourceDrift(const char* resource) {
  resourceDrift_->Add({{"node", node_}, {"resource", resource}}).Increment();
}

void Exporter::recordResourceRefusal(const char* reason) {
  resourceRefused_->Add({{"node", node_}, {"reason", reason}}).Increment();
}

void Exporter::recordResourceUpdate(const char* status, double millis) {
  // koordlet's buckets: 0.01 × 4^k, k = 0..7.
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.01, 0.04,  0.16,  0.64,
                                                                   2.56, 10.24, 40.96, 163.84};
  auto it = resourceUpdateByStatus_.find(status);
  if (it == resourceUpdateByStatus_.end()) {
    auto& h = resourceUpdate_->Add({{"type", "cgroup"}, {"status", status}}, kBuckets);
    it = resourceUpdateByStatus_.emplace(status, &h).first;
  }
  it->second->Observe(millis);
}

void Exporter::recordSuppress(bool active, const std::string& policy, std::optional<double> cores,
                              std::optional<double> lsUsed, std::optional<double> beUsed,
                              std::optional<double> thresholdCores) {
  for (const char* type : {"cpuset", "cfsQuota"}) {
    const prometheus::Labels labels{{"node", node_}, {"type", type}};
    if (active && policy == type) {
      if (cores) beSuppress_->Add(labels).Set(*cores);
    } else if (beSuppress_->Has(labels)) {
      beSuppress_->Remove(&beSuppress_->Add(labels));
    }
  }
  // Kept while suppress runs (a round that saw no fresh usage keeps the last
  // value), removed when it stops.
  auto track = [&](prometheus::Family<prometheus::Gauge>* family, prometheus::Gauge*& gauge,
                   std::optional<double> value) {
    if (!active) {
      if (gauge != nullptr) family->Remove(gauge);
      gauge = nullptr;
      return;
    }
    if (!value) return;
    if (gauge == nullptr) gauge = &family->Add({{"node", node_}});
    gauge->Set(*value);
  };
  track(beSuppressLsFamily_, beSuppressLs_, lsUsed);
  track(beSuppressBeFamily_, beSuppressBe_, beUsed);
  track(beSuppressThresholdFamily_, beSuppressThreshold_, thresholdCores);
}

void Exporter::recordScaledCfs(const ScaledCfs& c) {
  auto labels = [&] {
    return prometheus::Labels{{"node", node_},
                              {"pod_namespace", c.podNamespace},
                              {"pod_name", c.podName},
                              {"container_id", c.containerId},
                              {"container_name", c.containerName}};
  };
  if (c.burstUs) scaledBurst_.set(c.containerId, labels, static_cast<double>(*c.burstUs));
  if (c.quotaUs) scaledQuota_.set(c.containerId, labels, static_cast<double>(*c.quotaUs));
}

void Exporter::endBurstRound() {
  scaledBurst_.sweep();
  scaledQuota_.sweep();
}

void Exporter::recordOomScoreAdj(const std::string& podNamespace, const std::string& podName,
                                 const std::string& podUid, const std::string& container,
                                 int64_t value) {
  oomScoreAdj_.set(
      podUid + "/" + container,
      [&] {
        return prometheus::Labels{{"node", node_},
                                  {"pod_namespace", podNamespace},
                                  {"pod_name", podName},
                                  {"pod_uid", podUid},
                                  {"container_name", container}};
      },
      static_cast<double>(value));
}

void Exporter::endOomScoreAdjRound() { oomScoreAdj_.sweep(); }

void Exporter::recordStrategy(const std::string& strategy, double seconds) {
  strategyDuration_->Add({{"node", node_}, {"strategy", strategy}}).Set(seconds);
}

void Exporter::recordResctrlWrites(const std::string& kind, const std::string& status,
                                   uint64_t count) {
  // Created at first use, also for 0, so a rate() over the series starts at once.
  resctrlWrites_->Add({{"node", node_}, {"kind", kind}, {"status", status}})
      .Increment(static_cast<double>(count));
}

void Exporter::recordResctrlMon(const std::vector<ResctrlMon>& samples) {
  for (const ResctrlMon& m : samples) {
    const std::string id = std::to_string(m.cacheId);
    const std::string key = m.qos + "/" + id;
    if (m.llcOccupancy) {
      resctrlLlc_.set(
          key,
          [&] {
            return prometheus::Labels{{"node", node_}, {"cache_id", id}, {"qos", m.qos}};
          },
          static_cast<double>(*m.llcOccupancy));
    }
    const std::pair<const char*, const std::optional<uint64_t>*> mbs[] = {
        {"mbm_local_bytes", &m.mbmLocalBytes}, {"mbm_total_bytes", &m.mbmTotalBytes}};
    for (const auto& mb : mbs) {  // no structured binding: clang 14 cannot capture one
      const char* type = mb.first;
      const std::optional<uint64_t>* value = mb.second;
      if (!*value) continue;
      resctrlMb_.set(
          key + "/" + type,
          [&] {
            return prometheus::Labels{
                {"node", node_}, {"cache_id", id}, {"qos", m.qos}, {"mb_type", type}};
          },
          static_cast<double>(**value));
    }
  }
  resctrlLlc_.sweep();
  resctrlMb_.sweep();
}

void Exporter::recordConfig(uint64_t generation, uint64_t reloadErrors, bool lastReadGood) {
  configGeneration_->Set(static_cast<double>(generation));
  mirror(*configErrors_, configErrorsLast_, static_cast<double>(reloadErrors));
  configGood_->Set(lastReadGood ? 1 : 0);
}

}  // namespace koord

namespace koord {

namespace {
// koordlet's ExponentialBuckets(0.01, 4, 8) for both runtime hook histograms.
const prometheus::Histogram::BucketBoundaries kHookBuckets = {0.01, 0.04,  0.16,  0.64,
                                                              2.56, 10.24, 40.96, 163.84};
}  // namespace

void Exporter::recordHookReconciler(std::string_view level, std::string_view resourceType, bool ok,
                                    double millis) {
  const char* status = ok ? "succeeded" : "failed";
  std::string key;
  key.append(level).append(1, '\0').append(resourceType).append(1, '\0').append(status);
  auto it = hookReconcilerSeries_.find(key);
  if (it == hookReconcilerSeries_.end()) {
    auto& added = hookReconciler_->Add({{"node", node_},
                                        {"level", std::string(level)},
                                        {"resource_type", std::string(resourceType)},
                                        {"status", status}},
                                       kHookBuckets);
    it = hookReconcilerSeries_.emplace(std::move(key), &added).first;
  }
  it->second->Observe(millis);
}

void Exporter::recordRuntimeHook(std::string_view hook, std::string_view stage, bool ok,
                                 double millis) {
  const auto& kBuckets = kHookBuckets;
  const char* status = ok ? "succeeded" : "failed";
  std::string key;
  key.reserve(hook.size() + stage.size() + 12);
  key.append(hook).append(1, '\0').append(stage).append(1, '\0').append(status);
  prometheus::Histogram* h = nullptr;
  {
    std::lock_guard<std::mutex> lock(runtimeHookMu_);
    auto it = runtimeHookSeries_.find(key);
    if (it == runtimeHookSeries_.end()) {
      auto& added = runtimeHook_->Add({{"node", node_},
                                       {"hook", std::string(hook)},
                                       {"stage", std::string(stage)},
                                       {"status", status}},
                                      kBuckets);
      it = runtimeHookSeries_.emplace(std::move(key), &added).first;
    }
    h = it->second;
  }
  h->Observe(millis);
}

void Exporter::recordNri(bool enabled, const std::string& state, uint64_t attempts,
                         uint64_t connects, uint64_t disconnects) {
  nriEnabled_->Set(enabled ? 1 : 0);
  nriConnected_->Set(enabled && state == "connected" ? 1 : 0);
  static const char* const kStates[] = {"stopped",   "connecting", "registering",
                                        "connected", "waiting",    "closed"};
  for (const char* s : kStates) {
    nriState_->Add({{"node", node_}, {"state", s}}).Set(enabled && state == s ? 1 : 0);
  }
  mirror(*nriAttempts_, nriAttemptsLast_, static_cast<double>(attempts));
  mirror(*nriConnects_, nriConnectsLast_, static_cast<double>(connects));
  mirror(*nriDisconnects_, nriDisconnectsLast_, static_cast<double>(disconnects));
}

void Exporter::recordNriLimitCloses(uint64_t writeQueue, uint64_t synchronize, uint64_t protocol) {
  mirror(*nriWriteQueueCloses_, nriWriteQueueClosesLast_, static_cast<double>(writeQueue));
  mirror(*nriSyncCloses_, nriSyncClosesLast_, static_cast<double>(synchronize));
  mirror(*nriProtocolCloses_, nriProtocolClosesLast_, static_cast<double>(protocol));
}

void Exporter::recordHookServer(bool enabled, bool serving,
                                const std::vector<HookServerCount>& counts) {
  hookServerEnabled_->Set(enabled ? 1 : 0);
  hookServerServing_->Set(serving ? 1 : 0);
  for (const HookServerCount& c : counts) {
    if (c.calls == 0) continue;
    double& last = hookServerLast_[c.method + " " + c.code];
    mirror(hookServerRequests_->Add({{"node", node_}, {"method", c.method}, {"code", c.code}}),
           last, static_cast<double>(c.calls));
  }
}

}  // namespace koord
