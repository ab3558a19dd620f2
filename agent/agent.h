// Agent: the daemon. One Boost.Asio io_context runs everything: the collection
// timer, the kubelet pod sync, the HTTP server and the signal handler. Modules plug
// in here; each does its I/O serially on the loop thread (STYLE.md habit 12).
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this first.

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "agent/cluster_link.h"
#include "agent/http_server.h"
#include "agent/options.h"
#include "base/audit_log.h"
#include "base/clock.h"
#include "base/log.h"
#include "cgroupfs/layout.h"
#include "cgroupfs/pod_dir_watch.h"
#include "gpu/device_info_dir.h"
#include "kube/device_object.h"
#include "kube/eviction_ledger.h"
#include "kube/kubelet_client.h"
#include "kube/kubelet_config.h"
#include "kube/node_info.h"
#include "kube/pod_evictor.h"
#include "kube/pods_informer.h"
#include "metrics/exporter.h"
#include "metrics/gpu_collector.h"
#include "metrics/gpu_health.h"
#include "metrics/host_app_collector.h"
#include "metrics/metric_cache.h"
#include "metrics/node_collector.h"
#include "metrics/node_hardware.h"
#include "metrics/node_metric.h"
#include "metrics/pod_collector.h"
#include "metrics/self_collector.h"
#include "nri/nri_client.h"
#include "nri/nri_hooks.h"
#include "prediction/predict_server.h"
#include "qos/evict_victims.h"
#include "qos/hook_reconcile.h"
#include "qos/node_topology.h"
#include "qos/qos_manager.h"
#include "qos/resctrl_manager.h"
#include "qos/slo_sources.h"
#include "runtimeproxy/hook_server.h"

namespace koord {

// "<path>: <reason>" -> "<path>": the FailureLog key of an error message, so one
// failing file is one streak however its reason text varies.
std::string failureKey(const std::string& message);

// Facts about this host that main() reads once (sysconf) and hands down.
struct SystemInfo {
  long ticksPerSecond = 100;
  long pageSize = 4096;
};

// The kubelet endpoint and credentials the flags name (the agent's and `koordlet
// restore`'s).
KubeletClientConfig kubeletClientConfig(const Options& opts);
// The executor's config the flags give (cgroup root, force and verify periods,
// dry-run, the audit log under --audit-log-dir, made here when missing).
ExecutorConfig executorConfig(const Options& opts, int64_t pageSize);
// --resctrl-state-file, or its default under --var-run-root-dir.
std::string resctrlStateFile(const Options& opts);

class Agent {
 public:
  Agent(boost::asio::io_context& io, Options options, const Clock& clock, SystemInfo sys);

  // Binds the HTTP server, arms the timers and the signal handler. Errors (address
  // in use, unreadable --config) are returned; the caller exits non-zero.
  Status start();
  // Stops every timer, the server, the kubelet sync and the signal handler so
  // io_context::run() returns. Idempotent; SIGTERM and SIGINT call it.
  void stop();

  bool ready() const { return ready_; }
  uint16_t httpPort() const { return server_.port(); }
  const MetricCache& cache() const { return cache_; }
  const SloSources& config() const { return config_; }

 private:
  void scheduleCollect();
  void collectOnce();
  void collectNode();
  void collectPods();
  // Finds the cgroup version and driver; until the kubelet has made its tree this
  // fails, is logged once, and is retried every round.
  bool ensureLayout();
  void reportFileErrors(const char* collector, const std::vector<Error>& errors,
                        std::set<std::string>& failing);
  void cacheNode(const NodeSample& s);
  void cachePods(const PodsSample& s);
  // The executor and the QoS manager, once the cgroup layout is known.
  void startQos();
  QosManagerConfig qosConfig() const;  // from the options, the topology and reservation
  HookGates hookGates() const;         // from the options and the topology
  bool suppressGate() const;           // BECPUSuppress, and a CPU count to suppress from
  void runQos();
  // cgroup v2: the runtime's shares -> cpu.weight conversion read off a container it
  // made (--cpu-weight-conversion=auto), until known; a few files a round.
  void learnCpuWeightConversion();
  void applyOomScoreAdj(const std::vector<OomScoreAdjWrite>& writes);
  void switchGroupIdentity(const NodeSloSpec& spec);
  bool groupIdentity_ = false;  // the GroupIdentity strategy is registered
  std::vector<std::pair<std::string, int64_t>> lastSysctlPlan_;  // --dry-run: said once
  void runResctrl();
  // SIGUSR2 (`koordlet restore` run beside a live agent): no cgroup, resctrl or
  // eviction writes and no hook settings from then until the process restarts, so
  // what restore puts back stays; said once, in /config and koordlet_agent_paused.
  void pause();
  bool paused_ = false;
  void collectResctrl();
  void pollConfig();
  // The Kubernetes API (agent_kube.cpp): none in standalone mode.
  Status startCluster();
  void applyNode(const std::optional<nlohmann::json>& node);
  void applyNodeSlo(const std::optional<nlohmann::json>& nodeSlo);
  void applyReservation();
  // The Node's cpu-normalization-ratio (kube/node_info.h): the last good one in
  // force; a change republishes the hooks' state and reruns the reconciler.
  void applyCpuNormalization();
  double cpuNormalizationRatio_ = -1;  // -1: none
  std::string cpuNormalizationSource_ = "none";
  uint64_t cpuNormalizationVersion_ = 0;
  // The kubelet's host comes from --kubelet-addr or NODE_IP (else from the Node).
  bool kubeletHostFromFlags() const { return !opts_.kubeletAddr.empty() || !opts_.nodeIp.empty(); }
  void applyKubeletEndpoint();
  void startPodSync();
  static constexpr std::chrono::seconds kNodeWait{10};
  std::string clusterSummary() const;
  // Evictions (agent_evict.cpp): the strategies registered at startQos when a gate is
  // on and there is an API server; their requests handed to the evictor.
  bool evictionGates() const;
  void decideEviction();
  void startEviction();
  void updateEvictionFacts();
  void handleEvictions(const QosRound& round);
  void recordEvictionDecisions(const EvictRoundReport& report);
  void onEvictionResult(const EvictionResult& r);
  std::string evictionSummary() const;
  // NRI: the plugin client (own thread) and the hooks it answers with; the hooks
  // read a HookState this loop publishes whenever what they decide from changed.
  void startNri();
  void publishHookState();
  HookContext hookContext() const;
  void recordNri();
  std::string nriSummary() const;
  bool hooksServed() const { return opts_.enableNriRuntimeHook || opts_.enableRuntimeHookServer; }
  // koord-runtime-proxy's hook server (agent_proxy.cpp): gRPC on gRPC's threads,
  // answering from the same HookState; koordlet.json written once it serves.
  void startHookServer();
  // Where the agent writes, checked once at start (agent_paths.cpp).
  void checkWritablePaths();
  nlohmann::json writablePaths_ = nlohmann::json::object();
  void serveHooks();  // listens; on failure retries every kHookServerRetry
  static constexpr std::chrono::seconds kHookServerRetry{10};
  void registerHookServer();
  void recordHookServer();
  std::string hookServerSummary() const;
  nlohmann::json hookServerJson() const;

  // Host applications (agent_host_apps.cpp): the NodeSLO's processes outside
  // Kubernetes, their usage read each round before the pods' (system usage leaves
  // them out), reported in NodeMetric and /metrics.
  void collectHostApps();
  std::vector<HostAppInfo> hostAppInfos() const;
  std::unique_ptr<HostAppCollector> hostApps_;
  double hostAppCpuCores_ = 0;     // Σ this round, apps with a rate
  double hostAppMemoryBytes_ = 0;  // Σ this round (memory.stat figure)
  std::set<std::string> hostAppOwners_;
  std::set<std::string> hostAppFailing_;  // FailureLog keys failing last round
  uint64_t hostAppOwnersVersion_ = 0;     // bumped when hostAppOwners_ changes
  uint64_t cachedHostApps_ = 0;           // the version the cache was last pruned to

  // Peak prediction (agent_prediction.cpp): koordlet's predict server, trained from
  // the cache every round it is due; its prod reclaimable goes into NodeMetric.
  void startPrediction();
  void runPrediction();
  nlohmann::json prodReclaimable(const std::vector<const Pod*>& reported);
  std::optional<prediction::ReclaimableResources> nodeAllocatable() const;
  nlohmann::json predictionJson() const;
  std::unique_ptr<prediction::PredictServer> predictor_;  // nullptr: no NodeMetric report

  // GPUs (agent_gpu.cpp; gate Accelerators): NVML loaded once at start (absent: said
  // once, no GPU, nothing else changes), the GPUs' use each round into the cache and
  // /metrics, the node's Device every --node-topology-sync-interval.
  void startGpu();
  void collectGpu();
  void syncDevices();
  // The Device's content: koord-device-daemon's files when they list a device, else
  // NVML's GPUs (unless --xpu-enforce-collect-from-device-infos), else empty.
  DeviceContent deviceContent();
  DeviceContent nvmlDeviceContent() const;
  std::vector<NodeMetricGpu> nodeMetricGpus() const;
  nlohmann::json gpuJson() const;
  std::unique_ptr<GpuCollector> gpu_;
  std::string gpuOff_;  // why there is no GPU ("" = there is, or the gate is off)
  std::unique_ptr<DeviceInfoDir> deviceInfos_;  // gate on: --xpu-device-infos-dir
  std::set<std::string> deviceInfoFailing_;     // FailureLog keys failing last read
  std::string deviceSource_ = "none";           // "device-infos", "nvml" or "none"
  std::optional<bool> deviceInfosMissing_;      // the dir's presence, as last said
  DeviceContent lastDeviceContent_;
  Clock::Monotonic lastDeviceSync_{};
  std::set<std::string> gpuFailing_;  // FailureLog keys failing last round
  // The driver's critical-error events (metrics/gpu_health.h): watched on their own
  // thread, judged here on the loop. Declared after gpu_: it goes first.
  void startGpuHealth();
  void onGpuHealth(const Result<GpuHealthEvent>& next);
  std::unique_ptr<GpuHealthWatcher> gpuHealth_;

  // Node topology (agent_topology.cpp): the NodeResourceTopology content and the
  // CPUSetAllocator hook's share pools.
  bool queryKubeletConfig() const;
  void startTopology();
  void collectNodeInfo();
  void scheduleTopology();
  void syncTopology();
  void fetchConfigz();
  nlohmann::json topologyJson() const;

  HttpResponse serveMetrics();
  HttpResponse serveReadyz() const;
  // The last /metrics page and when it was rendered: scrapes within
  // kMetricsPageMaxAge share it (see serveMetrics).
  // The last page rendered, while a response still holds it (megabytes at 500 pods:
  // not kept between scrapes).
  std::weak_ptr<const std::string> metricsPage_;
  Clock::Monotonic metricsPageAt_{};
  HttpResponse serveConfig() const;
  HttpResponse serveExplain(std::string_view query) const;  // agent_explain.cpp
  KubeletClientConfig kubeletConfig() const;

  boost::asio::io_context& io_;
  Options opts_;
  const Clock* clock_;
  SystemInfo sys_;

  HttpServer server_;
  Exporter exporter_;
  FailureLog failures_;
  NodeCollector nodeCollector_;
  std::optional<NodeSample> lastNode_;
  std::set<std::string> nodeFailing_;  // files that failed in the last round
  std::set<std::string> podFailing_;
  std::set<std::string> resctrlFailing_;
  std::unique_ptr<SelfCollector> selfCollector_;
  KubeletClient kubelet_;
  PodsInformer informer_;
  std::optional<CgroupLayout> layout_;
  std::unique_ptr<PodCollector> podCollector_;
  MetricCache cache_;

  SloSources config_;
  bool configLastGood_ = true;
  NodeReservation reservation_;
  std::optional<CpuTopology> topology_;  // nullopt: not even a CPU count, suppress off
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<QosManager> qos_;
  std::unique_ptr<resctrl::ResctrlManager> resctrl_;
  bool memoryQosSupported_ = false;  // memory.min/low/high on this kernel
  bool cpuWeightKnown_ = false;      // the conversion was read off a container (or set by flag)
  std::string cpuWeightSource_;      // where, for /readyz
  uint64_t podRounds_ = 0;           // pod collections since the kubelet's list arrived

  // Kubernetes API (agent_kube.cpp)
  std::unique_ptr<ClusterLink> cluster_;
  std::optional<NodeInfo> nodeInfo_;        // the last good Node
  std::string reservationSource_ = "none";  // where reservation_ came from
  std::string allocatableSource_;           // where memory QoS's allocatable came from
  EvictionLedger evictionLedger_;
  // The last suppress outcome logged: said when it changes, not every round.
  std::string lastSuppressLog_;
  // Runs of each QoS strategy since start (GET /config strategyRuns): how many rounds a
  // burst of pods or a NodeSLO change cost. One entry a strategy name.
  std::map<std::string, uint64_t> strategyRuns_;
  std::unique_ptr<PodEvictor> evictor_;
  std::optional<AuditLog> audit_;  // --audit-log-dir's audit.log; evictions append to it
  void auditEviction(const EvictionRequest& r, const std::string& result,
                     const std::string& detail);
  std::string evictionOff_;                               // why eviction is off ("" = on)
  std::map<std::string, std::string> evictionDecisions_;  // feature -> its last decision

  // NRI (--enable-nri-runtime-hook)
  HookStateStore hookState_;
  // One decision per container when both paths see it (qos/hook_decisions.h);
  // declared before the hooks that use it, so it outlives them.
  HookDecisions hookDecisions_;
  HookDecisions* sharedDecisions() {
    return opts_.enableNriRuntimeHook && opts_.enableRuntimeHookServer ? &hookDecisions_ : nullptr;
  }
  std::unique_ptr<HookRecorder> hookRecorder_;
  std::unique_ptr<nri::NriHooks> nriHooks_;
  std::unique_ptr<nri::NriClient> nri_;
  // koord-runtime-proxy's hook server (--enable-runtime-hook-server)
  std::unique_ptr<runtimeproxy::ProxyHooks> proxyHooks_;
  std::unique_ptr<runtimeproxy::HookServer> hookServer_;
  std::string registration_;  // what became of koordlet.json
  boost::asio::steady_timer hookServerTimer_;
  int hookServerFailures_ = 0;  // starts failed in a row

  // Pod-level values at sandbox creation (agent_sandbox.cpp): both hook paths'
  // PreRunPodSandbox intents, written through the executor as soon as the pod's
  // cgroup exists (NRI: at once; the proxy's pre-hook: before the runtime made it).
  struct PendingSandbox {
    std::string ns, name;
    std::string dir;  // the pod's cgroup, from our layout (never the runtime's string)
    std::vector<CgroupWrite> writes;
    Clock::Monotonic since{};  // the hook's call
    Clock::Monotonic deadline{};
  };
  std::map<std::string, PendingSandbox> pendingSandboxes_;  // by uid, bounded

  // The wake-up on pod cgroups (agent_watch.cpp): inotify on the kubepods root and
  // its QoS dirs; a pod dir made or removed syncs the kubelet's pods (and with them a
  // reconcile round) and writes waiting sandboxes at once, debounced; rebuilt when the
  // tree is recreated; polling every second when inotify is refused.
  enum class WatchMode { kOff, kInotify, kPolling };
  WatchMode watchMode_ = WatchMode::kOff;
  PodDirWatch podWatch_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> podWatchFd_;
  boost::asio::steady_timer podWatchTimer_;  // rebuild / polling
  boost::asio::steady_timer wakeTimer_;      // the debounce
  bool wakeArmed_ = false;
  // A sync the wake-up asked for is in flight: when it is done a QoS round runs at
  // once, not at the next collect tick (up to --collect-res-used-interval later).
  bool wokenSync_ = false;
  // The NRI connection (its connects count) for which OOMScoreAdj's "this runtime
  // ignores oom_score_adj" was said.
  uint64_t nriOomSaidFor_ = 0;
  // The NodeMetric's nodeMemoryCollectPolicy is usageWithPageCache: the pods' memory
  // with page cache goes to the metric cache too.
  bool podPageCacheWanted_ = false;
  std::set<std::string> polledPodDirs_;  // polling: the pod dirs last seen
  uint64_t podDirEvents_ = 0, podWakeUps_ = 0, watchRebuilds_ = 0;
  std::string watchFallback_;  // why polling ("" with inotify)
  std::vector<std::string> podWatchDirs() const;
  void startPodWatch();
  void readPodWatch();
  void podCgroupsChanged(size_t events);
  void pollPodDirs();
  boost::asio::steady_timer sandboxTimer_;
  bool sandboxTimerArmed_ = false;
  uint64_t sandboxWritten_ = 0, sandboxExpired_ = 0, sandboxDropped_ = 0;
  SandboxSink sandboxSink();  // for both adapters' runners
  void onSandbox(HookPod pod, HookIntent intent, Clock::Monotonic since);
  void applyPendingSandboxes();
  void trimHeap();
  Clock::Monotonic lastHeapTrim_{};
  uint64_t podsVersion_ = 0;   // bumped on every new pod list
  uint64_t cachedOwners_ = 0;  // PodsSample::ownersVersion the cache was last pruned to
  // What the last published HookState was built from; a change republishes.
  struct HookInputs {
    uint64_t podsVersion = 0;
    uint64_t configGeneration = 0;
    bool layoutKnown = false;
    bool resctrlReady = false;
    int64_t nodeAllocatableMemory = 0;
    uint64_t cpusetRuleVersion = 0;
    uint64_t cpuNormalizationVersion = 0;
    bool paused = false;
    bool operator==(const HookInputs&) const = default;
  };
  std::optional<HookInputs> hookInputs_;

  // Node topology (agent_topology.cpp)
  CpuBasicInfo basicInfo_;
  std::map<int, int64_t> numaMemory_;
  std::unique_ptr<KubeletClient> configzClient_;  // nullptr: /configz is not read
  bool configzInFlight_ = false;
  Clock::Monotonic lastConfigzAsk_{};
  int configzFailures_ = 0;                     // in a row
  Clock::Monotonic lastHardwareRead_{};         // the CPU basic info
  std::optional<KubeletCpuConfig> kubeletCpu_;  // nullopt: not known yet
  std::string kubeletCpuSource_;
  std::optional<NodeTopology> nodeTopology_;      // the last good one
  std::shared_ptr<const CpuSetRule> cpusetRule_;  // what the hooks use
  uint64_t cpusetRuleVersion_ = 0;
  std::string topologyOff_;  // why there is no node topology ("" = there is)
  boost::asio::steady_timer topologyTimer_;

  boost::asio::steady_timer collectTimer_;
  boost::asio::steady_timer podSyncTimer_;  // the wait for the Node's kubelet address
  bool podSyncStarted_ = false;
  std::chrono::steady_clock::time_point nextCollect_{};
  boost::asio::signal_set signals_;
  boost::asio::signal_set pauseSignal_;  // SIGUSR2: pause()

  bool ready_ = false;
  bool stopped_ = false;
};

}  // namespace koord
