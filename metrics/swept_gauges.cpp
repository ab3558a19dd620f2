#include "metrics/swept_gauges.h"

#include "metrics/text_exposition.h"

#include <vector>

namespace koord {

namespace {

// Back from "{a=\"x\",b=\"y\"}" to name/value pairs (the text labelText wrote).
std::vector<prometheus::ClientMetric::Label> parseLabelText(const std::string& text) {
  std::vector<prometheus::ClientMetric::Label> out;
  size_t at = 1;  // past '{'
  while (at < text.size() && text[at] != '}') {
    const size_t eq = text.find('=', at);
    prometheus::ClientMetric::Label label;
    label.name = text.substr(at, eq - at);
    at = eq + 2;  // past '="'
    for (; text[at] != '"'; ++at) {
      if (text[at] == '\\') {
        ++at;
        label.value += text[at] == 'n' ? '\n' : text[at];
      } else {
        label.value += text[at];
      }
    }
    ++at;                       // past the closing quote
    if (text[at] == ',') ++at;  // to the next name
    out.push_back(std::move(label));
  }
  return out;
}

}  // namespace

SweptGauges::SweptGauges(std::string name, std::string help)
    : name_(std::move(name)), help_(std::move(help)) {}

std::string SweptGauges::labelText(const prometheus::Labels& labels) {
  std::string out;
  appendLabels(out, labels);
  return out;
}

void SweptGauges::sweep() {
  std::erase_if(live_, [this](const auto& kv) { return kv.second.round != round_; });
  ++round_;
}

void SweptGauges::appendText(std::string& out) const {
  if (live_.empty()) return;
  appendFamilyHeader(out, name_, help_, prometheus::MetricType::Gauge);
  for (const auto& [key, series] : live_) {
    out += name_;
    out += series.labels;
    out += ' ';
    appendValue(out, series.value);
    out += '\n';
  }
}

std::optional<prometheus::MetricFamily> SweptGauges::collect() const {
  if (live_.empty()) return std::nullopt;
  prometheus::MetricFamily family{name_, help_, prometheus::MetricType::Gauge, {}};
  for (const auto& [key, series] : live_) {
    prometheus::ClientMetric m;
    m.label = parseLabelText(series.labels);
    m.gauge.value = series.value;
    family.metric.push_back(std::move(m));
  }
  return family;
}

}  // namespace koord
