// Runtime hooks policy: what a pod's or container's cgroup settings should be,
// computed from the pod as a hook sees it and the agent's in-memory state. Two
// callers, one policy, so a container created through NRI and one repaired later
// by the reconciler end up identical:
//   * the NRI plugin (nri/nri_hooks.h) turns a container's intent into the
//     ContainerAdjustment of CreateContainer / the ContainerUpdate of
//     UpdateContainer, before the container starts;
//   * the reconciler (qos/hook_reconcile.h) turns pod and container intents into
//     cgroup writes every reconcile interval, for what NRI missed.
//
// Hooks (koordlet's names, reference koordlet.md §4.7, §4.9, §4.10, §7.3):
//   BatchResource    raw QoS BE pods with batch resources (spec or annotation;
//                    without any the kubelet's values stay): cpu.shares from Σ
//                    kubernetes.io/batch-cpu requests (milli × 1024 / 1000, clamped 2..262144), cfs
//                    quota from batch-cpu limits (× 100 µs; any container without one: -1; -1 while
//                    CPU suppress runs with policy cfsQuota), memory limit from
//                    kubernetes.io/batch-memory limits (missing: -1). Pod level: the sums;
//                    container level: its own. A negative value, or one whose
//                    conversion or sum overflows int64 (or a quota above the kernel's
//                    2^44-1 µs), refuses just the field it feeds (an error, no write).
//   CPUSetAllocator  (§4.10) scheduling.koordinator.sh/resource-status {"cpuset": "..."}
//                    non-empty: that cpuset on the container, and cfs quota -1 on
//                    pod and container unless --disable-unset-cpu-quota. Else, for a
//                    container: kube BestEffort: cpuset "" (cleared; CPU suppress
//                    owns them); other BE pods (QoS with default): nothing (suppress's).
//                    Then, with the node's share pools known (HookContext::
//                    cpusetRule), the first that applies: a NUMA-aware allocation
//                    (resource-status numaNodeResources with cpu or batch-cpu) of a
//                    non-BE pod: the pools of those NUMA nodes; QoS SYSTEM with a
//                    system-qos cpuset: that cpuset; QoS LS (the label): every pool;
//                    a static kubelet CPU manager: nothing (the kubelet's cpuset
//                    stays); else every pool. QoS here is the koordinator.sh/qosClass
//                    label alone.
//   Resctrl          the pod's class group (LSR for LSE/LSR, LS, BE: qosWithDefault)
//                    when that class's resctrlQOS is enabled and resctrl is ready;
//                    not for pods annotated node.koordinator.sh/resctrl.
//   CPUBurst         (cgroup v2 only, as the unified map) cpu.max.burst from the
//                    static burst of the pod's cpuBurst config (cpu_burst.h's own
//                    staticBurstUs), eligible pods only, and only when > 0 (a new
//                    container starts at 0; the strategy resets it later if needed).
//   MemoryQoS        (cgroup v2 only, unified) the container's memory.min/low/high,
//                    computed by the memory QoS strategy itself on a one-pod
//                    snapshot; needs the kubelet's pod (HookPod::kubelet), else skipped.
//   OOMScoreAdj      (gate, default off; Koordinator HEAD) a container's
//                    oom_score_adj from koordinator.sh/oom-score-adj(-spec)
//                    (qos/oom_score_adj.h): at creation through the runtime (both hook
//                    paths), then on every process by the reconciler (hot update).
//                    koordlet sets it from its reconciler only.
//   CPUNormalization (gate, default off; colocation.md §5) pods labelled LS or
//                    unlabelled, not pinned by a resource-status cpuset: cfs quota
//                    from the CPU limits (pod: the sum, -1 if any container has
//                    none) divided by the node's cpu-normalization-ratio, rounded
//                    up, when it is above 1. BatchResource divides BE quotas by the
//                    same ratio whatever this gate says (as koordlet).
// Pods labelled runtimeproxy.koordinator.sh/skip-hookserver=true get nothing.
//
// Departures: BE pools (BECPUManager) are not used; kube-BestEffort and BE pods are
// decided before the pool rules (koordlet: after), so NRI agrees with the reconciler,
// which leaves BE cpusets to CPU suppress, and no pool lands under a besteffort dir
// suppress narrowed (cgroup v1 refuses a child cpuset outside its parent's); cfs quotas are at
// least 1000 µs (the kernel refuses less; kubelet's MilliCPUToQuota does the same), a
// normalized one too; CPUNormalization acts on every hook path (koordlet's hooks have
// no resources there and only its reconciler acts).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cgroupfs/knob.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"
#include "qos/node_topology.h"
#include "qos/slo_config.h"

namespace koord {

inline constexpr const char* kExtendedResourceSpecAnnotation =
    "node.koordinator.sh/extended-resource-spec";
inline constexpr const char* kSkipHookServerLabel = "runtimeproxy.koordinator.sh/skip-hookserver";

// A container as a hook sees it.
struct HookContainer {
  std::string name;
  std::string id;  // runtime id, "" when not created yet
  ResourceList requests;
  ResourceList limits;
  // App container, sidecar (restartable init container) or regular init container:
  // the pod-level values count them as the kubelet does (kube/pod_resources.h);
  // the container-level hooks treat all three alike.
  ContainerKind kind = ContainerKind::kApp;
};

// A pod as a hook sees it: from the kubelet's pod list (reconciler) or from an NRI
// request (enriched with the kubelet's spec when the pod is already known).
struct HookPod {
  std::string uid;
  std::string ns;
  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  KubeQos kubeQos = KubeQos::kBestEffort;
  KoordQos rawQos = KoordQos::kNone;  // the koordinator.sh/qosClass label only
  std::vector<HookContainer> containers;
  // The kubelet's pod when known (memory QoS needs its spec).
  const Pod* kubelet = nullptr;
  // Why the extended-resource-spec annotation is bad (naming the annotation and
  // field), "" if fine: the BatchResource hook reports it, with the pod, and only
  // that hook loses its fields.
  std::string extendedResourceError;

  const HookContainer* container(std::string_view name) const;
  // The label, else the kube QoS default (Guaranteed->LSR, Burstable->LS, BestEffort->BE).
  KoordQos qosWithDefault() const;
};

// The per-container batch requests/limits of the extended-resource-spec
// annotation: {"containers":{"<name>":{"requests":{...},"limits":{...}}}}.
struct ExtendedResources {
  ResourceList requests;
  ResourceList limits;
};
Result<std::map<std::string, ExtendedResources>> parseExtendedResourceSpec(std::string_view json);

// Batch resources from the container spec, else from the annotation (spec
// preferred per field, as koordlet's reconciler). A bad annotation does not fail the
// pod: it is kept in extendedResourceError for the BatchResource hook. Init
// containers and sidecars are hook containers too (first, in spec order, with their
// kind).
Result<HookPod> hookPodFromKubelet(const Pod& pod);

// The annotation's batch values filling what `containers` lack (spec values win);
// a bad annotation sets pod.extendedResourceError.
void mergeExtendedResourceSpec(HookPod& pod);

// koordlet's MilliCPUToShares: milli × 1024 / 1000, clamped to 2..262144.
int64_t milliCpuToShares(int64_t milli);

// The agent state every hook decides from.
struct HookContext {
  const NodeSloSpec* spec = nullptr;
  bool batchResource = true;    // gate BatchResource
  bool cpusetAllocator = true;  // gate CPUSetAllocator
  bool resctrl = false;         // gate RdtResctrl and resctrl detected ready
  bool cpuBurst = true;         // gate CPUBurst (and, v2, the kernel has cpu.max.burst)
  bool memoryQos = false;       // gate CgroupReconcile and the kernel has memory.min/low/high
  CgroupVersion version = CgroupVersion::kV1;
  bool disableUnsetCpuQuota = false;  // --disable-unset-cpu-quota
  bool suppressCfsQuota = false;      // CPU suppress enabled with policy cfsQuota
  // The Node's node.koordinator.sh/cpu-normalization-ratio (-1: none): BE quotas
  // (BatchResource) are divided by it, and LS quotas under cpuNormalization.
  double cpuNormalizationRatio = -1;
  bool cpuNormalization = false;  // gate CPUNormalization
  // The share pools and the kubelet's CPU manager policy (qos/node_topology.h);
  // nullptr until the node topology is first computed (then only the resource-status
  // cpuset and the kube-BestEffort clearing apply, as koordlet without its rule).
  std::shared_ptr<const CpuSetRule> cpusetRule;
  int64_t nodeAllocatableMemory = 0;  // bytes; 0: unknown (memory QoS skipped)
  int64_t pageSize = 4096;
  // Whether the caller wants HookIntent::unified (v2 files: the CPU burst and memory
  // QoS hooks). NRI does; the reconciler does not (those strategies write them
  // themselves), and skipping them spares it a memory QoS plan per container.
  bool unified = true;
  bool gpuEnvInject = false;  // gate GPUEnvInject
  bool oomScoreAdj = false;   // gate OOMScoreAdj
};

// What the hooks want; unset fields are left alone.
struct HookIntent {
  std::optional<int64_t> cpuShares;            // cgroup v1 shares (the runtime converts on v2)
  std::optional<int64_t> cfsQuota;             // µs, -1 unlimited
  std::optional<int64_t> memoryLimit;          // bytes, -1 unlimited
  std::optional<std::string> cpuset;           // "" clears (NRI only; the reconciler skips "")
  std::optional<std::string> rdtClass;         // "LSR", "LS", "BE"
  std::map<std::string, std::string> unified;  // v2 file -> value
  std::map<std::string, std::string> env;      // container env to set (create only)
  // The container's processes' oom_score_adj (OOMScoreAdj, qos/oom_score_adj.h): at
  // creation the runtime's (NRI adjustment, the proxy's response), later written to
  // each process by the reconciler.
  std::optional<int64_t> oomScoreAdj;
  bool empty() const;
};

enum class HookName {
  kBatchResource,
  kCpusetAllocator,
  kResctrl,
  kCpuBurst,
  kMemoryQos,
  kCpuNormalization,
  kGpuEnvInject,
  kOomScoreAdj
};
// "BatchResource", "CPUSetAllocator", "Resctrl", "CPUBurst", "MemoryQoS", "CPUNormalization",
// "GPUEnvInject", "OOMScoreAdj"
const char* toString(HookName h);
// The hooks of a pod sandbox and of the reconciler (which adds OOMScoreAdj for a
// container: containerIntent).
inline constexpr HookName kAllHooks[] = {HookName::kBatchResource, HookName::kCpusetAllocator,
                                         HookName::kResctrl,       HookName::kCpuBurst,
                                         HookName::kMemoryQos,     HookName::kCpuNormalization};
// The hooks of PreCreateContainer: those, and GPUEnvInject (a container's env is set
// when it is created, never after: koordlet runs it at this stage only).
inline constexpr HookName kCreateContainerHooks[] = {
    HookName::kBatchResource, HookName::kCpusetAllocator, HookName::kResctrl,
    HookName::kCpuBurst,      HookName::kMemoryQos,       HookName::kCpuNormalization,
    HookName::kGpuEnvInject,  HookName::kOomScoreAdj};

// The hooks koordlet runs at PreUpdateContainerResources (§7.3): a resize does not
// touch the RDT class, burst or memory QoS, which stay as created.
inline constexpr HookName kUpdateHooks[] = {HookName::kBatchResource, HookName::kCpusetAllocator,
                                            HookName::kCpuNormalization};

bool skipHooks(const HookPod& pod);  // the skip-hookserver label is "true"

// Runs one hook for a pod (container == nullptr) or one of its containers, adding
// its fields to `intent`. A hook that does not apply leaves `intent` alone and
// returns Ok. An error names the pod and the hook: after a bad annotation (or
// anything else that fails the hook as a whole) the hook adds nothing; after a
// value that cannot be right (a negative batch limit, a product or sum past
// int64) it adds its other fields and the error names each refused one, e.g.
// "container web: kubernetes.io/batch-memory limit -1 is negative (memory limit
// not set)".
Status runHook(HookName hook, const HookPod& pod, const HookContainer* container,
               const HookContext& ctx, HookIntent& intent);

// All hooks in order; errors collected, one line each.
HookIntent podIntent(const HookPod& pod, const HookContext& ctx, std::vector<std::string>* errors);
HookIntent containerIntent(const HookPod& pod, const HookContainer& container,
                           const HookContext& ctx, std::vector<std::string>* errors);

}  // namespace koord
