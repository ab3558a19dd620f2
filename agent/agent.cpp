#include "agent/agent.h"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <unordered_set>

#include <boost/asio/post.hpp>

#include "base/read_file.h"
#include "cgroupfs/cgroup_mounts.h"
#include "metrics/proc_parsers.h"
#include "qos/cpu_burst.h"
#include "qos/cpu_suppress.h"
#include "qos/memory_qos.h"
#include "version.h"

namespace koord {

namespace asio = boost::asio;

namespace {

// The node collector's "Last" window in koordlet is 2× the interval; a failure
// that lasts longer than that is worth a reminder line every 10 minutes, no more.
constexpr auto kReminderEvery = std::chrono::minutes(10);

// "<path>: <reason>" -> "<path>", so one failing file is one streak however its
// reason text varies.
std::string failureKey(const std::string& message) {
  auto colon = message.find(": ");
  return colon == std::string::npos ? message : message.substr(0, colon);
}

double unixSeconds(Clock::Wall t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

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
      config_(opts_.configFile, clock),
      collectTimer_(io),
      signals_(io, SIGINT, SIGTERM) {}

// The kubelet endpoint: --kubelet-addr, else NODE_IP (downward API status.hostIP),
// else this host. Read-only port over HTTP with --kubelet-insecure-tls, as koordlet;
// otherwise the secure port with the service-account token.
KubeletClientConfig Agent::kubeletConfig() const {
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
  if (!opts_.nodeReservation.empty()) {
    auto r = parseNodeReservation(opts_.nodeReservation);
    if (!r) return makeError("--node-reservation: " + r.error().message);
    reservation_ = *r;
  }
  if (!opts_.nodeSystemQosResource.empty()) {
    auto cpus = parseSystemQosExclusiveCpus(opts_.nodeSystemQosResource);
    if (!cpus) return makeError("--node-system-qos-resource: " + cpus.error().message);
    reservation_.systemExclusiveCpus = std::move(*cpus);
  }
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
  // libcgroup where they are.
  if (const auto& root = opts_.paths.cgroupRoot; !holdsCgroupHierarchy(root)) {
    if (auto found = findCgroupRootWithLibcgroup()) {
      KLOG_INFO << "no cgroup hierarchy under " << root << "; libcgroup found it at " << *found;
      opts_.paths.cgroupRoot = *found;
    } else {
      KLOG_WARNING << "no cgroup hierarchy under " << root
                   << " and libcgroup found none: " << found.error().message;
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
  server_.route("/healthz", [] { return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}; });
  server_.route("/readyz", [this] { return serveReadyz(); });
  server_.route("/config", [this] { return serveConfig(); });
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
  });
  informer_.onUpdate([this](const std::vector<Pod>& pods) {
    exporter_.setPodCount(pods.size());
    ++podsVersion_;
  });
  startNri();

  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    KLOG_INFO << "received signal " << sig << ", shutting down";
    stop();
  });

  KLOG_INFO << versionLine(KOORDLET_RELEASE, KOORDLET_VERSION) << " serving on " << opts_.addr
            << " (port " << server_.port() << "), node " << opts_.nodeName << ", proc root "
            << opts_.paths.procRoot << ", cgroup root " << opts_.paths.cgroupRoot
            << (opts_.dryRun ? ", dry-run: nothing will be written to the kernel" : "");

  nextCollect_ = std::chrono::steady_clock::now();
  collectOnce();
  scheduleCollect();
  // koordlet: an interval <= 0 disables pod sync entirely.
  if (opts_.kubeletSyncInterval.count() > 0) {
    informer_.start();
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
  collectTimer_.cancel();
  informer_.stop();
  server_.stop();
  if (nri_) nri_->stop();
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
  collectResctrl();
  exporter_.recordCache(cache_.seriesCount(), cache_.bytesUsed());
  runQos();
  publishHookState();
  recordNri();
}

void Agent::pollConfig() {
  if (!opts_.configFile.empty()) {
    if (config_.poll()) KLOG_INFO << "NodeSLO config reloaded from " << opts_.configFile;
    configLastGood_ = config_.lastError().empty();
  }
  exporter_.recordConfig(config_.generation(), config_.reloadErrors(), configLastGood_);
}

QosManagerConfig Agent::qosConfig() const {
  QosManagerConfig qc;
  qc.cgroupRoot = opts_.paths.cgroupRoot;
  qc.pageSize = sys_.pageSize;
  qc.nodeAllocatableMemory = opts_.nodeAllocatableMemory;
  qc.reservation = reservation_;
  qc.cpuManagerPolicy = opts_.kubeletCpuManagerPolicy == "static" ? CpuManagerPolicy::kStatic
                                                                  : CpuManagerPolicy::kNone;
  // CPU burst's share-pool window (koordlet: 5 reconcile intervals, at most 10 s).
  qc.nodeCpuAvgWindow = std::min<std::chrono::nanoseconds>(
      5 * std::chrono::seconds(opts_.reconcileIntervalSeconds), std::chrono::seconds(10));
  return qc;
}

HookGates Agent::hookGates() const {
  const bool reconcile = opts_.reconcileIntervalSeconds > 0;
  HookGates g;
  g.batchResource = opts_.featureGates.enabled("BatchResource");
  g.cpusetAllocator = opts_.featureGates.enabled("CPUSetAllocator");
  g.resctrl = opts_.featureGates.enabled("RdtResctrl");
  g.cpuBurst = opts_.featureGates.enabled("CPUBurst") && reconcile;
  g.cpuSuppress = suppressGate() && opts_.cpuSuppressIntervalSeconds > 0;
  g.memoryQos = opts_.featureGates.enabled("CgroupReconcile") && reconcile;
  g.disableUnsetCpuQuota = opts_.disableUnsetCpuQuota;
  return g;
}

bool Agent::suppressGate() const {
  // Without even the CPU count (neither sysfs nor /proc/stat) suppress has no
  // capacity; burst runs (its share-pool check then holds quotas); memory QoS
  // needs neither.
  return topology_ && opts_.featureGates.enabled("BECPUSuppress");
}

void Agent::startQos() {
  if (executor_ || !layout_) return;
  ExecutorConfig ec;
  ec.cgroupRoot = opts_.paths.cgroupRoot;
  ec.forceUpdate = std::chrono::seconds(std::max(opts_.resourceForceUpdateSeconds, 1));
  ec.dryRun = opts_.dryRun;
  ec.pageSize = sys_.pageSize;
  if (!opts_.auditLogDir.empty()) {
    std::error_code err;
    std::filesystem::create_directories(opts_.auditLogDir, err);
    if (err) {
      KLOG_WARNING << "audit log off: cannot create " << opts_.auditLogDir << ": " << err.message();
    } else {
      ec.auditPath = HostPaths::join(opts_.auditLogDir, "audit.log");
      // The live file and one rotated file share the budget.
      ec.auditMaxBytes =
          static_cast<size_t>(std::max(opts_.auditMaxDiskSpaceMb, 1)) * (1u << 20) / 2;
    }
  }
  const KnobSupport support = KnobSupport::probe(opts_.paths.cgroupRoot, *layout_);
  executor_ = std::make_unique<Executor>(ec, *layout_, support, *clock_, failures_);
  executor_->onWrite([this](const char* status, double millis) {
    exporter_.recordResourceUpdate(status, millis);
  });
  executor_->onRefuse([this](const char* reason) { exporter_.recordResourceRefusal(reason); });
  exporter_.setFeatureSupported("cpu_burst", support.has(Knob::kCpuBurst));
  memoryQosSupported_ = memoryQosSupported(support);
  exporter_.setFeatureSupported("memory_qos", memoryQosSupported_);
  const bool memoryGate = opts_.featureGates.enabled("CgroupReconcile");
  if (memoryGate && !memoryQosSupported_) {
    // koordlet silently writes nothing here; an operator who turned the gate on
    // should hear once why nothing happens.
    KLOG_WARNING << "memory QoS (CgroupReconcile) is on but this kernel has no "
                    "memory.min/memory.low/memory.high (cgroup v1 without Anolis' memcg "
                    "extensions): protection and throttling are not applied"
                 << (opts_.memoryQosV1SoftLimit
                         ? "; BE pods get memory.soft_limit_in_bytes instead "
                           "(--memory-qos-v1-soft-limit)"
                         : "; --memory-qos-v1-soft-limit offers a soft-limit fallback for BE");
  }

  qos_ = std::make_unique<QosManager>(qosConfig(), *layout_, topology_ ? *topology_ : CpuTopology{},
                                      *executor_, *clock_);
  // The strategies, one line each, in the order they run.
  const auto reconcile = std::chrono::seconds(opts_.reconcileIntervalSeconds);
  const bool burstGate = opts_.featureGates.enabled("CPUBurst");
  const HookGates hooks = hookGates();
  qos_->add(std::make_unique<CpuSuppressStrategy>(
      std::chrono::seconds(opts_.cpuSuppressIntervalSeconds), suppressGate()));
  qos_->add(std::make_unique<CpuBurstStrategy>(
      reconcile, burstGate, static_cast<uint32_t>(clock_->now().time_since_epoch().count())));
  qos_->add(std::make_unique<MemoryQosStrategy>(reconcile, memoryGate, *layout_,
                                                opts_.memoryQosV1SoftLimit));
  // The runtime hooks' reconciler: what NRI would have set, for containers it missed.
  qos_->add(std::make_unique<HookReconcileStrategy>(reconcile, hooks));
  KLOG_INFO << "QoS manager: CPU suppress " << (suppressGate() ? "gate on" : "gate off")
            << " every " << opts_.cpuSuppressIntervalSeconds << "s, CPU burst "
            << (burstGate ? "gate on" : "gate off") << " every " << opts_.reconcileIntervalSeconds
            << "s, memory QoS " << (memoryGate ? "gate on" : "gate off") << ", runtime hooks "
            << (hooks.batchResource || hooks.cpusetAllocator ? "on" : "off") << ", "
            << (!topology_ ? std::string("no CPU count")
                           : std::to_string(topology_->count()) + " CPUs" +
                                 (topology_->placement ? "" : " (ids only, from /proc/stat)"))
            << (opts_.dryRun ? ", dry-run" : "");

  resctrl::ResctrlManagerConfig rc;
  rc.paths = opts_.paths;
  rc.interval = std::chrono::seconds(opts_.reconcileIntervalSeconds);
  rc.gate = opts_.featureGates.enabled("RdtResctrl");
  rc.allowMount = opts_.resctrlMount;
  rc.stateFile = opts_.resctrlStateFile.empty() ? opts_.paths.varRun("koordlet/resctrl-groups")
                                                : opts_.resctrlStateFile;
  rc.adoptGroups = opts_.resctrlAdoptGroups;
  rc.dryRun = opts_.dryRun;
  resctrl_ = std::make_unique<resctrl::ResctrlManager>(rc, *layout_, *clock_, failures_);
}

void Agent::runQos() {
  if (!qos_) return;
  // Until the kubelet has answered once, the pod list is empty, not known: a
  // strategy would read "no pods" and recover or suppress on nothing.
  if (!informer_.synced()) return;
  // Pod CPU rates need two collections of a pod's counter. Before that every pod's
  // usage would count as system usage and suppress would throttle BE to its floor
  // at each agent restart; so the strategies wait for two rounds with pods.
  if (podRounds_ < 2) return;
  if (opts_.nodeAllocatableMemory <= 0 && lastNode_ && lastNode_->memory) {
    qos_->setNodeAllocatableMemory(static_cast<int64_t>(lastNode_->memory->memTotalBytes));
  }
  const NodeSloSpec& spec = config_.current();
  QosRound round = qos_->runDue(informer_.pods(), cache_, spec);
  // Every strategy that ran: its duration, and its problems once per streak.
  for (const StrategyReport& r : round.ran) {
    exporter_.recordStrategy(r.name, r.seconds);
    for (const std::string& e : r.errors) {
      failures_.failure(r.name + " " + failureKey(e), Severity::kWarning, e);
    }
  }
  // The strategies' own metrics.
  if (const auto* r = round.result<SuppressResult>(CpuSuppressStrategy::kName)) {
    // It ran, so its gate is on: NodeSLO's enable decides whether it suppresses.
    exporter_.recordSuppress(spec.threshold.enable, toString(r->policy), r->suppressCores,
                             r->lsUsedCores, r->beUsedCores);
    KLOG_V(4) << "cpu suppress: " << (r->skipped.empty() ? "applied" : r->skipped) << ", "
              << r->writes.size() << " intended writes";
  }
  if (const auto* r = round.result<BurstResult>(CpuBurstStrategy::kName)) {
    for (const BurstMetric& m : r->metrics) {
      exporter_.recordScaledCfs(
          {m.pod->ns, m.pod->name, m.containerId, m.container->name, m.burstUs, m.quotaUs});
    }
    exporter_.endBurstRound();
  }
  runResctrl();
}

void Agent::runResctrl() {
  if (!resctrl_) return;
  resctrl::ResctrlRound round = resctrl_->runDue(informer_.pods(), config_.current().qos);
  if (!round.ran) return;
  if (auto supported = resctrl_->supported()) {
    exporter_.setFeatureSupported("resctrl", *supported);
  }
  if (round.seconds) exporter_.recordStrategy("resctrl", *round.seconds);
  const resctrl::WriterStats& w = round.writes;
  const std::tuple<const char*, const char*, uint64_t> counts[] = {
      {"group", "created", w.groupsCreated},      {"group", "refused", w.groupsRefused},
      {"schemata", "written", w.schemataWritten}, {"schemata", "unchanged", w.schemataUnchanged},
      {"schemata", "failed", w.schemataFailed},   {"tasks", "written", w.tasksWritten},
      {"tasks", "vanished", w.tasksVanished},     {"tasks", "failed", w.tasksFailed}};
  for (const auto& [kind, status, n] : counts) exporter_.recordResctrlWrites(kind, status, n);
  for (const std::string& e : round.errors) {
    failures_.failure("resctrl " + failureKey(e), Severity::kWarning, "resctrl: " + e);
  }
}

// Monitoring of our resctrl groups (gate ResctrlCollector), each collection round.
void Agent::collectResctrl() {
  if (!resctrl_ || !opts_.featureGates.enabled("ResctrlCollector")) return;
  if (resctrl_->status() != resctrl::ResctrlStatus::kReady) return;
  const auto begin = clock_->now();
  resctrl::MonRead read = resctrl_->collect();
  std::vector<Exporter::ResctrlMon> mon;
  mon.reserve(read.samples.size());
  for (const resctrl::MonSample& m : read.samples) {
    mon.push_back({m.group, m.cacheId, m.llcOccupancy, m.mbmLocalBytes, m.mbmTotalBytes});
  }
  exporter_.recordResctrlMon(mon);
  exporter_.recordCollector("resctrl", std::chrono::duration<double>(clock_->now() - begin).count(),
                            read.errors.size());
  std::vector<Error> errors;
  for (std::string& e : read.errors) errors.push_back(makeError(std::move(e)));
  reportFileErrors("resctrl collector", errors, resctrlFailing_);
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
  KLOG_INFO << "cgroup " << toString(*version) << ", driver " << toString(*driver)
            << ", kubepods at " << layout_->kubeRootDir();
  PodCollector::Config config;
  config.cgroupRoot = opts_.paths.cgroupRoot;
  config.psiEnabled = opts_.featureGates.enabled("PSICollector");
  config.psiInterval = opts_.psiCollectorInterval;
  config.nodeStaleness = opts_.collectSysMetricOutdatedInterval;
  podCollector_ = std::make_unique<PodCollector>(config, *layout_, *clock_);
  return true;
}

void Agent::collectPods() {
  if (!ensureLayout()) return;
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
  exporter_.recordPods(outcome.sample);
  cachePods(outcome.sample);
  if (informer_.synced()) ++podRounds_;
}

void Agent::cacheNode(const NodeSample& s) {
  if (s.cpuUsedCores) cache_.append({MetricKind::kNodeCpuCores, "", ""}, s.at, *s.cpuUsedCores);
  if (s.memory) {
    cache_.append({MetricKind::kNodeMemoryBytes, "", ""}, s.at,
                  static_cast<double>(s.memory->usedBytes()));
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
  // Owners seen this round, as views into the sample (it outlives this call).
  std::unordered_set<std::string_view> live;
  for (const PodUsage& pu : s.pods) {
    const std::string& uid = pu.pod->uid;
    live.insert(uid);
    put(MetricKind::kPodCpuCores, uid, pu.usage.cpuCores);
    put(MetricKind::kPodMemoryBytes, uid, memory(pu.usage));
    put(MetricKind::kPodCpuThrottledRatio, uid, pu.usage.throttledRatio);
    putPsi(MetricKind::kPodPsi, uid, pu.usage.pressure);
    for (const ContainerUsage& cu : pu.containers) {
      live.insert(cu.id);
      put(MetricKind::kContainerCpuCores, cu.id, cu.usage.cpuCores);
      put(MetricKind::kContainerMemoryBytes, cu.id, memory(cu.usage));
      put(MetricKind::kContainerCpuThrottledRatio, cu.id, cu.usage.throttledRatio);
      putPsi(MetricKind::kContainerPsi, cu.id, cu.usage.pressure);
    }
  }
  put(MetricKind::kSystemCpuCores, "", s.systemCpuCores);
  put(MetricKind::kSystemMemoryBytes, "", s.systemMemoryBytes);
  put(MetricKind::kBeCpuUsageMilli, "", s.be.usageMilli);
  put(MetricKind::kBeCpuRequestMilli, "", s.be.requestMilli);
  put(MetricKind::kBeCpuRealLimitMilli, "", s.be.realLimitMilli);
  // Series of pods and containers that are gone are freed now.
  cache_.retainOwnersIf([&](std::string_view o) { return live.contains(o); });
}

HttpResponse Agent::serveMetrics() {
  if (auto self = selfCollector_->collect()) {
    exporter_.recordSelf(*self);
  } else {
    failures_.failure("self", Severity::kWarning, "self collector: " + self.error().message);
  }
  const HttpStats& http = server_.stats();
  exporter_.recordHttp({http.connectionsOpen, http.timeouts, http.rejectedTooLarge,
                        http.badRequests, http.requests});
  recordNri();  // the connection changes on its own thread: read it as of this scrape
  return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", exporter_.render()};
}

// GET /config: the effective NodeSLO config (defaults merged with --config), the
// feature gates (enabled, implemented), the flags set that have no effect and what
// the QoS manager runs, as JSON.
HttpResponse Agent::serveConfig() const {
  nlohmann::json j = config_.toJson();
  j.update(settingsJson(opts_));  // featureGates, flagsWithoutEffect
  const auto& spec = config_.current();
  nlohmann::json strategies;
  strategies["cpuSuppress"] = {
      {"running", qos_ != nullptr && opts_.cpuSuppressIntervalSeconds > 0 &&
                      opts_.featureGates.enabled("BECPUSuppress") && spec.threshold.enable},
      {"intervalSeconds", opts_.cpuSuppressIntervalSeconds}};
  strategies["cpuBurst"] = {{"running", qos_ != nullptr && opts_.reconcileIntervalSeconds > 0 &&
                                            opts_.featureGates.enabled("CPUBurst")},
                            {"intervalSeconds", opts_.reconcileIntervalSeconds}};
  strategies["memoryQos"] = {{"running", qos_ != nullptr && opts_.reconcileIntervalSeconds > 0 &&
                                             opts_.featureGates.enabled("CgroupReconcile")},
                             {"kernelSupported", memoryQosSupported_},
                             {"v1SoftLimitFallback", opts_.memoryQosV1SoftLimit},
                             {"intervalSeconds", opts_.reconcileIntervalSeconds}};
  strategies["resctrl"] = {
      {"running", resctrl_ != nullptr && opts_.reconcileIntervalSeconds > 0 &&
                      opts_.featureGates.enabled("RdtResctrl")},
      {"status", !resctrl_ || !resctrl_->supported() ? "not checked yet"
                                                     : resctrl::statusName(resctrl_->status())},
      {"intervalSeconds", opts_.reconcileIntervalSeconds}};
  strategies["nri"] = {{"enabled", opts_.enableNriRuntimeHook},
                       {"state", nri_ ? nri::toString(nri_->status().state) : "stopped"},
                       {"failurePolicy", opts_.runtimeHooksPluginFailurePolicy},
                       {"launched", opts_.nriLaunchedFd.has_value()}};
  j["strategies"] = std::move(strategies);
  j["dryRun"] = opts_.dryRun;
  return HttpResponse{200, "application/json", j.dump(2) + "\n"};
}

// /readyz turns 200 after the first full node collection. Its body states each
// part; parts that are optional (kubelet, NRI, PSI) never make it 503.
HttpResponse Agent::serveReadyz() const {
  std::ostringstream body;
  body << (ready_ ? "ready" : "not ready: waiting for the first full node collection") << "\n";
  body << "node collector: " << (ready_ ? "ok" : "pending") << "\n";
  body << "psi: ";
  switch (nodeCollector_.psiSupport()) {
    case Support::kSupported:
      body << "supported\n";
      break;
    case Support::kUnsupported:
      body << "unsupported (" << nodeCollector_.psiReason() << ")\n";
      break;
    case Support::kUnknown:
      body << "unknown\n";
      break;
  }
  body << "kubelet " << kubelet_.endpoint() << ": ";
  if (opts_.kubeletSyncInterval.count() <= 0) {
    body << "pod sync disabled\n";
  } else if (informer_.lastOk()) {
    body << "ok, " << informer_.pods().size() << " pods\n";
  } else if (informer_.synced()) {
    body << "failing (" << informer_.lastError() << "), keeping " << informer_.pods().size()
         << " pods from the last good list\n";
  } else {
    body << "unreachable ("
         << (informer_.lastError().empty() ? "no reply yet" : informer_.lastError())
         << "), pods unavailable\n";
  }
  body << "cgroup layout: "
       << (layout_ ? std::string(toString(layout_->version())) + ", " + toString(layout_->driver())
                   : std::string("unknown (no kubepods tree yet)"))
       << "\n";
  body << "config: "
       << (opts_.configFile.empty()
               ? std::string("defaults (no --config)")
               : opts_.configFile + ", generation " + std::to_string(config_.generation()) +
                     (config_.lastError().empty()
                          ? std::string()
                          : ", last reload rejected (" + config_.lastError() + ")"))
       << "\n";
  body << "qos: "
       << (qos_ ? std::string("running") + (opts_.dryRun ? " (dry-run)" : "") +
                      (!topology_             ? ", CPU suppress off (no CPU count)"
                       : !topology_->placement ? ", CPU suppress policy cpuset off (no sysfs "
                                                 "CPU topology)"
                                               : "")
                : std::string("waiting for the cgroup layout"))
       << "\n";
  if (qos_) {
    body << "memory qos: "
         << (!opts_.featureGates.enabled("CgroupReconcile") ? "gate CgroupReconcile off"
             : memoryQosSupported_                          ? "on"
             : opts_.memoryQosV1SoftLimit
                 ? "kernel lacks memory.min/low/high; v1 soft-limit fallback"
                 : "kernel lacks memory.min/low/high: nothing applied")
         << "\n";
  }
  if (resctrl_) {
    body << "resctrl: "
         << (!opts_.featureGates.enabled("RdtResctrl") ? "gate RdtResctrl off"
             : !resctrl_->supported()                  ? "not checked yet"
                                                       : resctrl::statusName(resctrl_->status()))
         << "\n";
  }
  // NRI is optional: its state is reported, never a reason for 503.
  body << "nri: " << nriSummary() << "\n";
  return HttpResponse{ready_ ? 200u : 503u, "text/plain; charset=utf-8", body.str()};
}

}  // namespace koord

namespace koord {

namespace {

// The exporter's histogram behind the hooks' timing interface.
class ExporterHookRecorder final : public nri::HookRecorder {
 public:
  explicit ExporterHookRecorder(Exporter& e) : exporter_(&e) {}
  void record(std::string_view hook, std::string_view stage, bool ok, double millis) override {
    exporter_->recordRuntimeHook(hook, stage, ok, millis);
  }

 private:
  Exporter* exporter_;
};

}  // namespace

void Agent::startNri() {
  if (!opts_.enableNriRuntimeHook) {
    KLOG_INFO << "NRI plugin disabled (--enable-nri-runtime-hook=false)";
    return;
  }
  publishHookState();
  hookRecorder_ = std::make_unique<ExporterHookRecorder>(exporter_);
  nri::FailurePolicy policy = nri::FailurePolicy::kIgnore;
  if (auto p = nri::parseFailurePolicy(opts_.runtimeHooksPluginFailurePolicy)) policy = *p;
  nriHooks_ = std::make_unique<nri::NriHooks>(hookState_, hookRecorder_.get(), policy);

  nri::NriClientConfig c;
  // Joined to --var-run-root-dir whatever its form, as koordlet does (the host's
  // /var/run is mounted at the var-run root in the DaemonSet).
  c.socketPath = opts_.paths.varRun(opts_.runtimeHooksNriSocketPath);
  c.launchedFd = opts_.nriLaunchedFd;
  c.session.pluginName = opts_.runtimeHooksNriPluginName;
  c.session.pluginIndex = opts_.runtimeHooksNriPluginIndex;
  c.backoff.initial = opts_.runtimeHooksNriBackoffDuration;
  c.backoff.factor = opts_.runtimeHooksNriBackoffFactor;
  c.backoff.cap = opts_.runtimeHooksNriBackoffCap;
  c.healthyAfter = opts_.runtimeHooksNriConnectTimeout;
  nri_ = std::make_unique<nri::NriClient>(c, *nriHooks_);
  if (opts_.nriLaunchedFd) {
    // Launched by the runtime: when it closes our socket there is nothing to
    // reconnect to (it will start a new copy), so the agent exits as the Go stub does.
    nri_->onLaunchedEof([this] {
      asio::post(io_, [this] {
        KLOG_INFO << "NRI: the runtime closed the plugin socket (launched mode), shutting down";
        stop();
      });
    });
  }
  nri_->start();
  KLOG_INFO << "NRI plugin " << opts_.runtimeHooksNriPluginIndex << "-"
            << opts_.runtimeHooksNriPluginName << " "
            << (opts_.nriLaunchedFd
                    ? "on fd " + std::to_string(*opts_.nriLaunchedFd) + " (launched by the runtime)"
                    : "connecting to " + c.socketPath)
            << ", failure policy " << opts_.runtimeHooksPluginFailurePolicy;
  recordNri();
}

HookContext Agent::hookContext() const {
  if (qos_) return koord::hookContext(hookGates(), config_.current(), qos_->node());
  // Before the cgroup layout is known the QoS manager does not exist; the hooks
  // still answer, from the same config (no unified v2 values, no resctrl class:
  // neither the cgroup version nor resctrl is known yet).
  return baseHookContext(hookGates(), config_.current(), sys_.pageSize,
                         opts_.nodeAllocatableMemory);
}

void Agent::publishHookState() {
  if (!opts_.enableNriRuntimeHook) return;
  HookInputs in;
  in.podsVersion = podsVersion_;
  in.configGeneration = config_.generation();
  in.layoutKnown = layout_.has_value();
  in.resctrlReady = resctrl_ && resctrl_->status() == resctrl::ResctrlStatus::kReady;
  in.nodeAllocatableMemory = qos_ ? qos_->node().nodeAllocatableMemory : 0;
  if (hookInputs_ && *hookInputs_ == in) return;  // nothing a hook reads changed
  hookInputs_ = in;
  if (qos_) qos_->setResctrlReady(in.resctrlReady);
  auto state = std::make_shared<nri::HookState>();
  state->spec = config_.current();
  state->context = hookContext();
  for (const Pod& p : informer_.pods()) state->podsByUid.emplace(p.uid, p);
  hookState_.publish(std::move(state));
}

void Agent::recordNri() {
  if (!nri_) {
    exporter_.recordNri(false, "stopped", 0, 0, 0);
    exporter_.recordNriLimitCloses(0, 0);
    return;
  }
  nri::NriStatus st = nri_->status();
  exporter_.recordNri(true, nri::toString(st.state), st.attempts, st.connects, st.disconnects);
  exporter_.recordNriLimitCloses(st.writeQueueOverflows, st.syncRefusals);
}

std::string Agent::nriSummary() const {
  if (!opts_.enableNriRuntimeHook) return "disabled";
  if (!nri_) return "not started";
  nri::NriStatus st = nri_->status();
  std::ostringstream out;
  switch (st.state) {
    case nri::NriState::kConnected: {
      char events[16];
      std::snprintf(events, sizeof events, "0x%x", static_cast<unsigned>(st.events));
      out << "connected to " << (st.runtimeName.empty() ? "runtime" : st.runtimeName) << " "
          << st.runtimeVersion << ", events " << events;
      break;
    }
    case nri::NriState::kWaiting:
      out << "not connected (" << (st.lastError.empty() ? "no attempt yet" : st.lastError)
          << "), retrying in "
          << std::chrono::duration_cast<std::chrono::milliseconds>(st.nextRetryIn).count() << "ms";
      break;
    default:
      out << nri::toString(st.state)
          << (st.lastError.empty() ? "" : " (last error: " + st.lastError + ")");
  }
  out << "; " << st.connects << " connects, " << st.disconnects << " disconnects";
  return out.str();
}

}  // namespace koord
