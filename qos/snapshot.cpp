// Snapshot helpers: sample freshness and the two annotations the QoS strategies
// read (the node's reservation and a pod's scheduler-assigned cpuset). The JSON
// follows koordinator's Go types (apis/extension node_reservation.go and
// numa_aware.go): unknown fields are ignored as encoding/json ignores them, and
// CPU lists are read as k8s cpuset.Parse reads them (any order, overlaps allowed).
#include "qos/snapshot.h"

#include <nlohmann/json.hpp>

#include "base/quote.h"
#include "base/text_scan.h"
#include "kube/json_quantity.h"
#include "kube/json_type.h"

namespace koord {
namespace {

using Json = nlohmann::json;
using text::cat;

// Linux's NR_CPUS is at most 8192; larger ids are garbage. The bound also caps a
// list's output, whatever ranges it repeats.
constexpr uint64_t kMaxCpuId = 65535;

std::string quote(std::string_view s) { return quoteText(s, 40); }

Error wrongType(std::string_view field, std::string_view want, const Json& got) {
  return makeError(cat(field, ": expected ", want, ", got ", jsonTypeName(got)));
}

}  // namespace

Result<std::vector<int>> parseAnnotationCpuList(std::string_view list) {
  std::vector<bool> seen;
  if (list.empty()) return std::vector<int>{};
  size_t elementNo = 0;
  std::string_view rest = list;
  while (true) {
    ++elementNo;
    const size_t comma = rest.find(',');
    const std::string_view element = rest.substr(0, comma);
    const size_t dash = element.find('-');
    const std::string_view loText = element.substr(0, dash);
    const std::string_view hiText =
        dash == std::string_view::npos ? loText : element.substr(dash + 1);
    uint64_t lo = 0;
    uint64_t hi = 0;
    if (text::toU64(loText, lo) != nullptr || text::toU64(hiText, hi) != nullptr) {
      return makeError(cat("element ", std::to_string(elementNo), " ", quote(element),
                           " is not a cpu id or a range a-b"));
    }
    if (hi > kMaxCpuId) {
      return makeError(cat("element ", std::to_string(elementNo), " ", quote(element),
                           ": cpu id exceeds ", std::to_string(kMaxCpuId)));
    }
    if (lo > hi) {
      return makeError(
          cat("element ", std::to_string(elementNo), " ", quote(element), ": range is reversed"));
    }
    if (seen.size() <= hi) seen.resize(hi + 1, false);
    for (uint64_t id = lo; id <= hi; ++id) seen[id] = true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::vector<int> cpus;
  for (size_t id = 0; id < seen.size(); ++id) {
    if (seen[id]) cpus.push_back(static_cast<int>(id));
  }
  return cpus;
}

namespace {

// A resource.Quantity in JSON: a string, or a bare number (jsonQuantityText).
// cpu in milli-cores, anything else in plain units.
Result<int64_t> quantity(const Json& v, const std::string& field, bool milli) {
  const std::optional<std::string> text = jsonQuantityText(v);
  if (!text) return wrongType(field, "a quantity string", v);
  auto parsed = milli ? parseQuantityMilli(*text) : parseQuantity(*text);
  if (!parsed) return makeError(cat(field, ": ", parsed.error().message));
  return *parsed;
}

// The member `key` of an object, or nullptr when absent or JSON null (encoding/json
// leaves the Go field at its zero value for both).
}  // namespace

std::optional<double> freshValue(const std::optional<Sample>& s, Clock::Monotonic now,
                                 std::chrono::nanoseconds maxAge) {
  // A sample stamped after `now` (taken while the snapshot was being built) is
  // as fresh as it gets.
  if (!s || now - s->at > maxAge) return std::nullopt;
  return s->value;
}

Result<NodeReservation> parseNodeReservation(std::string_view json) {
  NodeReservation out;
  if (json.empty()) return out;  // koordlet: an empty annotation reserves nothing
  const Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return makeError(cat("not valid JSON: ", quoteText(json, 60)));
  if (doc.is_null()) return out;
  if (!doc.is_object()) return wrongType("reservation", "an object", doc);

  if (const Json* resources = jsonMember(doc, "resources")) {
    if (!resources->is_object()) return wrongType("resources", "an object", *resources);
    for (const auto& [name, value] : resources->items()) {
      if (value.is_null()) continue;
      const std::string field = "resources." + name;
      // Every quantity must parse, as koordlet's unmarshal fails on any bad one;
      // only cpu is kept.
      auto q = quantity(value, field, name == "cpu");
      if (!q) return q.error();
      if (name == "cpu") {
        if (*q < 0) return makeError(cat(field, ": must not be negative"));
        out.cpuMilli = *q;
      }
    }
  }
  if (const Json* cpus = jsonMember(doc, "reservedCPUs")) {
    if (!cpus->is_string()) return wrongType("reservedCPUs", "a cpu list string", *cpus);
    auto list = parseAnnotationCpuList(cpus->get_ref<const std::string&>());
    if (!list) return makeError(cat("reservedCPUs: ", list.error().message));
    out.reservedCpus = std::move(*list);
  }
  if (const Json* policy = jsonMember(doc, "applyPolicy")) {
    // Read by koord-scheduler, not koordlet; only its type is checked.
    if (!policy->is_string()) return wrongType("applyPolicy", "a string", *policy);
  }
  return out;
}

Result<std::vector<int>> parseSystemQosExclusiveCpus(std::string_view json) {
  if (json.empty()) return std::vector<int>{};
  const Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return makeError(cat("not valid JSON: ", quoteText(json, 60)));
  if (doc.is_null()) return std::vector<int>{};
  if (!doc.is_object()) return wrongType("system-qos-resource", "an object", doc);
  bool exclusive = true;  // koordinator's IsCPUSetExclusive: absent means true
  if (const Json* e = jsonMember(doc, "cpusetExclusive"); e != nullptr && !e->is_null()) {
    if (!e->is_boolean()) return wrongType("cpusetExclusive", "a boolean", *e);
    exclusive = e->get<bool>();
  }
  std::vector<int> cpus;
  if (const Json* c = jsonMember(doc, "cpuset"); c != nullptr && !c->is_null()) {
    if (!c->is_string()) return wrongType("cpuset", "a cpu list string", *c);
    auto list = parseAnnotationCpuList(c->get_ref<const std::string&>());
    if (!list) return makeError(cat("cpuset: ", list.error().message));
    cpus = std::move(*list);
  }
  if (!exclusive) cpus.clear();
  return cpus;
}

int64_t reservedCpuMilli(const NodeReservation& r) {
  if (!r.reservedCpus.empty()) return static_cast<int64_t>(r.reservedCpus.size()) * 1000;
  return r.cpuMilli;
}

Result<std::vector<int>> parseResourceStatusCpuset(std::string_view json) {
  const Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return makeError(cat(kResourceStatusAnnotation, ": not valid JSON: ", quoteText(json, 60)));
  }
  if (doc.is_null()) return std::vector<int>{};
  if (!doc.is_object()) {
    return makeError(
        cat(kResourceStatusAnnotation, ": expected an object, got ", jsonTypeName(doc)));
  }
  const Json* cpuset = jsonMember(doc, "cpuset");
  if (cpuset == nullptr) return std::vector<int>{};
  if (!cpuset->is_string()) {
    return makeError(cat(kResourceStatusAnnotation, ": cpuset: expected a cpu list string, got ",
                         jsonTypeName(*cpuset)));
  }
  auto list = parseAnnotationCpuList(cpuset->get_ref<const std::string&>());
  if (!list) return makeError(cat(kResourceStatusAnnotation, ": cpuset: ", list.error().message));
  return list;
}

}  // namespace koord
