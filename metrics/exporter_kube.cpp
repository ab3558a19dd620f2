// The exporter's Kubernetes API families: whether the API answers, requests by
// verb/resource/code (client-go's rest_client_requests_total, in koordlet's
// namespace), the watches, the client-side rate limit and the NodeMetric reports.
#include "metrics/exporter.h"

namespace koord {

void Exporter::initKubeApi() {
  // Families only: the series appear with the first recordKubeApi(), so a
  // standalone agent exports none.
  kubeApiReachableFamily_ =
      &gaugeFamily("koordlet_kube_api_reachable",
                   "1 while a watch on the API server is open (it answers), else 0 (absent in "
                   "standalone mode)");
  kubeApiRequests_ = &counterFamily(
      "koordlet_kube_api_requests_total",
      "Requests to the API server by verb (WATCH for watches), resource and code (the HTTP "
      "status, or without a reply the transport error's class: timeout, connect, tls, ...)");
  kubeApiWatchSynced_ =
      &gaugeFamily("koordlet_kube_api_watch_synced",
                   "1 when the resource's informer has listed and its watch is open, else 0");
  kubeApiRelists_ = &counterFamily(
      "koordlet_kube_api_relists_total",
      "Lists of an informer's object after its first, by resource: after a 410 Gone (the "
      "watch's version expired) or a failure before a watch could resume");
  kubeApiThrottledFamily_ = &counterFamily("koordlet_kube_api_throttled_requests_total",
                                           "Requests that waited on the client-side rate limit "
                                           "(--kube-api-qps, --kube-api-burst)");
  kubeApiThrottledSecondsFamily_ =
      &counterFamily("koordlet_kube_api_throttled_seconds_total",
                     "Time requests waited on the client-side rate limit, in seconds");
  nodeMetricLastReportFamily_ =
      &gaugeFamily("koordlet_node_metric_last_report_timestamp_seconds",
                   "Unix time of the last NodeMetric status update the API server accepted");
  nodeMetricReports_ = &counterFamily(
      "koordlet_node_metric_reports_total",
      "NodeMetric status updates by result (ok, failed); a 409 retried within one report is "
      "counted in koordlet_node_metric_report_conflicts_total");
  nodeMetricConflictsFamily_ =
      &counterFamily("koordlet_node_metric_report_conflicts_total",
                     "NodeMetric status updates answered 409 Conflict (re-read and retried)");
}

void Exporter::recordKubeApi(const KubeApiSample& s) {
  if (!kubeApiReachable_) {
    const prometheus::Labels node{{"node", node_}};
    kubeApiReachable_ = &kubeApiReachableFamily_->Add(node);
    kubeApiThrottled_ = &kubeApiThrottledFamily_->Add(node);
    kubeApiThrottledSeconds_ = &kubeApiThrottledSecondsFamily_->Add(node);
    nodeMetricLastReport_ = &nodeMetricLastReportFamily_->Add(node);
    nodeMetricReportsOk_ = &nodeMetricReports_->Add({{"node", node_}, {"result", "ok"}});
    nodeMetricReportsFailed_ = &nodeMetricReports_->Add({{"node", node_}, {"result", "failed"}});
    nodeMetricConflicts_ = &nodeMetricConflictsFamily_->Add(node);
  }
  kubeApiReachable_->Set(s.reachable ? 1 : 0);
  for (const auto& [key, total] : s.requests) {
    auto it = kubeApiRequestsLast_.find(key);
    if (it == kubeApiRequestsLast_.end()) {
      auto& c = kubeApiRequests_->Add({{"node", node_},
                                       {"verb", std::get<0>(key)},
                                       {"resource", std::get<1>(key)},
                                       {"code", std::get<2>(key)}});
      it = kubeApiRequestsLast_.emplace(key, std::make_pair(&c, 0.0)).first;
    }
    mirror(*it->second.first, it->second.second, static_cast<double>(total));
  }
  for (const auto& [resource, synced] : s.watchSynced) {
    kubeApiWatchSynced_->Add({{"node", node_}, {"resource", resource}}).Set(synced ? 1 : 0);
  }
  for (const auto& [resource, total] : s.relists) {
    auto it = kubeApiRelistsLast_.find(resource);
    if (it == kubeApiRelistsLast_.end()) {
      auto& c = kubeApiRelists_->Add({{"node", node_}, {"resource", resource}});
      it = kubeApiRelistsLast_.emplace(resource, std::make_pair(&c, 0.0)).first;
    }
    mirror(*it->second.first, it->second.second, static_cast<double>(total));
  }
  mirror(*kubeApiThrottled_, kubeApiThrottledLast_, static_cast<double>(s.throttledRequests));
  mirror(*kubeApiThrottledSeconds_, kubeApiThrottledSecondsLast_, s.throttledSeconds);
  if (s.nodeMetricLastReport) nodeMetricLastReport_->Set(*s.nodeMetricLastReport);
  mirror(*nodeMetricReportsOk_, nodeMetricOkLast_, static_cast<double>(s.nodeMetricReportsOk));
  mirror(*nodeMetricReportsFailed_, nodeMetricFailedLast_,
         static_cast<double>(s.nodeMetricReportsFailed));
  mirror(*nodeMetricConflicts_, nodeMetricConflictsLast_,
         static_cast<double>(s.nodeMetricConflicts));
}

}  // namespace koord
