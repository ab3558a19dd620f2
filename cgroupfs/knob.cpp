// The knob table and its conversions (reference koordlet.md §4.0).
#include "cgroupfs/knob.h"

#include <cmath>

#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <system_error>

#include "base/quote.h"
#include "cgroupfs/cgroup_parsers.h"

namespace koord {

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// v1 memory files report "unlimited" as LONG_MAX rounded down to a page
// (9223372036854771712); any value this large means no limit.
constexpr int64_t kMemoryUnlimitedFloor = int64_t{1} << 62;

// The write-side facts of one knob; its files are its CgroupFile row's.
struct KnobFacts {
  Knob knob;
  CgroupFile file;
  bool cpuList;
  int64_t min;
  int64_t max;
  bool minusOneIsUnlimited;
  bool hierarchical;
};

// Indexed by Knob. hierarchical follows koordlet's "mergeable" files
// (LeveledUpdateBatch): a child's quota may not exceed its parent's (EINVAL), a
// child's cpuset must be a subset of its parent's, and memory protection is
// bounded by the parent's effective value. memory.limit_in_bytes is not: v1 and v2
// both accept a child limit above the parent's.
constexpr std::array<KnobFacts, kKnobCount> kFacts = {{
    {Knob::kCpuShares, CgroupFile::kCpuShares, false, kMinShares, kMaxShares, false, false},
    {Knob::kCpuQuota, CgroupFile::kCpuQuota, false, kMinCfsQuotaUs, kMaxCfsQuotaUs, true, true},
    // koordlet validates 0..1e8 (100 s). The kernel also wants burst <= quota when
    // the quota is limited; a larger burst is its EINVAL, counted by the executor.
    {Knob::kCpuBurst, CgroupFile::kCpuBurst, false, 0, 100'000'000, false, false},
    // The CPUs asked for, not those in force: see cgroup_files.h.
    {Knob::kCpusetCpus, CgroupFile::kCpusetCpus, true, 0, 0, false, true},
    {Knob::kMemoryLimit, CgroupFile::kMemoryLimit, false, 0, kInt64Max, true, false},
    // v1 names exist only on Anolis kernels; the probe decides.
    {Knob::kMemoryMin, CgroupFile::kMemoryMin, false, 0, kInt64Max, false, true},
    {Knob::kMemoryLow, CgroupFile::kMemoryLow, false, 0, kInt64Max, false, true},
    {Knob::kMemoryHigh, CgroupFile::kMemoryHigh, false, 0, kInt64Max, true, true},
    // Alinux/Anolis extensions (reference §4.0); ranges are koordlet's validators.
    // None bounds its children, so none is ordered.
    {Knob::kMemoryWmarkRatio, CgroupFile::kMemoryWmarkRatio, false, 0, 100, false, false},
    {Knob::kMemoryWmarkScaleFactor, CgroupFile::kMemoryWmarkScaleFactor, false, 1, 1000, false,
     false},
    {Knob::kMemoryWmarkMinAdj, CgroupFile::kMemoryWmarkMinAdj, false, -25, 50, false, false},
    {Knob::kMemoryPriority, CgroupFile::kMemoryPriority, false, 0, 12, false, false},
    {Knob::kMemoryUsePriorityOom, CgroupFile::kMemoryUsePriorityOom, false, 0, 1, false, false},
    {Knob::kMemoryOomGroup, CgroupFile::kMemoryOomGroup, false, 0, 1, false, false},
    // v1 only. A soft limit is a reclaim hint, not a bound on children: not ordered.
    {Knob::kMemorySoftLimit, CgroupFile::kMemorySoftLimit, false, 0, kInt64Max, true, false},
    // koordlet validates -1..2; each cgroup's own value, not bounded by its parent's.
    {Knob::kCpuBvtWarpNs, CgroupFile::kCpuBvtWarpNs, false, -1, 2, false, false},
}};

// Joins each knob's facts with its file row, at compile time.
constexpr std::array<KnobSpec, kKnobCount> joinSpecs() {
  std::array<KnobSpec, kKnobCount> out{};
  for (size_t i = 0; i < kKnobCount; ++i) {
    const KnobFacts& f = kFacts[i];
    const CgroupFileSpec& row = cgroupFileSpec(f.file);
    out[i] = KnobSpec{f.knob,
                      f.file,
                      row.v1File != nullptr ? row.v1File : row.v2File,
                      row.v1Subsystem,
                      row.v1File,
                      row.v2File,
                      f.cpuList,
                      f.min,
                      f.max,
                      f.minusOneIsUnlimited,
                      f.hierarchical};
  }
  return out;
}
constexpr std::array<KnobSpec, kKnobCount> kSpecs = joinSpecs();

constexpr bool specsInEnumOrder() {
  for (size_t i = 0; i < kKnobCount; ++i) {
    if (static_cast<size_t>(kSpecs[i].knob) != i || kSpecs[i].name == nullptr) return false;
  }
  return true;
}
static_assert(specsInEnumOrder(), "kFacts rows must follow the Knob enum, each with a file");

std::string_view trimNewline(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return text;
}

}  // namespace

std::string renderCpuList(const std::vector<int>& cpus) {
  std::string out;
  size_t i = 0;
  while (i < cpus.size()) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(cpus[j]);
    }
    i = j + 1;
  }
  return out;
}

const KnobSpec& knobSpec(Knob knob) { return kSpecs[static_cast<size_t>(knob)]; }

int64_t milliCpuToQuota(int64_t milli) {
  if (milli <= 0) return -1;
  if (milli > kMaxCfsQuotaUs / (kCfsPeriodUs / 1000)) return -1;
  return std::max(milli * kCfsPeriodUs / 1000, kMinCfsQuotaUs);
}

KnobValue KnobValue::ofCpus(std::vector<int> c) {
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return KnobValue{0, std::move(c)};
}

Status checkKnobRange(Knob knob, const KnobValue& value) {
  const KnobSpec& spec = knobSpec(knob);
  if (spec.cpuList) return Ok{};
  if (spec.minusOneIsUnlimited && value.number == -1) return Ok{};
  if (value.number >= spec.min && value.number <= spec.max) return Ok{};
  return makeError(std::string(spec.name) + " " + std::to_string(value.number) +
                   " is outside its range [" + std::to_string(spec.min) + ", " +
                   std::to_string(spec.max) + "]" +
                   (spec.minusOneIsUnlimited ? " (or -1, unlimited)" : ""));
}

std::string renderKnob(Knob knob, CgroupVersion version, const KnobValue& value,
                       CpuWeightConversion weights) {
  const KnobSpec& spec = knobSpec(knob);
  if (spec.cpuList) return renderCpuList(value.cpus);
  const bool v2 = version == CgroupVersion::kV2;
  if (knob == Knob::kCpuShares && v2)
    return std::to_string(cpuSharesToWeight(value.number, weights));
  if (spec.minusOneIsUnlimited && value.number == -1) {
    // v1 cpu.cfs_quota_us and memory.limit_in_bytes take "-1"; memory.high (v2,
    // and Anolis v1, which shares the v2 implementation) and every v2 file "max".
    if (v2 || knob == Knob::kMemoryHigh) return "max";
    return "-1";
  }
  // v2 cpu.max: the quota alone; the kernel keeps the period.
  return std::to_string(value.number);
}

Result<KnobValue> parseKnob(Knob knob, CgroupVersion version, std::string_view text,
                            CpuWeightConversion weights) {
  const KnobSpec& spec = knobSpec(knob);
  if (spec.cpuList) {
    auto cpus = parseCpuList(text);
    if (!cpus) return cpus.error();
    return KnobValue::ofCpus(std::move(*cpus));
  }
  const bool v2 = version == CgroupVersion::kV2;
  if (knob == Knob::kCpuQuota && v2) {
    auto max = parseCpuMax(text);
    if (!max) return max.error();
    return KnobValue::of(max->quotaUs ? *max->quotaUs : -1);
  }
  if (trimNewline(text) == "max") {
    if (text.empty() || text.back() != '\n') {
      return makeError(std::string(spec.name) + ": truncated read " + quoteText(text, 40));
    }
    return KnobValue::of(spec.minusOneIsUnlimited ? -1 : spec.max);
  }
  auto n = parseSingleInt(text);
  if (!n) return makeError(std::string(spec.name) + ": " + n.error().message);
  int64_t value = *n;
  if (knob == Knob::kCpuShares && v2) value = cpuWeightToShares(value, weights);
  if (isMemoryKnob(knob) && spec.minusOneIsUnlimited && value >= kMemoryUnlimitedFloor) value = -1;
  if (isMemoryKnob(knob) && !spec.minusOneIsUnlimited && value >= kMemoryUnlimitedFloor) {
    value = spec.max;
  }
  return KnobValue::of(value);
}

int64_t normalizeQuota(int64_t quotaUs, double ratio) {
  if (quotaUs <= 0 || !(ratio > 1)) return quotaUs;
  const double scaled = std::ceil(static_cast<double>(quotaUs) / ratio);
  return std::max<int64_t>(static_cast<int64_t>(scaled), kMinCfsQuotaUs);
}

KnobSupport KnobSupport::probe(const std::string& cgroupRoot, const CgroupLayout& layout) {
  KnobSupport support;
  const std::string dir = layout.kubeRootDir();
  for (const KnobSpec& spec : kSpecs) {
    const std::string path = cgroupFilePath(layout, cgroupRoot, dir, spec.file);
    if (path.empty()) continue;  // no such file on this cgroup version
    std::error_code ec;
    const bool there = std::filesystem::exists(path, ec);
    support.set(spec.knob, there && !ec);
  }
  return support;
}

KnobSupport KnobSupport::all() {
  KnobSupport support;
  for (const KnobSpec& spec : kSpecs) support.set(spec.knob, true);
  return support;
}

}  // namespace koord
