// metric_docs: docs/reference.md's metric table, generated from a live Exporter so it
// cannot drift from what /metrics serves. An Exporter is built and every record*
// method fed a representative input (driveExporter), the registry collected, and
// each family described by its name, type, help and the union of its series' label
// names. A family with no series would go unseen (the registry omits it), so the
// generator starts from the Exporter's own list of registered families and fails,
// naming the family, when one has no series: a new family cannot be added without
// extending the driver and, with it, the reference.
#pragma once

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "base/result.h"
#include "metrics/exporter.h"
#include "metrics/metric_origin.h"

namespace koord {

struct MetricDoc {
  std::string name;
  std::string type;                 // "gauge", "counter", "histogram (0.01 × 4^k, k = 0..7)"
  std::vector<std::string> labels;  // label names over all series, sorted
  std::string help;
  MetricOrigin origin = MetricOrigin::kOurs;
};

// "0.01 × 4^k, k = 0..7" for a geometric series of histogram bounds, else the
// bounds listed; +Inf, which every histogram has, is left out.
std::string describeBuckets(const std::vector<double>& upperBounds);

// Describes the families named in `registered` from `collected`, sorted by name.
// Fails naming every registered family without a series, and every collected
// family missing from `registered` (registered around the Exporter's helpers).
Result<std::vector<MetricDoc>> describeFamilies(
    const std::vector<std::string>& registered,
    const std::vector<prometheus::MetricFamily>& collected);

// Gives each of the exporter's families at least one series through its public
// record* methods. A new family needs a line here; generation names it until then.
void driveExporter(Exporter& exporter);

// The metrics block's markdown: a line on the origins, then one row per family
// (name | type | labels | help | origin).
std::string metricsMarkdown(const std::vector<MetricDoc>& metrics);

// Builds an Exporter, drives it and describes its families.
Result<std::vector<MetricDoc>> exporterMetricDocs();

const char* originText(MetricOrigin origin);

}  // namespace koord
