#include "qos/hook_runtime.h"

#include <bit>
#include <climits>

#include "base/checked_int.h"
#include "base/log.h"

namespace koord {
namespace {

constexpr const char* kQosLabel = "koordinator.sh/qosClass";
const SystemClock kSystemClock;

double millisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

void HookStateStore::publish(std::shared_ptr<HookState> state) {
  if (state) state->context.spec = &state->spec;
  std::shared_ptr<const HookState> frozen = std::move(state);
  std::lock_guard lock(mu_);
  state_.swap(frozen);
  // The old state is released outside the lock (when `frozen` goes out of scope
  // after the guard): a reader never waits for a pod map to be freed.
}

const Pod* HookState::known(const std::string& uid) const {
  auto it = podsByUid.find(uid);
  return it == podsByUid.end() ? nullptr : &it->second;
}

std::shared_ptr<const HookState> HookStateStore::current() const {
  std::lock_guard lock(mu_);
  return state_;
}

Result<FailurePolicy> parseFailurePolicy(std::string_view text) {
  if (text == "Ignore") return FailurePolicy::kIgnore;
  if (text == "Fail") return FailurePolicy::kFail;
  return makeError("failure policy \"" + std::string(text) + "\": expected Ignore or Fail");
}

const char* toString(FailurePolicy p) { return p == FailurePolicy::kFail ? "Fail" : "Ignore"; }

KubeQos kubeQosFromCgroupParent(std::string_view parent) {
  if (parent.find("besteffort") != std::string_view::npos) return KubeQos::kBestEffort;
  if (parent.find("burstable") != std::string_view::npos) return KubeQos::kBurstable;
  return KubeQos::kGuaranteed;
}

HookContainer containerFromRuntime(std::string name, std::string id, const RuntimeResources& r,
                                   const RuntimeFieldNames& fields,
                                   std::vector<std::string>& refused) {
  HookContainer out;
  out.name = std::move(name);
  out.id = std::move(id);
  const std::string where = "container " + out.name + ": ";
  if (r.cpuShares) {
    const uint64_t shares = *r.cpuShares;
    auto milli = shares <= static_cast<uint64_t>(INT64_MAX)
                     ? checkedMul(static_cast<int64_t>(shares), 1000)
                     : std::nullopt;
    if (milli) {
      out.requests.cpuMilli = *milli / 1024;
    } else {
      refused.push_back(where + fields.shares + " " + std::to_string(shares) +
                        " overflows milli-cores (cpu request not read)");
    }
  }
  if (r.cpuQuota && r.cpuPeriod && *r.cpuQuota > 0 && *r.cpuPeriod > 0) {
    auto scaled = checkedMul(*r.cpuQuota, 1000);
    if (scaled && *r.cpuPeriod <= static_cast<uint64_t>(INT64_MAX)) {
      out.limits.cpuMilli = *scaled / static_cast<int64_t>(*r.cpuPeriod);
    } else {
      refused.push_back(where + fields.quota + " " + std::to_string(*r.cpuQuota) + " / " +
                        fields.period + " " + std::to_string(*r.cpuPeriod) +
                        " overflows milli-cores (cpu limit not read)");
    }
  }
  if (r.memoryLimit && *r.memoryLimit > 0) out.limits.memoryBytes = *r.memoryLimit;
  return out;
}

Result<HookPod> hookPodFromRuntime(const RuntimePod& pod, const HookContainer* container,
                                   const Pod* known) {
  HookPod out;
  if (known != nullptr) {
    auto fromKubelet = hookPodFromKubelet(*known);
    if (!fromKubelet) return fromKubelet.error();
    out = std::move(*fromKubelet);
  } else {
    out.uid = pod.uid;
    out.ns = pod.ns;
    out.name = pod.name;
    out.labels = pod.labels;
    out.annotations = pod.annotations;
    auto qos = out.labels.find(kQosLabel);
    out.rawQos = qos == out.labels.end() ? KoordQos::kNone : koordQosFromLabel(qos->second);
    out.kubeQos = kubeQosFromCgroupParent(pod.cgroupParent);
  }
  if (container != nullptr) {
    bool found = false;
    for (HookContainer& c : out.containers) {
      if (c.name == container->name) {
        if (!container->id.empty()) c.id = container->id;  // the kubelet may not have it yet
        found = true;
      }
    }
    if (!found) out.containers.push_back(*container);
  }
  mergeExtendedResourceSpec(out);  // fills only what is missing: idempotent
  return out;
}

const char* toString(HookStage s) {
  switch (s) {
    case HookStage::kPreRunPodSandbox:
      return "PreRunPodSandbox";
    case HookStage::kPostStopPodSandbox:
      return "PostStopPodSandbox";
    case HookStage::kPreCreateContainer:
      return "PreCreateContainer";
    case HookStage::kPreStartContainer:
      return "PreStartContainer";
    case HookStage::kPostStartContainer:
      return "PostStartContainer";
    case HookStage::kPostStopContainer:
      return "PostStopContainer";
    case HookStage::kPreUpdateContainerResources:
      return "PreUpdateContainerResources";
    case HookStage::kPreRemoveRunPodSandbox:
      return "PreRemoveRunPodSandbox";
  }
  return "unknown";
}

std::optional<HookStage> parseHookStage(std::string_view name) {
  for (HookStage s : kAllStages) {
    if (name == toString(s)) return s;
  }
  return std::nullopt;
}

std::span<const HookName> hooksAt(HookStage stage) {
  static constexpr HookName kRemove[] = {HookName::kResctrl};
  switch (stage) {
    case HookStage::kPreRunPodSandbox:
      return kAllHooks;
    case HookStage::kPreCreateContainer:
      return kCreateContainerHooks;
    case HookStage::kPreUpdateContainerResources:
      return kUpdateHooks;
    case HookStage::kPreRemoveRunPodSandbox:
      return kRemove;
    default:
      return {};
  }
}

HookRunner::HookRunner(HookRecorder* recorder, FailurePolicy policy, HookPath path,
                       HookDecisions* decisions, const Clock* clock)
    : recorder_(recorder),
      policy_(policy),
      path_(path),
      decisions_(decisions),
      clock_(clock != nullptr ? clock : &kSystemClock) {}

void HookRunner::logError(const std::string& message) {
  const uint64_t n = hookErrors_.fetch_add(1, std::memory_order_relaxed) + 1;
  // Rate-limited without a clock: the 1st, 2nd, 4th, 8th, ... error is logged.
  if (std::has_single_bit(n)) {
    KLOG_WARNING << "runtime hook failed (" << n << " so far): " << message;
  }
}

Result<HookIntent> HookRunner::run(const HookState& state, const HookPod& pod,
                                   const HookContainer* container, HookStage stage, bool failFast) {
  HookIntent intent;
  if (skipHooks(pod)) return intent;
  std::string key;
  if (decisions_ != nullptr && container != nullptr) {
    key = HookDecisions::key(pod.uid, container->name, toString(stage));
    if (auto taken = decisions_->take(key, path_, clock_->now())) {
      shared_.fetch_add(1, std::memory_order_relaxed);
      return std::move(*taken);
    }
  }
  HookContext ctx = state.context;
  ctx.spec = &state.spec;
  const char* stageName = toString(stage);
  for (HookName hook : hooksAt(stage)) {
    const auto start = std::chrono::steady_clock::now();
    Status s = runHook(hook, pod, container, ctx, intent);
    if (recorder_ != nullptr) {
      recorder_->record(toString(hook), stageName, s.ok(), millisSince(start));
    }
    if (s) continue;
    logError(s.error().message);
    if (failFast && policy_ == FailurePolicy::kFail) return s.error();
  }
  if (!key.empty()) decisions_->record(std::move(key), path_, intent, clock_->now());
  // The pod's own values at its sandbox: written by the agent as soon as the pod's
  // cgroup exists, not left to the reconciler's next round.
  if (container == nullptr && stage == HookStage::kPreRunPodSandbox && sandboxSink_ &&
      (intent.cpuShares || intent.cfsQuota || intent.memoryLimit)) {
    sandboxSink_(pod, intent);
  }
  return intent;
}

Result<HookIntent> HookRunner::decide(const HookState& state, const Result<HookPod>& pod,
                                      std::optional<std::string_view> container, HookStage stage,
                                      bool failFast) {
  if (!pod) {
    logError(pod.error().message);
    if (failFast && policy_ == FailurePolicy::kFail) return pod.error();
    return HookIntent{};
  }
  const HookContainer* c = nullptr;
  if (container) {
    c = pod->container(*container);
    if (c == nullptr) return HookIntent{};  // cannot happen: hookPodFromRuntime adds it
  }
  return run(state, *pod, c, stage, failFast);
}

}  // namespace koord
