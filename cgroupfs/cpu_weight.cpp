#include "cgroupfs/cpu_weight.h"

#include <algorithm>
#include <cmath>

namespace koord {
namespace {

constexpr int64_t kSharesFloor = 2;
constexpr int64_t kSharesCeil = 262144;
constexpr int64_t kWeightFloor = 1;
constexpr int64_t kWeightCeil = 10000;

int64_t quadratic(int64_t shares) {
  if (shares <= kSharesFloor) return kWeightFloor;
  if (shares >= kSharesCeil) return kWeightCeil;
  const double l = std::log2(static_cast<double>(shares));
  const double exponent = (l * l + 125 * l) / 612.0 - 7.0 / 34.0;
  return std::clamp(static_cast<int64_t>(std::ceil(std::pow(10.0, exponent))), kWeightFloor,
                    kWeightCeil);
}

}  // namespace

const char* toString(CpuWeightConversion c) {
  return c == CpuWeightConversion::kQuadratic ? "quadratic" : "linear";
}

std::optional<CpuWeightConversion> cpuWeightConversionFrom(std::string_view name) {
  if (name == "linear") return CpuWeightConversion::kLinear;
  if (name == "quadratic") return CpuWeightConversion::kQuadratic;
  return std::nullopt;
}

int64_t cpuSharesToWeight(int64_t shares, CpuWeightConversion c) {
  shares = std::clamp(shares, kSharesFloor, kSharesCeil);
  if (c == CpuWeightConversion::kQuadratic) return quadratic(shares);
  return kWeightFloor +
         (shares - kSharesFloor) * (kWeightCeil - kWeightFloor) / (kSharesCeil - kSharesFloor);
}

int64_t cpuWeightToShares(int64_t weight, CpuWeightConversion c) {
  weight = std::clamp(weight, kWeightFloor, kWeightCeil);
  if (c == CpuWeightConversion::kLinear) {
    // Rounded up, so the shares render back to the same weight (the forward
    // conversion rounds down).
    constexpr int64_t kSpan = kWeightCeil - kWeightFloor;
    return kSharesFloor +
           ((weight - kWeightFloor) * (kSharesCeil - kSharesFloor) + kSpan - 1) / kSpan;
  }
  // The curve only rises: the first shares whose weight reaches `weight`.
  int64_t lo = kSharesFloor;
  int64_t hi = kSharesCeil;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (quadratic(mid) >= weight) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

std::optional<CpuWeightConversion> classifyCpuWeight(int64_t shares, int64_t weight) {
  const bool linear = cpuSharesToWeight(shares, CpuWeightConversion::kLinear) == weight;
  const bool quad = cpuSharesToWeight(shares, CpuWeightConversion::kQuadratic) == weight;
  if (linear == quad) return std::nullopt;
  return linear ? CpuWeightConversion::kLinear : CpuWeightConversion::kQuadratic;
}

}  // namespace koord
