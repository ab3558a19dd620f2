// The agent's accelerators (gate Accelerators; issues 35, 45): NVML loaded once at
// start through the GpuLibrary seam (gpu/nvml_library.h; by name, then where the
// container toolkit's CDI mode, GKE or the GPU operator put it). A node without the
// library, or whose driver lists no GPU, says so once (INFO,
// koordlet_feature_supported{feature="nvml"} 0) and has no GPU metrics. The node's
// Device is written every --node-topology-sync-interval whatever NVML says, as
// koordlet does: from koord-device-daemon's files in --xpu-device-infos-dir when
// they list a device (gpu/device_infos.h), else from NVML's GPUs (not with
// --xpu-enforce-collect-from-device-infos), else empty (a node with none). With
// NVML: the GPUs' use each round into the cache (for NodeMetric) and /metrics; the
// driver's critical-error events on their own thread (metrics/gpu_health.h), judged
// here on the loop, an unhealthy GPU in the Device at once.
#include "agent/agent.h"

#include <boost/asio/post.hpp>

#include <sys/utsname.h>

#include "base/time_format.h"
#include "gpu/device_infos.h"
#include "gpu/nvml_library.h"
#include "gpu/nvml_search.h"
#include "metrics/quantity_format.h"

namespace koord {

void Agent::startGpu() {
  if (!opts_.featureGates.enabled("Accelerators")) return;
  deviceInfos_ = std::make_unique<DeviceInfoDir>(opts_.xpuDeviceInfosDir);
  KLOG_INFO << "Accelerators: the Device from the device-info files in " << opts_.xpuDeviceInfosDir
            << (opts_.xpuEnforceCollectFromDeviceInfos
                    ? " only (--xpu-enforce-collect-from-device-infos)"
                    : ", from NVML when they list none");
  if (cluster_) cluster_->reportDevices();
  auto lib = loadNvml();
  if (!lib) {
    // Not by name: where the container toolkit's CDI mode, GKE or the GPU operator
    // put it (gpu/nvml_search.h).
    struct utsname u {};
    ::uname(&u);
    for (const std::string& found :
         findNvml(nvmlSearchDirs(opts_.paths.runRoot, u.machine), listDirNames)) {
      KLOG_INFO << "Accelerators: " << kNvmlLibrary << " not found by the loader; loading "
                << found;
      auto next = loadNvml(found);
      if (!next) KLOG_INFO << "Accelerators: " << next.error().message;
      lib = std::move(next);
      if (lib) break;
    }
  }
  if (!lib) {
    gpuOff_ = lib.error().message;
    KLOG_INFO << "Accelerators: no NVML on this node (" << gpuOff_ << "): no GPU metrics";
    exporter_.setFeatureSupported("nvml", false);
    return;
  }
  auto collector =
      std::make_unique<GpuCollector>(std::move(*lib), opts_.paths.procRoot, opts_.paths.sysRoot);
  if (auto st = collector->start(); !st) {
    gpuOff_ = st.error().message;
    KLOG_WARNING << "Accelerators: the GPUs cannot be listed (" << gpuOff_
                 << "): no GPU metrics and no NVML GPU in the Device";
    exporter_.setFeatureSupported("nvml", false);
    return;
  }
  if (collector->inventory().empty()) {
    gpuOff_ = "the driver lists no GPU";
    KLOG_INFO << "Accelerators: NVML loaded, driver " << collector->system().driverVersion
              << ", but it lists no GPU";
    exporter_.setFeatureSupported("nvml", true);
    return;
  }
  exporter_.setFeatureSupported("nvml", true);
  for (const GpuInventory& g : collector->inventory()) {
    KLOG_INFO << "GPU " << g.info.minor << ": " << g.info.model << " " << g.info.uuid << ", "
              << g.info.memoryTotal << " bytes, bus " << g.info.busId << ", NUMA node "
              << g.place.numaNode << ", socket " << g.place.socket
              << (g.info.healthy ? "" : ", unhealthy: " + g.info.unhealthyReason);
  }
  KLOG_INFO << "Accelerators: " << collector->inventory().size() << " GPU(s), driver "
            << collector->system().driverVersion << ", CUDA " << collector->system().cudaVersion;
  gpu_ = std::move(collector);
  startGpuHealth();
}

void Agent::startGpuHealth() {
  auto watch = gpu_->watchHealth();
  if (!watch) {
    KLOG_WARNING << "Accelerators: GPU health is not watched (" << watch.error().message
                 << "): a GPU reads as unhealthy only when the driver cannot read it at start";
    exporter_.setFeatureSupported("gpu_health_events", false);
    return;
  }
  for (const GpuUnwatched& u : watch->unwatched) {
    if (!u.unsupported) {
      KLOG_WARNING << "GPU " << u.uuid << ": its critical errors are not watched (" << u.why << ")";
      continue;
    }
    // As koordlet and NVIDIA's device plugin: a GPU that cannot say it failed is
    // not offered as healthy.
    for (unsigned minor : gpu_->markUnhealthy(u.uuid, "no critical-error events: " + u.why)) {
      KLOG_WARNING << "GPU " << minor << " (" << u.uuid
                   << ") reported unhealthy: it cannot report critical errors (" << u.why << ")";
    }
  }
  exporter_.setFeatureSupported("gpu_health_events", true);
  gpuHealth_ = std::make_unique<GpuHealthWatcher>(
      std::move(watch->watch), [this](Result<GpuHealthEvent> next) {
        boost::asio::post(io_, [this, next = std::move(next)] { onGpuHealth(next); });
      });
}

void Agent::onGpuHealth(const Result<GpuHealthEvent>& next) {
  if (stopped_ || !gpu_) return;
  constexpr std::string_view kKey = "gpu health events";
  if (!next) {
    failures_.failure(kKey, Severity::kWarning,
                      "GPU health events not read: " + next.error().message);
    return;
  }
  failures_.success(kKey);
  const GpuHealthEvent& e = *next;
  std::string minor;
  for (const GpuInventory& g : gpu_->inventory()) {
    if (!e.uuid.empty() && g.info.uuid == e.uuid) minor = std::to_string(g.info.minor);
  }
  exporter_.countGpuCriticalError(minor, e.uuid, e.what);
  if (!isCritical(e)) return;  // an application's Xid: the GPU still works
  const auto marked = gpu_->markUnhealthy(e.uuid, e.what);
  for (unsigned m : marked) {
    KLOG_WARNING << "GPU " << m << " unhealthy: " << e.what
                 << (e.uuid.empty() ? " (the driver named no GPU: every GPU is marked)" : "")
                 << "; the Device says so until the agent restarts";
  }
  if (marked.empty()) return;
  lastDeviceSync_ = {};  // now, not at the next interval
  syncDevices();
}

void Agent::collectGpu() {
  if (!gpu_) {
    syncDevices();  // the device-info files, or the empty Device of a node with none
    return;
  }
  const auto begin = clock_->now();
  const auto wall = clock_->wallNow();
  const auto micros = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(wall.time_since_epoch()).count());
  GpuRound round = gpu_->collect(micros);
  exporter_.recordCollector("gpu", std::chrono::duration<double>(clock_->now() - begin).count(),
                            round.errors.size());
  for (const auto& [minor, use] : round.node) {
    const std::string detail = std::to_string(minor);
    cache_.append(MetricKind::kNodeGpuCore, "", detail, begin, use.core);
    cache_.append(MetricKind::kNodeGpuMemoryBytes, "", detail, begin,
                  static_cast<double>(use.memory));
  }
  for (const auto& [uid, byMinor] : round.pods) {
    for (const auto& [minor, use] : byMinor) {
      cache_.append(MetricKind::kPodGpuCore, uid, std::to_string(minor), begin, use.core);
      cache_.append(MetricKind::kPodGpuMemoryBytes, uid, std::to_string(minor), begin,
                    static_cast<double>(use.memory));
    }
  }
  for (const auto& [id, byMinor] : round.containers) {
    for (const auto& [minor, use] : byMinor) {
      cache_.append(MetricKind::kContainerGpuCore, id, std::to_string(minor), begin, use.core);
      cache_.append(MetricKind::kContainerGpuMemoryBytes, id, std::to_string(minor), begin,
                    static_cast<double>(use.memory));
    }
  }
  exporter_.recordGpus(gpu_->inventory(), gpu_->system(), round);
  // One streak per GPU: said once, then counted, then a recovery line.
  std::set<std::string> failing;
  for (const std::string& e : round.errors) {
    const std::string key = "gpu " + e.substr(0, e.find(':'));
    failures_.failure(key, Severity::kWarning, "GPU use not read: " + e);
    failing.insert(key);
  }
  for (const auto& key : gpuFailing_) {
    if (!failing.contains(key)) failures_.success(key);
  }
  gpuFailing_ = std::move(failing);
  syncDevices();
}

DeviceContent Agent::deviceContent() {
  DeviceContent c;
  if (!deviceInfos_) return c;
  const DeviceInfoDir::Read read = deviceInfos_->read();
  if (read.dirMissing != deviceInfosMissing_) {
    deviceInfosMissing_ = read.dirMissing;
    KLOG_INFO << "Accelerators: device-info dir " << deviceInfos_->dir()
              << (read.dirMissing ? " absent (no koord-device-daemon on this node, or "
                                    "--xpu-device-infos-dir names no mounted dir)"
                                  : " present");
  }
  std::set<std::string> failing;
  for (const std::string& e : read.errors) {
    // Keyed by the file (the message's text before its first ": "), so each file
    // is said once while it fails, and its recovery once.
    const std::string file = e.substr(0, e.find(": "));
    const std::string key = "device-info " + file;
    const bool kept = std::any_of(read.kept.begin(), read.kept.end(),
                                  [&](const std::string& n) { return file.ends_with("/" + n); });
    failures_.failure(key, Severity::kWarning,
                      std::string("device-info file rejected") +
                          (kept ? ", its last good devices kept: " : ": ") + e);
    failing.insert(key);
  }
  std::string source = "none";
  if (!read.devices.empty()) {
    XpuContent x = deviceContentFromInfos(read.devices, rfc3339(clock_->wallNow()));
    for (const std::string& why : x.skipped) {
      const std::string key = "device-info skipped " + why.substr(0, why.find(':'));
      failures_.failure(key, Severity::kWarning, "device-info: " + why);
      failing.insert(key);
    }
    c = std::move(x.content);
    source = "device-infos";
  } else if (gpu_ && !opts_.xpuEnforceCollectFromDeviceInfos) {
    c = nvmlDeviceContent();
    source = "nvml";
  }
  for (const auto& key : deviceInfoFailing_) {
    if (!failing.contains(key)) failures_.success(key);
  }
  deviceInfoFailing_ = std::move(failing);
  if (source != deviceSource_) {
    std::string from = "the device-info files in " + deviceInfos_->dir();
    if (source == "nvml") from = "NVML";
    if (source == "none") {
      from = std::string("nothing (no device-info file lists one, ") +
             (!gpu_ ? "no NVML GPU)" : "NVML not used)");
    }
    KLOG_INFO << "Accelerators: the Device lists " << c.gpus.size() << " device(s) from " << from;
    deviceSource_ = source;
  }
  lastDeviceContent_ = c;
  return c;
}

DeviceContent Agent::nvmlDeviceContent() const {
  DeviceContent c;
  if (!gpu_) return c;
  std::vector<std::string> models;
  for (const GpuInventory& g : gpu_->inventory()) {
    models.push_back(g.info.model);
    c.gpus.push_back(gpuFromNvml(g.info.uuid, static_cast<int>(g.info.minor), g.info.healthy,
                                 formatQuantityBinarySI(static_cast<int64_t>(g.info.memoryTotal)),
                                 g.place.numaNode, g.place.socket, g.pcieId, g.info.busId));
  }
  std::sort(c.gpus.begin(), c.gpus.end(),
            [](const DeviceGpu& a, const DeviceGpu& b) { return a.minor < b.minor; });
  c.labels = gpuLabels(models, gpu_->system().driverVersion);
  return c;
}

std::vector<NodeMetricGpu> Agent::nodeMetricGpus() const {
  std::vector<NodeMetricGpu> out;
  if (!gpu_) return out;
  for (const GpuInventory& g : gpu_->inventory()) {
    out.push_back({g.info.minor, g.info.uuid, g.info.memoryTotal});
  }
  std::sort(out.begin(), out.end(),
            [](const NodeMetricGpu& a, const NodeMetricGpu& b) { return a.minor < b.minor; });
  return out;
}

void Agent::syncDevices() {
  if (!deviceInfos_ || opts_.nodeTopologySyncInterval.count() <= 0) return;
  const auto now = clock_->now();
  if (lastDeviceSync_ != Clock::Monotonic{} &&
      now - lastDeviceSync_ < opts_.nodeTopologySyncInterval) {
    return;
  }
  // Read every interval, with or without an API server (/config shows it).
  const DeviceContent content = deviceContent();
  if (!cluster_) {
    lastDeviceSync_ = now;
    return;
  }
  // The Node's uid makes the Device go with the Node; wait for it (a few seconds
  // at start) rather than create an object nothing owns. Until the report is
  // through, the files are read again each round.
  if (!nodeInfo_ || nodeInfo_->uid.empty()) return;
  if (cluster_->syncDevices(content, nodeInfo_->uid)) lastDeviceSync_ = now;
}

nlohmann::json Agent::gpuJson() const {
  nlohmann::json j;
  j["enabled"] = opts_.featureGates.enabled("Accelerators");
  j["off"] = gpuOff_;
  if (!deviceInfos_) return j;
  j["deviceInfosDir"] = deviceInfos_->dir();
  j["deviceInfosDirMissing"] = deviceInfosMissing_.value_or(false);
  j["deviceSource"] = deviceSource_;
  j["device"] =
      newDeviceObject(opts_.nodeName, nodeInfo_ ? nodeInfo_->uid : "", lastDeviceContent_);
  if (!gpu_) return j;
  j["driverVersion"] = gpu_->system().driverVersion;
  j["cudaVersion"] = gpu_->system().cudaVersion;
  j["healthEvents"] = gpuHealth_ != nullptr;
  j["unhealthy"] = nlohmann::json::object();  // minor -> why
  for (const GpuInventory& g : gpu_->inventory()) {
    if (!g.info.healthy) j["unhealthy"][std::to_string(g.info.minor)] = g.info.unhealthyReason;
  }
  return j;
}

}  // namespace koord
