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

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nri/plugin_session.h"
#include "qos/runtime_hooks.h"

namespace koord::nri {

// Everything a hook reads, as one immutable value.
struct HookState {
  NodeSloSpec spec;
  HookContext context;  // context.spec is re-pointed at `spec` by the store
  std::unordered_map<std::string, Pod> podsByUid;
};

// The agent loop publishes, NRI calls read: a shared_ptr swap under a mutex held
// for a pointer copy only.
class HookStateStore {
 public:
  void publish(std::shared_ptr<HookState> state);
  std::shared_ptr<const HookState> current() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const HookState> state_;
};

// Timing sink (the exporter implements it; thread-safe).
class HookRecorder {
 public:
  virtual ~HookRecorder() = default;
  virtual void record(std::string_view hook, std::string_view stage, bool ok, double millis) = 0;
};

enum class FailurePolicy { kIgnore, kFail };
Result<FailurePolicy> parseFailurePolicy(std::string_view text);  // "Ignore" | "Fail"

inline constexpr int32_t kKoordletEvents =
    0x8D;  // RunPodSandbox|RemovePodSandbox|CreateContainer|UpdateContainer

// NRI pod + container -> the hook's view. QoS: the label, kube QoS from the
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

// The kube QoS a cgroup parent names: "besteffort" / "burstable" in it (cgroupfs
// "/kubepods/besteffort/pod<uid>", systemd "kubepods-besteffort-pod<uid_>.slice"),
// else Guaranteed (koordlet's bvt-hook rule).
KubeQos kubeQosFromCgroupParent(std::string_view parent);

class NriHooks final : public NriHandler {
 public:
  NriHooks(const HookStateStore& store, HookRecorder* recorder, FailurePolicy policy);

  Result<int32_t> configure(const api::ConfigureRequest& req) override;
  Result<api::SynchronizeResponse> synchronize(const api::SynchronizeRequest& req) override;
  Result<api::CreateContainerResponse> createContainer(
      const api::CreateContainerRequest& req) override;
  Result<api::UpdateContainerResponse> updateContainer(
      const api::UpdateContainerRequest& req) override;
  Result<api::StopContainerResponse> stopContainer(const api::StopContainerRequest& req) override;
  Status stateChange(const api::StateChangeEvent& event) override;

  // Hook errors so far (each logged while the count is a power of two).
  uint64_t hookErrors() const { return hookErrors_.load(std::memory_order_relaxed); }

 private:
  // Runs `hooks` for the pod (container null) or a container, timing each into the
  // recorder under `stage`. Ignore: failing hooks are logged and add nothing; Fail
  // (and failFast): the first error is returned.
  Result<HookIntent> run(const HookState& state, const api::PodSandbox& nriPod,
                         const api::Container* nriContainer, std::span<const HookName> hooks,
                         const char* stage, bool failFast);
  void logError(const std::string& message);

  const HookStateStore* store_;
  HookRecorder* recorder_;
  FailurePolicy policy_;
  std::atomic<uint64_t> hookErrors_{0};
};

}  // namespace koord::nri
