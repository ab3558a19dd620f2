#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/time_format.h"
#include "prediction/checkpoint.h"
#include "prediction/histogram.h"
#include "support/temp_tree.h"

namespace test_prediction_histogram {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::prediction;
using namespace std::chrono;

namespace {

Clock::Wall unixTime(int64_t s) {
  return Clock::Wall(duration_cast<Clock::Wall::duration>(seconds(s)));
}
// 2026-11-25T00:00:00Z, a multiple of 12 h and of 24 h.
const Clock::Wall kStart = unixTime(1795564800);

// start(b) = F (r^b - 1) / (r - 1), koordlet's bucket formula, by hand.
double start(double first, int b) { return b == 0 ? 0 : first * (std::pow(1.05, b) - 1) / 0.05; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The sequence tests/fixtures/prediction/ was made from (see SOURCES.md).
double cpuAt(int i) {
  double v = 1.0 + 0.8 * std::sin(static_cast<double>(i) * 2 * M_PI / 1440);
  if (i % 97 == 0) v += 3.0;
  return v;
}
double memAt(int i) {
  return 200.0 * (1 << 20) + static_cast<double>(i) * (1 << 20) / 4.32 * 1.0 +
         static_cast<double>(i % 60) * (1 << 20);
}

}  // namespace

TEST_CASE(
    "bucket layouts are koordlet's: 158 cpu buckets from 25 millicores, 205 memory from 5 MiB") {
  const auto& cpu = HistogramOptions::cpu();
  CHECK(cpu.numBuckets() == 158);
  CHECK(HistogramOptions::memory().numBuckets() == 205);
  CHECK(cpu.bucketStart(0) == 0);
  CHECK(cpu.bucketStart(1) == Approx(0.025));
  CHECK(cpu.bucketStart(10) == Approx(0.5 * (std::pow(1.05, 10) - 1)));
  CHECK(cpu.findBucket(0.01) == 0);
  CHECK(cpu.findBucket(0.025) == 1);
  // log(1.0 * 0.05 / 0.025 + 1) / log(1.05) = log 3 / log 1.05 = 22.52
  CHECK(cpu.findBucket(1.0) == 22);
  CHECK(cpu.findBucket(1e9) == 157);
  CHECK(HistogramOptions::memory().bucketStart(1) == Approx(5.0 * (1 << 20)));
}

TEST_CASE("a lone sample reads as its bucket's upper bound at every percentile") {
  DecayingHistogram h(HistogramOptions::cpu(), hours(12));
  CHECK(h.empty());
  CHECK(h.percentile(0.95) == 0);
  h.addSample(1.0, 1, kStart);
  CHECK_FALSE(h.empty());
  // bucket 22, upper bound start(23) = 0.5 (1.05^23 - 1) = 1.0357
  for (double p : {0.0, 0.6, 0.95, 1.0}) CHECK(h.percentile(p) == Approx(start(0.025, 23)));
  CHECK(h.percentile(0.95) == Approx(1.035762).epsilon(1e-6));
}

TEST_CASE("a sample one half-life younger weighs twice as much") {
  DecayingHistogram h(HistogramOptions::cpu(), hours(12));
  h.addSample(1.0, 1, kStart);              // weight 2^0 = 1, bucket 22
  h.addSample(4.0, 1, kStart + hours(12));  // weight 2^1 = 2, bucket 45
  CHECK(h.totalWeight() == Approx(3));
  // threshold 0.33 x 3 = 0.99 <= 1: still the first bucket; 0.34 x 3 = 1.02 > 1.
  CHECK(h.percentile(0.33) == Approx(start(0.025, 23)));
  CHECK(h.percentile(0.34) == Approx(start(0.025, 46)));
  // Without decay the median would be the first bucket (1 of 2).
  CHECK(h.percentile(0.5) == Approx(start(0.025, 46)));
}

TEST_CASE("past 100 half-lives the reference moves and the old weights fall below epsilon") {
  DecayingHistogram h(HistogramOptions::cpu(), hours(12));
  h.addSample(4.0, 1, kStart);
  h.addSample(0.3, 1, kStart + hours(12) * 101);
  // 4.0's weight is 2^-101 of the new one: under 1e-4, no longer min or max.
  CHECK(h.percentile(1.0) == Approx(start(0.025, HistogramOptions::cpu().findBucket(0.3) + 1)));
}

TEST_CASE("go's time rounding counts from year one, halfway up") {
  CHECK(roundLikeGo(kStart + hours(5), hours(12)) == kStart);
  CHECK(roundLikeGo(kStart + hours(6), hours(12)) == kStart + hours(12));
  // 7 h does not divide a day: year one, not 1970, is the origin.
  // (62135596800 + 1795564800) s mod 25200 s = 21600 s, over half of 7 h: up 1 h.
  CHECK(roundLikeGo(kStart, hours(7)) == kStart + hours(1));
}

TEST_CASE("three days of samples give the percentiles koordlet's own histogram gave") {
  const auto want =
      nlohmann::json::parse(slurp(test::fixturePath("prediction/koordlet-percentiles.json")));
  DecayingHistogram cpu(HistogramOptions::cpu(), hours(12));
  DecayingHistogram mem(HistogramOptions::memory(), hours(24));
  for (int i = 0; i < 3 * 1440; ++i) {
    cpu.addSample(cpuAt(i), 1, kStart + minutes(i));
    mem.addSample(memAt(i), 1, kStart + minutes(i));
  }
  for (const char* p : {"0.6", "0.9", "0.95", "0.98", "1"}) {
    INFO(p);
    const double pv = std::stod(p);
    CHECK(cpu.percentile(pv) ==
          Approx(want[std::string("cpu_p") + p].get<double>()).epsilon(1e-12));
    CHECK(mem.percentile(pv) ==
          Approx(want[std::string("memory_p") + p].get<double>()).epsilon(1e-12));
  }

  SECTION("and the same checkpoint, weight for weight") {
    const auto file = nlohmann::json::parse(
        slurp(test::fixturePath("prediction/koordlet-model-checkpoint.json")));
    ModelCheckpoint c{"3d1c7f6a-0b6e-4c39-9a59-4f0e6ad3c1a2", cpu.save(), mem.save(),
                      kStart + minutes(3 * 1440 - 1)};
    const auto ours = nlohmann::json::parse(encodeCheckpoint(c));
    CHECK(ours["CPU"]["bucketWeights"] == file["CPU"]["bucketWeights"]);
    CHECK(ours["Memory"]["bucketWeights"] == file["Memory"]["bucketWeights"]);
    CHECK(ours["CPU"]["referenceTimestamp"] == file["CPU"]["referenceTimestamp"]);
    CHECK(ours["CPU"]["totalWeight"].get<double>() ==
          Approx(file["CPU"]["totalWeight"].get<double>()).epsilon(1e-12));
    CHECK(ours["LastUpdated"] == file["LastUpdated"]);
  }
}

TEST_CASE("koordlet's checkpoint file restores to the percentiles koordlet restored") {
  const auto want =
      nlohmann::json::parse(slurp(test::fixturePath("prediction/koordlet-percentiles.json")));
  auto c = decodeCheckpoint(slurp(test::fixturePath("prediction/koordlet-model-checkpoint.json")),
                            "fixture");
  REQUIRE(c.ok());
  CHECK(c->uid == "3d1c7f6a-0b6e-4c39-9a59-4f0e6ad3c1a2");
  CHECK(rfc3339(c->lastUpdated) == "2026-11-27T23:59:00Z");
  DecayingHistogram cpu(HistogramOptions::cpu(), hours(12));
  DecayingHistogram mem(HistogramOptions::memory(), hours(24));
  REQUIRE(cpu.load(c->cpu).ok());
  REQUIRE(mem.load(c->memory).ok());
  for (const char* p : {"0.6", "0.9", "0.95", "0.98", "1"}) {
    INFO(p);
    const double pv = std::stod(p);
    CHECK(cpu.percentile(pv) == Approx(want[std::string("restored_cpu_p") + p].get<double>()));
    CHECK(mem.percentile(pv) == Approx(want[std::string("restored_memory_p") + p].get<double>()));
  }
  cpu.addSample(0.3, 1, c->lastUpdated + hours(12) * 101);
  CHECK(cpu.percentile(0.5) == Approx(want["restored_cpu_after_101_halflives_p0.5"].get<double>()));
}

TEST_CASE(
    "a checkpoint with a bucket out of range or a negative total is refused and loads nothing") {
  DecayingHistogram h(HistogramOptions::cpu(), hours(12));
  HistogramCheckpoint c;
  c.reference = kStart;
  c.bucketWeights = {{3, 10000}, {158, 5}};
  c.totalWeight = 2;
  auto st = h.load(c);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message == "bucket 158 is outside 0..157");
  CHECK(h.empty());
  c.bucketWeights = {{3, 10000}};
  c.totalWeight = -1;
  CHECK_FALSE(h.load(c).ok());
  CHECK(h.empty());
  c.totalWeight = 0;  // all-zero weights load nothing but are no error (koordlet)
  c.bucketWeights = {{3, 0}};
  CHECK(h.load(c).ok());
  CHECK(h.empty());
}

TEST_CASE("saving normalises the heaviest bucket to 10000 and keeps the raw total") {
  DecayingHistogram h(HistogramOptions::cpu(), hours(12));
  h.addSample(1.0, 1, kStart);
  h.addSample(1.0, 1, kStart);
  h.addSample(4.0, 1, kStart);
  const auto c = h.save();
  CHECK(c.totalWeight == Approx(3));
  CHECK(c.bucketWeights == std::map<int, uint32_t>{{22, 10000}, {45, 5000}});
  CHECK(c.reference == kStart);
  DecayingHistogram empty(HistogramOptions::cpu(), hours(12));
  CHECK(empty.save().bucketWeights.empty());  // no division by a zero maximum
  CHECK(encodeCheckpoint({"__node__", empty.save(), empty.save(), kStart}) ==
        "{\"UID\":\"__node__\",\"CPU\":{\"referenceTimestamp\":\"0001-01-01T00:00:00Z\"},"
        "\"Memory\":{\"referenceTimestamp\":\"0001-01-01T00:00:00Z\"},"
        "\"LastUpdated\":\"2026-11-25T00:00:00Z\"}\n");
}

TEST_CASE("extreme half-lives and a reference centuries away neither overflow nor stop learning") {
  DecayingHistogram tiny(HistogramOptions::cpu(), nanoseconds(1));
  tiny.addSample(1.0, 1, kStart);
  tiny.addSample(4.0, 1, kStart + seconds(1));
  CHECK(tiny.percentile(1.0) == Approx(start(0.025, 46)));  // the newest sample alone counts
  DecayingHistogram years(HistogramOptions::cpu(), hours(24 * 365 * 200));
  years.addSample(1.0, 1, kStart);
  CHECK(years.percentile(0.5) == Approx(start(0.025, 23)));
  // A checkpoint whose reference is in 1700: the next sample moves it and is learnt.
  DecayingHistogram old(HistogramOptions::cpu(), hours(12));
  HistogramCheckpoint c;
  c.reference = parseRfc3339("1700-01-01T00:00:00Z").value();
  c.bucketWeights = {{22, 10000}};
  c.totalWeight = 1;
  REQUIRE(old.load(c).ok());
  old.addSample(4.0, 1, kStart);
  CHECK(old.percentile(0.5) == Approx(start(0.025, 46)));
}

}  // namespace test_prediction_histogram
