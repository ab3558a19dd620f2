// Tests for metrics/text_exposition: byte for byte what prometheus-cpp's own
// TextSerializer writes, on the exporter's whole page and on edge cases.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>

#include <prometheus/text_serializer.h>

#include "metrics/exporter.h"
#include "metrics/metric_docs.h"
#include "metrics/text_exposition.h"

namespace test_metrics_text_exposition {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

std::string reference(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, families);
  return os.str();
}

std::string ours(const std::vector<prometheus::MetricFamily>& families) {
  std::string out;
  appendTextExposition(out, families);
  return out;
}

prometheus::ClientMetric withLabels(std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  return m;
}

}  // namespace

TEST_CASE("the exporter's whole page is written as prometheus-cpp writes it", "[exposition]") {
  Exporter exporter("node-a", "v1.2.3");
  driveExporter(exporter);  // every family with at least one series
  const auto families = exporter.collect();
  REQUIRE(families.size() > 50);
  const std::string expected = reference(families);
  CHECK(ours(families) == expected);
  CHECK(exporter.render() == expected);
}

TEST_CASE("numbers, escapes, summaries and histograms are written as prometheus-cpp writes them",
          "[exposition]") {
  using prometheus::MetricType;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<prometheus::MetricFamily> families;

  prometheus::MetricFamily gauge{"g", "help with \\ backslash", MetricType::Gauge, {}};
  for (double v : {0.0, -0.0, 1.0, 0.1, 1.0 / 3, 123456789012345678.0, 1e20, 1e-7, -2.5e-300, 1e300,
                   inf, -inf, std::nan(""), 42.0, 0.0001, 65536.5}) {
    auto m = withLabels({{"v", "a\"b\\c\nd"}, {"x", ""}});
    m.gauge.value = v;
    gauge.metric.push_back(m);
  }
  auto stamped = withLabels({});
  stamped.gauge.value = 7;
  stamped.timestamp_ms = 1700000000123;
  gauge.metric.push_back(stamped);
  families.push_back(gauge);

  prometheus::MetricFamily counter{"c_total", "", MetricType::Counter, {}};
  auto c = withLabels({});
  c.counter.value = 3;
  counter.metric.push_back(c);
  families.push_back(counter);

  prometheus::MetricFamily empty{"e", "no series", MetricType::Gauge, {}};
  families.push_back(empty);

  prometheus::MetricFamily untyped{"u", "untyped", MetricType::Untyped, {}};
  auto u = withLabels({{"k", "v"}});
  u.untyped.value = 1.5;
  untyped.metric.push_back(u);
  families.push_back(untyped);

  prometheus::MetricFamily summary{"s", "a summary", MetricType::Summary, {}};
  auto s = withLabels({{"k", "v"}});
  s.summary.sample_count = 10;
  s.summary.sample_sum = 2.5;
  s.summary.quantile = {{0.5, 0.2}, {0.99, 1.25}};
  summary.metric.push_back(s);
  families.push_back(summary);

  prometheus::MetricFamily hist{"h", "a histogram", MetricType::Histogram, {}};
  auto h = withLabels({});
  h.histogram.sample_count = 5;
  h.histogram.sample_sum = 0.75;
  h.histogram.bucket = {{1, 0.01}, {3, 0.64}, {4, 163.84}};
  hist.metric.push_back(h);
  auto h2 = withLabels({{"status", "ok"}});
  h2.histogram.sample_count = 2;
  h2.histogram.bucket = {{1, 1}, {2, inf}};  // +Inf given: not written twice
  hist.metric.push_back(h2);
  families.push_back(hist);

  CHECK(ours(families) == reference(families));
}

}  // namespace test_metrics_text_exposition
