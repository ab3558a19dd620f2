// NriHooks: the agent's NriHandler. It answers from a HookState the agent loop
// publishes (pods from the kubelet, the NodeSLO config, gates, cgroup version,
// resctrl readiness); it never reads a file, calls the kubelet or writes a cgroup
// inside a call, so it answers in microseconds however slow the agent loop is.
//
// Events (mask 0x8D, as koordlet): RunPodSandbox and RemovePodSandbox (nothing to
// return; pod-level values are the reconciler's), CreateContainer (a
// ContainerAdjustment from runtime_hooks.h's container intent), UpdateContainer (a
// ContainerUpdate for the container with the same fields, merged by the runtime
// over the resources CRI asked for). Synchronize returns no updates: the
// reconciler repairs running containers. Pods labelled skip-hookserver get nothing.
//
// A hook error is logged (rate-limited) and the call succeeds without that hook's
// fields, unless the failure policy is Fail: then CreateContainer and
// UpdateContainer answer with the error (the runtime fails the container
// operation). Every hook run is timed into
// koordlet_runtime_hook_invoked_duration_milliseconds{hook,stage,status}.
#pragma once

#include <string>
#include <vector>

#include "nri/plugin_session.h"
#include "qos/hook_runtime.h"

namespace koord::nri {

inline constexpr int32_t kKoordletEvents =
    0x8D;  // RunPodSandbox|RemovePodSandbox|CreateContainer|UpdateContainer

// NRI pod + container -> the hook's view (qos/hook_runtime.h). QoS: the label, kube QoS from the
// cgroup parent ("besteffort", "burstable", else guaranteed); container resources
// from linux.resources (shares -> cpu request, quota/period -> cpu limit, memory
// limit); batch resources from the extended-resource-spec annotation. When the
// kubelet already knows the pod (`known`), its spec wins, as in the reconciler.
// Runtime values that cannot be right (linux.resources whose milli-core
// conversion overflows) are left out of the hook's view and, when `refused` is
// given, described there one a line, naming pod, container and field.
Result<HookPod> hookPodFromNri(const api::PodSandbox& pod, const api::Container* container,
                               const Pod* known, std::vector<std::string>* refused = nullptr);

// Intent -> NRI resources (only the set fields; unified only when non-empty).
api::LinuxResources toLinuxResources(const HookIntent& intent);

class NriHooks final : public NriHandler {
 public:
  // `decisions`, when given, is shared with the runtime proxy's hook server: a
  // container both paths see gets one decision (qos/hook_runtime.h).
  NriHooks(const HookStateStore& store, HookRecorder* recorder, FailurePolicy policy,
           HookDecisions* decisions = nullptr, const Clock* clock = nullptr);

  Result<int32_t> configure(const api::ConfigureRequest& req) override;
  Result<api::SynchronizeResponse> synchronize(const api::SynchronizeRequest& req) override;
  Result<api::CreateContainerResponse> createContainer(
      const api::CreateContainerRequest& req) override;
  Result<api::UpdateContainerResponse> updateContainer(
      const api::UpdateContainerRequest& req) override;
  Result<api::StopContainerResponse> stopContainer(const api::StopContainerRequest& req) override;
  Status stateChange(const api::StateChangeEvent& event) override;

  // Hook errors so far (each logged while the count is a power of two).
  uint64_t hookErrors() const { return runner_.hookErrors(); }
  // Where PreRunPodSandbox's pod values go (set before serving).
  void setSandboxSink(SandboxSink sink) { runner_.setSandboxSink(std::move(sink)); }
  // Container decisions taken from the runtime proxy's hook server (both paths on).
  uint64_t sharedDecisions() const { return runner_.sharedDecisions(); }

 private:
  // The stage's hooks for the pod (container null) or a container, through the
  // shared runner. Runtime values that cannot be right are logged and left out.
  Result<HookIntent> run(const HookState& state, const api::PodSandbox& nriPod,
                         const api::Container* nriContainer, HookStage stage, bool failFast);

  const HookStateStore* store_;
  HookRunner runner_;
};

}  // namespace koord::nri
