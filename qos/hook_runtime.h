// What the two runtime hook adapters share: the NRI plugin (nri/) and the hook
// server of koord-runtime-proxy (runtimeproxy/). Each turns its own wire messages
// into a RuntimePod and a RuntimeResources, and everything from there on is here
// or in the policy (qos/runtime_hooks.h): the hooks' view of the pod (the
// kubelet's when it knows the pod), which hooks run at which stage, their timing,
// the failure policy, and one decision per container when both paths see it.
//
// Both adapters answer from a HookState the agent loop publishes: they never read
// a file, call the kubelet or write a cgroup inside a call, so a call is answered
// in microseconds however slow the agent loop is.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "qos/hook_decisions.h"
#include "qos/runtime_hooks.h"

namespace koord {

// Everything a hook reads, as one immutable value.
struct HookState {
  NodeSloSpec spec;
  HookContext context;  // context.spec is re-pointed at `spec` by the store
  std::unordered_map<std::string, Pod> podsByUid;
  // The kubelet's pod of that uid, nullptr when the kubelet has not listed it.
  const Pod* known(const std::string& uid) const;
};

// The agent loop publishes, hook calls read: a shared_ptr swap under a mutex held
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
const char* toString(FailurePolicy p);

// The kube QoS a cgroup parent names: "besteffort" / "burstable" in it (cgroupfs
// "/kubepods/besteffort/pod<uid>", systemd "kubepods-besteffort-pod<uid_>.slice"),
// else Guaranteed (koordlet's bvt-hook rule).
KubeQos kubeQosFromCgroupParent(std::string_view parent);

// A pod as a runtime describes it (NRI's PodSandbox, the proxy's pod fields).
struct RuntimePod {
  std::string uid;
  std::string ns;
  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::string cgroupParent;
};

// A container's CRI/OCI resources as a runtime describes them; unset when the
// runtime did not say (or said 0, which CRI uses for "not specified").
struct RuntimeResources {
  std::optional<uint64_t> cpuShares;
  std::optional<int64_t> cpuQuota;
  std::optional<uint64_t> cpuPeriod;
  std::optional<int64_t> memoryLimit;
};

// How a runtime's protocol names the fields, for messages.
struct RuntimeFieldNames {
  const char* shares;  // e.g. "linux.resources.cpu.shares"
  const char* quota;   // e.g. "linux.resources.cpu.quota"
  const char* period;  // e.g. "cpu.period"
};

// The runtime's resources as requests and limits: shares -> cpu request
// (× 1000 / 1024), quota / period -> cpu limit, memory limit. A value whose
// conversion cannot be right (it overflows int64 in milli-cores, or a period past
// int64) is left unset and named in `refused` ("container <name>: <shares field>
// ..."): the hooks then see no such request or limit.
HookContainer containerFromRuntime(std::string name, std::string id, const RuntimeResources& r,
                                   const RuntimeFieldNames& fields,
                                   std::vector<std::string>& refused);

// The hooks' view of a pod a runtime names: the kubelet's pod when it knows it
// (its spec wins, as in the reconciler), else the runtime's own description
// (QoS from the label, kube QoS from the cgroup parent). `container`, when given,
// is the runtime's container: a container the kubelet lists takes its id, one it
// does not is added as the runtime describes it. Batch resources from the
// extended-resource-spec annotation fill what the specs lack.
Result<HookPod> hookPodFromRuntime(const RuntimePod& pod, const HookContainer* container,
                                   const Pod* known);

// The hook stages of koordlet's runtime-proxy protocol (config.RuntimeHookType).
enum class HookStage {
  kPreRunPodSandbox,
  kPostStopPodSandbox,
  kPreCreateContainer,
  kPreStartContainer,
  kPostStartContainer,
  kPostStopContainer,
  kPreUpdateContainerResources,
  kPreRemoveRunPodSandbox,
};
inline constexpr HookStage kAllStages[] = {HookStage::kPreRunPodSandbox,
                                           HookStage::kPostStopPodSandbox,
                                           HookStage::kPreCreateContainer,
                                           HookStage::kPreStartContainer,
                                           HookStage::kPostStartContainer,
                                           HookStage::kPostStopContainer,
                                           HookStage::kPreUpdateContainerResources,
                                           HookStage::kPreRemoveRunPodSandbox};
const char* toString(HookStage s);  // "PreRunPodSandbox", ...
std::optional<HookStage> parseHookStage(std::string_view name);

// The hooks that run at a stage (koordlet.md §7.3, our hooks only): every hook at
// PreRunPodSandbox and PreCreateContainer, BatchResource and CPUSetAllocator at
// PreUpdateContainerResources, Resctrl at PreRemoveRunPodSandbox, none elsewhere.
std::span<const HookName> hooksAt(HookStage stage);

// Runs a stage's hooks for one call, as both adapters do: the skip-hookserver
// label, each hook timed into the recorder, errors logged (1st, 2nd, 4th, ...)
// and counted; Ignore: a failing hook adds nothing and the call goes on; Fail
// (with failFast): the first error is returned, for the runtime to fail the
// operation. Thread-safe: calls come from the adapters' own threads.
// Where a pod's PreRunPodSandbox values go to be written (the agent's loop: the
// adapters never write a cgroup themselves). Called on the adapter's thread with
// the pod's view and its non-empty pod-level intent; must return at once.
using SandboxSink = std::function<void(const HookPod& pod, const HookIntent& intent)>;

class HookRunner {
 public:
  // `path` is the caller's; `decisions`, when given, is shared with the other path
  // (only when both run); `clock` (nullptr: the system's) times the decisions.
  HookRunner(HookRecorder* recorder, FailurePolicy policy, HookPath path,
             HookDecisions* decisions = nullptr, const Clock* clock = nullptr);

  // `container` null: the pod's hooks; else that container of `pod`. With
  // decisions, a container stage first takes what the other path decided.
  Result<HookIntent> run(const HookState& state, const HookPod& pod, const HookContainer* container,
                         HookStage stage, bool failFast);
  // The same from the view an adapter built of a call's pod (hookPodFromRuntime):
  // a view that could not be built is logged, and with failFast under Fail is the
  // error; `container` names the call's container (nullopt: the pod's hooks).
  Result<HookIntent> decide(const HookState& state, const Result<HookPod>& pod,
                            std::optional<std::string_view> container, HookStage stage,
                            bool failFast);
  // A problem with the call's input that the hooks went on without.
  void logError(const std::string& message);
  // Set before the adapter serves (not thread-safe against calls in flight).
  void setSandboxSink(SandboxSink sink) { sandboxSink_ = std::move(sink); }

  uint64_t hookErrors() const { return hookErrors_.load(std::memory_order_relaxed); }
  uint64_t sharedDecisions() const { return shared_.load(std::memory_order_relaxed); }
  FailurePolicy policy() const { return policy_; }

 private:
  HookRecorder* recorder_;
  FailurePolicy policy_;
  HookPath path_;
  HookDecisions* decisions_;
  const Clock* clock_;
  std::atomic<uint64_t> hookErrors_{0};
  std::atomic<uint64_t> shared_{0};
  SandboxSink sandboxSink_;
};

}  // namespace koord
