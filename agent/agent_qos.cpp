// The agent's QoS side: the executor and the QoS manager with its registered
// strategies (started once the cgroup layout is known), their round after each
// collection, and the resctrl loop and its monitoring.
#include "agent/agent.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <unordered_set>

#include <boost/asio/post.hpp>

#include "base/read_file.h"
#include "base/time_format.h"
#include "cgroupfs/cgroup_mounts.h"
#include "cgroupfs/cgroup_parsers.h"
#include "cgroupfs/cpu_weight.h"
#include "cgroupfs/oom_score_adj_writer.h"
#include "metrics/proc_parsers.h"
#include "qos/cpu_burst.h"
#include "qos/cpu_suppress.h"
#include "qos/cpu_weight_probe.h"
#include "qos/group_identity.h"
#include "qos/host_app_cpuset.h"
#include "qos/memory_qos.h"
#include "qos/node_overrides.h"
#include "version.h"

namespace koord {

QosManagerConfig Agent::qosConfig() const {
  QosManagerConfig qc;
  qc.cgroupRoot = opts_.paths.cgroupRoot;
  qc.pageSize = sys_.pageSize;
  qc.nodeAllocatableMemory = opts_.nodeAllocatableMemory;
  qc.reservation = reservation_;
  // The kubelet's /configz when it has answered, else --kubelet-cpu-manager-policy.
  const std::string& policy =
      kubeletCpu_ ? kubeletCpu_->cpuManagerPolicy : opts_.kubeletCpuManagerPolicy;
  qc.cpuManagerPolicy = policy == "static" ? CpuManagerPolicy::kStatic : CpuManagerPolicy::kNone;
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
  g.gpuEnvInject = opts_.featureGates.enabled("GPUEnvInject");
  g.oomScoreAdj = opts_.featureGates.enabled("OOMScoreAdj");
  return g;
}

bool Agent::suppressGate() const {
  // Without even the CPU count (neither sysfs nor /proc/stat) suppress has no
  // capacity; burst runs (its share-pool check then holds quotas); memory QoS
  // needs neither.
  return topology_ && opts_.featureGates.enabled("BECPUSuppress");
}

ExecutorConfig executorConfig(const Options& opts, int64_t pageSize) {
  ExecutorConfig ec;
  ec.cgroupRoot = opts.paths.cgroupRoot;
  ec.forceUpdate = std::chrono::seconds(std::max(opts.resourceForceUpdateSeconds, 1));
  ec.verify = std::chrono::seconds(std::max(opts.resourceVerifySeconds, 0));
  ec.dryRun = opts.dryRun;
  ec.pageSize = pageSize;
  if (!opts.auditLogDir.empty()) {
    std::error_code err;
    std::filesystem::create_directories(opts.auditLogDir, err);
    if (err) {
      KLOG_WARNING << "audit log off: cannot create " << opts.auditLogDir << ": " << err.message();
    } else {
      ec.auditPath = HostPaths::join(opts.auditLogDir, "audit.log");
      // The live file and one rotated file share the budget.
      ec.auditMaxBytes =
          static_cast<size_t>(std::max(opts.auditMaxDiskSpaceMb, 1)) * (1u << 20) / 2;
    }
  }
  return ec;
}

std::string resctrlStateFile(const Options& opts) {
  if (!opts.resctrlStateFile.empty()) return opts.resctrlStateFile;
  // In a pod, koordlet's DaemonSet mounts the host's /var/run read-only and its
  // /var/run/koordlet writable at /host-var-run-koordlet/ (the hook server's socket).
  return opts.hostMode ? opts.paths.varRun("koordlet/resctrl-groups")
                       : "/host-var-run-koordlet/resctrl-groups";
}

void Agent::startQos() {
  if (executor_ || !layout_) return;
  const ExecutorConfig ec = executorConfig(opts_, sys_.pageSize);
  // The evictions' lines go to the executor's audit log too.
  if (!ec.auditPath.empty()) audit_.emplace(ec.auditPath, ec.auditMaxBytes);
  const KnobSupport support = KnobSupport::probe(opts_.paths.cgroupRoot, *layout_);
  executor_ = std::make_unique<Executor>(ec, *layout_, support, *clock_, failures_);
  executor_->onWrite([this](const char* status, double millis) {
    exporter_.recordResourceUpdate(status, millis);
  });
  executor_->onRefuse([this](const char* reason) { exporter_.recordResourceRefusal(reason); });
  executor_->onDrift([this](const char* knob) { exporter_.recordResourceDrift(knob); });
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

  if (auto fixed = cpuWeightConversionFrom(opts_.cpuWeightConversion)) {
    executor_->setCpuWeightConversion(*fixed);
    cpuWeightKnown_ = true;
    cpuWeightSource_ = "--cpu-weight-conversion";
  }

  qos_ = std::make_unique<QosManager>(qosConfig(), *layout_, topology_ ? *topology_ : CpuTopology{},
                                      *executor_, *clock_);
  qos_->mutableNode().cpusetRule = cpusetRule_;  // the share pools, once computed
  qos_->mutableNode().cpuNormalizationRatio = cpuNormalizationRatio_;
  qos_->mutableNode().cpuNormalization = opts_.featureGates.enabled("CPUNormalization");
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
  qos_->add(std::make_unique<HookReconcileStrategy>(opts_.runtimeHooksReconcileInterval, hooks));
  // LS host applications run on the LS share pools (CPUSetAllocator).
  qos_->add(std::make_unique<HostAppCpusetStrategy>(opts_.runtimeHooksReconcileInterval,
                                                    opts_.featureGates.enabled("CPUSetAllocator"),
                                                    *layout_));
  // GroupIdentity: bvt on the kernels that have it (Alibaba Cloud Linux / Anolis).
  const bool bvtGate = opts_.featureGates.enabled("GroupIdentity");
  exporter_.setFeatureSupported("group_identity", support.has(Knob::kCpuBvtWarpNs));
  if (bvtGate && support.has(Knob::kCpuBvtWarpNs)) {
    qos_->add(std::make_unique<GroupIdentityStrategy>(opts_.runtimeHooksReconcileInterval, true,
                                                      *layout_));
    groupIdentity_ = true;
  } else if (bvtGate) {
    KLOG_INFO << "GroupIdentity: this kernel has no cpu.bvt_warp_ns under "
              << layout_->kubeRootDir()
              << " (only Alibaba Cloud Linux / Anolis kernels do): nothing to write, "
                 "koordlet_feature_supported{feature=\"group_identity\"} 0";
  }
  startEviction();  // the eviction strategies, when they can evict
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
  rc.stateFile = resctrlStateFile(opts_);
  rc.adoptGroups = opts_.resctrlAdoptGroups;
  rc.dryRun = opts_.dryRun;
  resctrl_ = std::make_unique<resctrl::ResctrlManager>(rc, *layout_, *clock_, failures_);
}

// GroupIdentity's kernel switch (qos/group_identity.h): on when the rule is, before
// the round's bvt writes take effect; each change logged and audited.
void Agent::switchGroupIdentity(const NodeSloSpec& spec) {
  auto read = [&](const char* name) -> std::optional<int64_t> {
    auto text = readFile(opts_.paths.proc(std::string("sys/kernel/") + name), 64);
    if (!text) return std::nullopt;
    auto n = parseSingleInt(*text);
    return n ? std::optional<int64_t>(*n) : std::nullopt;
  };
  const SysctlValues current{read("sched_group_identity_enabled"), read("sched_core")};
  const auto plan = groupIdentitySysctls(bvtRule(spec), current);
  // Under --dry-run nothing changes, so the same plan comes every round: said once.
  if (opts_.dryRun) {
    if (plan == lastSysctlPlan_) return;
    lastSysctlPlan_ = plan;
  }
  for (const auto& [name, value] : plan) {
    const std::string path = opts_.paths.proc("sys/kernel/" + name);
    std::string result = "dry_run";
    if (!opts_.dryRun) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      const std::string text = std::to_string(value);
      const bool ok =
          fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      const int err = errno;
      if (fd >= 0) ::close(fd);
      result = ok ? "written" : std::string("failed: ") + std::strerror(err);
      if (!ok) {
        // EROFS: the runtime mounts /proc/sys read-only in an unprivileged container
        // (koordlet's pod is privileged); said so, with the two ways out.
        const std::string hint =
            err == EROFS ? " (/proc/sys is read-only in this container: set kernel." + name + "=" +
                               std::to_string(value) +
                               " on the host, or run the pod privileged; bvt values may not "
                               "take effect)"
                         : " (bvt values may not take effect)";
        failures_.failure("group identity sysctl " + name, Severity::kWarning,
                          "GroupIdentity: cannot write " + std::to_string(value) + " to " + path +
                              ": " + std::strerror(err) + hint);
        break;  // koordlet abandons the rule update when a switch fails
      }
      failures_.success("group identity sysctl " + name);
    }
    KLOG_INFO << "GroupIdentity: " << path << " = " << value << " (" << result << ")";
    if (audit_) {
      (void)audit_->append(nlohmann::json{
          {"ts", rfc3339Millis(clock_->wallNow())},
          {"sysctl", path},
          {"value", value},
          {"owner", kOwnerGroupIdentity},
          {"result", result}}.dump());
    }
  }
}

void Agent::pause() {
  if (paused_) return;
  paused_ = true;
  KLOG_WARNING << "paused by koordlet restore (SIGUSR2): no cgroup, resctrl or eviction writes "
                  "and no hook settings until this agent restarts";
  exporter_.setPaused(true);
  publishHookState();
}

void Agent::runQos() {
  if (!qos_ || paused_) return;
  // Until the kubelet has answered once, the pod list is empty, not known: a
  // strategy would read "no pods" and recover or suppress on nothing.
  if (!informer_.synced()) return;
  // Pod CPU rates need two collections of a pod's counter. Before that every pod's
  // usage would count as system usage and suppress would throttle BE to its floor
  // at each agent restart; so the strategies wait for two rounds with pods.
  if (podRounds_ < 2) return;
  {
    // --node-allocatable-memory, else the Node's allocatable, else MemTotal.
    const int64_t memTotal =
        lastNode_ && lastNode_->memory ? static_cast<int64_t>(lastNode_->memory->memTotalBytes) : 0;
    auto mem = chooseAllocatableMemory(
        opts_.nodeAllocatableMemory,
        nodeInfo_ ? nodeInfo_->allocatable.memoryBytes : std::optional<int64_t>(), memTotal);
    if (mem.value > 0) qos_->setNodeAllocatableMemory(mem.value);
    allocatableSource_ = mem.source;
  }
  const NodeSloSpec& spec = config_.current();
  {
    // The host applications' own cgroups are the only dirs outside kubepods the
    // executor writes (GroupIdentity's bvt), exactly those the NodeSLO names.
    std::vector<std::string> hostAppDirs;
    for (const HostApplication& app : spec.hostApplications) {
      if (std::string dir = hostAppCgroupDir(app, *layout_); !dir.empty()) {
        hostAppDirs.push_back(std::move(dir));
      }
    }
    executor_->allowOutside(std::move(hostAppDirs));
  }
  if (groupIdentity_) switchGroupIdentity(spec);
  learnCpuWeightConversion();
  updateEvictionFacts();
  QosRound round = qos_->runDue(informer_.pods(), cache_, spec, &evictionLedger_);
  handleEvictions(round);
  // Every strategy that ran: its duration, and its problems once per streak.
  for (const StrategyReport& r : round.ran) {
    exporter_.recordStrategy(r.name, r.seconds);
    ++strategyRuns_[r.name];
    for (const std::string& e : r.errors) {
      failures_.failure(r.name + " " + failureKey(e), Severity::kWarning, e);
    }
  }
  // The strategies' own metrics.
  if (const auto* r = round.result<SuppressResult>(CpuSuppressStrategy::kName)) {
    // It ran, so its gate is on: NodeSLO's enable decides whether it suppresses.
    std::optional<double> threshold;
    if (topology_) {
      threshold = static_cast<double>(topology_->count()) *
                  static_cast<double>(spec.threshold.cpuSuppressThresholdPercent) / 100;
    }
    exporter_.recordSuppress(spec.threshold.enable, toString(r->policy), r->suppressCores,
                             r->lsUsedCores, r->beUsedCores, threshold);
    // Said when the outcome changes: at the chart's --v=4, not once a second.
    std::string outcome = (r->skipped.empty() ? "applied" : r->skipped) + ", " +
                          std::to_string(r->writes.size()) + " intended writes";
    if (outcome != lastSuppressLog_) {
      KLOG_V(4) << "cpu suppress: " << outcome;
      lastSuppressLog_ = std::move(outcome);
    }
  }
  if (const auto* r = round.result<BurstResult>(CpuBurstStrategy::kName)) {
    for (const BurstMetric& m : r->metrics) {
      exporter_.recordScaledCfs(
          {m.pod->ns, m.pod->name, m.containerId, m.container->name, m.burstUs, m.quotaUs});
    }
    exporter_.endBurstRound();
  }
  if (const auto* r = round.result<HookReconcileResult>(HookReconcileStrategy::kName)) {
    for (const HookReconcileTiming& t : r->timings) {
      exporter_.recordHookReconciler(t.level, t.resourceType, t.ok, t.millis);
    }
    applyOomScoreAdj(r->oomScoreAdj);
  }
  runResctrl();
}

void Agent::runResctrl() {
  if (!resctrl_ || paused_) return;
  resctrl::ResctrlRound round = resctrl_->runDue(informer_.pods(), config_.current().qos);
  if (!round.ran) return;
  if (auto supported = resctrl_->supported()) {
    exporter_.setFeatureSupported("resctrl", *supported);
  }
  if (round.seconds) {
    exporter_.recordStrategy("resctrl", *round.seconds);
    ++strategyRuns_["resctrl"];
  }
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

// The runtime converts the kubelet's shares into cpu.weight itself (runc's systemd and
// fs2 drivers); the agent writes BE pods' weights the same way once it has seen how
// (qos/cpu_weight_probe.h). A few files a round, none once known.
void Agent::learnCpuWeightConversion() {
  if (cpuWeightKnown_ || layout_->version() != CgroupVersion::kV2) return;
  auto seen = probeCpuWeightConversion(informer_.pods(), *layout_, opts_.paths.cgroupRoot, 8);
  if (!seen) return;
  executor_->setCpuWeightConversion(seen->conversion);
  cpuWeightKnown_ = true;
  cpuWeightSource_ = seen->dir;
  KLOG_INFO << "cgroup v2 cpu.weight: the runtime wrote " << seen->weight << " for " << seen->shares
            << " shares in " << seen->dir << " (" << seen->pod << "): the "
            << toString(seen->conversion) << " conversion; the agent writes cpu.weight the same way"
            << (seen->conversion == CpuWeightConversion::kLinear ? " (koordlet's)"
                                                                 : " (koordlet writes linear)");
}

// OOMScoreAdj's hot update: each container's processes, from its own cgroup.procs
// (cgroupfs/oom_score_adj_writer.h). Not through the executor: these are /proc
// files, not cgroup knobs; no write under --dry-run, nothing while paused (the hook
// context has the gate off then).
void Agent::applyOomScoreAdj(const std::vector<OomScoreAdjWrite>& writes) {
  for (const OomScoreAdjWrite& w : writes) {
    const std::string procs =
        cgroupFilePath(*layout_, opts_.paths.cgroupRoot, w.dir, CgroupFile::kProcs);
    if (opts_.dryRun) {
      exporter_.recordOomScoreAdj(w.podNs, w.podName, w.podUid, w.container, w.value);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    const OomScoreAdjOutcome o = koord::applyOomScoreAdj(procs, opts_.paths.procRoot, w.value);
    const double millis =
        w.millis +
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const bool ok = o.error.empty() || o.gone;
    exporter_.recordHookReconciler("container", "oom_score_adj", ok, millis);
    const std::string key = "oom_score_adj " + w.podUid + "/" + w.container;
    if (o.processes > o.failed) {
      exporter_.recordOomScoreAdj(w.podNs, w.podName, w.podUid, w.container, w.value);
    }
    if (!o.gone && !o.error.empty()) {
      failures_.failure(key, Severity::kWarning,
                        "OOMScoreAdj " + w.podNs + "/" + w.podName + " " + w.container + ": " +
                            o.error + " (" + std::to_string(o.failed) + " of " +
                            std::to_string(o.processes) + " processes not set)");
    } else {
      failures_.success(key);
    }
    if (o.updated > 0) {
      KLOG_V(4) << "OOMScoreAdj " << w.podNs << "/" << w.podName << " " << w.container
                << ": oom_score_adj " << w.value << " on " << o.updated << " of " << o.processes
                << " processes";
    }
  }
  exporter_.endOomScoreAdjRound();
}

}  // namespace koord
