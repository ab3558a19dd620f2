#include "metrics/metric_docs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "base/markdown.h"

namespace koord {
namespace {

std::string number(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

std::string typeText(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Histogram:
      return "histogram";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Untyped:
      break;
  }
  return "untyped";
}

std::vector<double> finiteBounds(const prometheus::ClientMetric& metric) {
  std::vector<double> out;
  for (const auto& b : metric.histogram.bucket) {
    if (std::isfinite(b.upper_bound)) out.push_back(b.upper_bound);
  }
  return out;
}

}  // namespace

const char* originText(MetricOrigin origin) {
  switch (origin) {
    case MetricOrigin::kKoordlet:
      return "koordlet";
    case MetricOrigin::kStandard:
      return "standard";
    case MetricOrigin::kOurs:
      break;
  }
  return "ours";
}

std::string describeBuckets(const std::vector<double>& bounds) {
  std::vector<double> b;
  for (double v : bounds) {
    if (std::isfinite(v)) b.push_back(v);
  }
  if (b.empty()) return "";
  if (b.size() >= 3 && b[0] > 0) {
    const double ratio = b[1] / b[0];
    bool geometric = ratio > 1;
    for (size_t i = 1; i < b.size() && geometric; ++i) {
      const double want = b[0] * std::pow(ratio, static_cast<double>(i));
      geometric = std::fabs(b[i] - want) <= 1e-9 * want;
    }
    if (geometric) {
      return number(b[0]) + " × " + number(ratio) + "^k, k = 0.." + std::to_string(b.size() - 1);
    }
  }
  std::string out;
  for (double v : b) {
    if (!out.empty()) out += ", ";
    out += number(v);
  }
  return out;
}

Result<std::vector<MetricDoc>> describeFamilies(
    const std::vector<std::string>& registered,
    const std::vector<prometheus::MetricFamily>& collected) {
  std::map<std::string, const prometheus::MetricFamily*> byName;
  for (const auto& f : collected) byName.emplace(f.name, &f);

  std::string missing;
  std::vector<MetricDoc> out;
  for (const std::string& name : registered) {
    auto it = byName.find(name);
    if (it == byName.end() || it->second->metric.empty()) {
      missing += missing.empty() ? "" : ", ";
      missing += name;
      continue;
    }
    const prometheus::MetricFamily& f = *it->second;
    MetricDoc d;
    d.name = f.name;
    d.help = f.help;
    d.origin = metricOrigin(f.name);
    d.type = typeText(f.type);
    std::set<std::string> labels;
    for (const auto& m : f.metric) {
      for (const auto& l : m.label) labels.insert(l.name);
    }
    d.labels.assign(labels.begin(), labels.end());
    if (f.type == prometheus::MetricType::Histogram) {
      const std::vector<double> first = finiteBounds(f.metric.front());
      const bool same = std::all_of(f.metric.begin(), f.metric.end(),
                                    [&](const auto& m) { return finiteBounds(m) == first; });
      const std::string buckets = same ? describeBuckets(first) : "buckets vary by series";
      if (!buckets.empty()) d.type += " (" + buckets + ")";
    }
    out.push_back(std::move(d));
  }
  std::string unknown;
  for (const auto& f : collected) {
    if (std::find(registered.begin(), registered.end(), f.name) == registered.end()) {
      unknown += unknown.empty() ? "" : ", ";
      unknown += f.name;
    }
  }
  if (!missing.empty() || !unknown.empty()) {
    std::string msg;
    if (!missing.empty()) {
      msg = "metric families without a series, so their labels are unknown: " + missing +
            " (give each one a series in driveExporter, metrics/metric_docs.cpp)";
    }
    if (!unknown.empty()) {
      msg += msg.empty() ? "" : "; ";
      msg += "metric families registered around Exporter's family helpers: " + unknown +
             " (register them through gaugeFamily/counterFamily/histogramFamily)";
    }
    return makeError(std::move(msg));
  }
  std::sort(out.begin(), out.end(),
            [](const MetricDoc& a, const MetricDoc& b) { return a.name < b.name; });
  return out;
}

void driveExporter(Exporter& e) {
  e.setStartTime(1700000000);

  NodeSample node;
  node.cpuUsedCores = 1.5;
  MemInfo mem;
  mem.memTotalBytes = 8ull << 30;
  mem.memAvailableBytes = 4ull << 30;
  node.memory = mem;
  node.load = LoadAvg{1.0, 0.5, 0.25, 1, 100, 42};
  Pressure pressure;
  pressure.some = PressureLine{1.0, 0.5, 0.25, 1000};
  pressure.full = PressureLine{0.5, 0.25, 0.1, 500};
  for (auto& p : node.pressure) p = pressure;
  e.recordNode(node);
  e.setFeatureSupported("psi", true);
  e.recordCollector("node", 0.001, 0);

  SelfSample self;
  self.cpuSeconds = 1;
  self.residentBytes = 1 << 20;
  self.threads = 4;
  e.recordSelf(self);

  HttpCounts http;
  http.requests[{"/metrics", 200}] = 1;
  e.recordHttp(http);

  e.setKubeletUp(true);
  e.setKubeletTlsVerified(false);
  e.recordKubeletRequest({"200", 0.01, ""});
  e.recordKubeletRequest({"timeout", 3, "transport"});
  e.setPodCount(1);

  Pod pod;
  pod.uid = "uid-1";
  pod.ns = "default";
  pod.name = "pod-1";
  Container container;
  container.name = "main";
  container.runtime = "containerd";
  container.id = "c1";
  container.requests.cpuMilli = 500;
  container.requests.batchCpuMilli = 500;
  container.limits.memoryBytes = 1 << 30;
  pod.containers.push_back(container);
  CgroupUsage usage;
  usage.cpuCores = 0.5;
  usage.memoryBytes = 1 << 20;
  usage.throttledRatio = 0.1;
  for (auto& p : usage.pressure) p = pressure;
  PodsSample pods;
  PodUsage podUsage{&pod, usage, {}};
  podUsage.containers.push_back(ContainerUsage{&pod, &pod.containers[0], "containerd://c1", usage});
  pods.pods.push_back(podUsage);
  pods.be.usageMilli = 500;
  pods.be.requestMilli = 500;
  pods.be.realLimitMilli = 2000;
  e.recordPods(pods, 1);
  e.recordCache(10, 4096);
  e.recordStateEntries({{"executor_owners", 12}});

  e.recordResourceUpdate("succeeded", 0.05);
  e.recordResourceRefusal("out_of_range");
  e.recordResourceDrift("cpu.cfs_quota_us");
  e.recordSuppress(true, "cpuset", 2.0, 1.0, 0.5, 2.6);
  Exporter::ScaledCfs cfs{"default", "pod-1", "containerd://c1", "main", 100000, 200000};
  e.recordScaledCfs(cfs);
  e.endBurstRound();
  e.recordOomScoreAdj("ns", "pod", "uid", "main", -500);
  e.endOomScoreAdjRound();
  e.recordStrategy("cpu_suppress", 0.001);
  e.recordResctrlWrites("schemata", "succeeded", 1);
  Exporter::ResctrlMon mon;
  mon.qos = "BE";
  mon.llcOccupancy = 1 << 20;
  mon.mbmLocalBytes = 1 << 20;
  mon.mbmTotalBytes = 2 << 20;
  e.recordResctrlMon({mon});
  e.recordRuntimeHook("CPUSetAllocator", "PreCreateContainer", true, 0.1);
  e.recordHookReconciler("pod", "cpu.cfs_quota_us", true, 0.02);
  e.recordNri(true, "connected", 1, 1, 0);
  e.recordNriLimitCloses(0, 0, 0);
  e.recordHookServer(true, true, {{"PreCreateContainerHook", "OK", 1}});
  e.recordConfig(1, 0, true);

  KubeApiSample api;
  api.reachable = true;
  api.requests[{"WATCH", "nodeslos", "200"}] = 3;
  api.watchSynced["nodeslos"] = true;
  api.relists["nodeslos"] = 1;
  api.throttledRequests = 1;
  api.throttledSeconds = 0.05;
  api.nodeMetricLastReport = 1700000000;
  api.nodeMetricReportsOk = 1;
  api.nodeMetricConflicts = 1;
  e.recordKubeApi(api);

  e.setEvictionEnabled(true);
  e.recordEviction("colo", "be-pod", "BEMemoryEvict", "evicted", 1700000000);

  ReclaimableSample reclaimable;
  reclaimable.ok = true;
  reclaimable.predicted["minPredictor"] = {2.5, 4e9};
  e.recordReclaimable(reclaimable);
  e.recordPredictor({10, 40000, 1, 0, 0.002});
  e.recordHostApps({{"nginx", "koord-prod", "LS", 0.5, 1e8}});
  {
    GpuInventory gpu;
    gpu.info = {0, "GPU-6b1ff724", 0, "NVIDIA H100 80GB HBM3", 85520809984ULL, "0000:3b:00.0", true,
                ""};
    gpu.place = {0, 0};
    GpuRound round;
    round.node[0] = {87, 30ULL << 30};
    round.pods["pod-uid"][0] = {70, 18ULL << 30};
    round.containers[std::string(64, 'a')][0] = {70, 18ULL << 30};
    e.recordGpus({gpu}, {"535.104.05", "12.2"}, round);
    e.countGpuCriticalError("0", "GPU-6b1ff724", "Xid 79");
  }
  e.recordNodeAllocatable({4300, int64_t{10} << 30, 2000, int64_t{4} << 30});
  e.countNodeInfoCollection(true, true);
  e.recordSharePools(28, 0);
}

std::string metricsMarkdown(const std::vector<MetricDoc>& metrics) {
  std::string out = std::to_string(metrics.size()) +
                    " metric families, served on `GET /metrics` (text format 0.0.4). Origin "
                    "*koordlet*: koordlet's name, labels and meaning, so dashboards and alerts "
                    "written for koordlet work unchanged (its spelling kept where the Prometheus "
                    "naming lint disagrees); *standard*: the process metrics Prometheus client "
                    "libraries export (koordlet's Go one too); *ours*: this agent's additions, "
                    "named as Prometheus recommends. `node` is the node's name.\n\n";
  out += "| name | type | labels | help | origin |\n";
  out += "|---|---|---|---|---|\n";
  for (const MetricDoc& m : metrics) {
    std::string labels;
    for (const std::string& l : m.labels) labels += (labels.empty() ? "" : ", ") + l;
    out += "| " + markdownCode(m.name) + " | " + markdownCell(m.type) + " | " +
           markdownCell(labels) + " | " + markdownCell(m.help) + " | " + originText(m.origin) +
           " |\n";
  }
  return out;
}

Result<std::vector<MetricDoc>> exporterMetricDocs() {
  Exporter exporter("node-a", "docs");
  driveExporter(exporter);
  return describeFamilies(exporter.familyNames(), exporter.collect());
}

}  // namespace koord
