// metric_origin: which of our metric families keep koordlet's name, labels and
// meaning (reference koordlet.md §6), so dashboards and alerts written for koordlet
// work unchanged. The one list of them: docs/reference.md's metric table takes its origin
// column from it, and the promtool lint of the exposition lets these names keep
// koordlet's spelling (`_milliseconds`, `_us`) where the naming lint disagrees.
// Header-only so the test support code can use it without linking the exporter.
#pragma once

#include <algorithm>
#include <iterator>
#include <string_view>

namespace koord {

inline constexpr std::string_view kKoordletMetricNames[] = {
    "koordlet_be_suppress_be_used_cpu_cores",
    "koordlet_be_suppress_cpu_cores",
    "koordlet_be_suppress_ls_used_cpu_cores",
    "koordlet_collect_node_cpu_info_status",
    "koordlet_collect_node_numa_info_status",
    "koordlet_container_oom_score_adj",
    "koordlet_container_psi",
    "koordlet_container_resource_limits",
    "koordlet_container_resource_requests",
    "koordlet_container_scaled_cfs_burst_us",
    "koordlet_container_scaled_cfs_quota_us",
    "koordlet_cpuset_be_share_pool_cpu_cores",
    "koordlet_cpuset_share_pool_cpu_cores",
    "koordlet_host_application_resource_usage",
    "koordlet_kubelet_request_duration_seconds",
    "koordlet_node_predicted_resource_reclaimable",
    "koordlet_node_resource_allocatable",
    "koordlet_node_priority_resource_reclaimable",
    "koordlet_node_resource_priority_reclaimable_status",
    "koordlet_node_used_cpu_cores",
    "koordlet_node_used_memory_bytes",
    "koordlet_pod_eviction",
    "koordlet_pod_eviction_detail",
    "koordlet_pod_psi",
    "koordlet_resctrl_llc_occupancy",
    "koordlet_resctrl_memory_bandwidth",
    "koordlet_resource_update_duration_milliseconds",
    "koordlet_runtime_hook_invoked_duration_milliseconds",
    "koordlet_runtime_hook_reconciler_invoked_duration_milliseconds",
    "koordlet_start_time",
};

enum class MetricOrigin {
  kKoordlet,  // koordlet's name, labels and meaning
  kStandard,  // process_*: what Prometheus client libraries (koordlet's Go one too) export
  kOurs,      // this agent's addition
};

inline MetricOrigin metricOrigin(std::string_view name) {
  if (std::find(std::begin(kKoordletMetricNames), std::end(kKoordletMetricNames), name) !=
      std::end(kKoordletMetricNames)) {
    return MetricOrigin::kKoordlet;
  }
  if (name.substr(0, 8) == "process_") return MetricOrigin::kStandard;
  return MetricOrigin::kOurs;
}

}  // namespace koord
