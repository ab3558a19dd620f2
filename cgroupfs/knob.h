// The table of cgroup knobs the QoS manager writes (STYLE.md habit 4): one row per
// knob naming its file's row in the cgroup file table (cgroup_files.h, the only
// place file names are spelled), the range the kernel accepts, how a value
// converts between v1 and v2 (shares <-> weight, quota <-> cpu.max, -1 <-> "max"),
// whether a parent bounds its children (so writes need ordering), and whether this
// kernel has it (probed once at the kubepods root). Strategies name knobs, never
// files; values are in v1 units (shares, microseconds, bytes, CPU lists).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/cpu_weight.h"
#include "cgroupfs/layout.h"

namespace koord {

enum class Knob : uint8_t {
  kCpuShares,    // v1 cpu.shares 2..262144; v2 cpu.weight 1..10000
  kCpuQuota,     // v1 cpu.cfs_quota_us (-1 = unlimited, else >= 1000); v2 cpu.max quota field
  kCpuBurst,     // v1 cpu.cfs_burst_us 0..; v2 cpu.max.burst (absent before 5.14)
  kCpusetCpus,   // cpuset.cpus on both (a CPU list)
  kMemoryLimit,  // v1 memory.limit_in_bytes (-1 = unlimited); v2 memory.max
  kMemoryMin,    // v2 memory.min; v1 only on Anolis kernels
  kMemoryLow,    // v2 memory.low; v1 only on Anolis kernels
  kMemoryHigh,   // v2 memory.high (-1 = "max"); v1 only on Anolis kernels
  // Alibaba Cloud Linux / Anolis extensions, same names on v1 and v2; vanilla kernels
  // have none of them.
  kMemoryWmarkRatio,        // memory.wmark_ratio 0..100 (async reclaim watermark, % of high)
  kMemoryWmarkScaleFactor,  // memory.wmark_scale_factor 1..1000 (permill)
  kMemoryWmarkMinAdj,       // memory.wmark_min_adj -25..50
  kMemoryPriority,          // memory.priority 0..12 (memcg OOM priority)
  kMemoryUsePriorityOom,    // memory.use_priority_oom 0/1
  // memory.oom.group 0/1: vanilla v2 since 4.19; on v1 only Anolis kernels.
  kMemoryOomGroup,
  // v1 memory.soft_limit_in_bytes (-1 = unlimited); v2 has no such file (its nearest
  // relative is memory.low, a different contract), so the knob is v1 only.
  kMemorySoftLimit,
  // GroupIdentity: cpu.bvt_warp_ns -1..2 on both versions, Alibaba Cloud Linux /
  // Anolis only (the probe finds it absent elsewhere).
  kCpuBvtWarpNs,
};
inline constexpr size_t kKnobCount = 16;

struct KnobSpec {
  Knob knob;
  CgroupFile file;  // the row naming its files
  // Copied from the file's row, for callers and logs.
  const char* name;  // for logs and the audit log: the v1 name, e.g. "cpu.cfs_quota_us"
  const char* v1Subsystem;
  // nullptr: no v1 file at all. memory.min/low/high carry their names although
  // only Anolis v1 kernels have them: KnobSupport::probe decides.
  const char* v1File;
  const char* v2File;  // nullptr: the knob does not exist on v2 (probe reports it absent)
  bool cpuList;        // value is a CPU list, not a number
  int64_t min;         // accepted range in v1 units (numbers only)
  int64_t max;
  bool minusOneIsUnlimited;  // -1 is allowed and means no limit
  bool hierarchical;         // a parent's value bounds its children's
};

const KnobSpec& knobSpec(Knob knob);

// Byte-valued memory knobs: the kernel keeps them in pages (memory.soft_limit_in_bytes
// too) and reports "unlimited" as a huge number.
inline bool isMemoryKnob(Knob knob) {
  return knob == Knob::kMemoryLimit || knob == Knob::kMemoryMin || knob == Knob::kMemoryLow ||
         knob == Knob::kMemoryHigh || knob == Knob::kMemorySoftLimit;
}

// Kernel facts the strategies compute with, in v1 units.
// v1 cpu.shares range (v2 cpu.weight 1..10000 maps onto it).
inline constexpr int64_t kMinShares = 2;
inline constexpr int64_t kMaxShares = 262144;
// The CFS period kubelet sets (the kernel's default): quotas are per 100 ms.
inline constexpr int64_t kCfsPeriodUs = 100000;
// The kernel refuses smaller quotas (EINVAL)...
inline constexpr int64_t kMinCfsQuotaUs = 1000;
// ...and larger ones: max_cfs_runtime = (2^44 - 1) us, about 203 days.
inline constexpr int64_t kMaxCfsQuotaUs = (int64_t{1} << 44) - 1;

// Milli-cores of limit -> cpu.cfs_quota_us for kCfsPeriodUs, as kubelet's and
// koordlet's MilliCPUToQuota: -1 (unlimited) for no limit (<= 0), at least
// kMinCfsQuotaUs; a limit past kMaxCfsQuotaUs is no limit either (-1, no overflow).
int64_t milliCpuToQuota(int64_t milli);

// CPU normalization (koordinator's cpu-normalization-ratio): a limited quota divided
// by the node's ratio, rounded up, when the ratio is above 1 (at least
// kMinCfsQuotaUs, which the kernel requires); -1 and ratios <= 1 leave it as is.
int64_t normalizeQuota(int64_t quotaUs, double ratio);

// A value in v1 units: a number, or a CPU list for cpuset knobs.
struct KnobValue {
  int64_t number = 0;
  std::vector<int> cpus;  // sorted, unique
  static KnobValue of(int64_t n) { return KnobValue{n, {}}; }
  static KnobValue ofCpus(std::vector<int> c);
  bool operator==(const KnobValue&) const = default;
};

// Ok when the value is one the knob can hold: a number within the knob's range,
// or -1 where it means unlimited; CPU lists always. Otherwise an error saying the
// value and the range. The executor refuses such a value rather than clamping it:
// a negative memory limit clamped to 0 would kill the cgroup (v2 memory.max 0),
// a negative quota clamped to the minimum would starve it.
Status checkKnobRange(Knob knob, const KnobValue& value);

// "0-3,8" for ascending ids, as the kernel and k8s cpuset.String() print a list.
std::string renderCpuList(const std::vector<int>& cpus);

// The text to write to the knob's file on this cgroup version (v2: shares become a
// weight by the node runtime's conversion, cpu_weight.h; -1 becomes "max").
std::string renderKnob(Knob knob, CgroupVersion version, const KnobValue& value,
                       CpuWeightConversion weights = CpuWeightConversion::kLinear);

// Parses the file's current text into v1 units, so "is it already set?" compares
// values, not spellings ("max" == -1, "0-3" == "0,1,2,3", v2 weight -> shares is
// not invertible exactly: compare rendered text for shares instead).
Result<KnobValue> parseKnob(Knob knob, CgroupVersion version, std::string_view text,
                            CpuWeightConversion weights = CpuWeightConversion::kLinear);

// Which knobs this kernel has, probed once at the kubepods root.
class KnobSupport {
 public:
  static KnobSupport probe(const std::string& cgroupRoot, const CgroupLayout& layout);
  static KnobSupport all();  // tests
  bool has(Knob knob) const { return has_[static_cast<size_t>(knob)]; }
  void set(Knob knob, bool on) { has_[static_cast<size_t>(knob)] = on; }

 private:
  bool has_[kKnobCount] = {};
};

}  // namespace koord
