#include "qos/hook_reconcile.h"

#include "qos/write_reasons.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace koord {
namespace {

// CPU suppress owns the cpuset.cpus of BE pods (by QoS with default, or kube
// BestEffort): the reconciler leaves it to suppress, even for a pinned pod.
bool suppressOwnsCpuset(const PodView& pv) {
  return pv.qos == KoordQos::kBE || pv.pod->kubeQos == KubeQos::kBestEffort;
}

// The resource types one pod's or container's values touched: those emitted, and
// those a hook refused (its error names the field: "(cfs quota not set)").
void recordTimings(std::vector<HookReconcileTiming>& out, const char* level,
                   const std::vector<CgroupWrite>& writes, size_t firstWrite,
                   const std::vector<std::string>& errors, size_t firstError, double millis) {
  std::vector<std::string> types;
  for (size_t i = firstWrite; i < writes.size(); ++i) {
    std::string name(knobSpec(writes[i].knob).name);
    if (std::find(types.begin(), types.end(), name) == types.end()) types.push_back(name);
  }
  const bool ok = errors.size() == firstError;
  static const std::pair<const char*, const char*> kNamed[] = {
      {"cpu shares", "cpu.shares"},
      {"cfs quota", "cpu.cfs_quota_us"},
      {"memory limit", "memory.limit_in_bytes"},
      {"oom-score-adj", "oom_score_adj"}};  // OOMScoreAdj's annotations
  for (size_t i = firstError; i < errors.size(); ++i) {
    // An error that names no field (a bad annotation) failed every field it feeds.
    const bool named = std::any_of(std::begin(kNamed), std::end(kNamed), [&](const auto& n) {
      return errors[i].find(n.first) != std::string::npos;
    });
    for (const auto& [text, type] : kNamed) {
      const bool oom = std::string_view(type) == "oom_score_adj";  // only when named
      if ((errors[i].find(text) != std::string::npos || (!named && !oom)) &&
          std::find(types.begin(), types.end(), type) == types.end()) {
        types.emplace_back(type);
      }
    }
  }
  for (std::string& t : types) out.push_back(HookReconcileTiming{level, std::move(t), ok, millis});
}

double elapsedMillis(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

void appendHookWrites(std::vector<CgroupWrite>& out, const std::string& dir,
                      const HookIntent& intent, bool cpusetAllowed) {
  auto add = [&](Knob knob, KnobValue v) {
    out.push_back(CgroupWrite{dir, knob, std::move(v), kOwnerRuntimeHooks});
  };
  if (intent.cpuShares) add(Knob::kCpuShares, KnobValue::of(*intent.cpuShares));
  if (intent.cfsQuota) add(Knob::kCpuQuota, KnobValue::of(*intent.cfsQuota));
  if (intent.memoryLimit) add(Knob::kMemoryLimit, KnobValue::of(*intent.memoryLimit));
  if (cpusetAllowed && intent.cpuset && !intent.cpuset->empty()) {
    // The hook rendered it as the kernel prints a list (so the parser's newline).
    auto cpus = parseKnob(Knob::kCpusetCpus, CgroupVersion::kV1, *intent.cpuset + "\n");
    if (cpus) add(Knob::kCpusetCpus, std::move(*cpus));
  }
}

std::vector<CgroupWrite> sandboxWrites(const HookPod& pod, const HookIntent& intent,
                                       const std::string& podDir) {
  HookIntent podValues = intent;
  if (podValues.cfsQuota && *podValues.cfsQuota != -1 && pod.rawQos != KoordQos::kBE) {
    podValues.cfsQuota.reset();
  }
  std::vector<CgroupWrite> out;
  appendHookWrites(out, podDir, podValues, false);
  if (out.empty()) return out;
  auto why = std::make_shared<WriteReason>();
  why->add("stage", "PreRunPodSandbox", "runtime hook");
  why->rule =
      "the pod's own values at its sandbox, as the runtime hooks decide them (BatchResource: "
      "cpu.shares from the batch-cpu requests, quota from the limits, memory limit from the "
      "batch-memory limits; CPUSetAllocator: an unlimited quota for a pinned pod; "
      "CPUNormalization of a BE pod's quota); the reconciler keeps them";
  for (CgroupWrite& w : out) w.why = why;
  return out;
}

HookReconcileResult reconcileHooks(const QosSnapshot& snap, const HookContext& ctx) {
  HookReconcileResult out;
  for (const PodView& pv : snap.pods) {
    if (pv.pod == nullptr || !pv.pod->active() || pv.dir.empty()) continue;
    auto hp = hookPodFromKubelet(*pv.pod);
    if (!hp) {
      out.errors.push_back(hp.error().message);
      continue;
    }
    if (skipHooks(*hp)) continue;
    const bool cpusetAllowed = !suppressOwnsCpuset(pv);
    auto start = std::chrono::steady_clock::now();
    size_t firstWrite = out.writes.size();
    const size_t firstError = out.errors.size();
    appendHookWrites(out.writes, pv.dir, podIntent(*hp, ctx, &out.errors), cpusetAllowed);
    recordTimings(out.timings, "pod", out.writes, firstWrite, out.errors, firstError,
                  elapsedMillis(start));
    for (const ContainerView& cv : pv.containers) {
      if (cv.dir.empty() || cv.container == nullptr) continue;  // app containers, sidecars
      const HookContainer* hc = hp->container(cv.container->name);
      if (hc == nullptr) continue;
      std::vector<std::string> errors;
      start = std::chrono::steady_clock::now();
      firstWrite = out.writes.size();
      const HookIntent intent = containerIntent(*hp, *hc, ctx, &errors);
      appendHookWrites(out.writes, cv.dir, intent, cpusetAllowed);
      const double millis = elapsedMillis(start);
      recordTimings(out.timings, "container", out.writes, firstWrite, errors, 0, millis);
      if (intent.oomScoreAdj) {
        out.oomScoreAdj.push_back(OomScoreAdjWrite{cv.dir, pv.pod->ns, pv.pod->name, pv.pod->uid,
                                                   hc->name, *intent.oomScoreAdj, millis});
      }
      // The same annotation fails for every container: one line per problem.
      for (std::string& e : errors) {
        if (std::find(out.errors.begin(), out.errors.end(), e) == out.errors.end()) {
          out.errors.push_back(std::move(e));
        }
      }
    }
  }
  return out;
}

HookContext baseHookContext(const HookGates& gates, const NodeSloSpec& spec, int64_t pageSize,
                            int64_t nodeAllocatableMemory) {
  HookContext ctx;
  ctx.spec = &spec;
  ctx.batchResource = gates.batchResource;
  ctx.cpusetAllocator = gates.cpusetAllocator;
  ctx.gpuEnvInject = gates.gpuEnvInject;
  ctx.oomScoreAdj = gates.oomScoreAdj;
  ctx.cpuBurst = gates.cpuBurst;
  ctx.disableUnsetCpuQuota = gates.disableUnsetCpuQuota;
  // koordlet: forced -1 while suppress runs with policy cfsQuota (gate and NodeSLO).
  ctx.suppressCfsQuota = gates.cpuSuppress && spec.threshold.enable &&
                         spec.threshold.cpuSuppressPolicy == CpuSuppressPolicy::kCfsQuota;
  ctx.nodeAllocatableMemory = nodeAllocatableMemory;
  ctx.pageSize = pageSize;
  return ctx;
}

HookContext hookContext(const HookGates& gates, const NodeSloSpec& spec, const NodeFacts& node) {
  HookContext ctx = baseHookContext(gates, spec, node.pageSize, node.nodeAllocatableMemory);
  ctx.version = node.version;
  ctx.resctrl = gates.resctrl && node.resctrlReady;
  ctx.cpuBurst =
      ctx.cpuBurst && (node.version != CgroupVersion::kV2 || node.support.has(Knob::kCpuBurst));
  ctx.memoryQos = gates.memoryQos && node.memoryQosKernel;
  ctx.cpusetRule = node.cpusetRule;
  ctx.cpuNormalizationRatio = node.cpuNormalizationRatio;
  ctx.cpuNormalization = node.cpuNormalization;
  return ctx;
}

StrategyOutcome HookReconcileStrategy::run(const StrategyContext& ctx) {
  HookContext hooks = hookContext(gates_, ctx.spec, ctx.node);
  hooks.unified = false;  // appendHookWrites() writes none of them
  // CPU burst owns the LS pods' quotas while it runs, and steps them from the
  // normalized base itself (cpu_burst.h): the reconciler leaves them to it.
  if (gates_.cpuBurst) hooks.cpuNormalization = false;
  HookReconcileResult r = reconcileHooks(ctx.snapshot, hooks);
  StrategyOutcome out{std::move(r.writes), r.errors, {}, {}};  // moved: see MemoryQosStrategy
  auto why = std::make_shared<WriteReason>();
  why->add("BatchResource", gates_.batchResource ? "on" : "off", "feature gate");
  why->add("CPUSetAllocator", gates_.cpusetAllocator ? "on" : "off", "feature gate");
  why->add("CPUNormalization", hooks.cpuNormalization ? "on" : "off", "feature gate");
  if (hooks.cpuNormalization && hooks.cpuNormalizationRatio > 0) {
    why->add("cpuNormalizationRatio", fixed(hooks.cpuNormalizationRatio, 3), "Node annotation");
  }
  if (hooks.suppressCfsQuota) {
    why->add("besteffortQuotaForcedUnlimited", "true",
             "resourceUsedThresholdWithBE.cpuSuppressPolicy cfsQuota");
  }
  why->rule =
      "BE pods: cpu.shares = kubernetes.io/batch-cpu request, quota = its limit (divided by "
      "the ratio), memory limit = kubernetes.io/batch-memory limit; pods with a resource-status "
      "cpuset: that cpuset and an unlimited quota; as the runtime hooks set them at creation";
  out.why = std::move(why);
  out.result = std::move(r);
  return out;
}

}  // namespace koord
