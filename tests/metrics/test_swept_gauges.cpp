// Tests for metrics/swept_gauges: series follow the rounds, and a family is
// written as prometheus-cpp writes the same gauges from its own registry.
#include <catch2/catch.hpp>

#include <sstream>

#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "metrics/swept_gauges.h"

namespace test_metrics_swept_gauges {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

std::string serialized(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, families);
  return os.str();
}

std::string text(const SweptGauges& g) {
  std::string out;
  g.appendText(out);
  return out;
}

}  // namespace

TEST_CASE("a swept family is written as prometheus-cpp writes the same gauges", "[exposition]") {
  SweptGauges swept("koordlet_pod_cpu_usage_cores", "CPU used by a pod");
  prometheus::Registry registry;
  auto& family = prometheus::BuildGauge()
                     .Name("koordlet_pod_cpu_usage_cores")
                     .Help("CPU used by a pod")
                     .Register(registry);
  // Label values as hostile as a pod name can make them, names out of order.
  const prometheus::Labels labels{
      {"pod_uid", "u1"}, {"node", "n"}, {"pod_name", "a\"b\\c\nd"}, {"pod_namespace", ""}};
  swept.set(
      "u1", [&] { return labels; }, 0.25);
  family.Add(labels).Set(0.25);
  CHECK(text(swept) == serialized(registry.Collect()));
  // collect() reads the labels back as they were.
  auto collected = swept.collect();
  REQUIRE(collected);
  CHECK(serialized({*collected}) == serialized(registry.Collect()));
  CHECK(collected->metric.at(0).label.at(1).value == "a\"b\\c\nd");
}

TEST_CASE("a swept series not set in a round is gone after its sweep", "[exposition]") {
  SweptGauges swept("g", "");
  int made = 0;
  auto labels = [&](const std::string& pod) {
    return [&made, pod] {
      ++made;
      return prometheus::Labels{{"pod", pod}};
    };
  };
  swept.set("a", labels("a"), 1);
  swept.set("b", labels("b"), 2);
  swept.sweep();
  CHECK(swept.size() == 2);
  swept.set("a", labels("a"), 3);  // b not set this round
  swept.sweep();
  CHECK(swept.size() == 1);
  CHECK(made == 2);  // labels are made once, when the series first appears
  CHECK(text(swept) == "# TYPE g gauge\ng{pod=\"a\"} 3\n");
  swept.sweep();  // nothing set: the family is empty and writes nothing
  CHECK(text(swept).empty());
  CHECK_FALSE(swept.collect());
}

}  // namespace test_metrics_swept_gauges
