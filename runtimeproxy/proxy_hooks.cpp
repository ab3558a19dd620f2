#include "runtimeproxy/proxy_hooks.h"

#include <string>
#include <vector>

#include "base/quote.h"

namespace koord::runtimeproxy {
namespace {

std::map<std::string, std::string> toMap(const google::protobuf::Map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

Result<RuntimePod> podFrom(const api::PodSandboxMetadata* meta, bool hasMeta) {
  if (!hasMeta) return makeError("pod_meta is missing");
  if (meta->uid().empty()) return makeError("pod_meta.uid is empty");
  RuntimePod pod;
  pod.uid = meta->uid();
  pod.ns = meta->namespace_();
  pod.name = meta->name();
  return pod;
}

// The values CRI could never carry for a container: a request holding one is
// refused whole, with the field named.
Status checkResources(const api::LinuxContainerResources& r) {
  auto bad = [](const char* field, int64_t v, const char* why) -> Status {
    return makeError(std::string("container_resources.") + field + " " + std::to_string(v) + " " +
                     why);
  };
  if (r.cpu_period() < 0) return bad("cpu_period", r.cpu_period(), "is negative");
  if (r.cpu_quota() < -1) return bad("cpu_quota", r.cpu_quota(), "is below -1 (unlimited)");
  if (r.cpu_shares() < 0) return bad("cpu_shares", r.cpu_shares(), "is negative");
  if (r.memory_limit_in_bytes() < 0) {
    return bad("memory_limit_in_bytes", r.memory_limit_in_bytes(), "is negative");
  }
  if (r.oom_score_adj() < -1000 || r.oom_score_adj() > 1000) {
    return bad("oom_score_adj", r.oom_score_adj(), "is outside [-1000, 1000]");
  }
  return Ok{};
}

constexpr RuntimeFieldNames kProxyFields{"container_resources.cpu_shares",
                                         "container_resources.cpu_quota", "cpu_period"};

CallError invalid(HookStage stage, const std::string& message) {
  return CallError{CallCode::kInvalidArgument, std::string(toString(stage)) + "Hook: " + message};
}

}  // namespace

Result<RuntimePod> runtimePodOf(const api::PodSandboxHookRequest& req) {
  auto pod = podFrom(&req.pod_meta(), req.has_pod_meta());
  if (!pod) return pod;
  pod->labels = toMap(req.labels());
  pod->annotations = toMap(req.annotations());
  pod->cgroupParent = req.cgroup_parent();
  return pod;
}

Result<RuntimePod> runtimePodOf(const api::ContainerResourceHookRequest& req) {
  auto pod = podFrom(&req.pod_meta(), req.has_pod_meta());
  if (!pod) return pod;
  pod->labels = toMap(req.pod_labels());
  pod->annotations = toMap(req.pod_annotations());
  pod->cgroupParent = req.pod_cgroup_parent();
  return pod;
}

Result<HookContainer> containerOf(const api::ContainerResourceHookRequest& req) {
  if (!req.has_container_meta()) return makeError("container_meta is missing");
  if (req.container_meta().name().empty()) return makeError("container_meta.name is empty");
  RuntimeResources rr;
  if (req.has_container_resources()) {
    const api::LinuxContainerResources& r = req.container_resources();
    if (Status s = checkResources(r); !s) return s.error();
    // CRI's 0 is "not specified".
    if (r.cpu_shares() > 0) rr.cpuShares = static_cast<uint64_t>(r.cpu_shares());
    if (r.cpu_quota() != 0) rr.cpuQuota = r.cpu_quota();
    if (r.cpu_period() > 0) rr.cpuPeriod = static_cast<uint64_t>(r.cpu_period());
    if (r.memory_limit_in_bytes() > 0) rr.memoryLimit = r.memory_limit_in_bytes();
  }
  std::vector<std::string> refused;
  HookContainer c = containerFromRuntime(req.container_meta().name(), req.container_meta().id(), rr,
                                         kProxyFields, refused);
  if (!refused.empty()) return makeError(refused.front());
  return c;
}

api::ContainerResourceHookResponse responseFor(const HookIntent& intent,
                                               const api::ContainerResourceHookRequest& req) {
  api::ContainerResourceHookResponse resp;
  if (intent.empty()) return resp;
  // The proxy replaces every env with a non-empty container_envs: the request's own,
  // with ours (GPUEnvInject) added or replacing theirs.
  if (!intent.env.empty()) {
    *resp.mutable_container_envs() = req.container_envs();
    for (const auto& [key, value] : intent.env) (*resp.mutable_container_envs())[key] = value;
  }
  const bool anyResource = intent.cpuShares || intent.cfsQuota ||
                           (intent.memoryLimit && *intent.memoryLimit > 0) || intent.cpuset ||
                           !intent.unified.empty() || intent.oomScoreAdj;
  if (!anyResource) return resp;  // e.g. only an RDT class, or only "unlimited" memory
  api::LinuxContainerResources* r = resp.mutable_container_resources();
  if (intent.cpuShares) r->set_cpu_shares(*intent.cpuShares);
  if (intent.cfsQuota) r->set_cpu_quota(*intent.cfsQuota);
  if (intent.memoryLimit && *intent.memoryLimit > 0)
    r->set_memory_limit_in_bytes(*intent.memoryLimit);
  for (const auto& [file, value] : intent.unified) (*r->mutable_unified())[file] = value;
  // Overwritten by the proxy whatever we send: the request's own values, unless decided.
  const api::LinuxContainerResources& asked = req.container_resources();
  r->set_cpuset_cpus(intent.cpuset ? *intent.cpuset : asked.cpuset_cpus());
  r->set_cpuset_mems(asked.cpuset_mems());
  // OOMScoreAdj's value when decided (the proxy takes any in [-1000, 1000]).
  r->set_oom_score_adj(intent.oomScoreAdj ? *intent.oomScoreAdj : asked.oom_score_adj());
  return resp;
}

ProxyHooks::ProxyHooks(const HookStateStore& store, HookRecorder* recorder, FailurePolicy policy,
                       HookDecisions* decisions, const Clock* clock)
    : store_(&store), runner_(recorder, policy, HookPath::kProxy, decisions, clock) {}

CallResult<api::PodSandboxHookResponse> ProxyHooks::podSandbox(
    HookStage stage, const api::PodSandboxHookRequest& req) {
  CallResult<api::PodSandboxHookResponse> out;
  auto rp = runtimePodOf(req);
  if (!rp) {
    out.error = invalid(stage, rp.error().message);
    return out;
  }
  out.value.emplace();
  auto state = store_->current();
  if (!state) return out;  // nothing published yet: the reconciler catches up
  // Pod-level values are the reconciler's to write; a failing hook never fails the
  // sandbox (as NRI's RunPodSandbox).
  (void)runner_.decide(*state, hookPodFromRuntime(*rp, nullptr, state->known(rp->uid)),
                       std::nullopt, stage, false);
  return out;
}

CallResult<api::ContainerResourceHookResponse> ProxyHooks::container(
    HookStage stage, const api::ContainerResourceHookRequest& req) {
  CallResult<api::ContainerResourceHookResponse> out;
  auto rp = runtimePodOf(req);
  if (!rp) {
    out.error = invalid(stage, rp.error().message);
    return out;
  }
  auto rc = containerOf(req);
  if (!rc) {
    out.error = invalid(
        stage, "pod " + quoteText(rp->ns + "/" + rp->name, 160) + ": " + rc.error().message);
    return out;
  }
  auto state = store_->current();
  if (!state || hooksAt(stage).empty()) {
    out.value.emplace();
    return out;
  }
  auto intent = runner_.decide(*state, hookPodFromRuntime(*rp, &*rc, state->known(rp->uid)),
                               rc->name, stage, true);
  if (!intent) {
    out.error = CallError{CallCode::kFailedPrecondition, intent.error().message};
    return out;
  }
  out.value = responseFor(*intent, req);
  return out;
}

}  // namespace koord::runtimeproxy
