// Exporter: every metric the agent serves on /metrics, in one prometheus-cpp
// registry, except the per-pod and per-container families, which hold their own
// series (metrics/swept_gauges.h); all written by metrics/text_exposition.h's
// writer, byte for byte as prometheus-cpp's serializer would. koordlet's names and
// labels where koordlet has the metric (reference koordlet.md §6: start_time,
// node_used_cpu_cores, node_used_memory_bytes, all with `node`); our additions follow
// Prometheus naming (counters end in _total, units in names) and keep the
// koordlet_ prefix; the process's own footprint uses the standard process_* names
// that koordlet's Go runtime also exports.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "metrics/gpu_collector.h"
#include "metrics/node_collector.h"
#include "metrics/pod_collector.h"
#include "metrics/self_collector.h"
#include "metrics/swept_gauges.h"

namespace koord {

// What the HTTP server counted since start (cumulative), as the agent hands it over.
struct HttpCounts {
  uint64_t connectionsOpen = 0;
  uint64_t timeouts = 0;          // connections closed by a read/write/idle timeout
  uint64_t rejectedTooLarge = 0;  // 431/413 replies
  uint64_t badRequests = 0;       // unparsable requests
  std::map<std::pair<std::string, unsigned>, uint64_t> requests;  // (route or "other", code)
};

// One request to the kubelet: its HTTP status or, with no reply, the class of the
// transport error; its wall time; "" on success, else why the reply was refused.
struct KubeletRequestSample {
  std::string code;
  double seconds = 0;
  std::string failure;
};

// The Kubernetes API client, as of now (cumulative counts; the exporter mirrors them).
struct KubeApiSample {
  bool reachable = false;
  // (verb, resource, code) -> requests finished.
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> requests;
  std::map<std::string, bool> watchSynced;  // resource -> listed and watching
  std::map<std::string, uint64_t> relists;  // resource -> lists after the first
  uint64_t throttledRequests = 0;           // waited on the client-side rate limit
  double throttledSeconds = 0;
  std::optional<double> nodeMetricLastReport;  // unix seconds of the last good report
  uint64_t nodeMetricReportsOk = 0;
  uint64_t nodeMetricReportsFailed = 0;
  uint64_t nodeMetricConflicts = 0;
};

// The peak predictor's results at one NodeMetric report (prediction/reclaimable.h),
// in the units koordlet's gauges use: CPU in cores, memory in bytes.
struct ReclaimableSample {
  struct Resources {
    std::optional<double> cpuCores;
    std::optional<double> memoryBytes;
  };
  // predictor (podReclaimablePredictor, priorityReclaimablePredictor, minPredictor)
  // -> its result; a predictor that failed or was not computed is absent.
  std::map<std::string, Resources> predicted;
  bool ok = false;  // the final (min) prediction succeeded
};

// One host application's usage this round (koordlet's host_application gauge).
struct HostAppUsageRow {
  std::string name;
  std::string priority;  // as the NodeSLO spells it ("" when unset)
  std::string qos;
  double cpuCores = 0;
  double memoryBytes = 0;  // memory.stat anon + unevictable, whatever the policy
};

// The predictor itself, for the operator (ours).
struct PredictorSample {
  size_t models = 0;
  size_t modelBytes = 0;
  uint64_t checkpointsSaved = 0;
  uint64_t checkpointSaveErrors = 0;
  double lastTrainingSeconds = 0;
};

class Exporter {
 public:
  Exporter(std::string nodeName, std::string version);

  void setStartTime(double unixSeconds);
  void recordNode(const NodeSample& sample);
  void setFeatureSupported(const std::string& feature, bool supported);
  void setPaused(bool paused);  // koordlet_agent_paused
  // One collector round: its wall duration and how many errors it met.
  void recordCollector(const std::string& collector, double seconds, size_t errors);
  void recordSelf(const SelfSample& sample);
  void recordHttp(const HttpCounts& stats);
  void setKubeletUp(bool up);
  // koordlet_kubelet_tls_verified: set once at start when the kubelet is reached
  // over HTTPS (never called over plain HTTP: absent).
  void setKubeletTlsVerified(bool verified);
  void recordKubeletRequest(const KubeletRequestSample& record);
  void setPodCount(size_t pods);
  // Pod and container usage, PSI, requests/limits and the BE aggregate of one
  // collection round; series of pods and containers not in it are removed.
  // podsVersion: the pod list the sample's pods point into (bumped on every new
  // list). Requests and limits come from the list, not the kernel: they are set
  // again only when the list or the containers sampled from it change.
  void recordPods(const PodsSample& sample, uint64_t podsVersion);
  void recordCache(size_t series, size_t bytes);
  // Sizes of the agent's per-pod and per-key state, by holder (executor owners,
  // failure-log keys, ...): what the churn soak watches for leaks.
  void recordStateEntries(const std::vector<std::pair<std::string, size_t>>& holders);

  // --- QoS manager and executor ---
  // One attempted cgroup write: koordlet_resource_update_duration_milliseconds
  // {type="cgroup", status}, koordlet's buckets 0.01 × 4^k.
  void recordResourceUpdate(const char* status, double millis);
  // koordlet_resource_update_refused_total{reason}: one executor refusal.
  void recordResourceRefusal(const char* reason);
  // A file found changed behind our back (Executor::onDrift).
  void recordResourceDrift(const char* resource);
  // One CPU suppress round: koordlet_be_suppress_cpu_cores{type} (the policy in
  // force; the other policy's series is removed), and the LS/BE used cores it saw.
  // A round that computed nothing new (inside the 1% dead band, stale data) keeps
  // the last value: the allowance in force has not changed. With suppress off
  // (active false) both policies' series and the LS/BE used series are removed:
  // absent, not 0, while suppress does not run.
  // thresholdCores: capacity x cpuSuppressThresholdPercent (koordlet_be_suppress_
  // threshold_cpu_cores), kept and removed like the used series.
  void recordSuppress(bool active, const std::string& policy, std::optional<double> cores,
                      std::optional<double> lsUsed, std::optional<double> beUsed,
                      std::optional<double> thresholdCores = std::nullopt);
  // One CPU burst round: per container the burst and quota it intends
  // (koordlet_container_scaled_cfs_burst_us / _quota_us); call endBurstRound()
  // after the last container so containers no longer handled lose their series.
  struct ScaledCfs {
    std::string podNamespace, podName, containerId, containerName;
    std::optional<int64_t> burstUs, quotaUs;
  };
  void recordScaledCfs(const ScaledCfs& c);
  void endBurstRound();
  // One hooks' reconciler round's oom_score_adj (OOMScoreAdj), per container whose
  // processes hold it (koordlet_container_oom_score_adj, koordlet's name and labels);
  // endOomScoreAdjRound() after the last: containers no longer set lose their series.
  void recordOomScoreAdj(const std::string& podNamespace, const std::string& podName,
                         const std::string& podUid, const std::string& container, int64_t value);
  void endOomScoreAdjRound();
  void recordStrategy(const std::string& strategy, double seconds);

  // --- resctrl ---
  // Writes the resctrl writer made or skipped in one round, accumulated into
  // koordlet_resctrl_writes_total{kind="schemata"|"tasks"|"group", status}.
  void recordResctrlWrites(const std::string& kind, const std::string& status, uint64_t count);
  // One monitoring read of our groups (gate ResctrlCollector):
  // koordlet_resctrl_llc_occupancy{cache_id,qos} and
  // koordlet_resctrl_memory_bandwidth{cache_id,qos,mb_type} (koordlet's names; the
  // bandwidth gauge carries the kernel's cumulative byte counters, as koordlet's
  // does). Series missing from a read are removed.
  struct ResctrlMon {
    std::string qos;  // group: LSR, LS, BE
    uint32_t cacheId = 0;
    std::optional<uint64_t> llcOccupancy, mbmLocalBytes, mbmTotalBytes;
  };
  void recordResctrlMon(const std::vector<ResctrlMon>& samples);
  // --- NRI ---
  // One hook run inside an NRI call:
  // koordlet_runtime_hook_invoked_duration_milliseconds{node,hook,stage,status}
  // (koordlet's name, labels and buckets 0.01 × 4^k; status succeeded|failed).
  // Thread-safe: the NRI client's thread calls it while the loop renders.
  void recordRuntimeHook(std::string_view hook, std::string_view stage, bool ok, double millis);
  // One reconcile of a hook value by the reconciler (the agent loop only):
  // koordlet_runtime_hook_reconciler_invoked_duration_milliseconds
  // {node,level,resource_type,status} (koordlet's name, labels and buckets; level
  // pod|container, resource_type the v1 file name).
  void recordHookReconciler(std::string_view level, std::string_view resourceType, bool ok,
                            double millis);
  // The NRI client's state (koordlet_nri_connected, koordlet_nri_state{state}
  // one-hot, koordlet_nri_enabled) and its cumulative counters
  // (koordlet_nri_connection_attempts_total, koordlet_nri_connects_total,
  // koordlet_nri_disconnects_total).
  void recordNri(bool enabled, const std::string& state, uint64_t attempts, uint64_t connects,
                 uint64_t disconnects);
  // Connections the NRI client closed because the runtime broke one of its limits
  // (cumulative): koordlet_nri_limit_closes_total{limit="write_queue"} (the runtime
  // stopped reading what we send), {limit="synchronize"} (a Synchronize over the
  // plugin's pod, container or byte limit, refused with code 8).
  // {limit="protocol"} (a frame or message over its limit, or malformed).
  void recordNriLimitCloses(uint64_t writeQueue, uint64_t synchronize, uint64_t protocol);
  // koord-runtime-proxy's hook server: koordlet_runtime_hook_server_enabled,
  // koordlet_runtime_hook_server_serving and the calls it answered,
  // koordlet_runtime_hook_server_requests_total{method,code} (cumulative counts,
  // mirrored; a count only appears once it is non-zero).
  struct HookServerCount {
    std::string method;
    std::string code;
    uint64_t calls = 0;
  };
  void recordHookServer(bool enabled, bool serving, const std::vector<HookServerCount>& counts);

  // The --config file: generation of the config in force, rejected reloads, and
  // whether the last read of the file was accepted.
  void recordConfig(uint64_t generation, uint64_t reloadErrors, bool lastReadGood);

  // The API client (metrics/exporter_kube.cpp): requests by verb/resource/code,
  // watches, NodeMetric reports. Not called in standalone mode (no series then).
  void recordKubeApi(const KubeApiSample& s);

  // --- Peak prediction (metrics/exporter_colocation.cpp) ---
  // koordlet's koordlet_node_predicted_resource_reclaimable{predictor,resource,unit}
  // (set per predictor that succeeded; kept otherwise, as koordlet's),
  // koordlet_node_priority_resource_reclaimable{priority="koord-prod",resource,unit}
  // (0 on failure) and koordlet_node_resource_priority_reclaimable_status (0 ok, 1
  // failed).
  void recordReclaimable(const ReclaimableSample& sample);
  void recordPredictor(const PredictorSample& sample);
  // koordlet_host_application_resource_usage{host_application_name,resource,
  // priority_class,qos}: reset every round and set for the apps read whole (from
  // their second read), CPU in cores and memory in bytes, no unit label (koordlet's).
  void recordHostApps(const std::vector<HostAppUsageRow>& rows);

  // --- The node's own facts (metrics/exporter_colocation.cpp) ---
  // koordlet_node_resource_allocatable{resource,unit}: the Node's batch-cpu (unit
  // "integer", milli-cores), batch-memory ("byte"), mid-cpu, mid-memory; 0 absent.
  struct NodeAllocatable {
    std::optional<int64_t> batchCpuMilli, batchMemoryBytes, midCpuMilli, midMemoryBytes;
  };
  void recordNodeAllocatable(const NodeAllocatable& a);
  // koordlet_collect_node_{cpu,numa}_info_status{status}: +1 per collection.
  void countNodeInfoCollection(bool cpuOk, bool numaOk);
  // koordlet_cpuset_share_pool_cpu_cores / koordlet_cpuset_be_share_pool_cpu_cores.
  void recordSharePools(size_t lsCpus, size_t beCpus);

  // --- Evictions (metrics/exporter_eviction.cpp) ---
  // koordlet_eviction_enabled: 1 when an eviction gate is on and the agent can
  // evict (an API server, NodeSLO enable aside), else 0.
  void setEvictionEnabled(bool enabled);
  // One eviction's answer. result: evicted, not_found, conflict, budget, throttled,
  // forbidden, error, dropped, invalid, dry_run. koordlet_pod_eviction_requests_total
  // {feature,result}; an accepted one (evicted) also counts koordlet's
  // koordlet_pod_eviction{reason="evicted"} and koordlet_pod_eviction_detail
  // {pod_namespace,pod_name,reason}, whose series expire kEvictionDetailTtl after
  // their last increment (koordlet's GC'd counter: 5 min), at most
  // kEvictionDetailMax of them (the oldest go first). unixNow: the wall clock.
  void recordEviction(const std::string& ns, const std::string& name, const std::string& feature,
                      const std::string& result, double unixNow);
  // Drops the detail series past their expiry; call once a round.
  void expireEvictionDetails(double unixNow);
  static constexpr double kEvictionDetailTtl = 300;
  static constexpr size_t kEvictionDetailMax = 1000;

  // --- GPUs (metrics/exporter_gpu.cpp; gate Accelerators). koordlet v1.7.0 exports
  // none; the names are its metric cache's kinds (node_gpu_core_usage, ...) with the
  // koordlet_ prefix and its labels gpu_minor, gpu_device_uuid, pod_uid, container_id:
  // koordlet_gpu_device_info{gpu_minor,gpu_device_uuid,model,driver_version,bus_id,
  // numa_node} 1 and koordlet_gpu_device_healthy 0/1 per GPU;
  // koordlet_node_gpu_core_usage (percent of one GPU), koordlet_node_gpu_memory_usage_bytes
  // and koordlet_node_gpu_memory_total_bytes per GPU; koordlet_pod_gpu_core_usage /
  // _memory_usage_bytes {pod_uid} and koordlet_container_gpu_core_usage /
  // _memory_usage_bytes {container_id} per GPU the pod or container uses. Series of a
  // round replace the last round's.
  void recordGpus(const std::vector<GpuInventory>& gpus, const GpuSystemInfo& system,
                  const GpuRound& round);
  // koordlet_gpu_critical_errors_total{gpu_minor,gpu_device_uuid,error}: one driver
  // event (metrics/gpu_health.h); minor and uuid "" when the event names no GPU.
  void countGpuCriticalError(const std::string& minor, const std::string& uuid,
                             const std::string& error);

  // The text exposition format (version 0.0.4).
  std::string render() const;
  prometheus::Registry& registry() { return *registry_; }
  // Every family with series, in prometheus-cpp's form: the registry's, then the
  // swept ones (metrics/swept_gauges.h), in the order render() writes them. For the
  // metric reference and the tests; a scrape does not build it.
  std::vector<prometheus::MetricFamily> collect() const;
  // Every family registered, in registration order. The registry cannot list a
  // family with no series, so docs/reference.md's metric table starts from this list.
  const std::vector<std::string>& familyNames() const { return families_; }

 private:
  // Advances a counter that mirrors a cumulative source value (kernel totals,
  // CPU seconds); a source that went backwards (restart) is taken as a fresh start.
  static void mirror(prometheus::Counter& counter, double& last, double now);

  // Every family is registered through these, so familyNames() has them all.
  prometheus::Family<prometheus::Gauge>& gaugeFamily(const std::string& name,
                                                     const std::string& help);
  prometheus::Family<prometheus::Counter>& counterFamily(const std::string& name,
                                                         const std::string& help);
  prometheus::Family<prometheus::Histogram>& histogramFamily(const std::string& name,
                                                             const std::string& help);
  SweptGauges swept(const std::string& name, const std::string& help);

  void initKubeApi();
  void initEviction();
  void initPrediction();
  void initGpu();

  std::string node_;
  std::shared_ptr<prometheus::Registry> registry_;
  mutable size_t lastRenderBytes_ = 0;  // the last page's size: the next one reserves it
  std::vector<std::string> families_;   // before the SweptGauges, which register in init
  // The families kept outside the registry, as registered (swept() adds them).
  std::vector<const SweptGauges*> swept_;

  prometheus::Gauge* startTime_;
  prometheus::Gauge* nodeCpu_;
  prometheus::Gauge* nodeMemory_;
  prometheus::Gauge* nodeMemoryTotal_;
  prometheus::Gauge* load_[3];
  prometheus::Family<prometheus::Gauge>* psi_;
  prometheus::Family<prometheus::Counter>* psiStalled_;
  std::map<std::string, std::pair<prometheus::Counter*, double>> psiStalledLast_;
  prometheus::Family<prometheus::Gauge>* featureSupported_;
  prometheus::Gauge* paused_;
  prometheus::Family<prometheus::Gauge>* collectorDuration_;
  prometheus::Family<prometheus::Counter>* collectorErrors_;
  prometheus::Family<prometheus::Counter>* collectorRounds_;
  prometheus::Gauge* kubeletUp_;
  prometheus::Family<prometheus::Gauge>* kubeletTls_;
  prometheus::Family<prometheus::Counter>* resourceRefused_;
  prometheus::Family<prometheus::Counter>* resourceDrift_;
  prometheus::Family<prometheus::Histogram>* kubeletDuration_;
  prometheus::Family<prometheus::Counter>* kubeletErrors_;
  prometheus::Gauge* podCount_;
  SweptGauges podCpu_;
  SweptGauges podMemory_;
  SweptGauges podThrottled_;
  SweptGauges containerCpu_;
  SweptGauges containerMemory_;
  SweptGauges containerThrottled_;
  SweptGauges containerRequests_;
  SweptGauges containerLimits_;
  // What requests and limits were last set from: the pod list's version and the
  // sampled containers' (PodsSample::ownersVersion).
  std::pair<uint64_t, uint64_t> specsFrom_{0, 0};
  SweptGauges podPsi_;
  SweptGauges containerPsi_;
  prometheus::Family<prometheus::Gauge>* beCpu_;
  prometheus::Family<prometheus::Histogram>* resourceUpdate_;
  prometheus::Family<prometheus::Histogram>* runtimeHook_;
  prometheus::Family<prometheus::Histogram>* hookReconciler_;
  std::unordered_map<std::string, prometheus::Histogram*> hookReconcilerSeries_;
  std::mutex runtimeHookMu_;  // guards runtimeHookSeries_ (NRI thread vs loop)
  std::map<std::string, prometheus::Histogram*, std::less<>> runtimeHookSeries_;
  prometheus::Gauge* nriEnabled_;
  prometheus::Gauge* nriConnected_;
  prometheus::Family<prometheus::Gauge>* nriState_;
  prometheus::Counter* nriAttempts_;
  prometheus::Counter* nriConnects_;
  prometheus::Counter* nriDisconnects_;
  double nriAttemptsLast_ = 0, nriConnectsLast_ = 0, nriDisconnectsLast_ = 0;
  prometheus::Counter* nriWriteQueueCloses_;
  prometheus::Counter* nriSyncCloses_;
  prometheus::Counter* nriProtocolCloses_;
  double nriWriteQueueClosesLast_ = 0, nriSyncClosesLast_ = 0, nriProtocolClosesLast_ = 0;
  prometheus::Gauge* hookServerEnabled_;
  prometheus::Gauge* hookServerServing_;
  prometheus::Family<prometheus::Counter>* hookServerRequests_;
  std::map<std::string, double> hookServerLast_;  // method + " " + code -> count mirrored
  std::map<std::string, prometheus::Histogram*, std::less<>> resourceUpdateByStatus_;
  prometheus::Family<prometheus::Gauge>* beSuppress_;
  prometheus::Family<prometheus::Gauge>* beSuppressLsFamily_;
  prometheus::Family<prometheus::Gauge>* beSuppressBeFamily_;
  prometheus::Gauge* beSuppressLs_ = nullptr;  // null while suppress does not run
  prometheus::Gauge* beSuppressBe_ = nullptr;
  prometheus::Family<prometheus::Gauge>* beSuppressThresholdFamily_;
  prometheus::Gauge* beSuppressThreshold_ = nullptr;
  SweptGauges scaledBurst_;
  SweptGauges scaledQuota_;
  SweptGauges oomScoreAdj_;
  SweptGauges resctrlLlc_;
  SweptGauges resctrlMb_;
  prometheus::Family<prometheus::Counter>* resctrlWrites_;
  prometheus::Family<prometheus::Gauge>* strategyDuration_;
  prometheus::Gauge* configGeneration_;
  prometheus::Counter* configErrors_;
  double configErrorsLast_ = 0;
  // Kubernetes API (exporter_kube.cpp)
  prometheus::Family<prometheus::Gauge>* kubeApiReachableFamily_ = nullptr;
  prometheus::Family<prometheus::Counter>* kubeApiThrottledFamily_ = nullptr;
  prometheus::Family<prometheus::Counter>* kubeApiThrottledSecondsFamily_ = nullptr;
  prometheus::Family<prometheus::Gauge>* nodeMetricLastReportFamily_ = nullptr;
  prometheus::Family<prometheus::Counter>* nodeMetricConflictsFamily_ = nullptr;
  prometheus::Gauge* kubeApiReachable_ = nullptr;
  prometheus::Family<prometheus::Counter>* kubeApiRequests_ = nullptr;
  std::map<std::tuple<std::string, std::string, std::string>,
           std::pair<prometheus::Counter*, double>>
      kubeApiRequestsLast_;
  prometheus::Family<prometheus::Gauge>* kubeApiWatchSynced_ = nullptr;
  prometheus::Family<prometheus::Counter>* kubeApiRelists_ = nullptr;
  std::map<std::string, std::pair<prometheus::Counter*, double>> kubeApiRelistsLast_;
  prometheus::Counter* kubeApiThrottled_ = nullptr;
  prometheus::Counter* kubeApiThrottledSeconds_ = nullptr;
  double kubeApiThrottledLast_ = 0, kubeApiThrottledSecondsLast_ = 0;
  prometheus::Gauge* nodeMetricLastReport_ = nullptr;
  prometheus::Family<prometheus::Counter>* nodeMetricReports_ = nullptr;
  prometheus::Counter* nodeMetricReportsOk_ = nullptr;
  prometheus::Counter* nodeMetricReportsFailed_ = nullptr;
  prometheus::Counter* nodeMetricConflicts_ = nullptr;
  double nodeMetricOkLast_ = 0, nodeMetricFailedLast_ = 0, nodeMetricConflictsLast_ = 0;
  // Colocation: prediction, host apps, node facts (exporter_colocation.cpp)
  prometheus::Family<prometheus::Gauge>* predictedReclaimable_ = nullptr;
  prometheus::Family<prometheus::Gauge>* priorityReclaimable_ = nullptr;
  prometheus::Family<prometheus::Gauge>* priorityReclaimableStatus_ = nullptr;
  prometheus::Gauge* predictionModels_ = nullptr;
  prometheus::Gauge* predictionModelBytes_ = nullptr;
  prometheus::Gauge* predictionTrainingSeconds_ = nullptr;
  prometheus::Counter* checkpointsSaved_ = nullptr;
  prometheus::Counter* checkpointSaveErrors_ = nullptr;
  prometheus::Family<prometheus::Gauge>* hostAppUsage_ = nullptr;
  prometheus::Family<prometheus::Gauge>* gpuInfo_ = nullptr;
  prometheus::Family<prometheus::Gauge>* gpuHealthy_ = nullptr;
  prometheus::Family<prometheus::Gauge>* nodeGpuCore_ = nullptr;
  prometheus::Family<prometheus::Gauge>* nodeGpuMemory_ = nullptr;
  prometheus::Family<prometheus::Gauge>* nodeGpuMemoryTotal_ = nullptr;
  // Per pod and container: kept across rounds by key (a series per pod and GPU) and
  // swept, as the pods' CPU families; replaced wholesale, prometheus-cpp's Remove
  // (a walk of the family per series) made a round quadratic in the pods.
  // Assigned in initGpu(), so the families keep their place in the reference.
  SweptGauges podGpuCore_{"", ""};
  SweptGauges podGpuMemory_{"", ""};
  SweptGauges containerGpuCore_{"", ""};
  SweptGauges containerGpuMemory_{"", ""};
  prometheus::Family<prometheus::Counter>* gpuCriticalErrors_ = nullptr;
  static constexpr size_t kMaxGpuErrorSeries = 256;
  std::set<std::pair<std::string, std::string>> gpuErrorSeries_;  // (minor, error) counted
  // (family, series) of the node's GPUs written by the last recordGpus(), removed by
  // the next (a few per GPU).
  std::vector<std::pair<prometheus::Family<prometheus::Gauge>*, prometheus::Gauge*>> gpuSeries_;
  prometheus::Family<prometheus::Gauge>* nodeAllocatable_ = nullptr;
  prometheus::Family<prometheus::Counter>* cpuInfoStatus_ = nullptr;
  prometheus::Family<prometheus::Counter>* numaInfoStatus_ = nullptr;
  prometheus::Gauge* sharePoolCpus_ = nullptr;
  prometheus::Gauge* beSharePoolCpus_ = nullptr;
  std::vector<prometheus::Gauge*> hostAppSeries_;  // set last round, removed next
  double lastCheckpointsSaved_ = 0;
  double lastCheckpointSaveErrors_ = 0;
  // Evictions (exporter_eviction.cpp)
  prometheus::Gauge* evictionEnabled_ = nullptr;
  prometheus::Family<prometheus::Counter>* podEviction_ = nullptr;
  prometheus::Family<prometheus::Counter>* podEvictionDetail_ = nullptr;
  prometheus::Family<prometheus::Counter>* evictionRequests_ = nullptr;
  // (namespace, name) -> its detail counter and when it was last incremented.
  std::map<std::pair<std::string, std::string>, std::pair<prometheus::Counter*, double>>
      evictionDetails_;
  prometheus::Gauge* configGood_;
  prometheus::Gauge* cacheSeries_;
  prometheus::Gauge* cacheBytes_;
  prometheus::Family<prometheus::Gauge>* stateEntries_;

  prometheus::Counter* processCpu_;
  double processCpuLast_ = 0;
  prometheus::Gauge* processRss_;
  prometheus::Gauge* processVirtual_;
  prometheus::Gauge* processOpenFds_;
  prometheus::Gauge* processMaxFds_;
  prometheus::Gauge* processStart_;
  prometheus::Gauge* processThreads_;

  prometheus::Family<prometheus::Counter>* httpRequests_;
  std::map<std::pair<std::string, unsigned>, std::pair<prometheus::Counter*, double>> httpLast_;
  prometheus::Gauge* httpOpen_;
  prometheus::Counter* httpTimeouts_;
  double httpTimeoutsLast_ = 0;
  prometheus::Counter* httpRejected_;
  double httpRejectedLast_ = 0;
};

}  // namespace koord
