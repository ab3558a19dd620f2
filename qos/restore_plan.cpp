#include "qos/restore_plan.h"

#include "qos/runtime_hooks.h"

#include <algorithm>
#include <map>

namespace koord {

namespace {

// A pod's limit as the kubelet sums it: every app container must set it (else
// nullopt: unlimited); the larger of the sum and the largest init container's;
// plus the overhead.
template <typename Get>
std::optional<int64_t> podLimit(const Pod& pod, Get get) {
  int64_t sum = 0;
  for (const Container& c : pod.containers) {
    const std::optional<int64_t> v = get(c.limits);
    if (!v) return std::nullopt;
    sum += *v;
  }
  for (const Container& c : pod.initContainers) {
    if (const std::optional<int64_t> v = get(c.limits)) sum = std::max(sum, *v);
  }
  if (const std::optional<int64_t> o = get(pod.overhead)) sum += *o;
  return sum;
}

const auto kCpu = [](const ResourceList& r) { return r.cpuMilli; };
const auto kMemory = [](const ResourceList& r) { return r.memoryBytes; };

}  // namespace

std::vector<CgroupWrite> planRestore(const RestoreInput& in) {
  std::vector<CgroupWrite> out;
  const RestoreScope& s = in.scope;
  auto reason = [](std::string rule) {
    auto why = std::make_shared<WriteReason>();
    why->rule = std::move(rule);
    return WriteReasonPtr(std::move(why));
  };
  const WriteReasonPtr kQos = reason("a kube-QoS dir: the kubelet leaves it unlimited");
  const WriteReasonPtr kLimit = reason(
      "the kubelet's value: the cpu/memory limit (summed for a "
      "pod when every container has one), else unlimited");
  const WriteReasonPtr kShares = reason("the kubelet's value: the cpu request as shares");
  const WriteReasonPtr kDefault = reason("the kernel's default: the kubelet never sets it");
  const WriteReasonPtr kCpus = reason("the CPUs the kubelet leaves a cgroup: its parent's");
  auto add = [&](const std::string& dir, Knob knob, KnobValue v, const WriteReasonPtr& why) {
    if (!in.support.has(knob)) return;
    out.push_back(CgroupWrite{dir, knob, std::move(v), kOwnerRestore, why});
  };
  // The full set on both versions. On v2 the kubelet leaves cpuset.cpus empty (the
  // parent's), but a cgroup with tasks cannot go back to empty once it held CPUs: the
  // kernel refuses it (ENOSPC, cpuset's validate_change; seen on runc's containers in
  // the v2-node rig). The command leaves alone the v2 cpusets still empty (never ours).
  const KnobValue fullCpus = KnobValue::ofCpus(in.fullCpus);
  const bool cpusKnown = !in.fullCpus.empty();

  // Memory QoS and GroupIdentity: every dir they write, back to the kernel's defaults.
  auto defaults = [&](const std::string& dir, bool container) {
    if (s.memoryQos) {
      add(dir, Knob::kMemoryMin, KnobValue::of(0), kDefault);
      add(dir, Knob::kMemoryLow, KnobValue::of(0), kDefault);
      add(dir, Knob::kMemoryHigh, KnobValue::of(-1), kDefault);
      add(dir, Knob::kMemoryWmarkRatio, KnobValue::of(0), kDefault);
      add(dir, Knob::kMemoryWmarkScaleFactor, KnobValue::of(50), kDefault);
      add(dir, Knob::kMemoryWmarkMinAdj, KnobValue::of(0), kDefault);
      add(dir, Knob::kMemoryPriority, KnobValue::of(0), kDefault);
      add(dir, Knob::kMemoryUsePriorityOom, KnobValue::of(0), kDefault);
      // A container's is the kubelet's to set (1 on v2 since 1.28); memory QoS
      // writes it there only to 1, as the kubelet does.
      if (!container) add(dir, Knob::kMemoryOomGroup, KnobValue::of(0), kDefault);
      add(dir, Knob::kMemorySoftLimit, KnobValue::of(-1), kDefault);
    }
    if (s.groupIdentity) add(dir, Knob::kCpuBvtWarpNs, KnobValue::of(0), kDefault);
  };

  const std::string be = in.layout.qosDir(KubeQos::kBestEffort);
  for (KubeQos q : {KubeQos::kGuaranteed, KubeQos::kBurstable, KubeQos::kBestEffort}) {
    defaults(in.layout.qosDir(q), false);
  }
  if (s.cpuSuppress) {
    add(be, Knob::kCpuQuota, KnobValue::of(-1), kQos);
    if (cpusKnown) add(be, Knob::kCpusetCpus, fullCpus, kCpus);
    if (cpusKnown) {
      for (const std::string& dir : in.besteffortDirs) add(dir, Knob::kCpusetCpus, fullCpus, kCpus);
    }
  }
  if (!in.pods) return out;

  for (const Pod& pod : *in.pods) {
    if (!pod.active() || !isSafePathComponent(pod.uid)) continue;
    const std::string podDir = in.layout.podDir(pod.kubeQos, pod.uid);
    const bool beQos = pod.qosWithDefault() == KoordQos::kBE;
    const bool pinned = pod.annotations.contains("scheduling.koordinator.sh/resource-status");
    // Who may have set the quota: burst (LS pods), the hooks (BE, pinned pods),
    // normalization (LS and unlabelled pods).
    const bool quota = s.cpuBurst || s.batchResource || s.cpusetAllocator || s.cpuNormalization;
    const bool batch = s.batchResource && beQos;
    defaults(podDir, false);
    if (quota) {
      const auto limit = podLimit(pod, kCpu);
      add(podDir, Knob::kCpuQuota, KnobValue::of(limit ? milliCpuToQuota(*limit) : -1), kLimit);
    }
    if (s.cpuBurst) add(podDir, Knob::kCpuBurst, KnobValue::of(0), kDefault);
    if (batch) {
      add(podDir, Knob::kCpuShares, KnobValue::of(milliCpuToShares(pod.requestCpuMilli())),
          kShares);
      const auto mem = podLimit(pod, kMemory);
      add(podDir, Knob::kMemoryLimit, KnobValue::of(mem ? *mem : -1), kLimit);
    }
    for (const Container& c : pod.containers) {
      if (c.id.empty()) continue;
      auto dir = in.layout.containerDir(podDir, c.runtime, c.id);
      if (!dir) continue;
      defaults(*dir, true);
      if (quota) {
        add(*dir, Knob::kCpuQuota,
            KnobValue::of(c.limits.cpuMilli ? milliCpuToQuota(*c.limits.cpuMilli) : -1), kLimit);
      }
      if (s.cpuBurst) add(*dir, Knob::kCpuBurst, KnobValue::of(0), kDefault);
      if (batch) {
        add(*dir, Knob::kCpuShares,
            KnobValue::of(milliCpuToShares(c.requests.cpuMilli.value_or(0))), kShares);
        add(*dir, Knob::kMemoryLimit, KnobValue::of(c.limits.memoryBytes.value_or(-1)), kLimit);
      }
      // CPUSetAllocator's: every container but BE pods' (suppress's, above) and,
      // under the kubelet's static policy, Guaranteed pods' that no resource-status
      // pins (the kubelet's own exclusive CPUs).
      const bool kubeletOwns =
          s.kubeletStaticCpuPolicy && pod.kubeQos == KubeQos::kGuaranteed && !pinned;
      if (s.cpusetAllocator && pod.kubeQos != KubeQos::kBestEffort && !beQos && !kubeletOwns &&
          cpusKnown) {
        add(*dir, Knob::kCpusetCpus, fullCpus, kCpus);
      }
    }
  }
  // One write per knob per dir: a dir both listed on disk and in the pod list gets
  // its first (they agree).
  std::map<std::pair<std::string, Knob>, bool> seen;
  std::erase_if(out, [&](const CgroupWrite& w) {
    return !seen.emplace(std::pair(w.dir, w.knob), true).second;
  });
  return out;
}

}  // namespace koord
