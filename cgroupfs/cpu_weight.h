// cpu.shares (cgroup v1 and the OCI spec) to cpu.weight (cgroup v2) and back. The
// kubelet, containerd's CRI and NRI speak shares; on v2 the runtime converts them, and a
// writer of cpu.weight must convert the same way or the containers it repairs differ
// from those the runtime made (and the runtime puts its value back at each update).
// There are two conversions in the field:
//   - linear, w = 1 + (s - 2) x 9999 / 262142: runc before its 1.3 line, crun before
//     1.23, and koordlet (reference §4.0); shares 1024 -> weight 39;
//   - quadratic in log2(s), w = ceil(10^((l^2 + 125 l) / 612 - 7/34)): the curve through
//     the minimum, the default and the maximum (2 -> 1, 1024 -> 100, 262144 -> 10000),
//     which opencontainers/cgroups adopted (kubernetes/kubernetes#131216) and runc 1.3.x
//     uses (Debian's runc 1.3.6 gives a CRI container of 1024 shares cpu.weight 100).
// Which one the node's runtime uses is read off a container it made
// (classifyCpuWeight), not assumed from a version.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace koord {

enum class CpuWeightConversion : uint8_t { kLinear, kQuadratic };

const char* toString(CpuWeightConversion c);
// "linear", "quadratic"; nullopt for anything else.
std::optional<CpuWeightConversion> cpuWeightConversionFrom(std::string_view name);

// Shares clamped to [2, 262144] first; the weight is in [1, 10000].
int64_t cpuSharesToWeight(int64_t shares, CpuWeightConversion c);
// The smallest shares that convert to `weight` (clamped to [1, 10000]), so a weight
// read back renders to itself; for a weight no shares reach exactly (the quadratic
// curve skips some), the smallest shares above it.
int64_t cpuWeightToShares(int64_t weight, CpuWeightConversion c);

// Which conversion turned `shares` into the `weight` a runtime wrote: nullopt when both
// give that weight (small shares: 2 -> 1 either way) or neither does (the weight was
// not the runtime's conversion of those shares: someone else wrote it).
std::optional<CpuWeightConversion> classifyCpuWeight(int64_t shares, int64_t weight);

}  // namespace koord
