#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "metrics/exporter.h"
#include "metrics/metric_docs.h"
#include "metrics/metric_origin.h"

namespace test_metrics_metric_docs {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

prometheus::ClientMetric series(std::vector<std::pair<std::string, std::string>> labels) {
  prometheus::ClientMetric m;
  for (auto& [name, value] : labels) m.label.push_back({name, value});
  return m;
}

prometheus::MetricFamily family(std::string name, prometheus::MetricType type,
                                std::vector<prometheus::ClientMetric> metrics) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = "help of " + f.name;
  f.type = type;
  f.metric = std::move(metrics);
  return f;
}

}  // namespace

TEST_CASE("the docs driver gives every family the exporter registers a series", "[metric_docs]") {
  auto docs = exporterMetricDocs();
  INFO((docs ? std::string() : docs.error().message));
  REQUIRE(docs);
  Exporter e("n", "v");
  CHECK(docs->size() == e.familyNames().size());
  for (size_t i = 1; i < docs->size(); ++i) CHECK((*docs)[i - 1].name < (*docs)[i].name);
}

TEST_CASE("every koordlet-originated metric name is a family the exporter registers",
          "[metric_docs]") {
  Exporter e("n", "v");
  const auto& names = e.familyNames();
  for (std::string_view koordlet : kKoordletMetricNames) {
    INFO(koordlet);
    CHECK(std::find(names.begin(), names.end(), koordlet) != names.end());
  }
}

TEST_CASE("the exporter's family list matches what its registry serves", "[metric_docs]") {
  Exporter e("n", "v");
  driveExporter(e);
  std::vector<std::string> registered = e.familyNames();
  std::vector<std::string> collected;
  for (const auto& f : e.collect()) collected.push_back(f.name);
  std::sort(registered.begin(), registered.end());
  std::sort(collected.begin(), collected.end());
  CHECK(registered == collected);
}

TEST_CASE("a registered family without a series fails the description, naming it",
          "[metric_docs]") {
  auto docs = describeFamilies(
      {"a_total", "b_new"},
      {family("a_total", prometheus::MetricType::Counter, {series({{"node", "n"}})})});
  REQUIRE_FALSE(docs);
  CHECK(docs.error().message.find("b_new") != std::string::npos);
  CHECK(docs.error().message.find("driveExporter") != std::string::npos);
}

TEST_CASE("a served family the exporter did not list fails the description, naming it",
          "[metric_docs]") {
  auto docs = describeFamilies(
      {}, {family("stray", prometheus::MetricType::Gauge, {series({{"node", "n"}})})});
  REQUIRE_FALSE(docs);
  CHECK(docs.error().message.find("stray") != std::string::npos);
}

TEST_CASE("a family's labels are the union of its series' label names", "[metric_docs]") {
  auto docs = describeFamilies(
      {"g"}, {family("g", prometheus::MetricType::Gauge,
                     {series({{"node", "n"}, {"kind", "usage"}}), series({{"node", "n"}}),
                      series({{"node", "n"}, {"mb_type", "local"}})})});
  REQUIRE(docs);
  REQUIRE(docs->size() == 1);
  CHECK((*docs)[0].labels == std::vector<std::string>{"kind", "mb_type", "node"});
  CHECK((*docs)[0].type == "gauge");
  CHECK((*docs)[0].help == "help of g");
}

TEST_CASE("histogram buckets in a geometric series are shown by first bound and ratio",
          "[metric_docs]") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(describeBuckets({0.01, 0.04, 0.16, 0.64, 2.56, 10.24, 40.96, 163.84, inf}) ==
        "0.01 × 4^k, k = 0..7");
  CHECK(describeBuckets({0.001, 0.004, 0.016, 0.064, 0.256, 1.024, 4.096}) ==
        "0.001 × 4^k, k = 0..6");
  CHECK(describeBuckets({1, 2, 5, inf}) == "1, 2, 5");
  CHECK(describeBuckets({inf}).empty());
}

TEST_CASE("the metric table shows type with buckets, labels, help and origin per family",
          "[metric_docs]") {
  auto docs = exporterMetricDocs();
  REQUIRE(docs);
  const std::string md = metricsMarkdown(*docs);
  CHECK(md.find("| `koordlet_start_time` | gauge | node | the start time of koordlet | "
                "koordlet |\n") != std::string::npos);
  CHECK(md.find("| `koordlet_resource_update_duration_milliseconds` | histogram (0.01 × 4^k, "
                "k = 0..7) | status, type | ") != std::string::npos);
  CHECK(md.find("| `process_open_fds` | gauge |  | Number of open file descriptors | "
                "standard |\n") != std::string::npos);
  CHECK(md.find("| `koordlet_kubelet_up` | gauge | node | ") != std::string::npos);
  CHECK(md.find(" | ours |\n") != std::string::npos);
}

TEST_CASE("metric origin is koordlet for koordlet's names, standard for process_*",
          "[metric_docs]") {
  CHECK(metricOrigin("koordlet_pod_psi") == MetricOrigin::kKoordlet);
  CHECK(metricOrigin("process_cpu_seconds_total") == MetricOrigin::kStandard);
  CHECK(metricOrigin("koordlet_nri_connected") == MetricOrigin::kOurs);
}

}  // namespace test_metrics_metric_docs
