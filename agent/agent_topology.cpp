// The agent's node topology (issue 18): every --node-topology-sync-interval, the
// NodeResourceTopology content and the CPU share pools (qos/node_topology.h) from
// the CPU topology, the kubelet's CPU manager (/configz, cpu_manager_state), the
// node's reservations and the pods. The share pools go to the CPUSetAllocator hook
// (reconciler and NRI); the content to the API server when there is one and the gate
// NodeTopologyReport is on (created, then updated only when it changes), and to
// /config always.
//
// The kubelet's configuration: /configz is read once the pod list has come, then
// every kConfigzEvery (it changes only when the kubelet restarts). Until it has answered, nothing
// is computed: a static kubelet's pinned CPUs must not be handed to others as pools (koordlet
// reports nothing either without /configz). With
// --disable-query-kubelet-config (or the read-only port, which has no /configz) the
// policy is --kubelet-cpu-manager-policy's.
#include "agent/agent.h"

#include "base/read_file.h"
#include "metrics/node_hardware.h"

namespace koord {

namespace {
constexpr std::chrono::seconds kConfigzEvery{60};
constexpr const char* kTopologyFailureKey = "node topology";
}  // namespace

bool Agent::queryKubeletConfig() const {
  return !opts_.disableQueryKubeletConfig && !opts_.kubeletInsecureTls;
}

// The node's CPU basic info and NUMA memory, read again every
// --collect-node-cpu-info-interval (resctrl may have been mounted since: the L3 mask),
// each read counted as koordlet's node info collector counts it.
void Agent::collectNodeInfo() {
  if (lastHardwareRead_ != Clock::Monotonic{} &&
      clock_->now() - lastHardwareRead_ < opts_.collectNodeCpuInfoInterval) {
    return;
  }
  lastHardwareRead_ = clock_->now();
  const bool cpuOk = topology_ && topology_->placement;
  if (cpuOk) basicInfo_ = readCpuBasicInfo(opts_.paths, *topology_);
  auto mem = readNumaMemory(opts_.paths);
  if (mem) {
    numaMemory_ = std::move(*mem);
    failures_.success("numa memory");
  } else {
    failures_.failure("numa memory", Severity::kWarning,
                      "NUMA memory unreadable (" + mem.error().message +
                          "): zones carry the node's MemTotal on node 0");
  }
  exporter_.countNodeInfoCollection(cpuOk, mem.ok());
}

void Agent::startTopology() {
  if (opts_.nodeTopologySyncInterval.count() <= 0) {
    KLOG_INFO << "--node-topology-sync-interval <= 0: no node topology (no "
                 "NodeResourceTopology, no share pools for the CPUSetAllocator hook)";
    topologyOff_ = "--node-topology-sync-interval <= 0";
    return;
  }
  if (!topology_ || !topology_->placement) {
    KLOG_WARNING << "no CPU topology from sysfs: no node topology (no NodeResourceTopology, "
                    "no share pools)";
    topologyOff_ = "no CPU topology from sysfs";
    return;
  }
  collectNodeInfo();
  if (cluster_ && opts_.featureGates.enabled("NodeTopologyReport")) {
    cluster_->reportTopology();
  }
  if (queryKubeletConfig()) {
    configzClient_ = std::make_unique<KubeletClient>(io_, kubeletConfig());
  } else {
    kubeletCpu_ = KubeletCpuConfig{};
    kubeletCpu_->cpuManagerPolicy = opts_.kubeletCpuManagerPolicy;
    kubeletCpuSource_ = std::string("flag --kubelet-cpu-manager-policy (") +
                        (opts_.kubeletInsecureTls ? "--kubelet-insecure-tls: no /configz"
                                                  : "--disable-query-kubelet-config") +
                        ")";
  }
  syncTopology();
}

void Agent::fetchConfigz() {
  if (!configzClient_ || configzInFlight_) return;
  configzInFlight_ = true;
  lastConfigzAsk_ = clock_->now();
  configzClient_->setEndpoint(kubelet_.host(), kubelet_.port());
  configzClient_->get("/configz", [this](Result<KubeletResponse> r) {
    configzInFlight_ = false;
    const std::string where = "kubelet " + configzClient_->endpoint() + "/configz";
    Result<KubeletCpuConfig> cfg = makeError("");
    if (!r) {
      cfg = makeError(where + ": " + r.error().message);
    } else if (r->status != 200) {
      cfg = makeError(where + ": HTTP " + std::to_string(r->status) +
                      (r->status == 401 || r->status == 403
                           ? " (the agent's account needs nodes/proxy, or nodes/configz with the "
                             "kubelet's fine-grained authorization)"
                           : ""));
    } else {
      cfg = parseKubeletConfigz(r->body);
    }
    if (!cfg) {
      ++configzFailures_;
      failures_.failure(
          "kubelet /configz", Severity::kWarning,
          cfg.error().message + (kubeletCpu_ ? " (keeping the last good configuration)"
                                             : " (no node topology until it answers)"));
      return;
    }
    configzFailures_ = 0;
    failures_.success("kubelet /configz");
    if (!kubeletCpu_ || !(*kubeletCpu_ == *cfg)) {
      KLOG_INFO << "kubelet CPU manager policy \"" << cfg->cpuManagerPolicy
                << "\", topology manager \"" << cfg->topologyManagerPolicy << "\"/\""
                << cfg->topologyManagerScope << "\"";
    }
    kubeletCpu_ = std::move(*cfg);
    kubeletCpuSource_ = "kubelet /configz";
    // CPU suppress leaves a static kubelet's pod cpusets whole: it follows too.
    if (qos_) {
      qos_->setCpuManagerPolicy(kubeletCpu_->cpuManagerPolicy == "static"
                                    ? CpuManagerPolicy::kStatic
                                    : CpuManagerPolicy::kNone);
    }
    syncTopology();  // at once, not at the next tick
  });
}

void Agent::scheduleTopology() {
  topologyTimer_.expires_after(opts_.nodeTopologySyncInterval);
  topologyTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    syncTopology();
  });
}

void Agent::syncTopology() {
  if (stopped_) return;
  topologyTimer_.cancel();
  scheduleTopology();
  // /configz: every 60 s; while it fails, 3 s doubling up to those 60 s.
  const auto configzWait =
      configzFailures_ == 0 && kubeletCpu_
          ? std::chrono::nanoseconds(kConfigzEvery)
          : std::min<std::chrono::nanoseconds>(
                kConfigzEvery, std::chrono::seconds(3) * (1LL << std::min(configzFailures_, 5)));
  // Only once the pod list has come: a kubelet the pod sync cannot reach is already
  // reported (once) by it, and the topology waits for the pods anyway.
  if (configzClient_ && podsVersion_ > 0 &&
      (lastConfigzAsk_ == Clock::Monotonic{} || clock_->now() - lastConfigzAsk_ >= configzWait)) {
    fetchConfigz();
  }
  // As koordlet waits for its informers: pools computed without the pods (their
  // pinned CPUs) or the Node (its reservation) would hand out CPUs that are taken.
  if (opts_.kubeletSyncInterval.count() <= 0) {
    topologyOff_ = "no pods (--kubelet-sync-interval <= 0): their pinned CPUs are unknown";
    return;
  }
  if (podsVersion_ == 0) {
    topologyOff_ = "waiting for the kubelet's pod list";
    return;
  }
  if (!kubeletCpu_) {
    topologyOff_ = "waiting for the kubelet's /configz";
    return;
  }
  if (cluster_ && !nodeInfo_) {
    topologyOff_ = "waiting for the Node " + opts_.nodeName;
    return;
  }
  NodeTopologyInputs in;
  in.topology = &*topology_;
  in.basicInfo = basicInfo_;
  in.numaMemoryBytes = numaMemory_;
  if (lastNode_ && lastNode_->memory) {
    in.memTotalBytes = static_cast<int64_t>(lastNode_->memory->memTotalBytes);
  }
  in.kubelet = *kubeletCpu_;
  in.kubeletConfigKnown = kubeletCpuSource_ == "kubelet /configz";
  // A static kubelet's pinned CPUs: an absent checkpoint pins nothing; one that
  // cannot be read or parsed keeps the last good topology (computing without it
  // would hand the pinned CPUs out as pools), as koordlet fails its report.
  std::optional<CpuManagerCheckpoint> checkpoint;
  if (in.kubelet.cpuManagerPolicy == "static") {
    const std::string path = HostPaths::join(opts_.paths.varLibKubeletRoot, "cpu_manager_state");
    auto read = readCpuManagerCheckpoint(readFile(path), path);
    if (!read) {
      failures_.failure("cpu_manager_state", Severity::kWarning,
                        read.error().message + " (keeping the last good node topology)");
      topologyOff_ = "cpu_manager_state unreadable";
      return;
    }
    failures_.success("cpu_manager_state");
    checkpoint = std::move(*read);
  }
  if (checkpoint) in.checkpoint = &*checkpoint;
  // The reservation's source text, as applyReservation chose it (a flag wins).
  in.reservationJson = !opts_.nodeReservation.empty() ? std::optional(opts_.nodeReservation)
                       : nodeInfo_                    ? nodeInfo_->reservationAnnotation
                                                      : std::nullopt;
  in.systemQosResourceJson = !opts_.nodeSystemQosResource.empty()
                                 ? std::optional(opts_.nodeSystemQosResource)
                             : nodeInfo_ ? nodeInfo_->systemQosResourceAnnotation
                                         : std::nullopt;
  const std::vector<Pod>& pods = informer_.pods();
  in.pods.reserve(pods.size());
  for (const Pod& p : pods) in.pods.push_back(&p);

  auto computed = computeNodeTopology(in);
  if (!computed) {
    failures_.failure(
        kTopologyFailureKey, Severity::kWarning,
        "node topology: " + computed.error().message + " (keeping the last good one)");
    return;
  }
  failures_.success(kTopologyFailureKey);
  for (const std::string& w : computed->warnings) {
    failures_.failure("node topology input " + failureKey(w), Severity::kWarning, w);
  }
  topologyOff_.clear();
  if (!cpusetRule_ || !(*cpusetRule_ == computed->rule)) {
    cpusetRule_ = std::make_shared<const CpuSetRule>(computed->rule);
    if (opts_.featureGates.enabled("CPUSetAllocator")) {
      size_t be = 0;
      for (const auto& p : cpusetRule_->beSharePools) be += p.cpus.size();
      exporter_.recordSharePools(cpusetRule_->allShareCpus().size(), be);
    }
    ++cpusetRuleVersion_;
    if (qos_) qos_->mutableNode().cpusetRule = cpusetRule_;
    publishHookState();
  }
  nodeTopology_ = std::move(*computed);
  if (cluster_) cluster_->syncTopology(nodeTopology_->content, nodeInfo_ ? nodeInfo_->uid : "");
}

nlohmann::json Agent::topologyJson() const {
  nlohmann::json j;
  j["syncIntervalSeconds"] = std::chrono::duration<double>(opts_.nodeTopologySyncInterval).count();
  j["reporting"] = cluster_ && cluster_->topologyReporter() != nullptr;
  if (!cluster_) {
    j["reportingOff"] = "standalone (no API server): computed, not written";
  } else if (!opts_.featureGates.enabled("NodeTopologyReport")) {
    j["reportingOff"] = "feature gate NodeTopologyReport is off";
  }
  j["waiting"] = topologyOff_;
  j["kubeletCpuManagerSource"] = kubeletCpuSource_;
  if (nodeTopology_) {
    j["nodeResourceTopology"] = nrtContentJson(nodeTopology_->content);
  }
  return j;
}

}  // namespace koord
