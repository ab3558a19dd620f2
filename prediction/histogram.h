// Decaying exponential histograms: the model of koordlet's peak predictor
// (reference colocation.md §1.4, a port of the Kubernetes VPA's histogram that
// Koordinator carries). A sample's weight doubles every half-life, so an old sample
// counts half as much as one a half-life younger; percentiles are read off the
// bucket weights.
//
// Facts kept exactly, so a checkpoint koordlet wrote reads the same here:
//  * buckets: start(0) = 0, start(b) = F (r^b - 1) / (r - 1); CPU F = 0.025 cores,
//    max 1024 (158 buckets); memory F = 5 MiB, max 2^41 bytes (205 buckets); r = 1.05;
//  * epsilon 1e-4: lighter buckets do not count as min or max;
//  * the reference time starts at Go's zero time; a sample more than 100 half-lives
//    after it moves it to the sample's time rounded to a half-life (counted from
//    year 1, as Go's Time.Round), rescaling every weight by 2^round(shift);
//  * percentile(p): the upper bound of the first bucket whose running weight
//    reaches p × total (the bucket's own start when it is the last bucket).
// Time is wall time: the model outlives the process through its checkpoints.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "base/clock.h"
#include "base/result.h"

namespace koord::prediction {

class HistogramOptions {
 public:
  // maxValue, firstBucketSize, epsilon > 0; ratio > 1 (else the caller's bug).
  HistogramOptions(double maxValue, double firstBucketSize, double ratio, double epsilon);
  int numBuckets() const { return numBuckets_; }
  int findBucket(double value) const;
  double bucketStart(int bucket) const;
  double epsilon() const { return epsilon_; }

  static const HistogramOptions& cpu();     // cores
  static const HistogramOptions& memory();  // bytes

 private:
  int numBuckets_;
  double first_;
  double ratio_;
  double epsilon_;
};

// What a checkpoint holds of one histogram (koordlet's HistogramCheckpoint):
// weights normalised so the largest is 10000, the raw total, the reference time
// (nullopt: Go's zero time, never sampled).
struct HistogramCheckpoint {
  std::optional<Clock::Wall> reference;
  std::map<int, uint32_t> bucketWeights;
  double totalWeight = 0;
  bool operator==(const HistogramCheckpoint&) const = default;
};

class DecayingHistogram {
 public:
  DecayingHistogram(const HistogramOptions& options, std::chrono::nanoseconds halfLife);

  // weight >= 0; a NaN or infinite value is ignored.
  void addSample(double value, double weight, Clock::Wall at);
  double percentile(double p) const;
  bool empty() const;
  double totalWeight() const { return total_; }

  HistogramCheckpoint save() const;
  // Refuses a negative total or a bucket out of range (naming it) and leaves the
  // histogram as it was; all-zero weights load nothing (koordlet's rule) but the
  // reference time.
  Status load(const HistogramCheckpoint& checkpoint);

  // Heap bytes of the weights (the object itself aside).
  size_t heapBytes() const { return weights_.capacity() * sizeof(double); }

 private:
  void shiftReference(Clock::Wall to);
  double decayFactor(Clock::Wall at);
  void scale(double factor);
  void updateMinMax();

  const HistogramOptions* options_;
  int64_t halfLifeNs_;
  std::optional<Clock::Wall> reference_;  // nullopt: Go's zero time
  std::vector<double> weights_;
  double total_ = 0;
  int minBucket_;
  int maxBucket_ = 0;
};

// Go's Time.Round(d) for d > 0: the nearest multiple of d counted from year 1
// (halfway rounds up). The same as rounding Unix time when d divides a day.
Clock::Wall roundLikeGo(Clock::Wall t, std::chrono::nanoseconds d);

}  // namespace koord::prediction
