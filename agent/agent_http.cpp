// The agent's HTTP handlers: /metrics, /config and /readyz (routes are set up in
// Agent::start).
#include "agent/agent.h"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <unordered_set>

#include <boost/asio/post.hpp>

#include "base/read_file.h"
#include "cgroupfs/cgroup_mounts.h"
#include "metrics/proc_parsers.h"
#include "qos/cpu_burst.h"
#include "qos/cpu_suppress.h"
#include "qos/memory_qos.h"
#include "version.h"

namespace koord {

namespace {
// Under a scrape storm, scrapes share one rendered page for this long. Rendering
// costs several milliseconds of the loop at 110 pods (tens at 500), and the values
// change once a collect interval; so a hundred scrapers at once cost one render a
// quarter second, and the loop keeps its time. Only when more than
// kSharedPageConnections are open: a scraper or two (Prometheus, a test, curl)
// always gets a fresh page, so what it reads follows what the agent just did.
constexpr auto kMetricsPageMaxAge = std::chrono::milliseconds(250);
constexpr uint64_t kSharedPageConnections = 4;
}  // namespace

HttpResponse Agent::serveMetrics() {
  constexpr const char* kType = "text/plain; version=0.0.4; charset=utf-8";
  const auto now = clock_->now();
  if (auto page = metricsPage_.lock(); page && now - metricsPageAt_ < kMetricsPageMaxAge &&
                                       server_.stats().connectionsOpen > kSharedPageConnections) {
    return HttpResponse{200, kType, std::move(page)};
  }
  if (auto self = selfCollector_->collect()) {
    exporter_.recordSelf(*self);
  } else {
    failures_.failure("self", Severity::kWarning, "self collector: " + self.error().message);
  }
  const HttpStats& http = server_.stats();
  exporter_.recordHttp({http.connectionsOpen, http.timeouts, http.rejectedTooLarge,
                        http.badRequests, http.requests});
  recordNri();  // the connection changes on its own thread: read it as of this scrape
  recordHookServer();
  if (cluster_) exporter_.recordKubeApi(cluster_->sample());
  std::vector<std::pair<std::string, size_t>> state = {
      {"failure_log_keys", failures_.activeStreaks()}, {"eviction_ledger", evictionLedger_.size()}};
  if (evictor_) state.emplace_back("evictor_in_flight", evictor_->inFlight());
  if (evictor_) state.emplace_back("evictor_queued", evictor_->queued());
  if (executor_) state.emplace_back("executor_owners", executor_->ownerCount());
  if (executor_) state.emplace_back("executor_known_files", executor_->knownCount());
  if (executor_) state.emplace_back("executor_gone_dirs", executor_->goneCount());
  if (podCollector_) state.emplace_back("pod_collector", podCollector_->stateEntries());
  if (podCollector_) state.emplace_back("pod_collector_open_files", podCollector_->openFiles());
  if (qos_) state.emplace_back("qos_pods", qos_->stateEntries());
  if (auto hooks = hookState_.current()) state.emplace_back("hook_pods", hooks->podsByUid.size());
  exporter_.recordStateEntries(state);
  auto page = std::make_shared<const std::string>(exporter_.render());
  metricsPage_ = page;  // shared while responses hold it, freed when the last is sent
  metricsPageAt_ = now;
  return HttpResponse{200, kType, std::move(page)};
}

// GET /config: the effective NodeSLO config (defaults merged with --config), the
// feature gates (enabled, implemented), the flags set that have no effect and what
// the QoS manager runs, as JSON.
HttpResponse Agent::serveConfig() const {
  nlohmann::json j = config_.toJson();
  j.update(settingsJson(opts_));  // featureGates, flagsWithoutEffect
  j["paused"] = paused_;          // koordlet restore paused this agent (SIGUSR2)
  const auto& spec = config_.current();
  nlohmann::json strategies;
  strategies["cpuSuppress"] = {
      {"running", qos_ != nullptr && opts_.cpuSuppressIntervalSeconds > 0 &&
                      opts_.featureGates.enabled("BECPUSuppress") && spec.threshold.enable},
      {"intervalSeconds", opts_.cpuSuppressIntervalSeconds}};
  strategies["cpuBurst"] = {{"running", qos_ != nullptr && opts_.reconcileIntervalSeconds > 0 &&
                                            opts_.featureGates.enabled("CPUBurst")},
                            {"intervalSeconds", opts_.reconcileIntervalSeconds}};
  strategies["memoryQos"] = {{"running", qos_ != nullptr && opts_.reconcileIntervalSeconds > 0 &&
                                             opts_.featureGates.enabled("CgroupReconcile")},
                             {"kernelSupported", memoryQosSupported_},
                             {"v1SoftLimitFallback", opts_.memoryQosV1SoftLimit},
                             {"intervalSeconds", opts_.reconcileIntervalSeconds}};
  strategies["resctrl"] = {
      {"running", resctrl_ != nullptr && opts_.reconcileIntervalSeconds > 0 &&
                      opts_.featureGates.enabled("RdtResctrl")},
      {"status", !resctrl_ || !resctrl_->supported() ? "not checked yet"
                                                     : resctrl::statusName(resctrl_->status())},
      {"intervalSeconds", opts_.reconcileIntervalSeconds}};
  strategies["nri"] = {{"enabled", opts_.enableNriRuntimeHook},
                       {"state", nri_ ? nri::toString(nri_->status().state) : "stopped"},
                       {"failurePolicy", opts_.runtimeHooksPluginFailurePolicy},
                       {"launched", opts_.nriLaunchedFd.has_value()},
                       {"sharedDecisions", nriHooks_ ? nriHooks_->sharedDecisions() : 0}};
  strategies["runtimeHookServer"] = hookServerJson();
  strategies["eviction"] = {
      {"running", evictionOff_.empty() && qos_ != nullptr},
      {"summary", evictionSummary()},
      {"lastDecisions", evictionDecisions_},
      {"memoryIntervalSeconds", opts_.memoryEvictIntervalSeconds},
      {"cpuIntervalSeconds", opts_.cpuEvictIntervalSeconds},
      {"gracePeriodSeconds", opts_.evictionGracePeriodSeconds >= 0
                                 ? nlohmann::json(opts_.evictionGracePeriodSeconds)
                                 : nlohmann::json("the pod's own")}};
  j["strategies"] = std::move(strategies);
  j["strategyRuns"] = strategyRuns_;
  j["nodeTopology"] = topologyJson();
  j["gpu"] = gpuJson();
  j["writablePaths"] = writablePaths_;
  // The wake-up on pod cgroups and the sandboxes' writes (agent_watch.cpp,
  // agent_sandbox.cpp).
  j["podCgroupWatch"] = {{"mode", watchMode_ == WatchMode::kInotify   ? "inotify"
                                  : watchMode_ == WatchMode::kPolling ? "polling"
                                                                      : "off"},
                         {"fallbackReason", watchFallback_},
                         {"podDirEvents", podDirEvents_},
                         {"wakeUps", podWakeUps_},
                         {"kubeletSyncsWoken", informer_.wakeUps()},
                         {"rebuilds", watchRebuilds_}};
  j["sandboxWrites"] = {{"written", sandboxWritten_},
                        {"waiting", pendingSandboxes_.size()},
                        {"expired", sandboxExpired_},
                        {"dropped", sandboxDropped_}};
  j["prediction"] = predictionJson();
  j["dryRun"] = opts_.dryRun;
  j["kubeApi"] = cluster_ ? cluster_->health() : nlohmann::json{{"mode", "standalone"}};
  j["node"] = {{"reservationSource", reservationSource_},
               {"allocatableMemorySource", allocatableSource_},
               {"cpuNormalizationRatio", cpuNormalizationRatio_},
               {"cpuNormalizationSource", cpuNormalizationSource_},
               {"cpuNormalizationGate", opts_.featureGates.enabled("CPUNormalization")},
               {"known", nodeInfo_.has_value()}};
  return HttpResponse{200, "application/json", j.dump(2) + "\n"};
}

// /readyz turns 200 after the first full node collection. Its body states each
// part; parts that are optional (kubelet, NRI, PSI) never make it 503.
HttpResponse Agent::serveReadyz() const {
  std::ostringstream body;
  body << (ready_ ? "ready" : "not ready: waiting for the first full node collection") << "\n";
  body << "node collector: " << (ready_ ? "ok" : "pending") << "\n";
  body << "psi: ";
  switch (nodeCollector_.psiSupport()) {
    case Support::kSupported:
      body << "supported\n";
      break;
    case Support::kUnsupported:
      body << "unsupported (" << nodeCollector_.psiReason() << ")\n";
      break;
    case Support::kUnknown:
      body << "unknown\n";
      break;
  }
  body << "kubelet " << kubelet_.endpoint() << ": ";
  if (opts_.kubeletSyncInterval.count() <= 0) {
    body << "pod sync disabled\n";
  } else if (informer_.lastOk()) {
    body << "ok, " << informer_.pods().size() << " pods\n";
  } else if (informer_.synced()) {
    body << "failing (" << informer_.lastError() << "), keeping " << informer_.pods().size()
         << " pods from the last good list\n";
  } else {
    body << "unreachable ("
         << (informer_.lastError().empty() ? "no reply yet" : informer_.lastError())
         << "), pods unavailable\n";
  }
  body << "cgroup layout: "
       << (layout_ ? std::string(toString(layout_->version())) + ", " + toString(layout_->driver())
                   : std::string("unknown (no kubepods tree yet)"));
  if (layout_ && layout_->version() == CgroupVersion::kV2 && executor_) {
    body << ", cpu.weight " << toString(executor_->cpuWeightConversion())
         << (cpuWeightKnown_ ? " (from " + cpuWeightSource_ + ")"
                             : " (until a container the runtime made shows its own)");
  }
  body << "\n";
  body << "config: " << config_.source() << ", generation " << config_.generation()
       << (config_.lastError().empty() ? std::string()
                                       : ", last reload rejected (" + config_.lastError() + ")")
       << "\n";
  // The API server is optional: down, it never makes /readyz fail (QoS runs on the
  // last good NodeSLO).
  body << "kube api: " << clusterSummary() << "\n";
  if (cluster_) {
    const auto* r = cluster_->reporter();
    const auto h = cluster_->health();
    body << "node metric: ";
    if (!r) {
      body << "reporting off (--enable-node-metric-report=false)\n";
    } else {
      const auto& nm = h["nodeMetric"];
      body << (nm["lastReport"].is_null() ? std::string("never reported")
                                          : "last reported " + nm["lastReport"].get<std::string>());
      if (!r->lastError().empty()) body << ", last report failed (" << r->lastError() << ")";
      if (!nm["waiting"].get<std::string>().empty())
        body << ", waiting: " << nm["waiting"].get<std::string>();
      body << "\n";
    }
  }
  body << "qos: "
       << (qos_ ? std::string("running") + (opts_.dryRun ? " (dry-run)" : "") +
                      (!topology_              ? ", CPU suppress off (no CPU count)"
                       : !topology_->placement ? ", CPU suppress policy cpuset off (no sysfs "
                                                 "CPU topology)"
                                               : "")
                : std::string("waiting for the cgroup layout"))
       << "\n";
  if (qos_) {
    body << "memory qos: "
         << (!opts_.featureGates.enabled("CgroupReconcile") ? "gate CgroupReconcile off"
             : memoryQosSupported_                          ? "on"
             : opts_.memoryQosV1SoftLimit
                 ? "kernel lacks memory.min/low/high; v1 soft-limit fallback"
                 : "kernel lacks memory.min/low/high: nothing applied")
         << "\n";
  }
  if (resctrl_) {
    body << "resctrl: "
         << (!opts_.featureGates.enabled("RdtResctrl") ? "gate RdtResctrl off"
             : !resctrl_->supported()                  ? "not checked yet"
                                                       : resctrl::statusName(resctrl_->status()))
         << "\n";
  }
  body << "eviction: " << evictionSummary() << "\n";
  // NRI is optional: its state is reported, never a reason for 503.
  body << "nri: " << nriSummary() << "\n";
  body << "runtime hook server: " << hookServerSummary() << "\n";
  return HttpResponse{ready_ ? 200u : 503u, "text/plain; charset=utf-8", body.str()};
}

}  // namespace koord
