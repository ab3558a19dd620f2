// ProxyHooks: the answers of koord-runtime-proxy's RuntimeHookService, from the
// same policy as the NRI plugin (qos/runtime_hooks.h through qos/hook_runtime.h)
// and the same HookState. Messages in, messages or an error out, with no I/O but
// the hooks' timing and rate-limited log lines; the gRPC server (hook_server.h)
// only carries them.
//
// What the proxy does with an answer (../shared/reference/runtime-proxy.md) decides
// what is sent, field by field, so that nothing changes that the policy did not
// decide:
//   * an empty decision: no container_resources at all (the proxy then keeps every
//     field of the request);
//   * otherwise container_resources with the decided cpu_shares, cpu_quota (-1
//     included), memory_limit_in_bytes (> 0 only: the proxy takes no other, so a
//     decided "unlimited" leaves the kubelet's value) and the unified map; and,
//     because the proxy always overwrites them, the request's own cpuset_cpus
//     (unless the policy decided one, "" included), cpuset_mems and oom_score_adj
//     (the proxy takes 0 as a value; OOMScoreAdj's value when it decided one);
//   * container_envs only when a hook set a variable (GPUEnvInject): then the
//     request's envs with ours added (a non-empty map replaces every env); never
//     annotations, labels or a cgroup parent: the policy decides none;
//   * the RDT class has no field in this protocol: the resctrl strategy puts the
//     container's tasks in its group instead.
// Pod-level decisions (PreRunPodSandbox) are computed and timed but not written
// here, as on the NRI path: the reconciler writes them.
//
// Bad input gets INVALID_ARGUMENT naming the RPC and field: no pod_meta or an
// empty uid, no container_meta or an empty name, a negative cpu_period,
// cpu_shares or memory limit, a cpu_quota below -1, oom_score_adj outside
// [-1000, 1000], values whose conversion overflows. A pod whose
// koordinator.sh/qosClass names no class is treated as koordlet does (no class:
// the kube QoS default). A hook error under --runtime-hooks-plugin-failure-policy
// =Fail is FAILED_PRECONDITION; under Ignore it is logged and the answer goes on
// without that hook.
#pragma once

#include <memory>
#include <string>

#include "qos/hook_runtime.h"
#include "runtimeproxy/hook_api.pb.h"

namespace koord::runtimeproxy {

namespace api = ::runtime::v1alpha1;

// The gRPC status codes this module answers with (grpc::StatusCode values).
enum class CallCode : int {
  kOk = 0,
  kInvalidArgument = 3,
  kFailedPrecondition = 9,
};

struct CallError {
  CallCode code;
  std::string message;
};

template <typename T>
struct CallResult {
  std::optional<T> value;
  std::optional<CallError> error;
  bool ok() const { return value.has_value(); }
};

// The request's pod as the runtime describes it; an error names the field.
Result<RuntimePod> runtimePodOf(const api::PodSandboxHookRequest& req);
Result<RuntimePod> runtimePodOf(const api::ContainerResourceHookRequest& req);
// The request's container with its resources as requests and limits.
Result<HookContainer> containerOf(const api::ContainerResourceHookRequest& req);

// A decision as the proxy merges it (see above); `req` gives what must be echoed.
api::ContainerResourceHookResponse responseFor(const HookIntent& intent,
                                               const api::ContainerResourceHookRequest& req);

class ProxyHooks {
 public:
  // `decisions`, when given, is shared with the NRI plugin (both paths on).
  ProxyHooks(const HookStateStore& store, HookRecorder* recorder, FailurePolicy policy,
             HookDecisions* decisions = nullptr, const Clock* clock = nullptr);

  // PreRunPodSandbox, PostStopPodSandbox.
  CallResult<api::PodSandboxHookResponse> podSandbox(HookStage stage,
                                                     const api::PodSandboxHookRequest& req);
  // PreCreateContainer, PreStartContainer, PostStartContainer, PostStopContainer,
  // PreUpdateContainerResources.
  CallResult<api::ContainerResourceHookResponse> container(
      HookStage stage, const api::ContainerResourceHookRequest& req);

  uint64_t hookErrors() const { return runner_.hookErrors(); }
  // Where PreRunPodSandbox's pod values go (set before serving).
  void setSandboxSink(SandboxSink sink) { runner_.setSandboxSink(std::move(sink)); }
  uint64_t sharedDecisions() const { return runner_.sharedDecisions(); }

 private:
  const HookStateStore* store_;
  HookRunner runner_;
};

}  // namespace koord::runtimeproxy
