#include "metrics/pod_collector.h"

#include <algorithm>
#include <cerrno>
#include <limits>

#include "base/log.h"
#include "base/pinned_files.h"
#include "base/quote.h"
#include "base/read_file.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/cgroup_parsers.h"

namespace koord {

namespace {

constexpr CgroupFile kPressureFiles[] = {CgroupFile::kCpuPressure, CgroupFile::kMemoryPressure,
                                         CgroupFile::kIoPressure};

// Reads and parses one file. ENOENT (and ENODEV, which a cgroup being removed can
// return) is "vanished": the caller drops the cgroup silently.
template <typename T, typename Parse>
CgroupRead readParsed(PinnedFiles& files, const std::string& path, Parse parse, T& out,
                      std::vector<Error>& errors) {
  auto text = files.read(path);
  if (!text) {
    if (text.error().sysErrno == ENOENT || text.error().sysErrno == ENODEV) {
      return CgroupRead::kVanished;
    }
    errors.push_back(text.error());
    return CgroupRead::kFailed;
  }
  auto parsed = parse(*text);
  if (!parsed) {
    errors.push_back(inFile(path, parsed.error()));
    return CgroupRead::kFailed;
  }
  out = std::move(parsed).value();
  return CgroupRead::kOk;
}

// readParsed for flat-keyed files, keeping only `keys` (see pickFlatKeyed).
CgroupRead readPicked(PinnedFiles& files, const std::string& path,
                      std::span<const std::string_view> keys,
                      std::span<std::optional<uint64_t>> values, std::vector<Error>& errors) {
  auto text = files.read(path);
  if (!text) {
    if (text.error().sysErrno == ENOENT || text.error().sysErrno == ENODEV) {
      return CgroupRead::kVanished;
    }
    errors.push_back(text.error());
    return CgroupRead::kFailed;
  }
  if (Status st = pickFlatKeyed(*text, keys, values); !st) {
    errors.push_back(inFile(path, st.error()));
    return CgroupRead::kFailed;
  }
  return CgroupRead::kOk;
}

}  // namespace

PodCollector::PodCollector(Config config, CgroupLayout layout, const Clock& clock)
    : config_(std::move(config)),
      layout_(std::move(layout)),
      clock_(&clock),
      files_(config_.maxOpenFiles) {}

std::optional<double> PodCollector::cpuRate(const std::string& dir, uint64_t usageNs,
                                            Clock::Monotonic at) {
  auto [it, fresh] = cpu_.try_emplace(dir);
  Counter& c = it->second;
  std::optional<double> rate;
  // A counter that went backwards is a new cgroup under the same name (a pod
  // recreated with the same uid is impossible, a container dir reused is not).
  if (!fresh && usageNs >= c.value && at > c.at) {
    double seconds = std::chrono::duration<double>(at - c.at).count();
    rate = static_cast<double>(usageNs - c.value) / 1e9 / seconds;
  }
  c.value = usageNs;
  c.at = at;
  c.round = round_;
  return rate;
}

// Reads the CPU usage counter of `dir` (and, on v2, where cpu.stat holds both,
// the throttling counters when `throttle` is given); sets out.cpuCores once a
// rate exists.
CgroupRead PodCollector::readCpu(const std::string& dir, CgroupUsage& out,
                                 std::vector<Error>& errors, CgroupUsage* throttle) {
  const std::string path = cgroupFilePath(layout_, config_.cgroupRoot, dir, CgroupFile::kCpuUsage);
  uint64_t usageNs = 0;
  CgroupRead st;
  if (layout_.version() == CgroupVersion::kV1) {
    st = readParsed(files_, path, parseSingleUint, usageNs, errors);
  } else {
    static constexpr std::string_view kKeys[] = {"usage_usec", "nr_periods", "nr_throttled"};
    std::array<std::optional<uint64_t>, 3> v;
    const size_t wanted = throttle ? 3 : 1;
    st = readPicked(files_, path, std::span(kKeys, wanted), std::span(v.data(), wanted), errors);
    if (st == CgroupRead::kOk) {
      usageNs = *v[0] * 1000;
      if (throttle) throttleRatio(dir, *v[1], *v[2], *throttle);
    }
  }
  if (st == CgroupRead::kOk) out.cpuCores = cpuRate(dir, usageNs, clock_->now());
  return st;
}

void PodCollector::throttleRatio(const std::string& dir, uint64_t periods, uint64_t throttled,
                                 CgroupUsage& out) {
  auto [it, fresh] = throttle_.try_emplace(dir);
  Throttle& t = it->second;
  if (!fresh && periods >= t.periods && throttled >= t.throttled) {
    uint64_t dp = periods - t.periods;
    // No period elapsed (no quota, or idle): nothing was throttled.
    out.throttledRatio =
        dp == 0 ? 0.0 : static_cast<double>(throttled - t.throttled) / static_cast<double>(dp);
  }
  t.periods = periods;
  t.throttled = throttled;
  t.round = round_;
}

bool PodCollector::readCgroup(const std::string& dir, bool withPsi, CgroupUsage& out,
                              std::vector<Error>& errors) {
  const auto& root = config_.cgroupRoot;
  const bool v1 = layout_.version() == CgroupVersion::kV1;
  if (readCpu(dir, out, errors, v1 ? nullptr : &out) == CgroupRead::kVanished) return false;

  // Memory without page cache.
  {
    static constexpr std::string_view kV1[] = {"total_inactive_anon", "total_active_anon",
                                               "total_unevictable"};
    static constexpr std::string_view kV2[] = {"inactive_anon", "active_anon", "unevictable"};
    std::array<std::optional<uint64_t>, 3> v;
    CgroupRead st = readPicked(files_, cgroupFilePath(layout_, root, dir, CgroupFile::kMemoryStat),
                               v1 ? std::span(kV1) : std::span(kV2), std::span(v), errors);
    if (st == CgroupRead::kVanished) return false;
    if (st == CgroupRead::kOk) out.memoryBytes = *v[0] + *v[1] + *v[2];
  }

  // Throttling ratio (v2 read it with the usage above, from the same cpu.stat).
  if (v1) {
    static constexpr std::string_view kKeys[] = {"nr_periods", "nr_throttled"};
    std::array<std::optional<uint64_t>, 2> v;
    CgroupRead st = readPicked(files_, cgroupFilePath(layout_, root, dir, CgroupFile::kCpuStat),
                               std::span(kKeys), std::span(v), errors);
    if (st == CgroupRead::kVanished) return false;
    if (st == CgroupRead::kOk) throttleRatio(dir, *v[0], *v[1], out);
  }

  if (withPsi) {
    for (int r = 0; r < 3; ++r) {
      Pressure p;
      CgroupRead st = readParsed(files_, cgroupFilePath(layout_, root, dir, kPressureFiles[r]),
                                 parsePressure, p, errors);
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
  const auto& root = config_.cgroupRoot;
  const std::string beDir = layout_.qosDir(KubeQos::kBestEffort);
  BeUsage& be = out.sample.be;

  // Usage of the besteffort QoS directory (its rate state is keyed by its dir).
  CgroupUsage beUsage;
  readCpu(beDir, beUsage, out.errors, nullptr);
  if (beUsage.cpuCores) be.usageMilli = *beUsage.cpuCores * 1000.0;

  // Real limit: the smallest cpuset among the BE dir and BE containers (the CPUs in
  // force, not those asked for: cgroup_files.h), and the besteffort dir's CFS quota
  // when it has one.
  std::optional<size_t> minCpus;
  auto considerCpuset = [&](const std::string& dir) {
    std::vector<int> cpus;
    if (readParsed(files_, cgroupFilePath(layout_, root, dir, CgroupFile::kCpusetCpusEffective),
                   parseCpuList, cpus, out.errors) == CgroupRead::kOk &&
        !cpus.empty()) {
      minCpus = std::min(minCpus.value_or(std::numeric_limits<size_t>::max()), cpus.size());
    }
  };
  considerCpuset(beDir);
  for (const Pod& pod : pods) {
    if (pod.koordQos != KoordQos::kBE) continue;
    be.requestMilli += static_cast<double>(pod.batchCpuRequestMilli());
    if (!isSafePathComponent(pod.uid)) continue;  // reported by collect()
    std::string podDir = layout_.podDir(pod.kubeQos, pod.uid);
    for (const Container& c : pod.containers) {
      if (c.id.empty()) continue;
      auto dir = layout_.containerDir(podDir, c.runtime, c.id);
      if (dir) considerCpuset(*dir);
    }
  }
  std::optional<double> limit;
  if (minCpus) limit = static_cast<double>(*minCpus) * 1000.0;
  if (layout_.version() == CgroupVersion::kV1) {
    int64_t quota = 0;
    uint64_t period = 0;
    if (readParsed(files_, cgroupFilePath(layout_, root, beDir, CgroupFile::kCpuQuota),
                   parseSingleInt, quota, out.errors) == CgroupRead::kOk &&
        quota > 0 &&
        readParsed(files_, cgroupFilePath(layout_, root, beDir, CgroupFile::kCpuPeriod),
                   parseSingleUint, period, out.errors) == CgroupRead::kOk &&
        period > 0) {
      double q = static_cast<double>(quota) * 1000.0 / static_cast<double>(period);
      limit = std::min(limit.value_or(q), q);
    }
  } else {
    CpuMax max;
    if (readParsed(files_, cgroupFilePath(layout_, root, beDir, CgroupFile::kCpuQuota), parseCpuMax,
                   max, out.errors) == CgroupRead::kOk &&
        max.quotaUs && max.periodUs > 0) {
      double q = static_cast<double>(*max.quotaUs) * 1000.0 / static_cast<double>(max.periodUs);
      limit = std::min(limit.value_or(q), q);
    }
  }
  be.realLimitMilli = limit;
}

void PodCollector::prune() {
  std::erase_if(cpu_, [this](const auto& kv) { return kv.second.round != round_; });
  std::erase_if(throttle_, [this](const auto& kv) { return kv.second.round != round_; });
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
    std::string podDir = layout_.podDir(pod.kubeQos, pod.uid);
    if (!readCgroup(podDir, psiRound, pu.usage, out.errors)) continue;  // not (or no longer) there
    if (pu.usage.cpuCores) {
      podCpu += *pu.usage.cpuCores;
    } else {
      allPodsKnown = false;
    }
    if (pu.usage.memoryBytes) podMemory += static_cast<double>(*pu.usage.memoryBytes);
    for (const Container& c : pod.containers) {
      if (c.id.empty()) continue;  // not created yet
      auto dir = layout_.containerDir(podDir, c.runtime, c.id);
      if (!dir) {
        out.errors.push_back(dir.error());
        continue;
      }
      ContainerUsage cu;
      cu.pod = &pod;
      cu.container = &c;
      cu.id = c.runtime + "://" + c.id;
      if (readCgroup(*dir, psiRound, cu.usage, out.errors)) pu.containers.push_back(std::move(cu));
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
  files_.sweep();  // a gone cgroup's files close a round after their last read
  return out;
}

}  // namespace koord
