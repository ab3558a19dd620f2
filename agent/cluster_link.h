// ClusterLink: the agent's half of Koordinator's loop, over the Kubernetes API.
// It owns the API client, one informer per object the node agent follows (its
// Node, its NodeSLO, its NodeMetric; list + watch, never polls) and the NodeMetric
// status reporter, and says how they are doing for /readyz and the metrics. What
// the objects mean is the agent's business: it gets each change through a
// callback, and builds the NodeMetric status through one.
//
// Without an API server (no --kubeconfig, not in a pod) there is no ClusterLink:
// resolveApiConfig() returns nullopt and the agent runs standalone, as before.
//
// The API being down never stops anything: the informers back off and resume, the
// agent keeps the last good objects, QoS keeps running on the last good NodeSLO.
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this first.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/options.h"
#include "base/clock.h"
#include "base/log.h"
#include "kube/api_client.h"
#include "kube/api_config.h"
#include "kube/device_reporter.h"
#include "kube/object_informer.h"
#include "kube/report_schedule.h"
#include "kube/status_reporter.h"
#include "kube/topology_reporter.h"
#include "metrics/exporter.h"

namespace koord {

// --kubeconfig (read and parsed; an error names the file and field), else the
// in-cluster service account, else nullopt: standalone.
Result<std::optional<ApiConfig>> resolveApiConfig(const Options& opts);

class ClusterLink {
 public:
  using ObjectFn = std::function<void(const std::optional<nlohmann::json>& object)>;
  // The NodeMetric status to write, from the NodeMetric object (its spec).
  using StatusFn = std::function<Result<nlohmann::json>(const nlohmann::json& nodeMetric)>;
  // The report interval the NodeMetric's spec asks for.
  using IntervalFn = std::function<std::chrono::seconds(const nlohmann::json& nodeMetric)>;

  ClusterLink(boost::asio::io_context& io, ApiConfig api, const Options& opts, const Clock& clock,
              FailureLog& failures);
  ~ClusterLink();

  void onNode(ObjectFn fn) { onNode_ = std::move(fn); }
  void onNodeSlo(ObjectFn fn) { onNodeSlo_ = std::move(fn); }
  // NodeMetric reporting (--enable-node-metric-report): every interval while the
  // object exists.
  void reportNodeMetric(StatusFn build, IntervalFn interval);

  // NodeResourceTopology reporting (gate NodeTopologyReport): a watch on the node's
  // object, and syncTopology() keeping it equal to what the agent computed.
  void reportTopology();
  // One sync (kube/topology_reporter.h); false when not reporting, before the
  // object's watch has listed once, or while a sync is in flight.
  bool syncTopology(const NrtContent& content, const std::string& nodeUid);
  const TopologyReporter* topologyReporter() const { return topoReporter_.get(); }
  const ObjectInformer* topology() const { return nrt_.get(); }

  // Device reporting (gate Accelerators, every node): a watch on the node's Device
  // and syncDevices() keeping its devices equal to what the agent read.
  void reportDevices();
  bool syncDevices(const DeviceContent& content, const std::string& nodeUid);
  const DeviceReporter* deviceReporter() const { return deviceReporter_.get(); }

  void start();
  void stop();

  const ApiConfig& api() const { return api_; }
  ApiClient& client() { return *client_; }
  const ObjectInformer& node() const { return *node_; }
  const ObjectInformer& nodeSlo() const { return *nodeSlo_; }
  const ObjectInformer& nodeMetric() const { return *nodeMetric_; }
  const StatusReporter* reporter() const { return reporter_.get(); }

  // A watch on the API server is open (the API answers).
  bool reachable() const;
  // For /readyz: {"server", "source", "reachable", "watches": {resource: {...}},
  // "nodeMetric": {...}}.
  nlohmann::json health() const;
  // For the exporter.
  KubeApiSample sample() const;

 private:
  std::unique_ptr<ObjectInformer> nodeObjectInformer(std::string resource,
                                                     std::string collectionPath);
  void armReportTimer();
  void reportNow();

  boost::asio::io_context& io_;
  ApiConfig api_;
  const Options& opts_;
  const Clock* clock_;
  FailureLog& failures_;
  std::unique_ptr<ApiClient> client_;
  std::unique_ptr<ObjectInformer> node_;
  std::unique_ptr<ObjectInformer> nodeSlo_;
  std::unique_ptr<ObjectInformer> nodeMetric_;
  std::unique_ptr<StatusReporter> reporter_;
  std::unique_ptr<ObjectInformer> nrt_;
  std::unique_ptr<TopologyReporter> topoReporter_;
  std::unique_ptr<ObjectInformer> devices_;
  std::unique_ptr<DeviceReporter> deviceReporter_;
  StatusFn buildStatus_;
  IntervalFn interval_;
  ObjectFn onNode_;
  ObjectFn onNodeSlo_;
  boost::asio::steady_timer reportTimer_;
  ReportSchedule schedule_;    // when the NodeMetric is reported
  std::string reportSkipped_;  // why no report is being made, for /readyz
  bool running_ = false;
};

}  // namespace koord
