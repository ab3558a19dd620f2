// CPU suppress (see the header). Behaviour follows koordlet's
// qosmanager/plugins/cpusuppress/cpu_suppress.go and helpers/calculator.go; where
// this file departs from it, the comment at that spot says so and why.
#include "qos/cpu_suppress.h"

#include "qos/write_reasons.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "cgroupfs/knob.h"

namespace koord {
namespace {

constexpr int64_t kMinBeCpus = 2;
constexpr int64_t kMinBeQuota = 2000;
constexpr int64_t kUnlimitedQuota = -1;
// cfsQuota growth per round, as a fraction of capacity: BE scales up slowly, down
// at once. (The cpuset policy's step, ceil(10% of CPUs), is computed in integers.)
constexpr double kMaxIncreaseRatio = 0.1;
// cfsQuota: a target closer than this fraction of capacity to the current quota
// is not written.
constexpr double kBypassQuotaDeltaRatio = 0.01;

constexpr const char* kSkipDisabled = "disabled";
constexpr const char* kSkipNoBesteffortDir = "besteffort cgroup dir unknown";
constexpr const char* kSkipNoPods = "no pods";
constexpr const char* kSkipNodeUsage = "node cpu usage stale or missing";
constexpr const char* kSkipCpusetUnknown = "besteffort cpuset unreadable";
constexpr const char* kSkipNoCpus = "no CPUs left for BE (all reserved, system or LSE-pinned)";
constexpr const char* kSkipQuotaUnknown = "besteffort quota unreadable";
constexpr const char* kSkipQuotaDelta = "quota change within 1% of capacity";
constexpr const char* kSkipNoPlacement =
    "policy cpuset needs the CPU topology (cores, sockets) from sysfs; cfsQuota does not";

// The koordinator.sh/qosClass label itself: koordlet classifies pinned CPUs by
// the raw label (GetPodQoSClassRaw), not by the kube-QoS default.
KoordQos rawQos(const PodView& p) { return p.pod != nullptr ? p.pod->koordQos : p.qos; }

// A BE pod: BE by label (or by default), or in the kube BestEffort class whatever
// its label. koordlet counts usage with that rule (helpers.NonBEPodFilter) and
// writes every pod under the besteffort dir (it walks the directory), so a
// labelled pod of kube class BestEffort is suppressed with the rest. Writing it
// also keeps cgroup v1 happy: a parent's cpuset cannot shrink below a child's.
bool isBe(const PodView& p) {
  return p.qos == KoordQos::kBE || (p.pod != nullptr && p.pod->kubeQos == KubeQos::kBestEffort);
}

bool contains(const std::vector<int>& sorted, int id) {
  return std::binary_search(sorted.begin(), sorted.end(), id);
}

std::vector<int> sortedUnique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// CPUs no BE task may run on: reserved, exclusive SYSTEM and LSE-pinned ones.
std::vector<int> excludedCpus(const QosSnapshot& snap) {
  std::vector<int> out = snap.reservation.reservedCpus;
  out.insert(out.end(), snap.reservation.systemExclusiveCpus.begin(),
             snap.reservation.systemExclusiveCpus.end());
  for (const PodView& p : snap.pods) {
    if (rawQos(p) == KoordQos::kLSE) {
      out.insert(out.end(), p.pinnedCpus.begin(), p.pinnedCpus.end());
    }
  }
  return sortedUnique(std::move(out));
}

CgroupWrite cpusetWrite(const std::string& dir, const std::vector<int>& cpus) {
  return CgroupWrite{dir, Knob::kCpusetCpus, KnobValue::ofCpus(cpus), kOwnerCpuSuppress};
}

CgroupWrite quotaWrite(const std::string& dir, int64_t quota) {
  return CgroupWrite{dir, Knob::kCpuQuota, KnobValue::of(quota), kOwnerCpuSuppress};
}

// The BE cpuset writes: `top` on the besteffort dir and BE pod dirs, `containers`
// on BE container dirs, each dir once. Besides the pods of the list, every cgroup
// found under the besteffort dir (the sandbox's pause container, a deleted pod's
// leftovers) is narrowed too: on v1 a parent cannot shrink below any child.
// Dirs not created yet ("") are skipped.
void appendCpusetWrites(const QosSnapshot& snap, const std::vector<int>& top,
                        const std::vector<int>& containers, std::vector<CgroupWrite>& out) {
  std::set<std::string> seen;
  auto add = [&](const std::string& dir, const std::vector<int>& cpus) {
    if (!dir.empty() && seen.insert(dir).second) out.push_back(cpusetWrite(dir, cpus));
  };
  add(snap.besteffortDir, top);
  for (const PodView& p : snap.pods) {
    if (isBe(p)) add(p.dir, top);
  }
  for (const std::string& dir : snap.besteffortPodDirs) add(dir, top);
  for (const PodView& p : snap.pods) {
    if (!isBe(p) || p.dir.empty()) continue;
    for (const ContainerView& c : p.containers) add(c.dir, containers);
  }
  for (const std::string& dir : snap.besteffortContainerDirs) add(dir, containers);
}

// Go's int64(x) for the float products koordlet truncates.
int64_t truncMilli(double cores) { return static_cast<int64_t>(cores * 1000); }

}  // namespace

std::vector<int> CpuSuppress::fullBeCpus(const QosSnapshot& snap) {
  const std::vector<int> excluded = excludedCpus(snap);
  std::vector<int> out;
  for (const CpuInfo& c : snap.topology.cpus) {
    if (!contains(excluded, c.id)) out.push_back(c.id);
  }
  return out;
}

std::vector<int> CpuSuppress::pickCpus(const CpuTopology& topo, const std::vector<int>& candidates,
                                       size_t count) {
  // koordlet's calculateBESuppressCPUSetPolicy, with two departures: buckets are
  // keyed by the (node, socket) pair (koordlet's (node + n) × (socket + 1) key,
  // n = CPU count, merges node n socket 0 with node 0 socket 1), and asking for
  // more CPUs than there are gives them all (koordlet gives none, leaving BE on
  // whatever cpuset it had).
  const std::vector<int> wanted = sortedUnique(candidates);
  std::map<std::pair<int, int>, std::vector<CpuInfo>> byBucket;
  for (const CpuInfo& c : topo.cpus) {
    if (contains(wanted, c.id)) byBucket[{c.node, c.socket}].push_back(c);
  }
  std::vector<std::vector<CpuInfo>> buckets;
  size_t total = 0;
  for (auto& [key, cpus] : byBucket) {
    std::sort(cpus.begin(), cpus.end(), [](const CpuInfo& a, const CpuInfo& b) {
      return a.core != b.core ? a.core < b.core : a.id < b.id;
    });
    total += cpus.size();
    buckets.push_back(std::move(cpus));
  }
  // Largest bucket first; ties by the first CPU after the (core, id) sort.
  std::sort(buckets.begin(), buckets.end(), [](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() > b.size() : a.front().id < b.front().id;
  });
  std::vector<int> picked;
  size_t need = std::min(count, total);
  if (need == 0) return picked;
  std::vector<std::vector<bool>> used;
  for (const auto& b : buckets) used.emplace_back(b.size(), false);
  const size_t n = buckets.size();

  // Round one: an HT sibling pair (adjacent entries on one core) per bucket per
  // turn while two or more are needed; stop after a turn that took nothing.
  size_t i = 0;
  size_t needAtTurnStart = 0;
  bool turnStarted = false;
  for (;; i = (i + 1) % n) {
    if (need <= 1) break;
    if (i == 0) {
      if (turnStarted && needAtTurnStart == need) break;
      turnStarted = true;
      needAtTurnStart = need;
    }
    const auto& b = buckets[i];
    for (size_t j = 0; j + 1 < b.size(); ++j) {
      if (used[i][j] || used[i][j + 1] || b[j].core != b[j + 1].core) continue;
      used[i][j] = used[i][j + 1] = true;
      picked.push_back(b[j].id);
      picked.push_back(b[j + 1].id);
      need -= 2;
      break;
    }
  }
  // Round two: single CPUs, round-robin on from the bucket round one stopped at.
  const size_t start = i;
  turnStarted = false;
  for (;; i = (i + 1) % n) {
    if (need == 0) break;
    if (i == start) {
      if (turnStarted && needAtTurnStart == need) break;
      turnStarted = true;
      needAtTurnStart = need;
    }
    for (size_t j = 0; j < buckets[i].size(); ++j) {
      if (used[i][j]) continue;
      used[i][j] = true;
      picked.push_back(buckets[i][j].id);
      --need;
      break;
    }
  }
  std::sort(picked.begin(), picked.end());
  return picked;
}

namespace {

// The cpuset policy: appends the writes (or says in out.skipped why none).
void adjustByCpuset(const QosSnapshot& snap, int64_t suppressMilli, const CurrentValues& current,
                    SuppressResult& out) {
  const auto old = current.get(snap.besteffortDir, Knob::kCpusetCpus);
  if (!old) {
    out.skipped = kSkipCpusetUnknown;
    return;
  }
  // Pools: LSR-pinned CPUs, and the rest of what BE may use.
  const std::vector<int> full = CpuSuppress::fullBeCpus(snap);
  std::vector<int> lsrPinned;
  for (const PodView& p : snap.pods) {
    if (rawQos(p) == KoordQos::kLSR) {
      lsrPinned.insert(lsrPinned.end(), p.pinnedCpus.begin(), p.pinnedCpus.end());
    }
  }
  lsrPinned = sortedUnique(std::move(lsrPinned));
  std::vector<int> lsrPool;
  std::vector<int> lsPool;
  for (const int id : full) (contains(lsrPinned, id) ? lsrPool : lsPool).push_back(id);
  const int64_t available = static_cast<int64_t>(full.size());
  if (available == 0) {
    out.skipped = kSkipNoCpus;
    return;
  }

  // ceil(suppress / 1000), at least 2, at most ceil(10% of CPUs) more than now.
  int64_t cpus = static_cast<int64_t>(std::ceil(static_cast<double>(suppressMilli) / 1000));
  cpus = std::max(cpus, kMinBeCpus);
  // In integers; koordlet's float ceil(n × 0.1) gives the same for every n.
  const auto maxIncrease = (static_cast<int64_t>(snap.topology.count()) + 9) / 10;
  const auto oldCount = static_cast<int64_t>(old->cpus.size());
  if (cpus - oldCount > maxIncrease) cpus = oldCount + maxIncrease;
  // Never more than exist (koordlet then picks nothing at all; see pickCpus).
  cpus = std::min(cpus, available);

  // Each pool gives in proportion to its size, the LSR share rounded down.
  const int64_t fromLsr = cpus * static_cast<int64_t>(lsrPool.size()) / available;
  std::vector<int> picked;
  if (fromLsr > 0) {
    picked = CpuSuppress::pickCpus(snap.topology, lsrPool, static_cast<size_t>(fromLsr));
  }
  if (cpus - fromLsr > 0) {
    const auto fromLs =
        CpuSuppress::pickCpus(snap.topology, lsPool, static_cast<size_t>(cpus - fromLsr));
    picked.insert(picked.end(), fromLs.begin(), fromLs.end());
  }
  picked = sortedUnique(std::move(picked));

  // With the kubelet's static CPU manager the kubelet owns pod-level cpusets of
  // its exclusive pods, so the QoS and pod dirs keep the full BE set and only
  // containers are narrowed (koordlet: applyCPUSetWithStaticPolicy).
  const bool isStatic = snap.cpuManagerPolicy == CpuManagerPolicy::kStatic;
  appendCpusetWrites(snap, isStatic ? full : picked, picked, out.writes);
  out.suppressCores = static_cast<double>(picked.size());
}

// The cfsQuota policy, likewise.
void adjustByCfsQuota(const QosSnapshot& snap, int64_t suppressMilli, const CurrentValues& current,
                      SuppressResult& out) {
  int64_t quota = std::max(suppressMilli * kCfsPeriodUs / 1000, kMinBeQuota);
  const auto cur = current.get(snap.besteffortDir, Knob::kCpuQuota);
  if (!cur) {
    out.skipped = kSkipQuotaUnknown;
    return;
  }
  const int64_t now = cur->number;
  const double capacityUs = static_cast<double>(snap.topology.count()) * kCfsPeriodUs;
  // koordlet also compares against -1 here: a small target right after recovery
  // stays unlimited until it moves by 1% of capacity.
  if (std::abs(static_cast<double>(quota - now)) < capacityUs * kBypassQuotaDeltaRatio &&
      quota != kMinBeQuota) {
    out.skipped = kSkipQuotaDelta;
    return;
  }
  const double maxIncrease = capacityUs * kMaxIncreaseRatio;
  if (static_cast<double>(quota - now) > maxIncrease && now != kUnlimitedQuota) {
    quota = now + static_cast<int64_t>(maxIncrease);
  }
  out.writes.push_back(quotaWrite(snap.besteffortDir, quota));
  out.suppressCores = static_cast<double>(quota) / kCfsPeriodUs;
}

}  // namespace

void CpuSuppress::recover(Recovery& state, const std::vector<CgroupWrite>& writes,
                          const CurrentValues& current, std::vector<CgroupWrite>& out) {
  if (state == Recovery::kDone) return;
  if (state == Recovery::kNeeded) {
    out.insert(out.end(), writes.begin(), writes.end());
    state = Recovery::kWritten;
    return;
  }
  bool allHeld = true;
  for (const CgroupWrite& w : writes) {
    const std::optional<KnobValue> now = current.get(w.dir, w.knob);  // unreadable: not held
    if (now && *now == w.value) continue;
    allHeld = false;
    out.push_back(w);
  }
  if (allHeld) state = Recovery::kDone;
}

SuppressResult CpuSuppress::run(const QosSnapshot& snap, const ResourceThresholdStrategy& config,
                                bool enabled, const CurrentValues& current) {
  SuppressResult out;
  out.policy = config.cpuSuppressPolicy;
  if (snap.besteffortDir.empty()) {
    out.skipped = kSkipNoBesteffortDir;
    return out;
  }

  if (!enabled) {
    // Recover until the files hold the recovered values, then leave them alone
    // until suppression runs again (koordlet rewrites the full cpuset every round
    // through its cache).
    recover(quotaRecovery_, {quotaWrite(snap.besteffortDir, kUnlimitedQuota)}, current, out.writes);
    if (cpusetRecovery_ != Recovery::kDone) {
      std::vector<CgroupWrite> recovery;
      const std::vector<int> full = fullBeCpus(snap);
      if (!full.empty()) appendCpusetWrites(snap, full, full, recovery);
      recover(cpusetRecovery_, recovery, current, out.writes);
    }
    out.skipped = kSkipDisabled;
    return out;
  }

  // koordlet skips the round on an empty pod list (a kubelet restart).
  if (snap.pods.empty()) {
    out.skipped = kSkipNoPods;
    return out;
  }
  const auto nodeUsed = freshValue(snap.nodeCpuCores, snap.at, kMaxSampleAge);
  if (!nodeUsed) {
    out.skipped = kSkipNodeUsage;
    return out;
  }

  // Usage of the pods with a fresh sample; a pod without one counts as 0, as
  // koordlet leaves it out of its map.
  double allPods = 0;
  double nonBe = 0;
  double be = 0;
  for (const PodView& p : snap.pods) {
    const auto used = freshValue(p.cpuCores, snap.at, kMaxSampleAge);
    if (!used) continue;
    allPods += *used;
    (isBe(p) ? be : nonBe) += *used;
  }
  const double reservedCores = static_cast<double>(reservedCpuMilli(snap.reservation)) / 1000;
  const double systemUsed = std::max(std::max(*nodeUsed - allPods, 0.0), reservedCores);
  out.lsUsedCores = nonBe;
  out.beUsedCores = be;
  out.nodeUsedCores = *nodeUsed;
  out.systemUsedCores = systemUsed;

  // In milli-cores, each term truncated as koordlet's quantities are.
  const int64_t capacityMilli = snap.capacityMilli();
  int64_t suppressMilli = capacityMilli * config.cpuSuppressThresholdPercent / 100 -
                          truncMilli(nonBe) - truncMilli(systemUsed);
  if (config.cpuSuppressMinPercent) {
    suppressMilli = std::max(suppressMilli, capacityMilli * *config.cpuSuppressMinPercent / 100);
  }

  if (config.cpuSuppressPolicy == CpuSuppressPolicy::kCpuset && !snap.topology.placement) {
    // CPU ids without cores and sockets (no sysfs): picking BE CPUs would split
    // hyper-thread pairs at random. Policy cfsQuota needs only the count. A quota
    // cfsQuota left suppressed is still recovered: this policy owns no quota.
    out.skipped = kSkipNoPlacement;
    recover(quotaRecovery_, {quotaWrite(snap.besteffortDir, kUnlimitedQuota)}, current, out.writes);
    return out;
  }
  if (config.cpuSuppressPolicy == CpuSuppressPolicy::kCpuset) {
    adjustByCpuset(snap, suppressMilli, current, out);
    cpusetRecovery_ = Recovery::kNeeded;
    recover(quotaRecovery_, {quotaWrite(snap.besteffortDir, kUnlimitedQuota)}, current, out.writes);
  } else {
    adjustByCfsQuota(snap, suppressMilli, current, out);
    quotaRecovery_ = Recovery::kNeeded;
    // Every round, as koordlet: new BE pods get the full set too (the executor
    // drops what the files already hold). When suppress stops they are checked
    // against the files like any recovery.
    const std::vector<int> full = fullBeCpus(snap);
    if (!full.empty()) appendCpusetWrites(snap, full, full, out.writes);
    cpusetRecovery_ = Recovery::kWritten;
  }
  return out;
}

namespace {

WriteReasonPtr suppressReason(const SuppressResult& r, const QosSnapshot& snap,
                              const NodeSloSpec& spec) {
  auto why = std::make_shared<WriteReason>();
  constexpr std::string_view kBlock = "resourceUsedThresholdWithBE.";
  for (const char* field :
       {"enable", "cpuSuppressThresholdPercent", "cpuSuppressMinPercent", "cpuSuppressPolicy"}) {
    why->inputs.push_back(sloInput(spec, std::string(kBlock) + field));
  }
  why->add("capacityCores", std::to_string(snap.topology.count()));
  why->add("reservedCores", fixed(static_cast<double>(reservedCpuMilli(snap.reservation)) / 1000));
  if (r.nodeUsedCores) why->add("nodeUsedCores", fixed(*r.nodeUsedCores));
  if (r.lsUsedCores) why->add("lsUsedCores", fixed(*r.lsUsedCores));
  if (r.beUsedCores) why->add("beUsedCores", fixed(*r.beUsedCores));
  if (r.systemUsedCores) why->add("systemUsedCores", fixed(*r.systemUsedCores));
  if (r.suppressCores) why->add("beAllowedCores", fixed(*r.suppressCores));
  if (!r.skipped.empty()) why->add("skipped", r.skipped);
  why->rule =
      "BE may use capacity x cpuSuppressThresholdPercent - lsUsed - systemUsed (at least "
      "cpuSuppressMinPercent of capacity), as CPUs (policy cpuset) or as the besteffort quota "
      "(cfsQuota); the other knob is recovered";
  return why;
}

}  // namespace

StrategyOutcome CpuSuppressStrategy::run(const StrategyContext& ctx) {
  SuppressResult r =
      suppress_.run(ctx.snapshot, ctx.spec.threshold, ctx.spec.threshold.enable, ctx.current);
  StrategyOutcome out{r.writes, {}, {}, {}};
  out.why = suppressReason(r, ctx.snapshot, ctx.spec);
  out.result = std::move(r);
  return out;
}

}  // namespace koord
