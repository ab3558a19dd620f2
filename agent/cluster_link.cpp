#include "agent/cluster_link.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <sys/stat.h>

#include <random>

#include "base/read_file.h"
#include "base/time_format.h"
#include "version.h"

namespace koord {
namespace {

constexpr size_t kMaxKubeconfigBytes = 1u << 20;

nlohmann::json informerHealth(const ObjectInformer& i) {
  nlohmann::json j;
  j["synced"] = i.synced();
  j["watching"] = i.watching();
  j["exists"] = i.object().has_value();
  j["resourceVersion"] = i.resourceVersion();
  j["lastHeard"] = i.lastHeard() ? nlohmann::json(rfc3339(*i.lastHeard())) : nlohmann::json();
  j["lastError"] = i.lastError();
  j["relists"] = i.relists();
  j["watchFailures"] = i.watchFailures();
  return j;
}

// A status whose nodeMetric.nodeUsage has resources: something was collected.
bool hasNodeUsage(const nlohmann::json& status) {
  const auto ptr = "/nodeMetric/nodeUsage/resources"_json_pointer;
  return status.is_object() && status.contains(ptr) && !status[ptr].empty();
}

std::function<double()> jitterSource() {
  auto gen = std::make_shared<std::mt19937_64>(std::random_device{}());
  return [gen] { return std::uniform_real_distribution<double>(0.0, 1.0)(*gen); };
}

}  // namespace

Result<std::optional<ApiConfig>> resolveApiConfig(const Options& opts) {
  if (!opts.kubeconfig.empty()) {
    auto text = readFile(opts.kubeconfig, kMaxKubeconfigBytes);
    if (!text.ok()) return makeError("--kubeconfig: " + text.error().message);
    auto cfg = parseKubeconfig(*text, opts.kubeconfig);
    if (!cfg.ok()) return cfg.error();
    return std::optional<ApiConfig>(std::move(*cfg));
  }
  InClusterEnv env;
  env.host = opts.kubernetesServiceHost;
  env.port = opts.kubernetesServicePort;
  env.serviceAccountDir = opts.serviceAccountDir;
  struct stat st {};
  env.tokenPresent = ::stat((opts.serviceAccountDir + "/token").c_str(), &st) == 0;
  return inClusterConfig(env);
}

ClusterLink::ClusterLink(boost::asio::io_context& io, ApiConfig api, const Options& opts,
                         const Clock& clock, FailureLog& failures)
    : io_(io),
      api_(std::move(api)),
      opts_(opts),
      clock_(&clock),
      failures_(failures),
      reportTimer_(io) {
  ApiClientConfig cc;
  cc.api = api_;
  // client-go's shape: name/version (os/arch) and the build.
  cc.userAgent = std::string("koordlet-cpp/") + KOORDLET_RELEASE + " (linux) " + KOORDLET_VERSION;
  cc.qps = opts.kubeApiQps;
  cc.burst = opts.kubeApiBurst;
  if (opts.kubeApiTimeout.count() > 0) cc.timeout = opts.kubeApiTimeout;
  client_ = std::make_unique<ApiClient>(io, std::move(cc), clock);

  node_ = nodeObjectInformer("nodes", "/api/v1/nodes");
  nodeSlo_ = nodeObjectInformer("nodeslos", "/apis/slo.koordinator.sh/v1alpha1/nodeslos");
  nodeMetric_ = nodeObjectInformer("nodemetrics", "/apis/slo.koordinator.sh/v1alpha1/nodemetrics");
}

// A watch on the one object of `resource` named after the node.
std::unique_ptr<ObjectInformer> ClusterLink::nodeObjectInformer(std::string resource,
                                                                std::string collectionPath) {
  ObjectInformerConfig c;
  c.resource = std::move(resource);
  c.collectionPath = std::move(collectionPath);
  c.name = opts_.nodeName;
  c.watchTimeout = std::chrono::duration_cast<std::chrono::seconds>(opts_.kubeApiWatchTimeout);
  if (c.watchTimeout.count() < 1) c.watchTimeout = std::chrono::seconds(1);
  return std::make_unique<ObjectInformer>(io_, *client_, std::move(c), *clock_, failures_,
                                          jitterSource());
}

ClusterLink::~ClusterLink() { stop(); }

void ClusterLink::reportNodeMetric(StatusFn build, IntervalFn interval) {
  buildStatus_ = std::move(build);
  interval_ = std::move(interval);
  reporter_ = std::make_unique<StatusReporter>(
      *client_, "nodemetrics", "/apis/slo.koordinator.sh/v1alpha1/nodemetrics/" + opts_.nodeName,
      *clock_, failures_);
}

void ClusterLink::reportTopology() {
  nrt_ = nodeObjectInformer(std::string(kNrtResource), std::string(kNrtCollectionPath));
  topoReporter_ = std::make_unique<TopologyReporter>(*client_, opts_.nodeName, *clock_, failures_);
}

void ClusterLink::reportDevices() {
  devices_ = nodeObjectInformer(std::string(kDeviceResource), std::string(kDeviceCollectionPath));
  deviceReporter_ = std::make_unique<DeviceReporter>(*client_, opts_.nodeName, *clock_, failures_);
}

bool ClusterLink::syncDevices(const DeviceContent& content, const std::string& nodeUid) {
  if (!running_ || !devices_ || !deviceReporter_ || !devices_->synced()) return false;
  return deviceReporter_->sync(devices_->object(), content, nodeUid);
}

bool ClusterLink::syncTopology(const NrtContent& content, const std::string& nodeUid) {
  if (!running_ || !nrt_ || !topoReporter_ || !nrt_->synced()) return false;
  return topoReporter_->sync(nrt_->object(), content, nodeUid);
}

void ClusterLink::start() {
  if (running_) return;
  running_ = true;
  KLOG_INFO << "Kubernetes API: " << api_.source << ", server " << api_.server
            << ", watching Node, NodeSLO, NodeMetric" << (nrt_ ? ", NodeResourceTopology" : "")
            << (devices_ ? ", Device " : " ") << opts_.nodeName
            << (reporter_ ? "" : " (NodeMetric reporting off: --enable-node-metric-report=false)");
  node_->onChange([this](const std::optional<nlohmann::json>& o) {
    if (onNode_) onNode_(o);
  });
  nodeSlo_->onChange([this](const std::optional<nlohmann::json>& o) {
    if (onNodeSlo_) onNodeSlo_(o);
  });
  nodeMetric_->onChange([this](const std::optional<nlohmann::json>& o) {
    if (!reporter_) return;
    if (!o) {
      schedule_.observe(std::nullopt, clock_->now());
      reportTimer_.cancel();
      reportSkipped_ = "no NodeMetric " + opts_.nodeName + " (koord-manager creates it)";
      return;
    }
    // The object appearing (first seen, or created again under a new uid) reports at
    // once; its other changes (our own status updates among them) wait for the tick.
    if (schedule_.observe(o->value("/metadata/uid"_json_pointer, std::string()), clock_->now())) {
      reportNow();
    }
  });
  reportSkipped_ = reporter_ ? "no NodeMetric " + opts_.nodeName + " seen yet" : "disabled";
  node_->start();
  nodeSlo_->start();
  nodeMetric_->start();
  if (nrt_) nrt_->start();
  if (devices_) devices_->start();
  // Started again after stop(): the informer keeps the object it held and resumes its
  // watch from there, so an unchanged NodeMetric would never be announced again.
  if (reporter_ && nodeMetric_->object() &&
      schedule_.observe(nodeMetric_->object()->value("/metadata/uid"_json_pointer, std::string()),
                        clock_->now())) {
    reportNow();
  }
}

void ClusterLink::stop() {
  if (!running_) return;
  running_ = false;
  reportTimer_.cancel();
  schedule_ = ReportSchedule();  // a later start() reports at once (see start())
  if (reporter_) reporter_->cancel();
  node_->stop();
  nodeSlo_->stop();
  nodeMetric_->stop();
  if (nrt_) nrt_->stop();
  if (topoReporter_) topoReporter_->cancel();
  if (devices_) devices_->stop();
  if (deviceReporter_) deviceReporter_->cancel();
  client_->cancelAll();
}

// Arms the timer for the schedule's next report (kube/report_schedule.h).
void ClusterLink::armReportTimer() {
  const auto due = schedule_.due();
  if (!due) return;
  reportTimer_.expires_after(std::max<std::chrono::nanoseconds>(*due - clock_->now(), {}));
  reportTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !running_) return;
    reportNow();
  });
}

void ClusterLink::reportNow() {
  if (!reporter_ || !running_) return;
  const auto& object = nodeMetric_->object();
  const auto now = clock_->now();
  if (!object || !schedule_.isDue(now)) {
    armReportTimer();  // deleted meanwhile (nothing due), or woken early
    return;
  }
  const std::chrono::nanoseconds every = interval_ ? interval_(*object) : std::chrono::seconds(60);
  auto status = std::make_shared<Result<nlohmann::json>>(buildStatus_(*object));
  if (status->ok() && !hasNodeUsage(**status)) {
    // Nothing collected yet (the agent just started): an empty nodeUsage would read
    // as zero usage to koord-manager. Try again shortly.
    reportSkipped_ = "no node usage sampled yet";
    schedule_.ticked(ReportSchedule::Tick::kNoUsage, every, now);
    armReportTimer();
    return;
  }
  // The status just built is sent first; a retry after a 409 builds a fresh one.
  auto used = std::make_shared<bool>(false);
  const bool statusOk = status->ok();
  const bool started = reporter_->report(*object, [this, obj = *object, status, used]() {
    if (std::exchange(*used, true)) return buildStatus_(obj);
    return std::move(*status);
  });
  if (started) reportSkipped_.clear();
  schedule_.ticked(!started   ? ReportSchedule::Tick::kInFlight
                   : statusOk ? ReportSchedule::Tick::kSent
                              : ReportSchedule::Tick::kNoStatus,
                   every, now);
  armReportTimer();
}

bool ClusterLink::reachable() const {
  return node_->watching() || nodeSlo_->watching() || nodeMetric_->watching() ||
         (nrt_ && nrt_->watching()) || (devices_ && devices_->watching());
}

nlohmann::json ClusterLink::health() const {
  nlohmann::json j;
  j["mode"] = "cluster";
  j["server"] = api_.server;
  j["source"] = api_.source;
  j["reachable"] = reachable();
  j["watches"] = {{"nodes", informerHealth(*node_)},
                  {"nodeslos", informerHealth(*nodeSlo_)},
                  {"nodemetrics", informerHealth(*nodeMetric_)}};
  nlohmann::json nm;
  nm["enabled"] = reporter_ != nullptr;
  if (reporter_) {
    nm["lastReport"] =
        reporter_->lastSuccess() ? nlohmann::json(rfc3339(*reporter_->lastSuccess())) : nullptr;
    nm["lastError"] = reporter_->lastError();
    nm["reports"] = reporter_->succeeded();
    nm["failedReports"] = reporter_->failed();
    nm["conflicts"] = reporter_->conflicts();
    nm["lastBodyBytes"] = reporter_->lastBodyBytes();
  }
  nm["waiting"] = reportSkipped_;
  j["nodeMetric"] = std::move(nm);
  if (nrt_) {
    j["watches"]["noderesourcetopologies"] = informerHealth(*nrt_);
    nlohmann::json t;
    t["creates"] = topoReporter_->creates();
    t["updates"] = topoReporter_->updates();
    t["unchanged"] = topoReporter_->unchanged();
    t["conflicts"] = topoReporter_->conflicts();
    t["failed"] = topoReporter_->failed();
    t["lastChange"] = topoReporter_->lastChange();
    t["lastError"] = topoReporter_->lastError();
    t["lastBodyBytes"] = topoReporter_->lastBodyBytes();
    j["nodeResourceTopology"] = std::move(t);
  }
  if (devices_) {
    j["watches"]["devices"] = informerHealth(*devices_);
    j["device"] = {
        {"creates", deviceReporter_->creates()},     {"updates", deviceReporter_->updates()},
        {"unchanged", deviceReporter_->unchanged()}, {"conflicts", deviceReporter_->conflicts()},
        {"failed", deviceReporter_->failed()},       {"lastChange", deviceReporter_->lastChange()},
        {"lastError", deviceReporter_->lastError()}};
  }
  return j;
}

KubeApiSample ClusterLink::sample() const {
  KubeApiSample s;
  s.reachable = reachable();
  for (const auto& [key, n] : client_->counts()) s.requests[key] = n;
  for (const auto* i :
       {node_.get(), nodeSlo_.get(), nodeMetric_.get(), nrt_.get(), devices_.get()}) {
    if (i == nullptr) continue;
    s.watchSynced[i->config().resource] = i->synced() && i->watching();
    s.relists[i->config().resource] = i->relists();
  }
  s.throttledRequests = client_->throttledRequests();
  s.throttledSeconds = std::chrono::duration<double>(client_->throttledTime()).count();
  if (reporter_) {
    if (reporter_->lastSuccess()) {
      s.nodeMetricLastReport =
          std::chrono::duration<double>(reporter_->lastSuccess()->time_since_epoch()).count();
    }
    s.nodeMetricReportsOk = reporter_->succeeded();
    s.nodeMetricReportsFailed = reporter_->failed();
    s.nodeMetricConflicts = reporter_->conflicts();
  }
  return s;
}

}  // namespace koord
