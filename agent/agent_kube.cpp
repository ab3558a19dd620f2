// The agent's side of the Kubernetes API: which API server (or none), and what the
// Node, NodeSLO and NodeMetric objects change in the agent. The requests, watches
// and reports themselves are ClusterLink's.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include "agent/agent.h"
#include "metrics/node_metric.h"
#include "qos/node_overrides.h"

namespace koord {

Status Agent::startCluster() {
  auto api = resolveApiConfig(opts_);
  if (!api.ok()) return api.error();
  if (!*api) {
    KLOG_INFO << "no API server (no --kubeconfig, and not in a pod: KUBERNETES_SERVICE_HOST "
                 "unset or no token in "
              << opts_.serviceAccountDir
              << "): standalone, the NodeSLO comes from --config, no NodeMetric is reported";
    return Ok{};
  }
  cluster_ = std::make_unique<ClusterLink>(io_, std::move(**api), opts_, *clock_, failures_);
  cluster_->onNode([this](const std::optional<nlohmann::json>& n) { applyNode(n); });
  cluster_->onNodeSlo([this](const std::optional<nlohmann::json>& s) { applyNodeSlo(s); });
  if (opts_.enableNodeMetricReport) {
    startPrediction();
    cluster_->reportNodeMetric(
        [this](const nlohmann::json& nodeMetric) -> Result<nlohmann::json> {
          auto spec = parseNodeMetricSpec(nodeMetric);
          if (!spec.ok()) return spec.error();
          podPageCacheWanted_ = spec->memoryPolicy == NodeMemoryPolicy::kWithPageCache;
          return buildNodeMetricStatus(
              cache_, informer_.pods(), *spec, clock_->now(), clock_->wallNow(),
              [this](const std::vector<const Pod*>& reported) { return prodReclaimable(reported); },
              hostAppInfos(), nodeMetricGpus());
        },
        [this](const nlohmann::json& nodeMetric) {
          auto spec = parseNodeMetricSpec(nodeMetric);
          // Known before the first report, so its window has the pods' page cache.
          if (spec.ok())
            podPageCacheWanted_ = spec->memoryPolicy == NodeMemoryPolicy::kWithPageCache;
          return spec.ok() ? spec->reportInterval
                           : std::chrono::seconds(kDefaultReportIntervalSeconds);
        });
  }
  return Ok{};
}

void Agent::applyNodeSlo(const std::optional<nlohmann::json>& nodeSlo) {
  const uint64_t before = config_.generation();
  if (!nodeSlo) {
    // Deleted; or absent from the first list, which is no deletion of anything.
    if (config_.hasCluster()) config_.clusterDeleted();
  } else {
    (void)config_.applyClusterObject(*nodeSlo);  // a rejection is counted and logged there
  }
  configLastGood_ = config_.lastError().empty();
  exporter_.recordConfig(config_.generation(), config_.rejections(), configLastGood_);
  if (config_.generation() != before) {
    KLOG_INFO << "NodeSLO in force: " << config_.source() << " (generation " << config_.generation()
              << ")";
    // The hooks decide from the spec: publish now, not at the next round.
    publishHookState();
  }
}

void Agent::applyNode(const std::optional<nlohmann::json>& node) {
  if (!node) {
    // Deleted, or not there yet: keep what the last Node said.
    return;
  }
  auto info = parseNode(*node);
  if (!info.ok()) {
    failures_.failure("node object", Severity::kWarning,
                      info.error().message + " (keeping the last good Node)");
    return;
  }
  failures_.success("node object");
  nodeInfo_ = std::move(*info);
  const NodeResources& a = nodeInfo_->allocatable;
  exporter_.recordNodeAllocatable(
      {a.batchCpuMilli, a.batchMemoryBytes, a.midCpuMilli, a.midMemoryBytes});
  applyReservation();
  applyCpuNormalization();
  applyKubeletEndpoint();
  // Allocatable memory is taken at the next QoS round (runQos).
}

void Agent::applyCpuNormalization() {
  const std::string key = "cpu normalization ratio";
  double ratio = -1;
  if (nodeInfo_->cpuNormalizationRatioAnnotation) {
    auto r = parseCpuNormalizationRatio(*nodeInfo_->cpuNormalizationRatioAnnotation);
    if (!r) {
      failures_.failure(key, Severity::kWarning,
                        "Node " + nodeInfo_->name + ": metadata.annotations[\"" +
                            std::string(kCpuNormalizationRatioAnnotation) +
                            "\"]: " + r.error().message + " (keeping the ratio in force, " +
                            std::to_string(cpuNormalizationRatio_) + ")");
      return;
    }
    ratio = *r;
  }
  failures_.success(key);
  // koordlet ignores changes under 0.01 (koord-manager writes two decimals).
  if (std::abs(ratio - cpuNormalizationRatio_) < 0.01) return;
  KLOG_INFO << "CPU normalization ratio " << (ratio > 0 ? std::to_string(ratio) : "none")
            << " (was "
            << (cpuNormalizationRatio_ > 0 ? std::to_string(cpuNormalizationRatio_) : "none")
            << "): BE quotas"
            << (opts_.featureGates.enabled("CPUNormalization") ? " and LS quotas" : "")
            << (ratio > 1 ? " are divided by it" : " are not scaled");
  cpuNormalizationRatio_ = ratio;
  cpuNormalizationSource_ = ratio > 0 ? "Node annotation " +
                                            std::string(kCpuNormalizationRatioAnnotation) + " " +
                                            *nodeInfo_->cpuNormalizationRatioAnnotation
                                      : "none";
  ++cpuNormalizationVersion_;
  if (qos_) {
    qos_->mutableNode().cpuNormalizationRatio = ratio;
    qos_->podsChanged();  // the running pods are rewritten in the next round
  }
  publishHookState();
}

void Agent::startPodSync() {
  if (podSyncStarted_ || stopped_) return;
  podSyncStarted_ = true;
  podSyncTimer_.cancel();
  informer_.start();
}

// The Node's address of --kubelet-preferred-address-type and, on the secure port
// without --kubelet-secure-port, its daemonEndpoints port: where koordlet reaches
// the kubelet. --kubelet-addr and NODE_IP win.
void Agent::applyKubeletEndpoint() {
  if (!nodeInfo_) return;
  std::string host = kubelet_.host();
  uint16_t port = kubelet_.port();
  if (!kubeletHostFromFlags()) {
    if (auto address = kubeletAddress(*nodeInfo_, opts_.kubeletPreferredAddressType)) {
      host = *address;
    } else {
      failures_.failure("node kubelet address", Severity::kWarning,
                        "Node " + nodeInfo_->name +
                            " has no address to reach the kubelet at; "
                            "keeping " +
                            kubelet_.endpoint());
    }
  }
  if (!opts_.kubeletInsecureTls && !opts_.kubeletSecurePortSet && nodeInfo_->kubeletPort &&
      *nodeInfo_->kubeletPort > 0 && *nodeInfo_->kubeletPort < 65536) {
    port = static_cast<uint16_t>(*nodeInfo_->kubeletPort);
  }
  if (host != kubelet_.host() || port != kubelet_.port()) {
    const std::string before = kubelet_.endpoint();
    kubelet_.setEndpoint(host, port);
    KLOG_INFO << "kubelet endpoint from Node " << nodeInfo_->name << ": " << kubelet_.endpoint()
              << " (was " << before << ")";
  }
  if (!kubeletHostFromFlags() && opts_.kubeletSyncInterval.count() > 0) startPodSync();
}

void Agent::applyReservation() {
  NodeReservationInputs in{opts_.nodeReservation, opts_.nodeSystemQosResource, std::nullopt,
                           std::nullopt, ""};
  if (nodeInfo_) {
    in.reservationAnnotation = nodeInfo_->reservationAnnotation;
    in.systemQosResourceAnnotation = nodeInfo_->systemQosResourceAnnotation;
    in.nodeName = nodeInfo_->name;
  }
  auto r = effectiveNodeReservation(in);
  if (!r.ok()) {
    failures_.failure("node reservation", Severity::kWarning,
                      r.error().message + " (keeping the last good reservation)");
    return;
  }
  failures_.success("node reservation");
  const std::string source = r->reservationSource + ", " + r->systemQosSource;
  if (source != reservationSource_) {
    KLOG_INFO << "node reservation from " << source;
  }
  reservationSource_ = source;
  reservation_ = r->reservation;
  if (qos_) qos_->setReservation(reservation_);
}

std::string Agent::clusterSummary() const {
  if (!cluster_) return "standalone (no API server)";
  std::string out =
      cluster_->api().server + (cluster_->reachable() ? ", reachable" : ", unreachable");
  for (const auto* i : {&cluster_->node(), &cluster_->nodeSlo(), &cluster_->nodeMetric()}) {
    out += "; " + i->config().resource + " " +
           (i->watching() ? "watching"
            : i->synced() ? "synced, not watching"
                          : "not synced");
    if (!i->lastError().empty()) out += " (" + i->lastError() + ")";
  }
  return out;
}

}  // namespace koord
