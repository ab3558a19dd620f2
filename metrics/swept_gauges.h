// A gauge family whose series follow a changing set of objects (pods,
// containers): set() marks a series live in the current round, sweep() removes
// the series not set since the previous sweep, so a deleted pod's series go away.
// Series are found by a caller-chosen key (pod uid, container id, plus a suffix).
//
// The family holds its own series instead of registering with prometheus-cpp:
// each keeps its label set written once, as exposition text, and its value. A
// scrape appends those lines as they are; through the registry, every scrape
// copied every series' labels into prometheus-cpp's MetricFamily (at 500 pods,
// most of a scrape's CPU and a few MiB held while it ran). collect() gives the
// prometheus-cpp form still, for the metric reference and the tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include <prometheus/labels.h>
#include <prometheus/metric_family.h>

namespace koord {

class SweptGauges {
 public:
  SweptGauges(std::string name, std::string help);

  template <typename MakeLabels>
  void set(const std::string& key, MakeLabels makeLabels, double value) {
    auto it = live_.find(key);
    if (it == live_.end()) it = live_.emplace(key, Series{labelText(makeLabels()), 0, 0}).first;
    it->second.value = value;
    it->second.round = round_;
  }
  void sweep();
  size_t size() const { return live_.size(); }
  const std::string& name() const { return name_; }

  // "# HELP", "# TYPE" and a line per series, as prometheus-cpp's text serializer
  // writes a gauge family; nothing when the family has no series (as the registry
  // leaves such a family out).
  void appendText(std::string& out) const;
  // The same family in prometheus-cpp's form, series in the order appendText
  // writes them; no family (nullopt) when it has no series.
  std::optional<prometheus::MetricFamily> collect() const;

 private:
  struct Series {
    std::string labels;  // "{a=\"x\",b=\"y\"}", names sorted, values escaped
    double value;
    uint64_t round;
  };
  static std::string labelText(const prometheus::Labels& labels);
  std::string name_;
  std::string help_;
  std::unordered_map<std::string, Series> live_;
  uint64_t round_ = 1;
};

}  // namespace koord
