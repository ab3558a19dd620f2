#include "metrics/text_exposition.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace koord {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

}  // namespace

// A double as the exposition writes it: up to 16 significant digits, shortest
// form as printf's %g gives it; NaN and the infinities spelled as Prometheus'
// client libraries write them ("Nan" is prometheus-cpp's spelling; the server's
// parser reads it case-insensitively).
void appendValue(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "Nan";
  } else if (std::isinf(v)) {
    out += v < 0 ? "-Inf" : "+Inf";
  } else {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general,
                             std::numeric_limits<double>::max_digits10 - 1);
    out.append(buf, res.ptr);
  }
}

namespace {

void appendCount(std::string& out, std::uint64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

// A label value inside its quotes: backslash, quote and newline escaped.
void appendLabelValue(std::string& out, const std::string& v) {
  for (char c : v) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out += c;
    }
  }
}

// "name<suffix>{labels[,extra="value"]} ".
void appendHead(std::string& out, const MetricFamily& family, const ClientMetric& metric,
                const char* suffix = "", const char* extraName = nullptr, double extraValue = 0) {
  out += family.name;
  out += suffix;
  if (!metric.label.empty() || extraName != nullptr) {
    out += '{';
    bool first = true;
    for (const auto& l : metric.label) {
      if (!first) out += ',';
      first = false;
      out += l.name;
      out += "=\"";
      appendLabelValue(out, l.value);
      out += '"';
    }
    if (extraName != nullptr) {
      if (!first) out += ',';
      out += extraName;
      out += "=\"";
      appendValue(out, extraValue);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
}

void appendTail(std::string& out, const ClientMetric& metric) {
  if (metric.timestamp_ms != 0) {
    out += ' ';
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, metric.timestamp_ms);
    out.append(buf, res.ptr);
  }
  out += '\n';
}

const char* typeName(MetricType t) {
  switch (t) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Summary:
      return "summary";
    case MetricType::Histogram:
      return "histogram";
    case MetricType::Untyped:
      break;
  }
  return "untyped";
}

}  // namespace

void appendFamilyHeader(std::string& out, const std::string& name, const std::string& help,
                        MetricType type) {
  if (!help.empty()) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += '\n';
  }
  out += "# TYPE ";
  out += name;
  out += ' ';
  out += typeName(type);
  out += '\n';
}

void appendLabels(std::string& out, const prometheus::Labels& labels) {
  if (labels.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += name;
    out += "=\"";
    appendLabelValue(out, value);
    out += '"';
  }
  out += '}';
}

void appendTextExposition(std::string& out, const std::vector<MetricFamily>& families) {
  for (const MetricFamily& family : families) {
    appendFamilyHeader(out, family.name, family.help, family.type);
    for (const ClientMetric& m : family.metric) {
      switch (family.type) {
        case MetricType::Counter:
          appendHead(out, family, m);
          appendValue(out, m.counter.value);
          appendTail(out, m);
          break;
        case MetricType::Gauge:
          appendHead(out, family, m);
          appendValue(out, m.gauge.value);
          appendTail(out, m);
          break;
        case MetricType::Untyped:
          appendHead(out, family, m);
          appendValue(out, m.untyped.value);
          appendTail(out, m);
          break;
        case MetricType::Summary:
          appendHead(out, family, m, "_count");
          appendCount(out, m.summary.sample_count);
          appendTail(out, m);
          appendHead(out, family, m, "_sum");
          appendValue(out, m.summary.sample_sum);
          appendTail(out, m);
          for (const auto& q : m.summary.quantile) {
            appendHead(out, family, m, "", "quantile", q.quantile);
            appendValue(out, q.value);
            appendTail(out, m);
          }
          break;
        case MetricType::Histogram: {
          appendHead(out, family, m, "_count");
          appendCount(out, m.histogram.sample_count);
          appendTail(out, m);
          appendHead(out, family, m, "_sum");
          appendValue(out, m.histogram.sample_sum);
          appendTail(out, m);
          double last = -std::numeric_limits<double>::infinity();
          for (const auto& b : m.histogram.bucket) {
            appendHead(out, family, m, "_bucket", "le", b.upper_bound);
            appendCount(out, b.cumulative_count);
            appendTail(out, m);
            last = b.upper_bound;
          }
          if (last != std::numeric_limits<double>::infinity()) {
            appendHead(out, family, m, "_bucket", "le", std::numeric_limits<double>::infinity());
            appendCount(out, m.histogram.sample_count);
            appendTail(out, m);
          }
          break;
        }
      }
    }
  }
}

}  // namespace koord
