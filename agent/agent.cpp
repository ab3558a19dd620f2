// The agent's life cycle and collection: construction, start and stop, the
// fixed-rate collection round (node, pods, resctrl monitoring), the metric cache and
// the --config poll. The QoS side is in agent_qos.cpp, the HTTP handlers in
// agent_http.cpp, NRI in agent_nri.cpp.
#include "agent/agent.h"

#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <unordered_set>

#include <boost/asio/post.hpp>

#include "base/pinned_files.h"
#include "base/read_file.h"
#include "cgroupfs/cgroup_mounts.h"
#include "metrics/proc_parsers.h"
#include "qos/cpu_burst.h"
#include "qos/cpu_suppress.h"
#include "qos/memory_qos.h"
#include "qos/node_overrides.h"
#include "version.h"

namespace koord {

namespace asio = boost::asio;

namespace {

// The node collector's "Last" window in koordlet is 2× the interval; a failure
// that lasts longer than that is worth a reminder line every 10 minutes, no more.
constexpr auto kReminderEvery = std::chrono::minutes(10);

double unixSeconds(Clock::Wall t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

std::string failureKey(const std::string& message) {
  auto colon = message.find(": ");
  return colon == std::string::npos ? message : message.substr(0, colon);
}

Agent::Agent(asio::io_context& io, Options options, const Clock& clock, SystemInfo sys)
    : io_(io),
      opts_(std::move(options)),
      clock_(&clock),
      sys_(sys),
      server_(io, HttpLimits{}),
      exporter_(opts_.nodeName, KOORDLET_VERSION),
      failures_(clock, kReminderEvery),
      nodeCollector_(opts_.paths, clock, sys.ticksPerSecond),
      kubelet_(io, kubeletConfig()),
      informer_(io, kubelet_, opts_.kubeletSyncInterval, clock, failures_),
      cache_(MetricCache::Config{opts_.collectResUsedInterval, opts_.metricCacheNodeRetention,
                                 opts_.metricCachePodRetention},
             clock.now()),
      config_(opts_.configFile, opts_.nodeName, opts_.configOverridesNodeslo, clock),
      hookServerTimer_(io),
      podWatchTimer_(io),
      wakeTimer_(io),
      sandboxTimer_(io),
      topologyTimer_(io),
      collectTimer_(io),
      podSyncTimer_(io),
      signals_(io, SIGINT, SIGTERM),
      pauseSignal_(io, SIGUSR2) {}

// The kubelet endpoint: --kubelet-addr, else NODE_IP (downward API status.hostIP),
// else this host. Read-only port over HTTP with --kubelet-insecure-tls, as koordlet;
// otherwise the secure port with the service-account token.
KubeletClientConfig Agent::kubeletConfig() const { return kubeletClientConfig(opts_); }

KubeletClientConfig kubeletClientConfig(const Options& opts_) {
  KubeletClientConfig c;
  c.host = !opts_.kubeletAddr.empty() ? opts_.kubeletAddr
                                      : (!opts_.nodeIp.empty() ? opts_.nodeIp : "127.0.0.1");
  c.useTls = !opts_.kubeletInsecureTls;
  c.port = static_cast<uint16_t>(c.useTls ? opts_.kubeletSecurePort : opts_.kubeletReadOnlyPort);
  if (c.useTls) {
    c.tokenFile = opts_.kubeletTokenFile;
    c.caFile = opts_.kubeletCaFile;
    c.skipVerify = opts_.kubeletSkipTlsVerify;
  }
  c.timeout = opts_.kubeletSyncTimeout;
  return c;
}

Status Agent::start() {
  // A bad config at start is an operator error: refuse to run on a config nobody
  // meant. Later, a bad reload keeps the last good one (pollConfig).
  if (auto st = config_.load(); !st) {
    return makeError(prefixEachLine("--config: ", st.error().message));
  }
  if (!opts_.configFile.empty()) {
    KLOG_INFO << "NodeSLO config loaded from " << opts_.configFile << ": suppress "
              << (config_.current().threshold.enable ? "enabled" : "disabled") << " ("
              << toString(config_.current().threshold.cpuSuppressPolicy) << ", "
              << config_.current().threshold.cpuSuppressThresholdPercent << "%), cpu burst "
              << toString(config_.current().cpuBurst.policy);
  }
  // The flags' reservation now; the Node's annotations replace what the flags do
  // not set once the Node is known (applyNode). Bad flags refuse to start.
  {
    auto r = effectiveNodeReservation(
        {opts_.nodeReservation, opts_.nodeSystemQosResource, std::nullopt, std::nullopt, ""});
    if (!r) return r.error();
    reservation_ = r->reservation;
    reservationSource_ = r->reservationSource + ", " + r->systemQosSource;
  }
  if (auto st = startCluster(); !st) return st;
  if (auto topo = readCpuTopology(opts_.paths)) {
    topology_ = std::move(*topo);
    exporter_.setFeatureSupported("cpu_topology", true);
  } else {
    // Degrade only what needs sysfs: suppress's cpuset policy picks CPUs by core
    // and socket. Burst and cfsQuota suppress need the CPU count, which /proc/stat
    // gives (one cpuN line per online CPU).
    exporter_.setFeatureSupported("cpu_topology", false);
    Result<CpuTopology> ids = makeError("unreadable");
    if (auto text = readFile(opts_.paths.proc("stat"))) {
      if (auto stat = parseProcStat(*text)) ids = cpuTopologyFromIds(stat->cpuIds);
    }
    if (ids) {
      topology_ = std::move(*ids);
      KLOG_WARNING << "CPU topology unreadable (" << topo.error().message
                   << "; is --sys-root-dir the host's /sys?): CPU suppress with policy cpuset "
                      "is off; CPU burst and cfsQuota suppress run on the "
                   << topology_->count() << " CPUs of " << opts_.paths.proc("stat");
    } else {
      KLOG_WARNING << "CPU topology unreadable (" << topo.error().message << ") and no CPU in "
                   << opts_.paths.proc("stat") << ": CPU suppress and burst are off";
    }
  }

  // Running on a host whose cgroups are not where --cgroup-root-dir says: ask
  // libcgroup where they are (koordlet restore does the same).
  {
    std::string said;
    opts_.paths.cgroupRoot = effectiveCgroupRoot(opts_.paths.cgroupRoot, &said);
    if (said.find("found none") != std::string::npos) {
      KLOG_WARNING << said;
    } else if (!said.empty()) {
      KLOG_INFO << said;
    }
  }

  uint64_t bootTime = 0;
  std::string statPath = opts_.paths.proc("stat");
  if (auto text = readFile(statPath)) {
    if (auto stat = parseProcStat(*text)) bootTime = stat->bootTimeSeconds;
  }
  selfCollector_ =
      std::make_unique<SelfCollector>(opts_.paths, sys_.ticksPerSecond, sys_.pageSize, bootTime);

  server_.route("/metrics", [this] { return serveMetrics(); });
  server_.route(
      "/healthz",
      [] {
        return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
      },
      HttpServer::RouteKind::kProbe);
  server_.route(
      "/readyz", [this] { return serveReadyz(); }, HttpServer::RouteKind::kProbe);
  server_.route("/config", [this] { return serveConfig(); });
  server_.routeQuery("/explain", [this](std::string_view q) { return serveExplain(q); });
  if (auto st = server_.listen(opts_.addr); !st) return st;

  exporter_.setStartTime(unixSeconds(clock_->wallNow()));
  exporter_.setKubeletUp(false);
  if (!opts_.kubeletInsecureTls) {
    const bool verify = !opts_.kubeletSkipTlsVerify;
    exporter_.setKubeletTlsVerified(verify);
    if (!verify) {
      // koordlet never verifies; kubelets commonly serve self-signed certificates
      // that name neither 127.0.0.1 nor the cluster CA. Said once.
      KLOG_INFO << "the kubelet's serving certificate is not verified (as koordlet); "
                   "--kubelet-skip-tls-verify=false verifies it against --kubelet-ca-file";
    }
  }
  informer_.onRecord([this](const KubeletRequestRecord& r) {
    exporter_.recordKubeletRequest({r.code, r.seconds, r.failure});
    exporter_.setKubeletUp(r.failure.empty());
    if (wokenSync_) {
      // The wake-up's sync is done (agent_watch.cpp): its round now, whether or not
      // the list changed (a pod's dirs may have appeared after the list that named
      // it). runQos runs only the strategies due or following the pods, so this adds
      // no other round.
      wokenSync_ = false;
      boost::asio::post(io_, [this] {
        if (!stopped_) runQos();
      });
    }
  });
  informer_.onUpdate([this](const std::vector<Pod>& pods) {
    exporter_.setPodCount(pods.size());
    ++podsVersion_;
    if (qos_) qos_->podsChanged();
    if (executor_) executor_->cgroupsMayHaveChanged();  // a gone cgroup may be back
  });
  decideEviction();
  startNri();
  startHookServer();
  checkWritablePaths();  // after the hook server made its socket's dir

  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    KLOG_INFO << "received signal " << sig << ", shutting down";
    stop();
  });
  pauseSignal_.async_wait([this](const boost::system::error_code& ec, int) {
    if (!ec) pause();
  });

  KLOG_INFO << versionLine(KOORDLET_RELEASE, KOORDLET_VERSION) << " serving on " << opts_.addr
            << " (port " << server_.port() << "), node " << opts_.nodeName << ", proc root "
            << opts_.paths.procRoot << ", cgroup root " << opts_.paths.cgroupRoot
            << (opts_.dryRun ? ", dry-run: nothing will be written to the kernel" : "");

  startGpu();
  nextCollect_ = std::chrono::steady_clock::now();
  collectOnce();
  scheduleCollect();
  startTopology();
  if (cluster_) cluster_->start();
  // koordlet: an interval <= 0 disables pod sync entirely.
  if (opts_.kubeletSyncInterval.count() > 0) {
    if (cluster_ && !kubeletHostFromFlags()) {
      // koordlet reaches the kubelet at the Node's address: wait for the Node, but
      // not for ever (an API server down at start must not cost the pods).
      KLOG_INFO << "pod sync waits up to " << kNodeWait.count()
                << " s for the Node's kubelet address (no --kubelet-addr or NODE_IP)";
      podSyncTimer_.expires_after(kNodeWait);
      podSyncTimer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec || stopped_ || podSyncStarted_) return;
        KLOG_WARNING << "no Node " << opts_.nodeName << " after " << kNodeWait.count()
                     << " s: pod sync starts with the kubelet at " << kubelet_.endpoint();
        startPodSync();
      });
    } else {
      startPodSync();
    }
  } else {
    KLOG_WARNING << "--kubelet-sync-interval <= 0: pod sync disabled, pods are unavailable";
  }
  return Ok{};
}

void Agent::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  pauseSignal_.cancel(ignored);
  collectTimer_.cancel();
  informer_.stop();
  podSyncTimer_.cancel();
  topologyTimer_.cancel();
  if (configzClient_) configzClient_->cancel();
  if (cluster_) cluster_->stop();
  server_.stop();
  if (nri_) nri_->stop();
  hookServerTimer_.cancel();
  sandboxTimer_.cancel();
  podWatchTimer_.cancel();
  wakeTimer_.cancel();
  if (podWatchFd_) {
    boost::system::error_code ignored2;
    podWatchFd_->cancel(ignored2);
    podWatchFd_->release();  // podWatch_ closes the fd
  }
  podWatch_.close();
  pendingSandboxes_.clear();  // the reconciler of the next start covers them
  if (hookServer_) hookServer_->stop();
  if (gpuHealth_) gpuHealth_->stop();
}

// Fixed-rate schedule: the next round is due one interval after the previous due
// time, so collection does not drift by its own duration.
void Agent::scheduleCollect() {
  if (stopped_) return;
  auto interval =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(opts_.collectResUsedInterval);
  nextCollect_ += interval;
  auto now = std::chrono::steady_clock::now();
  if (nextCollect_ < now) nextCollect_ = now;  // we fell behind: skip, don't burst
  collectTimer_.expires_at(nextCollect_);
  collectTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    collectOnce();
    scheduleCollect();
  });
}

void Agent::collectOnce() {
  pollConfig();
  collectNode();
  collectPods();
  collectGpu();
  collectResctrl();
  collectNodeInfo();
  runPrediction();
  exporter_.recordCache(cache_.seriesCount(), cache_.bytesUsed());
  runQos();
  publishHookState();
  recordNri();
  recordHookServer();
  trimHeap();
}

void Agent::trimHeap() {
  // Rounds, scrapes, PodList parses and API replies allocate and free megabytes at
  // 500 pods; glibc keeps freed pages in the heap. Giving them back every 10 s keeps
  // RSS near what is live (about 4 MiB less at 500 pods) for well under a millisecond.
  const auto now = clock_->now();
  if (now - lastHeapTrim_ < std::chrono::seconds(10)) return;
  lastHeapTrim_ = now;
  ::malloc_trim(0);
}

void Agent::pollConfig() {
  if (!opts_.configFile.empty()) {
    config_.pollFile();  // logs its own reloads and rejections
  }
  configLastGood_ = config_.lastError().empty();
  exporter_.recordConfig(config_.generation(), config_.rejections(), configLastGood_);
}

void Agent::collectNode() {
  auto begin = clock_->now();
  auto outcome = nodeCollector_.collect();
  double seconds = std::chrono::duration<double>(clock_->now() - begin).count();

  exporter_.recordNode(outcome.sample);
  exporter_.recordCollector("node", seconds, outcome.errors.size());
  if (nodeCollector_.psiSupport() != Support::kUnknown) {
    exporter_.setFeatureSupported("psi", nodeCollector_.psiSupport() == Support::kSupported);
  }
  cacheNode(outcome.sample);

  reportFileErrors("node collector", outcome.errors, nodeFailing_);
  lastNode_ = std::move(outcome.sample);

  if (outcome.complete && !ready_) {
    ready_ = true;
    KLOG_INFO << "first full node collection done: ready";
  }
}

// One streak per file: a file that keeps failing logs once, then a count; a file
// that failed last round and not this one ends its streak with a recovery line.
void Agent::reportFileErrors(const char* collector, const std::vector<Error>& errors,
                             std::set<std::string>& failing) {
  std::set<std::string> now;
  for (const auto& e : errors) {
    std::string key = failureKey(e.message);
    failures_.failure(key, Severity::kError, std::string(collector) + ": " + e.message);
    now.insert(std::move(key));
  }
  for (const auto& key : failing) {
    if (!now.contains(key)) failures_.success(key);
  }
  failing = std::move(now);
}

bool Agent::ensureLayout() {
  if (layout_) return true;
  auto version = detectCgroupVersion(opts_.paths.cgroupRoot);
  Result<CgroupDriver> driver = version ? detectCgroupDriver(opts_.paths.cgroupRoot, *version)
                                        : Result<CgroupDriver>(version.error());
  if (!driver) {
    failures_.failure("cgroup layout", Severity::kWarning,
                      "cgroup layout unknown under " + opts_.paths.cgroupRoot + ": " +
                          driver.error().message + "; pod usage is unavailable until it appears");
    return false;
  }
  failures_.success("cgroup layout");
  layout_.emplace(*version, *driver);
  startQos();
  startPodWatch();
  KLOG_INFO << "cgroup " << toString(*version) << ", driver " << toString(*driver)
            << ", kubepods at " << layout_->kubeRootDir();
  PodCollector::Config config;
  config.cgroupRoot = opts_.paths.cgroupRoot;
  config.psiEnabled = opts_.featureGates.enabled("PSICollector");
  config.psiInterval = opts_.psiCollectorInterval;
  config.nodeStaleness = opts_.collectSysMetricOutdatedInterval;
  // The pod collector keeps its cgroup files open (about 3 per pod and container):
  // the soft limit goes up to the hard one, as Go's runtime raises it for koordlet,
  // and 1024 descriptors stay for everything else.
  const uint64_t fileLimit = raiseOpenFileLimit();
  config.maxOpenFiles = static_cast<size_t>(
      fileLimit <= 2048 ? fileLimit / 2 : std::min<uint64_t>(fileLimit - 1024, 1u << 16));
  podCollector_ = std::make_unique<PodCollector>(config, *layout_, *clock_);
  return true;
}

void Agent::collectPods() {
  if (!ensureLayout()) return;
  collectHostApps();
  auto begin = clock_->now();
  const std::vector<Pod>& pods = informer_.pods();
  auto outcome = podCollector_->collect(pods, lastNode_ ? &*lastNode_ : nullptr);
  double seconds = std::chrono::duration<double>(clock_->now() - begin).count();
  exporter_.recordCollector("pod", seconds, outcome.errors.size());
  if (podCollector_->psiSupport() != Support::kUnknown) {
    exporter_.setFeatureSupported("pod_psi", podCollector_->psiSupport() == Support::kSupported);
  }
  // Vanished cgroups never get here: they are normal.
  reportFileErrors("pod collector", outcome.errors, podFailing_);
  exporter_.recordPods(outcome.sample, podsVersion_);
  cachePods(outcome.sample);
  if (informer_.synced()) ++podRounds_;
}

void Agent::cacheNode(const NodeSample& s) {
  if (s.cpuUsedCores) cache_.append({MetricKind::kNodeCpuCores, "", ""}, s.at, *s.cpuUsedCores);
  if (s.memory) {
    cache_.append({MetricKind::kNodeMemoryBytes, "", ""}, s.at,
                  static_cast<double>(s.memory->usedBytes()));
    // NodeMetric's usageWithPageCache policy (MemTotal - MemFree).
    cache_.append({MetricKind::kNodeMemoryWithPageCacheBytes, "", ""}, s.at,
                  static_cast<double>(s.memory->usedWithPageCacheBytes()));
  }
}

void Agent::cachePods(const PodsSample& s) {
  auto put = [&](MetricKind kind, const std::string& owner, std::optional<double> v) {
    if (v) cache_.append(kind, owner, "", s.at, *v);
  };
  auto putPsi = [&](MetricKind kind, const std::string& owner,
                    const std::array<std::optional<Pressure>, 3>& pressure) {
    for (int r = 0; r < 3; ++r) {
      if (!pressure[r]) continue;
      std::string base = std::string(kPsiResourceNames[r]) + "/";
      cache_.append({kind, owner, base + "some/avg10"}, s.at, pressure[r]->some.avg10);
      if (pressure[r]->full) {
        cache_.append({kind, owner, base + "full/avg10"}, s.at, pressure[r]->full->avg10);
      }
    }
  };
  auto memory = [](const CgroupUsage& u) -> std::optional<double> {
    if (!u.memoryBytes) return std::nullopt;
    return static_cast<double>(*u.memoryBytes);
  };
  for (const PodUsage& pu : s.pods) {
    const std::string& uid = pu.pod->uid;
    put(MetricKind::kPodCpuCores, uid, pu.usage.cpuCores);
    put(MetricKind::kPodMemoryBytes, uid, memory(pu.usage));
    // Kept only while the NodeMetric reports memory with page cache (a series a pod
    // costs the cache otherwise for nothing).
    if (podPageCacheWanted_ && pu.usage.memoryWithPageCacheBytes) {
      cache_.append(MetricKind::kPodMemoryWithPageCacheBytes, uid, "", s.at,
                    static_cast<double>(*pu.usage.memoryWithPageCacheBytes));
    }
    put(MetricKind::kPodCpuThrottledRatio, uid, pu.usage.throttledRatio);
    putPsi(MetricKind::kPodPsi, uid, pu.usage.pressure);
    for (const ContainerUsage& cu : pu.containers) {
      put(MetricKind::kContainerCpuCores, cu.id, cu.usage.cpuCores);
      put(MetricKind::kContainerMemoryBytes, cu.id, memory(cu.usage));
      put(MetricKind::kContainerCpuThrottledRatio, cu.id, cu.usage.throttledRatio);
      putPsi(MetricKind::kContainerPsi, cu.id, cu.usage.pressure);
    }
  }
  // System is what neither pods nor host applications use (koordlet's
  // system_resource_collector): the apps' share comes off.
  auto system = [](std::optional<double> v, double apps) -> std::optional<double> {
    if (!v) return v;
    return std::max(0.0, *v - apps);
  };
  put(MetricKind::kSystemCpuCores, "", system(s.systemCpuCores, hostAppCpuCores_));
  put(MetricKind::kSystemMemoryBytes, "", system(s.systemMemoryBytes, hostAppMemoryBytes_));
  put(MetricKind::kBeCpuUsageMilli, "", s.be.usageMilli);
  put(MetricKind::kBeCpuRequestMilli, "", s.be.requestMilli);
  put(MetricKind::kBeCpuRealLimitMilli, "", s.be.realLimitMilli);
  // Series of pods and containers that are gone are freed now; while the sampled
  // owners stay the same there is nothing to look for.
  if (s.ownersVersion == cachedOwners_ && hostAppOwnersVersion_ == cachedHostApps_) return;
  cachedOwners_ = s.ownersVersion;
  cachedHostApps_ = hostAppOwnersVersion_;
  // Owners seen this round, as views into the sample (it outlives this call).
  std::unordered_set<std::string_view> live;
  for (const PodUsage& pu : s.pods) {
    live.insert(pu.pod->uid);
    for (const ContainerUsage& cu : pu.containers) live.insert(cu.id);
  }
  for (const std::string& owner : hostAppOwners_) live.insert(owner);
  cache_.retainOwnersIf([&](std::string_view o) { return live.contains(o); });
}

}  // namespace koord
