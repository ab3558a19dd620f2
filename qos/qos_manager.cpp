#include "qos/qos_manager.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include "base/dir_list.h"
#include "base/log.h"

namespace koord {

namespace {

std::optional<Sample> sampleOf(const MetricCache& cache, MetricKind kind, std::string_view owner) {
  auto p = cache.latest(kind, owner);
  if (!p) return std::nullopt;
  return Sample{p->value, p->at};
}

double secondsSince(const Clock& clock, Clock::Monotonic start) {
  return std::chrono::duration<double>(clock.now() - start).count();
}

}  // namespace

QosManager::QosManager(QosManagerConfig config, CgroupLayout layout, CpuTopology topology,
                       Executor& executor, const Clock& clock)
    : config_(std::move(config)),
      layout_(std::move(layout)),
      topology_(std::move(topology)),
      executor_(&executor),
      clock_(&clock) {
  node_.version = layout_.version();
  node_.support = executor.support();
  node_.pageSize = config_.pageSize;
  node_.nodeAllocatableMemory = config_.nodeAllocatableMemory;
  node_.memoryQosKernel = memoryQosSupported(node_.support);
}

void QosManager::addStrategy(std::unique_ptr<QosStrategy> strategy) {
  for (const Entry& e : strategies_) {
    // Two strategies under one name would share a report and a metric: a wiring bug.
    if (e.strategy->name() == strategy->name()) {
      throw std::logic_error("QoS strategy registered twice: " + std::string(strategy->name()));
    }
  }
  strategies_.push_back(Entry{std::move(strategy), std::nullopt});
}

bool QosManager::due(Entry& entry, Clock::Monotonic now) const {
  const std::chrono::nanoseconds interval = entry.strategy->interval();
  if (interval.count() <= 0) return false;
  // A quarter interval of slack: collection rounds arrive with jitter, and a
  // strategy due 5 ms from now must not wait a whole extra round.
  const bool onChange = podsChanged_ && entry.strategy->runsOnPodsChange();
  if (!onChange && entry.last && now - *entry.last < interval - interval / 4) return false;
  entry.last = now;
  return true;
}

const std::vector<int>& QosManager::pinnedCpus(const Pod& pod) const {
  static const std::vector<int> kNone;
  auto ann = pod.annotations.find(kResourceStatusAnnotation);
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

BesteffortDirs listBesteffortDirs(const CgroupLayout& layout, const std::string& cgroupRoot) {
  BesteffortDirs out;
  const std::string besteffort = layout.qosDir(KubeQos::kBestEffort);
  const std::string root = layout.filePath(cgroupRoot, "cpuset", besteffort, "");
  // A missing or unreadable dir lists nothing: the kubelet has not made it yet, or
  // this is a test tree; the writes to known dirs still go out.
  auto pods = listSubdirs(root);
  if (!pods) return out;
  for (const std::string& podName : *pods) {
    std::string podDir = besteffort + "/" + podName;
    if (auto containers = listSubdirs(root + "/" + podName)) {
      for (const std::string& c : *containers) out.containers.push_back(podDir + "/" + c);
    }
    out.pods.push_back(std::move(podDir));
  }
  // Sorted as whole paths (a pod name may be a prefix of another).
  std::sort(out.containers.begin(), out.containers.end());
  return out;
}

void QosManager::listBesteffort(QosSnapshot& snap) const {
  BesteffortDirs dirs = listBesteffortDirs(layout_, config_.cgroupRoot);
  snap.besteffortPodDirs = std::move(dirs.pods);
  snap.besteffortContainerDirs = std::move(dirs.containers);
}

QosManager::PodPaths& QosManager::podPaths(const Pod& pod) const {
  auto [it, added] = podDirs_.try_emplace(pod.uid);
  PodPaths& paths = it->second;
  // The QoS class of a pod cannot change (an in-place resize that would change it
  // is refused), but a wrong dir would send writes elsewhere: checked anyway.
  if (added || paths.kubeQos != pod.kubeQos) {
    paths.kubeQos = pod.kubeQos;
    paths.dir = layout_.podDir(pod.kubeQos, pod.uid);
    paths.containers.clear();
  }
  return paths;
}

QosSnapshot QosManager::snapshot(const std::vector<Pod>& pods, const MetricCache& cache) const {
  QosSnapshot snap;
  snap.at = clock_->now();
  snap.topology = topology_;
  snap.reservation = config_.reservation;
  snap.cpuManagerPolicy = config_.cpuManagerPolicy;
  snap.nodeCpuCores = sampleOf(cache, MetricKind::kNodeCpuCores, "");
  snap.nodeMemoryBytes = sampleOf(cache, MetricKind::kNodeMemoryBytes, "");
  const auto window = config_.nodeCpuAvgWindow;
  snap.nodeCpuAvgCores = cache.query(
      SeriesKey{MetricKind::kNodeCpuCores, "", ""}, Aggregation::kAvg,
      snap.at - std::chrono::duration_cast<Clock::Monotonic::duration>(window), snap.at);
  snap.besteffortDir = layout_.qosDir(KubeQos::kBestEffort);
  if (!config_.cgroupRoot.empty()) listBesteffort(snap);

  std::unordered_set<std::string_view> live;
  live.reserve(pods.size());
  snap.pods.reserve(pods.size());
  for (const Pod& pod : pods) {
    if (!isSafePathComponent(pod.uid)) continue;  // never a path from a hostile uid
    live.insert(pod.uid);
    PodPaths& paths = podPaths(pod);
    PodView view;
    view.pod = &pod;
    view.qos = pod.qosWithDefault();
    view.dir = paths.dir;
    view.cpuCores = sampleOf(cache, MetricKind::kPodCpuCores, pod.uid);
    view.memoryBytes = sampleOf(cache, MetricKind::kPodMemoryBytes, pod.uid);
    view.pinnedCpus = pinnedCpus(pod);
    // App containers and sidecars (restartable init containers, which run beside
    // them for the pod's life): every strategy treats both alike. Regular init
    // containers have finished by the time a pod runs; the runtime hooks set them
    // at creation.
    view.containers.reserve(pod.containers.size());
    size_t listed = 0;
    auto addContainer = [&](const Container& c) {
      ++listed;
      ContainerView cv;
      cv.container = &c;
      if (!c.id.empty()) {
        auto [it, added] = paths.containers.try_emplace(c.id);
        ContainerPaths& cp = it->second;
        if (added || cp.runtime != c.runtime) {
          cp.runtime = c.runtime;
          cp.id = c.runtime + "://" + c.id;
          auto dir = layout_.containerDir(paths.dir, c.runtime, c.id);
          cp.dir = dir ? *dir : std::string();
        }
        cv.id = cp.id;
        cv.dir = cp.dir;
        cv.cpuCores = sampleOf(cache, MetricKind::kContainerCpuCores, cv.id);
        cv.throttledRatio = sampleOf(cache, MetricKind::kContainerCpuThrottledRatio, cv.id);
      }
      view.containers.push_back(std::move(cv));
    };
    for (const Container& c : pod.initContainers) {
      if (c.restartable) addContainer(c);
    }
    for (const Container& c : pod.containers) addContainer(c);
    // Containers restarted under new ids leave their old entries: drop them.
    if (paths.containers.size() > listed) {
      std::erase_if(paths.containers, [&](const auto& kv) {
        return std::none_of(view.containers.begin(), view.containers.end(),
                            [&](const ContainerView& c) { return c.container->id == kv.first; });
      });
    }
    snap.pods.push_back(std::move(view));
  }
  std::erase_if(pinned_, [&](const auto& kv) { return !live.contains(kv.first); });
  return snap;
}

void QosManager::forgetGonePods(const std::vector<Pod>& pods) {
  std::unordered_set<std::string_view> live;
  live.reserve(pods.size());
  for (const Pod& pod : pods) {
    live.insert(pod.uid);
    podPaths(pod);
  }
  for (auto it = podDirs_.begin(); it != podDirs_.end();) {
    if (live.contains(it->first)) {
      ++it;
      continue;
    }
    executor_->forgetUnder(it->second.dir);
    it = podDirs_.erase(it);
  }
}

QosRound QosManager::runDue(const std::vector<Pod>& pods, const MetricCache& cache,
                            const NodeSloSpec& spec, const EvictionLedger* evictions) {
  QosRound round;
  forgetGonePods(pods);
  const Clock::Monotonic now = clock_->now();
  // A strategy that is not enabled costs nothing: no snapshot for it, no write, no
  // reset, and its interval does not start (koordlet writes nothing for a feature
  // gate that is off; a strategy that recovers when the NodeSLO spec turns it off
  // stays enabled and recovers in its run, strategy.h).
  std::vector<Entry*> running;
  for (Entry& e : strategies_) {
    if (e.strategy->enabled(spec) && due(e, now)) running.push_back(&e);
  }
  podsChanged_ = false;
  if (running.empty()) return round;

  const QosSnapshot snap = snapshot(pods, cache);
  for (Entry* e : running) {
    QosStrategy& strategy = *e->strategy;
    const auto start = clock_->now();
    ExecutorValues current(*executor_);
    StrategyOutcome outcome =
        strategy.run(StrategyContext{snap, spec, current, node_, cache, evictions});
    for (CgroupWrite& w : outcome.writes) {
      w.owner = std::string(strategy.owner());
      if (!w.why) w.why = outcome.why;
    }
    StrategyReport report;
    report.name = std::string(strategy.name());
    report.writes = executor_->apply(std::move(outcome.writes));
    report.errors = std::move(outcome.errors);
    round.evictions.insert(round.evictions.end(), outcome.evictions.begin(),
                           outcome.evictions.end());
    report.evictions = std::move(outcome.evictions);
    report.result = std::move(outcome.result);
    report.seconds = secondsSince(*clock_, start);
    round.writes += report.writes;
    round.ran.push_back(std::move(report));
  }
  return round;
}

}  // namespace koord
