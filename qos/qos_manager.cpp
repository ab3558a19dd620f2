#include "qos/qos_manager.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/log.h"

namespace koord {

namespace {

constexpr const char* kResourceStatus = "scheduling.koordinator.sh/resource-status";

std::optional<Sample> sampleOf(const MetricCache& cache, MetricKind kind,
                               const std::string& owner) {
  auto p = cache.latest(SeriesKey{kind, owner, ""});
  if (!p) return std::nullopt;
  return Sample{p->value, p->at};
}


double secondsSince(const Clock& clock, Clock::Monotonic start) {
  return std::chrono::duration<double>(clock.now() - start).count();
}

}  // namespace

QosManager::QosManager(QosManagerConfig config, CgroupLayout layout, CpuTopology topology,
                       Executor& executor, const Clock& clock, uint32_t burstSeed)
    : config_(std::move(config)),
      layout_(std::move(layout)),
      topology_(std::move(topology)),
      executor_(&executor),
      clock_(&clock),
      burst_(burstSeed),
      memory_(layout_),
      memoryQosKernel_(memoryQosSupported(executor.support())) {}

HookContext baseHookContext(const QosManagerConfig& config, const NodeSloSpec& spec) {
  HookContext ctx;
  ctx.spec = &spec;
  ctx.batchResource = config.batchResourceGate;
  ctx.cpusetAllocator = config.cpusetAllocatorGate;
  ctx.cpuBurst = config.burstGate && config.burstInterval.count() > 0;
  ctx.disableUnsetCpuQuota = config.disableUnsetCpuQuota;
  // koordlet: forced -1 while suppress runs with policy cfsQuota (gate and NodeSLO).
  ctx.suppressCfsQuota = config.suppressGate && config.suppressInterval.count() > 0 &&
                         spec.threshold.enable &&
                         spec.threshold.cpuSuppressPolicy == CpuSuppressPolicy::kCfsQuota;
  ctx.nodeAllocatableMemory = config.nodeAllocatableMemory;
  ctx.pageSize = config.pageSize;
  return ctx;
}

HookContext QosManager::hookContext(const NodeSloSpec& spec) const {
  HookContext ctx = baseHookContext(config_, spec);
  ctx.version = layout_.version();
  ctx.resctrl = config_.resctrlGate && resctrlReady_;
  ctx.cpuBurst = ctx.cpuBurst && (layout_.version() != CgroupVersion::kV2 ||
                                  executor_->support().has(Knob::kCpuBurst));
  ctx.memoryQos = config_.memoryGate && config_.memoryInterval.count() > 0 && memoryQosKernel_;
  return ctx;
}

bool QosManager::due(std::optional<Clock::Monotonic>& last, std::chrono::nanoseconds interval,
                     Clock::Monotonic now) const {
  if (interval.count() <= 0) return false;
  // A quarter interval of slack: collection rounds arrive with jitter, and a
  // strategy due 5 ms from now must not wait a whole extra round.
  if (last && now - *last < interval - interval / 4) return false;
  last = now;
  return true;
}

const std::vector<int>& QosManager::pinnedCpus(const Pod& pod) const {
  static const std::vector<int> kNone;
  auto ann = pod.annotations.find(kResourceStatus);
  if (ann == pod.annotations.end()) {
    pinned_.erase(pod.uid);
    return kNone;
  }
  auto& entry = pinned_[pod.uid];
  if (entry.first != ann->second || (entry.first.empty() && entry.second.empty())) {
    entry.first = ann->second;
    auto cpus = parseResourceStatusCpuset(ann->second);
    // A bad annotation pins nothing; the scheduler owns it, so there is nothing the
    // agent could fix, and the pod runs unpinned as far as suppress is concerned.
    entry.second = cpus ? *cpus : std::vector<int>{};
  }
  return entry.second;
}

void QosManager::listBesteffort(QosSnapshot& snap) const {
  namespace fs = std::filesystem;
  const std::string root = layout_.filePath(config_.cgroupRoot, "cpuset", snap.besteffortDir, "");
  std::error_code err;
  // A missing or unreadable dir lists nothing: the kubelet has not made it yet, or
  // this is a test tree; the writes to known dirs still go out.
  for (fs::directory_iterator pod(root, err), end; !err && pod != end; pod.increment(err)) {
    std::error_code typeErr;
    if (!pod->is_directory(typeErr)) continue;
    const std::string podName = pod->path().filename().string();
    const std::string podDir = snap.besteffortDir + "/" + podName;
    snap.besteffortPodDirs.push_back(podDir);
    std::error_code innerErr;
    for (fs::directory_iterator c(pod->path(), innerErr), cend; !innerErr && c != cend;
         c.increment(innerErr)) {
      std::error_code cErr;
      if (c->is_directory(cErr)) {
        snap.besteffortContainerDirs.push_back(podDir + "/" + c->path().filename().string());
      }
    }
  }
  std::sort(snap.besteffortPodDirs.begin(), snap.besteffortPodDirs.end());
  std::sort(snap.besteffortContainerDirs.begin(), snap.besteffortContainerDirs.end());
}

QosSnapshot QosManager::snapshot(const std::vector<Pod>& pods, const MetricCache& cache) const {
  QosSnapshot snap;
  snap.at = clock_->now();
  snap.topology = topology_;
  snap.reservation = config_.reservation;
  snap.cpuManagerPolicy = config_.cpuManagerPolicy;
  snap.nodeCpuCores = sampleOf(cache, MetricKind::kNodeCpuCores, "");
  const auto window =
      std::min<std::chrono::nanoseconds>(5 * config_.burstInterval, std::chrono::seconds(10));
  snap.nodeCpuAvgCores = cache.query(
      SeriesKey{MetricKind::kNodeCpuCores, "", ""}, Aggregation::kAvg,
      snap.at - std::chrono::duration_cast<Clock::Monotonic::duration>(window), snap.at);
  snap.besteffortDir = layout_.qosDir(KubeQos::kBestEffort);
  if (!config_.cgroupRoot.empty()) listBesteffort(snap);

  std::set<std::string> live;
  snap.pods.reserve(pods.size());
  for (const Pod& pod : pods) {
    if (!isSafePathComponent(pod.uid)) continue;  // never a path from a hostile uid
    live.insert(pod.uid);
    PodView view;
    view.pod = &pod;
    view.qos = pod.qosWithDefault();
    view.dir = layout_.podDir(pod.kubeQos, pod.uid);
    view.cpuCores = sampleOf(cache, MetricKind::kPodCpuCores, pod.uid);
    view.pinnedCpus = pinnedCpus(pod);
    view.containers.reserve(pod.containers.size());
    for (const Container& c : pod.containers) {
      ContainerView cv;
      cv.container = &c;
      if (!c.id.empty()) {
        cv.id = c.runtime + "://" + c.id;
        if (auto dir = layout_.containerDir(view.dir, c.runtime, c.id)) cv.dir = *dir;
        cv.cpuCores = sampleOf(cache, MetricKind::kContainerCpuCores, cv.id);
        cv.throttledRatio = sampleOf(cache, MetricKind::kContainerCpuThrottledRatio, cv.id);
      }
      view.containers.push_back(std::move(cv));
    }
    snap.pods.push_back(std::move(view));
  }
  std::erase_if(pinned_, [&](const auto& kv) { return !live.contains(kv.first); });
  return snap;
}

QosRound QosManager::runDue(const std::vector<Pod>& pods, const MetricCache& cache,
                            const NodeSloSpec& spec) {
  QosRound round;
  const Clock::Monotonic now = clock_->now();
  // A gate that is off costs nothing: no snapshot for it, no write, no reset
  // (koordlet writes nothing for BECPUSuppress, CPUBurst or CgroupReconcile off;
  // NodeSLO's enable: false, with the gate on, is what recovers suppression).
  const bool runSuppress =
      config_.suppressGate && due(lastSuppress_, config_.suppressInterval, now);
  const bool runBurst = config_.burstGate && due(lastBurst_, config_.burstInterval, now);
  const bool runMemory = config_.memoryGate && due(lastMemory_, config_.memoryInterval, now);
  const bool runHooks = (config_.batchResourceGate || config_.cpusetAllocatorGate) &&
                        due(lastHooks_, config_.hooksInterval, now);
  if (!runSuppress && !runBurst && !runMemory && !runHooks) return round;

  const QosSnapshot snap = snapshot(pods, cache);
  if (runSuppress) {
    const auto start = clock_->now();
    ExecutorValues current(*executor_);
    // With the gate on, NodeSLO's resourceUsedThresholdWithBE.enable decides.
    round.suppress = suppress_.run(snap, spec.threshold, spec.threshold.enable, current);
    round.writes += executor_->apply(round.suppress->writes);
    round.suppressSeconds = secondsSince(*clock_, start);
  }
  if (runBurst) {
    const auto start = clock_->now();
    ExecutorValues current(*executor_);
    round.burst = burst_.run(snap, spec.cpuBurst, true, current);
    round.writes += executor_->apply(round.burst->writes);
    round.burstSeconds = secondsSince(*clock_, start);
  }
  if (runMemory) {
    const auto start = clock_->now();
    MemoryQosOptions options;
    options.enabled = true;
    options.pageSize = config_.pageSize;
    options.nodeAllocatableMemory = config_.nodeAllocatableMemory;
    options.support = executor_->support();
    options.softLimitFallback = config_.memorySoftLimitFallback;
    round.memory = memory_.run(snap, spec.qos, options);
    round.writes += executor_->apply(round.memory->writes);
    round.memorySeconds = secondsSince(*clock_, start);
  }
  if (runHooks) {
    const auto start = clock_->now();
    round.hooks = reconcileHooks(snap, hookContext(spec));
    round.writes += executor_->apply(round.hooks->writes);
    round.hooksSeconds = secondsSince(*clock_, start);
  }
  return round;
}

}  // namespace koord
