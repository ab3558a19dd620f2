// The Prometheus text exposition format (version 0.0.4) of collected metric
// families, written straight into a string: the same bytes as prometheus-cpp's
// TextSerializer (tests/metrics/test_text_exposition.cpp compares the two on the
// exporter's whole page), at a fraction of the cost. The library's serializer
// writes through an std::ostream with locale-aware number formatting; at 110 pods
// (2,600 series) that was 40% of a scrape's CPU.
#pragma once

#include <string>
#include <vector>

#include <prometheus/labels.h>
#include <prometheus/metric_family.h>

namespace koord {

// Appends the families' exposition to `out`.
void appendTextExposition(std::string& out, const std::vector<prometheus::MetricFamily>& families);

// The pieces, for a family kept outside the registry (metrics/swept_gauges.h):
// "# HELP" (when help is not empty) and "# TYPE" lines; a label set as
// "{a=\"x\",b=\"y\"}" in the map's (sorted) order, values escaped, "" when empty;
// a sample value.
void appendFamilyHeader(std::string& out, const std::string& name, const std::string& help,
                        prometheus::MetricType type);
void appendLabels(std::string& out, const prometheus::Labels& labels);
void appendValue(std::string& out, double v);

}  // namespace koord
