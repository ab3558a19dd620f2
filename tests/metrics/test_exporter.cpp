#include <catch2/catch.hpp>

#include "metrics/exporter.h"

namespace test_metrics_exporter {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

bool hasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

NodeSample sampleWith(double cores, uint64_t psiTotalMicros) {
  NodeSample s;
  s.cpuUsedCores = cores;
  MemInfo m;
  m.memTotalBytes = 1000;
  m.memAvailableBytes = 400;
  s.memory = m;
  s.load = LoadAvg{1.5, 1.0, 0.5, 1, 100, 42};
  Pressure p;
  p.some = PressureLine{2.5, 1.0, 0.5, psiTotalMicros};
  s.pressure[static_cast<int>(PsiResource::kCpu)] = p;
  return s;
}

}  // namespace

TEST_CASE("node usage is exported under koordlet's names with the node label", "[exporter]") {
  Exporter e("node-a", "v1");
  e.setStartTime(1700000000);
  e.recordNode(sampleWith(1.25, 3'000'000));
  std::string text = e.render();
  CHECK(hasLine(text, "koordlet_node_used_cpu_cores{node=\"node-a\"} 1.25"));
  CHECK(hasLine(text, "koordlet_node_used_memory_bytes{node=\"node-a\"} 600"));
  CHECK(hasLine(text, "koordlet_start_time{node=\"node-a\"} 1700000000"));
  CHECK(hasLine(text, "koordlet_node_load1{node=\"node-a\"} 1.5"));
  CHECK(hasLine(text,
                "koordlet_node_psi{node=\"node-a\",psi_degree=\"some\",psi_precision=\"avg10\","
                "psi_resource_type=\"cpu\"} 2.5"));
  CHECK(text.find("# TYPE koordlet_node_used_cpu_cores gauge") != std::string::npos);
}

TEST_CASE("kernel cumulative totals are mirrored into counters that never go down", "[exporter]") {
  Exporter e("n", "v1");
  e.recordNode(sampleWith(1, 3'000'000));
  e.recordNode(sampleWith(1, 5'000'000));
  std::string key =
      "koordlet_node_psi_stalled_seconds_total{node=\"n\",psi_degree=\"some\","
      "psi_resource_type=\"cpu\"} ";
  CHECK(hasLine(e.render(), key + "5"));
  e.recordNode(sampleWith(1, 1'000'000));  // source restarted: count on from there
  CHECK(hasLine(e.render(), key + "6"));
}

TEST_CASE("collector rounds export a duration, an error counter and a round counter per collector",
          "[exporter]") {
  Exporter e("n", "v1");
  e.recordCollector("node", 0.002, 0);
  e.recordCollector("node", 0.003, 2);
  e.recordCollector("node", 0.001, 1);
  std::string text = e.render();
  CHECK(hasLine(text, "koordlet_collector_duration_seconds{collector=\"node\",node=\"n\"} 0.001"));
  CHECK(hasLine(text, "koordlet_collector_errors_total{collector=\"node\",node=\"n\"} 3"));
  CHECK(hasLine(text, "koordlet_collect_rounds_total{collector=\"node\",node=\"n\"} 3"));
  e.recordCollector("pod", 0.001, 0);
  CHECK(hasLine(e.render(), "koordlet_collect_rounds_total{collector=\"pod\",node=\"n\"} 1"));
}

TEST_CASE("the agent's own footprint uses the standard process metric names", "[exporter]") {
  Exporter e("n", "v9");
  SelfSample s;
  s.cpuSeconds = 1.5;
  s.residentBytes = 4096;
  s.openFds = 9;
  s.maxFds = 1024;
  e.recordSelf(s);
  s.cpuSeconds = 2.0;
  e.recordSelf(s);
  std::string text = e.render();
  CHECK(hasLine(text, "process_cpu_seconds_total 2"));
  CHECK(hasLine(text, "process_resident_memory_bytes 4096"));
  CHECK(hasLine(text, "process_open_fds 9"));
  CHECK(text.find("koordlet_build_info{compiler=\"g++ ") != std::string::npos);
  CHECK(text.find("version=\"v9\"} 1") != std::string::npos);
}

TEST_CASE("feature support is exported as 1 or 0 per feature", "[exporter]") {
  Exporter e("n", "v1");
  e.setFeatureSupported("psi", false);
  CHECK(hasLine(e.render(), "koordlet_feature_supported{feature=\"psi\",node=\"n\"} 0"));
  e.setFeatureSupported("psi", true);
  CHECK(hasLine(e.render(), "koordlet_feature_supported{feature=\"psi\",node=\"n\"} 1"));
}

TEST_CASE("http counters follow the server's stats by route and code", "[exporter]") {
  Exporter e("n", "v1");
  HttpCounts stats;
  stats.requests[{"/metrics", 200}] = 3;
  stats.requests[{"other", 404}] = 1;
  stats.connectionsOpen = 2;
  e.recordHttp(stats);
  stats.requests[{"/metrics", 200}] = 5;
  e.recordHttp(stats);
  std::string text = e.render();
  CHECK(hasLine(text, "koordlet_http_requests_total{code=\"200\",path=\"/metrics\"} 5"));
  CHECK(hasLine(text, "koordlet_http_requests_total{code=\"404\",path=\"other\"} 1"));
  CHECK(hasLine(text, "koordlet_http_open_connections 2"));
}

TEST_CASE("the suppress gauge keeps its value through a round that changed nothing", "[exporter]") {
  Exporter e("n", "v1");
  const std::string line = "koordlet_be_suppress_cpu_cores{node=\"n\",type=\"cfsQuota\"} 1.3";
  e.recordSuppress(true, "cfsQuota", 1.3, 0.5, 0.2, 2.6);
  CHECK(hasLine(e.render(), line));
  CHECK(hasLine(e.render(), "koordlet_be_suppress_ls_used_cpu_cores{node=\"n\"} 0.5"));
  CHECK(hasLine(e.render(), "koordlet_be_suppress_threshold_cpu_cores{node=\"n\"} 2.6"));
  e.recordSuppress(true, "cfsQuota", std::nullopt, std::nullopt, std::nullopt);  // dead band
  CHECK(hasLine(e.render(), line));
  CHECK(hasLine(e.render(), "koordlet_be_suppress_threshold_cpu_cores{node=\"n\"} 2.6"));
  // A policy switch moves the series; switching suppress off removes it.
  e.recordSuppress(true, "cpuset", 2, 0.5, 0.2);
  CHECK(e.render().find("type=\"cfsQuota\"") == std::string::npos);
  CHECK(hasLine(e.render(), "koordlet_be_suppress_cpu_cores{node=\"n\",type=\"cpuset\"} 2"));
  e.recordSuppress(false, "cpuset", std::nullopt, std::nullopt, std::nullopt);
  CHECK(e.render().find("koordlet_be_suppress_cpu_cores{") == std::string::npos);
  CHECK(e.render().find("koordlet_be_suppress_ls_used_cpu_cores{") == std::string::npos);
  CHECK(e.render().find("koordlet_be_suppress_threshold_cpu_cores{") == std::string::npos);
}

TEST_CASE("suppress gauges are absent, not 0, until suppress runs and after it stops",
          "[exporter]") {
  Exporter e("n", "v1");
  const std::string text = e.render();
  CHECK(text.find("koordlet_be_suppress_ls_used_cpu_cores{") == std::string::npos);
  CHECK(text.find("koordlet_be_suppress_be_used_cpu_cores{") == std::string::npos);
  e.recordSuppress(true, "cfsQuota", 1.3, 0.5, 0.2);
  CHECK(hasLine(e.render(), "koordlet_be_suppress_be_used_cpu_cores{node=\"n\"} 0.2"));
  e.recordSuppress(false, "cfsQuota", std::nullopt, std::nullopt, std::nullopt);
  CHECK(e.render().find("koordlet_be_suppress_be_used_cpu_cores{") == std::string::npos);
  e.recordSuppress(true, "cfsQuota", 1.0, 0.7, 0.1);  // and back
  CHECK(hasLine(e.render(), "koordlet_be_suppress_ls_used_cpu_cores{node=\"n\"} 0.7"));
}

TEST_CASE("scaled cfs gauges follow the containers the burst strategy handles", "[exporter]") {
  Exporter e("n", "v1");
  e.recordScaledCfs({"ns", "p", "containerd://a", "c", 400000, 200000});
  e.recordScaledCfs({"ns", "p", "containerd://b", "d", 0, std::nullopt});
  e.endBurstRound();
  std::string text = e.render();
  CHECK(hasLine(text,
                "koordlet_container_scaled_cfs_burst_us{container_id=\"containerd://a\","
                "container_name=\"c\",node=\"n\",pod_name=\"p\",pod_namespace=\"ns\"} 400000"));
  CHECK(hasLine(text,
                "koordlet_container_scaled_cfs_quota_us{container_id=\"containerd://a\","
                "container_name=\"c\",node=\"n\",pod_name=\"p\",pod_namespace=\"ns\"} 200000"));
  CHECK(text.find("koordlet_container_scaled_cfs_quota_us{container_id=\"containerd://b\"") ==
        std::string::npos);
  e.recordScaledCfs({"ns", "p", "containerd://b", "d", 0, std::nullopt});
  e.endBurstRound();
  text = e.render();
  CHECK(text.find("containerd://a") == std::string::npos);
  CHECK(text.find("containerd://b") != std::string::npos);
}

TEST_CASE("cgroup writes are timed in koordlet's update histogram by outcome", "[exporter]") {
  Exporter e("n", "v1");
  e.recordResourceUpdate("succeeded", 0.03);
  e.recordResourceUpdate("succeeded", 0.5);
  e.recordResourceUpdate("invalid", 0.02);
  const std::string text = e.render();
  CHECK(hasLine(text,
                "koordlet_resource_update_duration_milliseconds_bucket{status=\"succeeded\","
                "type=\"cgroup\",le=\"0.04\"} 1"));
  CHECK(hasLine(text,
                "koordlet_resource_update_duration_milliseconds_bucket{status=\"succeeded\","
                "type=\"cgroup\",le=\"163.84\"} 2"));
  CHECK(hasLine(text,
                "koordlet_resource_update_duration_milliseconds_count{status=\"invalid\","
                "type=\"cgroup\"} 1"));
}

TEST_CASE("runtime hook runs are timed in koordlet's hook histogram by hook, stage and outcome",
          "[exporter]") {
  Exporter e("n", "v1");
  e.recordRuntimeHook("BatchResource", "PreCreateContainer", true, 0.02);
  e.recordRuntimeHook("BatchResource", "PreCreateContainer", true, 0.5);
  e.recordRuntimeHook("CPUSetAllocator", "PreCreateContainer", false, 3.0);
  const std::string text = e.render();
  CHECK(hasLine(text,
                "koordlet_runtime_hook_invoked_duration_milliseconds_bucket{hook=\"BatchResource\","
                "node=\"n\",stage=\"PreCreateContainer\",status=\"succeeded\",le=\"0.04\"} 1"));
  CHECK(hasLine(text,
                "koordlet_runtime_hook_invoked_duration_milliseconds_count{hook=\"BatchResource\","
                "node=\"n\",stage=\"PreCreateContainer\",status=\"succeeded\"} 2"));
  CHECK(
      hasLine(text,
              "koordlet_runtime_hook_invoked_duration_milliseconds_count{hook=\"CPUSetAllocator\","
              "node=\"n\",stage=\"PreCreateContainer\",status=\"failed\"} 1"));
}

TEST_CASE(
    "the hooks' reconciler is timed in koordlet's reconciler histogram by level, "
    "resource type and outcome",
    "[exporter]") {
  Exporter e("n", "v1");
  e.recordHookReconciler("pod", "cpu.cfs_quota_us", true, 0.03);
  e.recordHookReconciler("pod", "cpu.cfs_quota_us", true, 1.0);
  e.recordHookReconciler("container", "memory.limit_in_bytes", false, 0.005);
  const std::string text = e.render();
  CHECK(
      hasLine(text,
              "koordlet_runtime_hook_reconciler_invoked_duration_milliseconds_bucket{level=\"pod\","
              "node=\"n\",resource_type=\"cpu.cfs_quota_us\",status=\"succeeded\",le=\"0.04\"} 1"));
  CHECK(
      hasLine(text,
              "koordlet_runtime_hook_reconciler_invoked_duration_milliseconds_count{level=\"pod\","
              "node=\"n\",resource_type=\"cpu.cfs_quota_us\",status=\"succeeded\"} 2"));
  CHECK(hasLine(text,
                "koordlet_runtime_hook_reconciler_invoked_duration_milliseconds_bucket{level="
                "\"container\",node=\"n\",resource_type=\"memory.limit_in_bytes\",status="
                "\"failed\",le=\"0.01\"} 1"));
}

TEST_CASE("the NRI client's state is one-hot and its counters only grow", "[exporter]") {
  Exporter e("n", "v1");
  e.recordNri(true, "waiting", 3, 0, 0);
  std::string text = e.render();
  CHECK(hasLine(text, "koordlet_nri_enabled{node=\"n\"} 1"));
  CHECK(hasLine(text, "koordlet_nri_connected{node=\"n\"} 0"));
  CHECK(hasLine(text, "koordlet_nri_state{node=\"n\",state=\"waiting\"} 1"));
  CHECK(hasLine(text, "koordlet_nri_state{node=\"n\",state=\"connected\"} 0"));
  CHECK(hasLine(text, "koordlet_nri_connection_attempts_total{node=\"n\"} 3"));
  e.recordNri(true, "connected", 4, 1, 0);
  text = e.render();
  CHECK(hasLine(text, "koordlet_nri_connected{node=\"n\"} 1"));
  CHECK(hasLine(text, "koordlet_nri_state{node=\"n\",state=\"waiting\"} 0"));
  CHECK(hasLine(text, "koordlet_nri_connects_total{node=\"n\"} 1"));
  e.recordNri(false, "stopped", 4, 1, 1);
  text = e.render();
  CHECK(hasLine(text, "koordlet_nri_enabled{node=\"n\"} 0"));
  CHECK(hasLine(text, "koordlet_nri_state{node=\"n\",state=\"stopped\"} 0"));
  CHECK(hasLine(text, "koordlet_nri_disconnects_total{node=\"n\"} 1"));
}

TEST_CASE("connections closed on an NRI limit are counted by limit", "[exporter]") {
  Exporter e("n", "v1");
  std::string text = e.render();
  CHECK(hasLine(text, "koordlet_nri_limit_closes_total{limit=\"write_queue\",node=\"n\"} 0"));
  CHECK(hasLine(text, "koordlet_nri_limit_closes_total{limit=\"synchronize\",node=\"n\"} 0"));
  CHECK(hasLine(text, "koordlet_nri_limit_closes_total{limit=\"protocol\",node=\"n\"} 0"));
  e.recordNriLimitCloses(1, 3, 2);
  text = e.render();
  CHECK(hasLine(text, "koordlet_nri_limit_closes_total{limit=\"write_queue\",node=\"n\"} 1"));
  CHECK(hasLine(text, "koordlet_nri_limit_closes_total{limit=\"synchronize\",node=\"n\"} 3"));
  CHECK(hasLine(text, "koordlet_nri_limit_closes_total{limit=\"protocol\",node=\"n\"} 2"));
}

TEST_CASE("an accepted eviction counts koordlet's families, any answer counts by result",
          "[exporter][eviction]") {
  Exporter e("n", "v1");
  e.setEvictionEnabled(true);
  e.recordEviction("colo", "be-1", "BEMemoryEvict", "budget", 1000);
  std::string text = e.render();
  CHECK(hasLine(text, "koordlet_eviction_enabled{node=\"n\"} 1"));
  CHECK(hasLine(text,
                "koordlet_pod_eviction_requests_total{feature=\"BEMemoryEvict\",node=\"n\","
                "result=\"budget\"} 1"));
  CHECK(text.find("koordlet_pod_eviction{") == std::string::npos);
  CHECK(text.find("koordlet_pod_eviction_detail{") == std::string::npos);

  e.recordEviction("colo", "be-1", "BEMemoryEvict", "evicted", 1010);
  e.recordEviction("colo", "be-2", "BECPUEvict", "evicted", 1020);
  text = e.render();
  CHECK(hasLine(text, "koordlet_pod_eviction{node=\"n\",reason=\"evicted\"} 2"));
  CHECK(hasLine(text,
                "koordlet_pod_eviction_detail{node=\"n\",pod_name=\"be-1\","
                "pod_namespace=\"colo\",reason=\"evicted\"} 1"));
  CHECK(hasLine(text,
                "koordlet_pod_eviction_requests_total{feature=\"BECPUEvict\",node=\"n\","
                "result=\"evicted\"} 1"));
}

TEST_CASE("a pod's eviction detail series expires five minutes after its last increment",
          "[exporter][eviction]") {
  Exporter e("n", "v1");
  e.recordEviction("colo", "be-1", "BEMemoryEvict", "evicted", 1000);
  e.recordEviction("colo", "be-2", "BEMemoryEvict", "evicted", 1200);
  e.expireEvictionDetails(1000 + Exporter::kEvictionDetailTtl - 1);
  CHECK(e.render().find("pod_name=\"be-1\"") != std::string::npos);
  e.expireEvictionDetails(1000 + Exporter::kEvictionDetailTtl);
  const std::string text = e.render();
  CHECK(text.find("pod_name=\"be-1\"") == std::string::npos);
  CHECK(text.find("pod_name=\"be-2\"") != std::string::npos);
  // The total is koordlet's counter, never expired.
  CHECK(hasLine(text, "koordlet_pod_eviction{node=\"n\",reason=\"evicted\"} 2"));
}

TEST_CASE("eviction detail series are bounded, the least recently incremented going first",
          "[exporter][eviction]") {
  Exporter e("n", "v1");
  for (size_t i = 0; i < Exporter::kEvictionDetailMax; ++i) {
    std::string pod = std::to_string(i);
    pod.insert(0, 1, 'p');  // (not "p" + ...: g++ 12's false -Wrestrict at -O3)
    e.recordEviction("colo", pod, "BEMemoryEvict", "evicted", 1000 + static_cast<double>(i));
  }
  e.recordEviction("colo", "p0", "BEMemoryEvict", "evicted", 5000);  // p0 is recent now
  e.recordEviction("colo", "new", "BEMemoryEvict", "evicted", 5001);
  const std::string text = e.render();
  size_t series = 0;
  for (size_t at = text.find("\nkoordlet_pod_eviction_detail{"); at != std::string::npos;
       at = text.find("\nkoordlet_pod_eviction_detail{", at + 1)) {
    ++series;
  }
  CHECK(series == Exporter::kEvictionDetailMax);
  CHECK(text.find("pod_name=\"p1\"") == std::string::npos);
  CHECK(text.find("pod_name=\"p0\"") != std::string::npos);
  CHECK(text.find("pod_name=\"new\"") != std::string::npos);
}

TEST_CASE("requests and limits follow the pod list and the containers sampled from it",
          "[exporter]") {
  Exporter e("node-a", "v1");
  std::vector<Pod> pods(1);
  pods[0].uid = "u1";
  pods[0].name = "p1";
  pods[0].ns = "default";
  pods[0].containers.resize(2);
  for (int i = 0; i < 2; ++i) {
    Container& c = pods[0].containers[static_cast<size_t>(i)];
    c.name = "c" + std::to_string(i);
    c.id = "id" + std::to_string(i);
    c.requests.cpuMilli = 500 * (i + 1);
  }
  auto sample = [&](size_t containers) {
    PodsSample s;
    s.ownersVersion = containers;  // as the collector: another set, another version
    PodUsage pu;
    pu.pod = &pods[0];
    pu.usage.cpuCores = 0.5;
    for (size_t i = 0; i < containers; ++i) {
      ContainerUsage cu;
      cu.pod = &pods[0];
      cu.container = &pods[0].containers[i];
      cu.id = "containerd://" + pods[0].containers[i].id;
      cu.usage.cpuCores = 0.25;
      pu.containers.push_back(cu);
    }
    s.pods.push_back(pu);
    return s;
  };
  auto request = [&](const std::string& text, int i) {
    const std::string series =
        "koordlet_container_resource_requests{container_id=\"containerd://id" + std::to_string(i) +
        "\",container_name=\"c" + std::to_string(i) +
        "\",node=\"node-a\",pod_name=\"p1\",pod_namespace=\"default\","
        "pod_uid=\"u1\",resource=\"cpu\",unit=\"core\"} ";
    const size_t at = text.find("\n" + series);
    return at == std::string::npos ? std::string("absent")
                                   : text.substr(at + 1 + series.size(),
                                                 text.find('\n', at + 1) - at - 1 - series.size());
  };
  e.recordPods(sample(2), 1);
  std::string text = e.render();
  CHECK(request(text, 0) == "0.5");
  CHECK(request(text, 1) == "1");
  // The same list and containers: the series stand.
  e.recordPods(sample(2), 1);
  CHECK(request(e.render(), 1) == "1");
  // A container's cgroup gone from the sample: its series go, within the same list.
  e.recordPods(sample(1), 1);
  text = e.render();
  CHECK(request(text, 0) == "0.5");
  CHECK(request(text, 1) == "absent");
  // A new list with a changed request: set again.
  pods[0].containers[0].requests.cpuMilli = 2000;
  e.recordPods(sample(2), 2);
  text = e.render();
  CHECK(request(text, 0) == "2");
  CHECK(request(text, 1) == "1");
}

}  // namespace test_metrics_exporter
