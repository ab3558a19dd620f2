#include "qos/cpu_burst.h"

#include "qos/write_reasons.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string_view>

#include "cgroupfs/knob.h"

namespace koord {

namespace {

// The largest limit the kernel's largest quota holds; a limit above it is no limit.
constexpr int64_t kMaxQuotaMilli = kMaxCfsQuotaUs / (kCfsPeriodUs / 1000);
// koordlet's validator for cfs_burst_us (100 s); the knob table's bound too.
constexpr int64_t kMaxBurstUs = 100'000'000;
constexpr double kScaleUpStep = 1.2;
constexpr double kScaleDownStep = 0.8;
constexpr double kCoolingRatio = 0.9;  // of the share-pool threshold
// Token bucket: usage at or above the limit spends tokens, usage well below it
// earns them; between the two the bucket is left alone.
constexpr int64_t kSpendAtPercent = 100;
constexpr int64_t kEarnBelowPercent = 60;

enum class QuotaOp { kScaleUp, kScaleDown, kRemain, kReset };

// -1 when the container has no CPU limit (koordlet's GetContainerMilliCPULimit).
int64_t limitMilli(const Container& c) { return c.limits.cpuMilli.value_or(-1); }

// The pod cgroup's quota as the kubelet sets it: the quota of the pod's CPU limit
// counted as the kubelet counts it (kube/pod_resources.h: sidecars summed, init
// containers max'ed, the overhead added), -1 when a container has none.
int64_t kubeletPodQuota(const Pod& pod) {
  auto limit =
      podLimits(containerAmounts(pod, &ResourceList::cpuMilli, true), pod.overhead.cpuMilli);
  if (!limit || !*limit || **limit > kMaxQuotaMilli) return -1;
  return milliCpuToQuota(**limit);
}

// A container whose cgroup exists: app containers and sidecars (regular init
// containers have finished before the pod runs).
bool writable(const ContainerView& c) {
  return c.container != nullptr && c.container->kind() != ContainerKind::kInit && !c.dir.empty();
}

// Kubernetes' pod request without overhead, counted as the kubelet counts it
// (kube/pod_resources.h). A hostile request (negative, or a sum past int64) makes
// the pod count as the largest possible request: the share pool looks full, which
// holds or lowers quotas, never raises them.
double podCpuRequestMilli(const Pod& pod) {
  auto r = podRequests(containerAmounts(pod, &ResourceList::cpuMilli, false));
  return r ? static_cast<double>(*r) : static_cast<double>(std::numeric_limits<int64_t>::max());
}

// The share pool is what LSE/LSR pods have not claimed; its use is everything on
// the node (system included, conservatively) but LSE/LSR/BE pods. Pods of every
// phase count, as in koordlet.
SharePoolState sharePoolState(const QosSnapshot& snap, int64_t thresholdPercent) {
  if (!snap.nodeCpuAvgCores || snap.topology.count() == 0) return SharePoolState::kUnknown;
  double total = static_cast<double>(snap.topology.count());
  double used = *snap.nodeCpuAvgCores;
  for (const PodView& pv : snap.pods) {
    if (pv.pod == nullptr) continue;
    KoordQos q = pv.pod->koordQos;
    if (q == KoordQos::kLSE || q == KoordQos::kLSR) {
      total -= podCpuRequestMilli(*pv.pod) / 1000;
    }
    if (q == KoordQos::kLSE || q == KoordQos::kLSR || q == KoordQos::kBE) {
      if (auto u = freshValue(pv.cpuCores, snap.at, CpuBurst::kMaxSampleAge)) used -= *u;
    }
  }
  double ratio = total > 0 ? used / total : 1.0;
  double threshold = static_cast<double>(thresholdPercent) / 100;
  if (ratio >= threshold) return SharePoolState::kOverload;
  if (ratio >= threshold * kCoolingRatio) return SharePoolState::kCooling;
  return SharePoolState::kIdle;
}

// A busy node takes back what bursting gave; a node near its threshold, or one we
// know nothing about, gives no more.
QuotaOp adjustForNode(SharePoolState state, QuotaOp op) {
  if (state == SharePoolState::kOverload && (op == QuotaOp::kScaleUp || op == QuotaOp::kRemain)) {
    return QuotaOp::kScaleDown;
  }
  if ((state == SharePoolState::kCooling || state == SharePoolState::kUnknown) &&
      op == QuotaOp::kScaleUp) {
    return QuotaOp::kRemain;
  }
  return op;
}

// Node config with the pod's annotation over it. A bad annotation is reported and
// the pod keeps the node's config, as koordlet does.
CpuBurstConfig podConfig(const Pod& pod, const CpuBurstConfig& node, std::vector<Error>& errors) {
  auto it = pod.annotations.find(kCpuBurstAnnotation);
  if (it == pod.annotations.end()) return node;
  Result<CpuBurstConfig> merged = mergeCpuBurstAnnotation(node, it->second);
  if (!merged) {
    errors.push_back(makeError("pod " + pod.ns + "/" + pod.name + ": " + merged.error().message +
                               " (using the node's cpuBurstStrategy)"));
    return node;
  }
  return *merged;
}

BurstMetric& metricFor(BurstResult& out, size_t podFirst, const PodView& pv,
                       const ContainerView& cv) {
  for (size_t i = podFirst; i < out.metrics.size(); ++i) {
    if (out.metrics[i].container == cv.container) return out.metrics[i];
  }
  out.metrics.push_back(BurstMetric{pv.pod, cv.container, cv.id, std::nullopt, std::nullopt});
  return out.metrics.back();
}

CgroupWrite write(const std::string& dir, Knob knob, int64_t value) {
  return CgroupWrite{dir, knob, KnobValue::of(value), kOwnerCpuBurst};
}

}  // namespace

// Evaluated in floating point in koordlet's order, so the file ends up holding the
// number koordlet would write, then held to the quota the container runs under:
// the kernel refuses a burst above its cgroup's quota (EINVAL, v1 and v2), so a
// percent above 100 means "burst up to the quota". koordlet writes the unclamped
// value (its default 1000 % is refused for every container, every round).
int64_t staticBurstUs(const ResourceList& limits, const CpuBurstConfig& config,
                      double normalizationRatio) {
  if (!config.burstsCpu()) return 0;
  int64_t milli = limits.cpuMilli.value_or(-1);
  if (milli <= 0) return 0;
  double cores =
      (static_cast<double>(milli) / 1000) * (static_cast<double>(config.cpuBurstPercent) / 100);
  const double us = cores * static_cast<double>(kCfsPeriodUs);
  return burstWithinQuota(
      us >= static_cast<double>(kMaxBurstUs) ? kMaxBurstUs : static_cast<int64_t>(us),
      normalizeQuota(milliCpuToQuota(milli), normalizationRatio));
}

int64_t burstWithinQuota(int64_t burstUs, int64_t quotaUs) {
  burstUs = std::clamp<int64_t>(burstUs, 0, kMaxBurstUs);
  if (quotaUs <= 0) return burstUs;
  // The kernel also keeps quota + burst within its largest quota.
  return std::max<int64_t>(0, std::min({burstUs, quotaUs, kMaxCfsQuotaUs - quotaUs}));
}

// koordlet reads the raw label here, not the kube-QoS default: an unlabelled
// Guaranteed pod still bursts. Pinned pods are left to the CPUSetAllocator hook,
// which unsets their quota (koordlet's pinned pods are LSE/LSR, skipped anyway).
bool burstEligible(const Pod& pod, bool pinned) {
  return !pinned && pod.koordQos != KoordQos::kLSE && pod.koordQos != KoordQos::kLSR &&
         pod.koordQos != KoordQos::kBE;
}

const char* toString(SharePoolState s) {
  switch (s) {
    case SharePoolState::kUnknown:
      return "unknown";
    case SharePoolState::kIdle:
      return "idle";
    case SharePoolState::kCooling:
      return "cooling";
    case SharePoolState::kOverload:
      return "overload";
  }
  return "unknown";
}

CpuBurst::CpuBurst(uint32_t seed) : rng_(seed) {}

bool CpuBurst::limiterAllows(const ContainerView& c, int64_t limitMilli,
                             const CpuBurstConfig& config, Clock::Monotonic now) {
  if (config.cfsQuotaBurstPeriodSeconds < 0 || c.id.empty()) return true;
  if (config.cfsQuotaBurstPercent < 100) return false;  // koordlet: an illegal config denies
  double capacity =
      static_cast<double>(config.cfsQuotaBurstPeriodSeconds * (config.cfsQuotaBurstPercent - 100));
  auto it = limiters_.find(c.id);
  if (it == limiters_.end() || it->second.capacity != capacity) {
    // A new bucket, or the config changed its size: start part full, at random, so
    // containers started together do not all run dry in the same round.
    Limiter fresh;
    fresh.capacity = capacity;
    fresh.tokens = std::trunc(capacity * std::uniform_real_distribution<double>(0, 1)(rng_) / 2);
    fresh.last = now;
    it = limiters_.insert_or_assign(c.id, fresh).first;
  }
  Limiter& l = it->second;
  l.expireAfter = std::chrono::seconds(2 * config.cfsQuotaBurstPeriodSeconds);

  // Without a fresh usage sample the container counts as at its limit: no change.
  double limitCores = static_cast<double>(limitMilli) / 1000;
  double usage = freshValue(c.cpuCores, now, kMaxSampleAge).value_or(limitCores);
  auto percent = static_cast<int64_t>(usage / limitCores * 100);  // whole percent, as koordlet
  // Exact elapsed time: koordlet truncates it to whole seconds, which drops a
  // whole round's update whenever the loop runs a little early.
  double elapsed = std::max(0.0, std::chrono::duration<double>(now - l.last).count());
  if (percent >= kSpendAtPercent) {
    l.tokens -= static_cast<double>(percent - 100) * elapsed;
  } else if (percent < kEarnBelowPercent) {
    l.tokens += static_cast<double>(100 - percent) * elapsed;
  }
  l.tokens = std::clamp(l.tokens, -l.capacity, l.capacity);
  l.last = now;
  l.lastUsed = now;
  return l.tokens > 0;
}

void CpuBurst::recycleLimiters(const QosSnapshot& snap) {
  std::set<std::string_view> present;
  for (const PodView& pv : snap.pods) {
    for (const ContainerView& cv : pv.containers) present.insert(cv.id);
  }
  std::erase_if(limiters_, [&](const auto& entry) {
    const Limiter& l = entry.second;
    return !present.contains(entry.first) || snap.at - l.lastUsed > l.expireAfter;
  });
}

BurstResult CpuBurst::run(const QosSnapshot& snap, const CpuBurstConfig& nodeConfig, bool enabled,
                          const CurrentValues& current, double normalizationRatio) {
  BurstResult out;
  if (!enabled) return out;
  out.nodeState = sharePoolState(snap, nodeConfig.sharePoolThresholdPercent);

  for (const PodView& pv : snap.pods) {
    if (pv.pod == nullptr || !burstEligible(*pv.pod, !pv.pinnedCpus.empty()) || !pv.pod->active()) {
      continue;
    }
    const CpuBurstConfig config = podConfig(*pv.pod, nodeConfig, out.errors);
    const size_t podFirstMetric = out.metrics.size();

    // Static burst: every container is written, 0 when the policy does not burst
    // CPU or the container has no limit, so turning the policy off undoes it.
    int64_t podBurst = 0;
    for (const ContainerView& cv : pv.containers) {
      if (!writable(cv)) continue;
      const int64_t burst = staticBurstUs(cv.container->limits, config, normalizationRatio);
      podBurst += burst;
      out.writes.push_back(write(cv.dir, Knob::kCpuBurst, burst));
      metricFor(out, podFirstMetric, pv, cv).burstUs = burst;
    }
    const size_t podBurstAt = out.writes.size();  // the pod's burst goes here, once known

    // Dynamic quota: each container steps from the quota its file holds now. The
    // pod's quota follows by the same delta (koordlet re-reads it after each
    // container; here it is carried along and written once).
    std::optional<int64_t> podQuota;
    if (!pv.dir.empty()) {
      if (auto v = current.get(pv.dir, Knob::kCpuQuota)) podQuota = v->number;
    }
    const std::optional<int64_t> podQuotaBefore = podQuota;
    bool podQuotaChanged = false;
    for (const ContainerView& cv : pv.containers) {
      if (!writable(cv)) continue;
      const int64_t milli = limitMilli(*cv.container);
      const int64_t base = normalizeQuota(milliCpuToQuota(milli), normalizationRatio);
      if (base <= 0) continue;  // no limit: nothing to scale
      auto cur = current.get(cv.dir, Knob::kCpuQuota);
      if (!cur) continue;                    // unreadable: koordlet skips the container this round
      const int64_t curQuota = cur->number;  // -1 (unlimited) is stepped from too: it lands on base
      int64_t ceil = base;
      if (config.cfsQuotaBurstPercent > 100) {
        ceil = static_cast<int64_t>(static_cast<double>(base) *
                                    static_cast<double>(config.cfsQuotaBurstPercent) / 100);
      }

      // The limiter is consulted whatever the policy, as koordlet does, so its
      // bucket keeps counting while the policy is switched off.
      const bool allowed = limiterAllows(cv, milli, config, snap.at);
      QuotaOp op = QuotaOp::kRemain;
      if (!config.burstsQuota()) {
        op = QuotaOp::kReset;
      } else if (!allowed) {
        op = QuotaOp::kScaleDown;
      } else if (auto t = freshValue(cv.throttledRatio, snap.at, kMaxSampleAge); t && *t > 0) {
        op = QuotaOp::kScaleUp;
      }
      op = adjustForNode(out.nodeState, op);

      int64_t target = curQuota;
      switch (op) {
        case QuotaOp::kScaleUp:
          target = static_cast<int64_t>(static_cast<double>(curQuota) * kScaleUpStep);
          break;
        case QuotaOp::kScaleDown:
          target = static_cast<int64_t>(static_cast<double>(curQuota) * kScaleDownStep);
          break;
        case QuotaOp::kReset:
          target = base;
          break;
        case QuotaOp::kRemain:
          break;
      }
      target = std::max(base, std::min(target, ceil));
      if (target == curQuota) continue;
      // koordlet reads the pod's quota before touching either; unreadable -> neither.
      if (!podQuota) continue;
      // A pod without a quota (-1) bounds nothing: it is left alone.
      if (*podQuota > 0) {
        *podQuota += target - curQuota;
        podQuotaChanged = true;
      }
      out.writes.push_back(write(cv.dir, Knob::kCpuQuota, target));
      metricFor(out, podFirstMetric, pv, cv).quotaUs = target;
    }
    if (podQuotaChanged) out.writes.push_back(write(pv.dir, Knob::kCpuQuota, *podQuota));
    // The pod's burst stays within the pod's quota before and after this round's
    // quota step (the kubelet's pod quota can be below the sum of its containers'
    // minimum quotas), so the kernel takes it in either write order.
    // An unreadable pod quota is taken as the one the kubelet sets: the quota of
    // the sum of the containers' limits (unlimited when one has none).
    if (!pv.dir.empty()) {
      podBurst = burstWithinQuota(podBurst, podQuotaBefore.value_or(kubeletPodQuota(*pv.pod)));
      if (podQuota) podBurst = burstWithinQuota(podBurst, *podQuota);
      out.writes.insert(out.writes.begin() + static_cast<std::ptrdiff_t>(podBurstAt),
                        write(pv.dir, Knob::kCpuBurst, podBurst));
    }
  }

  recycleLimiters(snap);
  return out;
}

StrategyOutcome CpuBurstStrategy::run(const StrategyContext& ctx) {
  BurstResult r = burst_.run(ctx.snapshot, ctx.spec.cpuBurst, true, ctx.current,
                             ctx.node.cpuNormalization ? ctx.node.cpuNormalizationRatio : -1);
  StrategyOutcome out{r.writes, {}, {}, {}};
  for (const Error& e : r.errors) out.errors.push_back(e.message);
  auto why = std::make_shared<WriteReason>();
  for (const char* field : {"policy", "cpuBurstPercent", "cfsQuotaBurstPercent",
                            "cfsQuotaBurstPeriodSeconds", "sharePoolThresholdPercent"}) {
    why->inputs.push_back(sloInput(ctx.spec, std::string("cpuBurstStrategy.") + field));
  }
  why->add("nodeState", toString(r.nodeState));
  if (ctx.snapshot.nodeCpuAvgCores)
    why->add("nodeCpuAvgCores", fixed(*ctx.snapshot.nodeCpuAvgCores));
  if (ctx.node.cpuNormalization && ctx.node.cpuNormalizationRatio > 0) {
    why->add("cpuNormalizationRatio", fixed(ctx.node.cpuNormalizationRatio, 3), "Node annotation");
  }
  why->rule =
      "cpu.cfs_burst_us = limit x cpuBurstPercent; while the node is not overloaded, "
      "cfsQuotaBurstOnly/auto raise a throttled container's quota step by step up to "
      "cfsQuotaBurstPercent of its limit's quota, and lower it back when it is";
  out.why = std::move(why);
  out.result = std::move(r);
  return out;
}

}  // namespace koord
