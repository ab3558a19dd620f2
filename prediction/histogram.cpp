#include "prediction/histogram.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <string>

namespace koord::prediction {

namespace {

// Go's math.Log(x) / math.Log(base).
double logBase(double base, double x) { return std::log(x) / std::log(base); }

// Koordinator's predict server: MinSampleWeight 0.1, epsilon 0.001 × it.
constexpr double kEpsilon = 0.001 * 0.1;
constexpr double kGrowth = 1.05;
// maxDecayExponent: past ref + 100 half-lives the reference moves.
constexpr int64_t kMaxDecayExponent = 100;
// The checkpoint's largest bucket weight.
constexpr double kMaxCheckpointWeight = 10000;
// Seconds from 0001-01-01T00:00:00Z to 1970-01-01T00:00:00Z.
constexpr int64_t kYearOneToUnixSeconds = 62135596800;

int64_t nanosOf(Clock::Wall t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Go's round(): floor(x + 0.5).
int goRound(double x) { return static_cast<int>(std::floor(x + 0.5)); }
}  // namespace

HistogramOptions::HistogramOptions(double maxValue, double firstBucketSize, double ratio,
                                   double epsilon)
    : numBuckets_(static_cast<int>(
                      std::ceil(logBase(ratio, maxValue * (ratio - 1) / firstBucketSize + 1))) +
                  1),
      first_(firstBucketSize),
      ratio_(ratio),
      epsilon_(epsilon) {
  assert(maxValue > 0 && firstBucketSize > 0 && ratio > 1 && epsilon > 0);
}

int HistogramOptions::findBucket(double value) const {
  if (!(value >= first_)) return 0;  // also NaN, which callers never pass
  const double b = logBase(ratio_, value * (ratio_ - 1) / first_ + 1);
  if (!(b < numBuckets_)) return numBuckets_ - 1;
  return static_cast<int>(b);
}

double HistogramOptions::bucketStart(int bucket) const {
  assert(bucket >= 0 && bucket < numBuckets_);
  if (bucket == 0) return 0;
  return first_ * (std::pow(ratio_, bucket) - 1) / (ratio_ - 1);
}

const HistogramOptions& HistogramOptions::cpu() {
  static const HistogramOptions o(1024, 0.025, kGrowth, kEpsilon);
  return o;
}

const HistogramOptions& HistogramOptions::memory() {
  static const HistogramOptions o(static_cast<double>(int64_t{1} << 41),
                                  static_cast<double>(5 << 20), kGrowth, kEpsilon);
  return o;
}

// Nanoseconds from year one overflow int64 (6.2e19); GCC's 128-bit integer holds them.
__extension__ typedef __int128 Int128;

Clock::Wall roundLikeGo(Clock::Wall t, std::chrono::nanoseconds d) {
  const Int128 dn = d.count();
  if (dn <= 0) return t;
  const Int128 sinceYearOne =
      static_cast<Int128>(nanosOf(t)) + static_cast<Int128>(kYearOneToUnixSeconds) * 1'000'000'000;
  const Int128 r = sinceYearOne % dn;
  const Int128 delta = (r + r < dn) ? -r : dn - r;
  return t + std::chrono::duration_cast<Clock::Wall::duration>(
                 std::chrono::nanoseconds(static_cast<int64_t>(delta)));
}

DecayingHistogram::DecayingHistogram(const HistogramOptions& options,
                                     std::chrono::nanoseconds halfLife)
    : options_(&options),
      halfLifeNs_(std::max<int64_t>(halfLife.count(), 1)),
      weights_(static_cast<size_t>(options.numBuckets()), 0.0),
      minBucket_(options.numBuckets() - 1) {}

void DecayingHistogram::scale(double factor) {
  for (int b = minBucket_; b <= maxBucket_; ++b) weights_[b] *= factor;
  total_ *= factor;
  updateMinMax();
}

void DecayingHistogram::updateMinMax() {
  const double eps = options_->epsilon();
  const int last = options_->numBuckets() - 1;
  while (weights_[minBucket_] < eps && minBucket_ < last) ++minBucket_;
  while (weights_[maxBucket_] < eps && maxBucket_ > 0) --maxBucket_;
}

void DecayingHistogram::shiftReference(Clock::Wall to) {
  const Clock::Wall newRef = roundLikeGo(to, std::chrono::nanoseconds(halfLifeNs_));
  // From Go's zero time the shift is over 2,000 years: Go's Sub saturates and the
  // factor underflows to 0, which is what an exponent this negative gives here.
  const double shiftNs =
      reference_ ? static_cast<double>(nanosOf(*reference_)) - static_cast<double>(nanosOf(newRef))
                 : -static_cast<double>(std::numeric_limits<int64_t>::max());
  // Held to ±4096 (2^±4096 is already 0 or inf as a double scale) so the int
  // conversion stays defined for any shift, a 1 ns half-life's included.
  const int exponent = static_cast<int>(
      std::clamp(std::floor(shiftNs / static_cast<double>(halfLifeNs_) + 0.5), -4096.0, 4096.0));
  scale(std::ldexp(1.0, exponent));
  reference_ = newRef;
}

double DecayingHistogram::decayFactor(Clock::Wall at) {
  // In doubles: a reference from a checkpoint centuries off, or a half-life of years,
  // must shift the reference, not overflow int64.
  auto age = [&] {
    return static_cast<double>(nanosOf(at)) - static_cast<double>(nanosOf(*reference_));
  };
  if (!reference_ ||
      age() > static_cast<double>(halfLifeNs_) * static_cast<double>(kMaxDecayExponent)) {
    shiftReference(at);
  }
  return std::exp2(age() / static_cast<double>(halfLifeNs_));
}

void DecayingHistogram::addSample(double value, double weight, Clock::Wall at) {
  if (!std::isfinite(value) || !(weight >= 0)) return;
  const double w = weight * decayFactor(at);
  const int bucket = options_->findBucket(value);
  weights_[bucket] += w;
  total_ += w;
  const double eps = options_->epsilon();
  if (bucket < minBucket_ && weights_[bucket] >= eps) minBucket_ = bucket;
  if (bucket > maxBucket_ && weights_[bucket] >= eps) maxBucket_ = bucket;
}

bool DecayingHistogram::empty() const { return weights_[minBucket_] < options_->epsilon(); }

double DecayingHistogram::percentile(double p) const {
  if (empty()) return 0;
  const double threshold = p * total_;
  double sum = 0;
  int bucket = minBucket_;
  for (; bucket < maxBucket_; ++bucket) {
    sum += weights_[bucket];
    if (sum >= threshold) break;
  }
  if (bucket < options_->numBuckets() - 1) return options_->bucketStart(bucket + 1);
  return options_->bucketStart(bucket);
}

HistogramCheckpoint DecayingHistogram::save() const {
  HistogramCheckpoint c;
  c.reference = reference_;
  c.totalWeight = total_;
  double max = 0;
  for (int b = minBucket_; b <= maxBucket_; ++b) max = std::max(max, weights_[b]);
  if (max <= 0) return c;  // Go would divide by zero and store nothing either
  const double ratio = kMaxCheckpointWeight / max;
  for (int b = minBucket_; b <= maxBucket_; ++b) {
    const auto w = static_cast<uint32_t>(goRound(weights_[b] * ratio));
    if (w > 0) c.bucketWeights[b] = w;
  }
  return c;
}

Status DecayingHistogram::load(const HistogramCheckpoint& c) {
  if (!(c.totalWeight >= 0) || !std::isfinite(c.totalWeight)) {
    return makeError("totalWeight " + std::to_string(c.totalWeight) + " is not a weight");
  }
  int64_t sum = 0;
  for (const auto& [bucket, w] : c.bucketWeights) {
    if (bucket < 0 || bucket >= options_->numBuckets()) {
      return makeError("bucket " + std::to_string(bucket) + " is outside 0.." +
                       std::to_string(options_->numBuckets() - 1));
    }
    sum += w;
  }
  reference_ = c.reference;
  if (sum == 0) return Ok{};
  const double ratio = c.totalWeight / static_cast<double>(sum);
  for (const auto& [bucket, w] : c.bucketWeights) {
    minBucket_ = std::min(minBucket_, bucket);
    maxBucket_ = std::max(maxBucket_, bucket);
    weights_[bucket] += static_cast<double>(w) * ratio;
  }
  total_ += c.totalWeight;
  return Ok{};
}

}  // namespace koord::prediction
