#include "metrics/pod_collector.h"

#include <algorithm>
#include <cerrno>
#include <limits>
#include <utility>

#include "base/log.h"
#include "base/pinned_files.h"
#include "base/quote.h"
#include "base/read_file.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/cgroup_parsers.h"

namespace koord {

namespace {

constexpr CgroupFile kSlotFiles[] = {CgroupFile::kCpuUsage,
                                     CgroupFile::kMemoryStat,
                                     CgroupFile::kCpuStat,
                                     CgroupFile::kCpuPressure,
                                     CgroupFile::kMemoryPressure,
                                     CgroupFile::kIoPressure,
                                     CgroupFile::kCpusetCpusEffective,
                                     CgroupFile::kCpuQuota,
                                     CgroupFile::kCpuPeriod};

bool vanished(const Error& e) {
  // ENOENT (and ENODEV, which a cgroup being removed can return) is "vanished":
  // the caller drops the cgroup silently.
  return e.sysErrno == ENOENT || e.sysErrno == ENODEV;
}

}  // namespace

PodCollector::PodCollector(Config config, CgroupLayout layout, const Clock& clock)
    : config_(std::move(config)),
      layout_(std::move(layout)),
      clock_(&clock),
      budget_(config_.maxOpenFiles) {
  be_.dir = layout_.qosDir(KubeQos::kBestEffort);
}

void PodCollector::sampled(Cgroup& cg) {
  ownersChanged_ = ownersChanged_ || !cg.sampled;
  cg.sampled = true;
}

void PodCollector::dropped(const PodState& ps) {
  ownersChanged_ = ownersChanged_ || ps.cg.sampled;
  for (const ContainerState& cs : ps.containers) ownersChanged_ = ownersChanged_ || cs.cg.sampled;
}

size_t PodCollector::stateEntries() const {
  size_t n = 1 + pods_.size();  // the besteffort dir, the pods
  for (const auto& [uid, ps] : pods_) n += ps.containers.size();
  return n;
}

PodCollector::PodState& PodCollector::podState(const Pod& pod) {
  auto [it, fresh] = pods_.try_emplace(pod.uid);
  PodState& ps = it->second;
  if (fresh || ps.qos != pod.kubeQos) {
    if (!fresh) dropped(ps);
    ps = PodState{};
    ps.qos = pod.kubeQos;
    ps.cg.dir = layout_.podDir(pod.kubeQos, pod.uid);
  }
  ps.cg.round = round_;
  return ps;
}

PodCollector::ContainerState* PodCollector::containerState(PodState& ps, const Container& c,
                                                           std::vector<Error>& errors) {
  for (ContainerState& cs : ps.containers) {
    if (cs.rawId == c.id && cs.runtime == c.runtime) {
      cs.cg.round = round_;
      return &cs;
    }
  }
  auto dir = layout_.containerDir(ps.cg.dir, c.runtime, c.id);
  if (!dir) {
    errors.push_back(dir.error());
    return nullptr;
  }
  ContainerState& cs = ps.containers.emplace_back();
  cs.runtime = c.runtime;
  cs.rawId = c.id;
  cs.id = c.runtime + "://" + c.id;
  cs.cg.dir = std::move(*dir);
  cs.cg.round = round_;
  return &cs;
}

PinnedFile& PodCollector::file(Cgroup& cg, Slot slot) {
  auto& f = cg.files[slot];
  if (!f) {
    // Every slot's file is made by one show (none lists tasks): pinned_files.h.
    f = std::make_unique<PinnedFile>(
        cgroupFilePath(layout_, config_.cgroupRoot, cg.dir, kSlotFiles[slot]), budget_,
        PinnedFile::Whole::kOneShow);
  }
  return *f;
}

// Reads and parses one file.
template <typename T, typename Parse>
CgroupRead PodCollector::readParsed(Cgroup& cg, Slot slot, Parse parse, T& out,
                                    std::vector<Error>& errors) {
  PinnedFile& f = file(cg, slot);
  auto text = f.read(buf_);
  if (!text) {
    if (vanished(text.error())) return CgroupRead::kVanished;
    errors.push_back(text.error());
    return CgroupRead::kFailed;
  }
  auto parsed = parse(*text);
  if (!parsed) {
    errors.push_back(inFile(f.path(), parsed.error()));
    return CgroupRead::kFailed;
  }
  out = std::move(parsed).value();
  return CgroupRead::kOk;
}

// readParsed for flat-keyed files, keeping only `keys` (see pickFlatKeyed).
CgroupRead PodCollector::readPicked(Cgroup& cg, Slot slot, std::span<const std::string_view> keys,
                                    std::span<std::optional<uint64_t>> values,
                                    std::vector<Error>& errors, size_t required) {
  PinnedFile& f = file(cg, slot);
  auto text = f.read(buf_);
  if (!text) {
    if (vanished(text.error())) return CgroupRead::kVanished;
    errors.push_back(text.error());
    return CgroupRead::kFailed;
  }
  if (Status st = pickFlatKeyed(*text, keys, values, required); !st) {
    errors.push_back(inFile(f.path(), st.error()));
    return CgroupRead::kFailed;
  }
  return CgroupRead::kOk;
}

std::optional<double> PodCollector::cpuRate(Cgroup& cg, uint64_t usageNs, Clock::Monotonic at) {
  std::optional<double> rate;
  // A counter that went backwards is a new cgroup under the same name (a pod
  // recreated with the same uid is impossible, a container dir reused is not).
  if (cg.hasUsage && usageNs >= cg.usage && at > cg.usageAt) {
    double seconds = std::chrono::duration<double>(at - cg.usageAt).count();
    rate = static_cast<double>(usageNs - cg.usage) / 1e9 / seconds;
  }
  cg.usage = usageNs;
  cg.usageAt = at;
  cg.hasUsage = true;
  return rate;
}

// Reads the CPU usage counter of the cgroup (and, on v2, where cpu.stat holds both,
// the throttling counters when `throttle` is given); sets out.cpuCores once a
// rate exists.
CgroupRead PodCollector::readCpu(Cgroup& cg, CgroupUsage& out, std::vector<Error>& errors,
                                 CgroupUsage* throttle) {
  uint64_t usageNs = 0;
  CgroupRead st;
  if (layout_.version() == CgroupVersion::kV1) {
    st = readParsed(cg, kUsage, parseSingleUint, usageNs, errors);
  } else {
    static constexpr std::string_view kKeys[] = {"usage_usec", "nr_periods", "nr_throttled"};
    std::array<std::optional<uint64_t>, 3> v;
    const size_t wanted = throttle ? 3 : 1;
    st = readPicked(cg, kUsage, std::span(kKeys, wanted), std::span(v.data(), wanted), errors);
    if (st == CgroupRead::kOk) {
      usageNs = *v[0] * 1000;
      if (throttle) throttleRatio(cg, *v[1], *v[2], *throttle);
    }
  }
  if (st == CgroupRead::kOk) out.cpuCores = cpuRate(cg, usageNs, clock_->now());
  return st;
}

void PodCollector::throttleRatio(Cgroup& cg, uint64_t periods, uint64_t throttled,
                                 CgroupUsage& out) {
  if (cg.hasThrottle && periods >= cg.periods && throttled >= cg.throttled) {
    uint64_t dp = periods - cg.periods;
    // No period elapsed (no quota, or idle): nothing was throttled.
    out.throttledRatio =
        dp == 0 ? 0.0 : static_cast<double>(throttled - cg.throttled) / static_cast<double>(dp);
  }
  cg.periods = periods;
  cg.throttled = throttled;
  cg.hasThrottle = true;
}

// A vanished cgroup (false) has its state dropped by the caller at once (its files
// closed): it is not kept while the kubelet still lists its pod.
bool PodCollector::readCgroup(Cgroup& cg, bool withPsi, CgroupUsage& out,
                              std::vector<Error>& errors) {
  const bool v1 = layout_.version() == CgroupVersion::kV1;
  if (readCpu(cg, out, errors, v1 ? nullptr : &out) == CgroupRead::kVanished) return false;

  // Memory without page cache, and with it (the file pages added).
  {
    static constexpr std::string_view kV1[] = {"total_inactive_anon", "total_active_anon",
                                               "total_unevictable", "total_active_file",
                                               "total_inactive_file"};
    static constexpr std::string_view kV2[] = {"inactive_anon", "active_anon", "unevictable",
                                               "active_file", "inactive_file"};
    std::array<std::optional<uint64_t>, 5> v;
    // The file keys are every kernel's; optional all the same, so a memory.stat
    // without them still gives the memory that matters most.
    CgroupRead st =
        readPicked(cg, kMemoryStat, v1 ? std::span(kV1) : std::span(kV2), std::span(v), errors, 3);
    if (st == CgroupRead::kVanished) return false;
    if (st == CgroupRead::kOk) {
      out.memoryBytes = *v[0] + *v[1] + *v[2];
      if (v[3] && v[4]) out.memoryWithPageCacheBytes = *out.memoryBytes + *v[3] + *v[4];
    }
  }

  // Throttling ratio (v2 read it with the usage above, from the same cpu.stat).
  if (v1) {
    static constexpr std::string_view kKeys[] = {"nr_periods", "nr_throttled"};
    std::array<std::optional<uint64_t>, 2> v;
    CgroupRead st = readPicked(cg, kCpuStat, std::span(kKeys), std::span(v), errors);
    if (st == CgroupRead::kVanished) return false;
    if (st == CgroupRead::kOk) throttleRatio(cg, *v[0], *v[1], out);
  }

  if (withPsi) {
    for (int r = 0; r < 3; ++r) {
      Pressure p;
      CgroupRead st = readParsed(cg, static_cast<Slot>(kCpuPressure + r), parsePressure, p, errors);
      if (st == CgroupRead::kVanished) return false;
      if (st == CgroupRead::kOk) out.pressure[r] = std::move(p);
    }
  }
  return true;
}

void PodCollector::detectPsi() {
  if (!config_.psiEnabled || psi_ != Support::kUnknown) return;
  std::string probe =
      cgroupFilePath(layout_, config_.cgroupRoot, layout_.kubeRootDir(), CgroupFile::kCpuPressure);
  auto text = readFile(probe);
  if (text) {
    psi_ = Support::kSupported;
    return;
  }
  psi_ = Support::kUnsupported;
  psiReason_ = probe + ": " + text.error().message +
               (layout_.version() == CgroupVersion::kV1
                    ? " (cgroup v1 has per-cgroup PSI only on Anolis kernels)"
                    : " (kernel without PSI, before 4.20, or booted with psi=0)");
  KLOG_WARNING << "pod and container PSI unavailable: " << psiReason_ << "; skipped";
}

void PodCollector::collectBe(const std::vector<Pod>& pods, Outcome& out) {
  BeUsage& be = out.sample.be;

  // Usage of the besteffort QoS directory.
  Cgroup& beCgroup = be_;
  CgroupUsage beUsage;
  readCpu(beCgroup, beUsage, out.errors, nullptr);
  if (beUsage.cpuCores) be.usageMilli = *beUsage.cpuCores * 1000.0;

  // Real limit: the smallest cpuset among the BE dir and BE containers (the CPUs in
  // force, not those asked for: cgroup_files.h), and the besteffort dir's CFS quota
  // when it has one.
  std::optional<size_t> minCpus;
  auto considerCpuset = [&](Cgroup& cg) {
    std::vector<int> cpus;
    if (readParsed(cg, kCpusetEffective, parseCpuList, cpus, out.errors) == CgroupRead::kOk &&
        !cpus.empty()) {
      minCpus = std::min(minCpus.value_or(std::numeric_limits<size_t>::max()), cpus.size());
    }
  };
  considerCpuset(beCgroup);
  for (const Pod& pod : pods) {
    if (pod.koordQos != KoordQos::kBE) continue;
    be.requestMilli += static_cast<double>(pod.batchCpuRequestMilli());
    // A pod read this round (an unsafe uid is reported by collect(); a pod whose
    // cgroup is gone has no cpuset either), and each of its containers' cpusets,
    // their usage read or not.
    auto ps = pods_.find(pod.uid);
    if (ps == pods_.end()) continue;
    std::vector<Error> reported;  // a bad container id: reported by collect()
    for (const Container& c : pod.containers) {
      if (c.id.empty()) continue;
      if (ContainerState* cs = containerState(ps->second, c, reported)) considerCpuset(cs->cg);
    }
  }
  std::optional<double> limit;
  if (minCpus) limit = static_cast<double>(*minCpus) * 1000.0;
  if (layout_.version() == CgroupVersion::kV1) {
    int64_t quota = 0;
    uint64_t period = 0;
    if (readParsed(beCgroup, kQuota, parseSingleInt, quota, out.errors) == CgroupRead::kOk &&
        quota > 0 &&
        readParsed(beCgroup, kPeriod, parseSingleUint, period, out.errors) == CgroupRead::kOk &&
        period > 0) {
      double q = static_cast<double>(quota) * 1000.0 / static_cast<double>(period);
      limit = std::min(limit.value_or(q), q);
    }
  } else {
    CpuMax max;
    if (readParsed(beCgroup, kQuota, parseCpuMax, max, out.errors) == CgroupRead::kOk &&
        max.quotaUs && max.periodUs > 0) {
      double q = static_cast<double>(*max.quotaUs) * 1000.0 / static_cast<double>(max.periodUs);
      limit = std::min(limit.value_or(q), q);
    }
  }
  be.realLimitMilli = limit;
}

void PodCollector::prune() {
  // A cgroup not read this round is gone (or its pod is): its state and open files
  // go with it.
  std::erase_if(pods_, [this](auto& kv) {
    if (kv.second.cg.round == round_) return false;
    dropped(kv.second);
    return true;
  });
  for (auto& [uid, ps] : pods_) {
    std::erase_if(ps.containers, [this](const ContainerState& c) {
      if (c.cg.round == round_) return false;
      ownersChanged_ = ownersChanged_ || c.cg.sampled;
      return true;
    });
  }
}

PodCollector::Outcome PodCollector::collect(const std::vector<Pod>& pods, const NodeSample* node) {
  ++round_;
  Outcome out;
  out.sample.at = clock_->now();
  detectPsi();
  bool psiRound = false;
  if (psi_ == Support::kSupported &&
      (!lastPsi_ || out.sample.at - *lastPsi_ >= config_.psiInterval)) {
    psiRound = true;
    lastPsi_ = out.sample.at;
  }

  double podCpu = 0;
  double podMemory = 0;
  bool allPodsKnown = true;
  for (const Pod& pod : pods) {
    if (!isSafePathComponent(pod.uid)) {
      // The uid becomes a directory name: never let one reach outside kubepods.
      out.errors.push_back(makeError("pod " + pod.ns + "/" + pod.name + ": uid " +
                                     quoteText(pod.uid) + " is not a safe cgroup name"));
      continue;
    }
    PodUsage pu;
    pu.pod = &pod;
    PodState& ps = podState(pod);
    if (!readCgroup(ps.cg, psiRound, pu.usage, out.errors)) {
      dropped(ps);
      pods_.erase(pod.uid);  // not (or no longer) there
      continue;
    }
    sampled(ps.cg);
    if (pu.usage.cpuCores) {
      podCpu += *pu.usage.cpuCores;
    } else {
      allPodsKnown = false;
    }
    if (pu.usage.memoryBytes) podMemory += static_cast<double>(*pu.usage.memoryBytes);
    for (const Container& c : pod.containers) {
      if (c.id.empty()) continue;  // not created yet
      ContainerState* cs = containerState(ps, c, out.errors);
      if (cs == nullptr) continue;
      ContainerUsage cu;
      cu.pod = &pod;
      cu.container = &c;
      cu.id = cs->id;
      if (readCgroup(cs->cg, psiRound, cu.usage, out.errors)) {
        sampled(cs->cg);
        pu.containers.push_back(std::move(cu));
      } else {
        ownersChanged_ = ownersChanged_ || cs->cg.sampled;
        ps.containers.erase(ps.containers.begin() + (cs - ps.containers.data()));
      }
    }
    out.sample.pods.push_back(std::move(pu));
  }

  collectBe(pods, out);

  // System usage needs every input from this moment: a node sample older than the
  // staleness limit, or a pod whose rate is not known yet, would make it wrong.
  if (node && out.sample.at - node->at <= config_.nodeStaleness) {
    if (node->cpuUsedCores && allPodsKnown) {
      out.sample.systemCpuCores = std::max(0.0, *node->cpuUsedCores - podCpu);
    }
    if (node->memory) {
      out.sample.systemMemoryBytes =
          std::max(0.0, static_cast<double>(node->memory->usedBytes()) - podMemory);
    }
  }
  prune();
  if (std::exchange(ownersChanged_, false)) ++ownersVersion_;
  out.sample.ownersVersion = ownersVersion_;
  return out;
}

}  // namespace koord
