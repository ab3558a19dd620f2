// The three file forms unwrapped into a spec overlay (see the header).
#include "qos/slo_source.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace koord::slo {

namespace {

std::string nameOf(const json& doc) {
  const json& meta = member(doc, "metadata");
  std::string name = stringOr(meta, "name", "");
  std::string ns = stringOr(meta, "namespace", "");
  if (ns.empty()) return name;
  return ns + "/" + name;
}

void fromNodeSlo(const json& doc, Validator& v, Source* src) {
  std::string name = stringOr(member(doc, "metadata"), "name", "");
  src->label = name.empty() ? "NodeSLO" : "NodeSLO " + name;
  auto it = doc.find("spec");
  if (it == doc.end() || it->is_null()) return;
  if (!it->is_object()) {
    v.fail("spec", "expected an object, got " + describe(*it));
    return;
  }
  src->spec = *it;
}

struct DataKey {
  std::string_view key;
  std::string_view field;    // NodeSLO spec field it fills
  std::string_view takes;    // the member of the value that holds it
  std::string_view perNode;  // the per-node overrides this agent cannot choose
};

const DataKey kDataKeys[] = {
    {"resource-threshold-config", "resourceUsedThresholdWithBE", "clusterStrategy",
     "nodeStrategies"},
    {"resource-qos-config", "resourceQOSStrategy", "clusterStrategy", "nodeStrategies"},
    {"cpu-burst-config", "cpuBurstStrategy", "clusterStrategy", "nodeStrategies"},
    {"system-config", "systemStrategy", "clusterStrategy", "nodeStrategies"},
    // koordinator's HostApplicationCfg has no clusterStrategy: {applications, nodeConfigs}.
    {"host-application-config", "hostApplications", "applications", "nodeConfigs"},
};

// Keys koord-manager reads for itself (colocation, NodeMetric, normalization).
const std::string_view kManagerOnlyKeys[] = {"colocation-config", "cpu-normalization-config",
                                             "resource-amplification-config"};

void fromConfigMap(const json& doc, std::string_view text, const YamlDocument& yaml,
                   const std::string& file, Validator& v, Source* src) {
  std::string name = nameOf(doc);
  src->label = name.empty() ? "ConfigMap" : "ConfigMap " + name;
  auto dataIt = doc.find("data");
  if (dataIt == doc.end() || dataIt->is_null()) return;
  if (!dataIt->is_object()) {
    v.fail("data", "expected an object, got " + describe(*dataIt));
    return;
  }
  for (const auto& item : dataIt->items()) {
    const std::string& key = item.key();
    const DataKey* dk = nullptr;
    for (const auto& k : kDataKeys) {
      if (k.key == key) dk = &k;
    }
    if (dk == nullptr) {
      bool managerOnly = std::find(std::begin(kManagerOnlyKeys), std::end(kManagerOnlyKeys), key) !=
                         std::end(kManagerOnlyKeys);
      src->notes.push_back("data." + key +
                           (managerOnly ? ": read by koord-manager only, not by the node agent"
                                        : ": not a NodeSLO source, ignored"));
      continue;
    }
    const json& raw = item.value();
    if (raw.is_null()) continue;
    std::string where = "data." + key;
    if (!raw.is_string()) {
      v.fail(where, "expected a string holding JSON, got " + describe(raw));
      continue;
    }
    const std::string& value = raw.get_ref<const std::string&>();
    JsonText parsed = parseStrictJson(value);
    if (!parsed.error.empty()) {
      std::string at = parsed.line == 0 ? ""
                                        : positionInScalar(text, yaml.markOf("/data/" + key), value,
                                                           parsed.line, parsed.column);
      if (!at.empty()) {
        v.add(file + ":" + at + ": " + where + ": invalid JSON: " + parsed.error);
      } else if (parsed.line != 0) {
        v.fail(where, "invalid JSON at line " + std::to_string(parsed.line) + ", column " +
                          std::to_string(parsed.column) + " of the value: " + parsed.error);
      } else {
        v.fail(where, "invalid JSON: " + parsed.error);
      }
      continue;
    }
    json& cfg = parsed.value;
    if (!cfg.is_object()) {
      v.fail(where, "expected a JSON object, got " + describe(cfg));
      continue;
    }
    Block wrapper{{any(dk->takes), list(dk->perNode)}};
    std::string wherePrefix = where + ": ";
    v.checkBlock(cfg, wrapper, wherePrefix);
    auto perNode = cfg.find(std::string(dk->perNode));
    if (perNode != cfg.end() && perNode->is_array() && !perNode->empty()) {
      src->notes.push_back(where + ": " + std::to_string(perNode->size()) + " " +
                           std::string(dk->perNode) +
                           " entries not applied (choosing one needs the node's labels, which "
                           "this agent does not read); " +
                           std::string(dk->takes) + " is used");
    }
    auto taken = cfg.find(std::string(dk->takes));
    if (taken == cfg.end()) continue;
    src->spec[std::string(dk->field)] = std::move(*taken);
    src->prefix[std::string(dk->field)] = wherePrefix + std::string(dk->takes);
  }
}

bool hasSpecField(const json& doc) {
  for (const auto& item : doc.items()) {
    if (specBlock().find(item.key()) != nullptr) return true;
  }
  return false;
}

}  // namespace

std::string Source::pathOf(std::string_view field) const {
  auto it = prefix.find(std::string(field));
  return it == prefix.end() ? "spec." + std::string(field) : it->second;
}

Result<Source> sourceOf(json doc, std::string_view text, const YamlDocument& yaml,
                        const std::string& file, Validator& v) {
  Source src;
  auto kindIt = doc.find("kind");
  if (kindIt != doc.end() && !kindIt->is_string()) {
    return makeError(file + ": kind: expected a string, got " + describe(*kindIt));
  }
  std::string kind = kindIt == doc.end() ? "" : kindIt->get<std::string>();
  if (kind == "NodeSLO" || (kind.empty() && !hasSpecField(doc) && doc.contains("spec"))) {
    fromNodeSlo(doc, v, &src);
  } else if (kind == "ConfigMap" || (kind.empty() && !hasSpecField(doc) && doc.contains("data"))) {
    fromConfigMap(doc, text, yaml, file, v, &src);
  } else if (!kind.empty()) {
    return makeError(file + ": kind: " + json(kind).dump() +
                     " is not NodeSLO or ConfigMap; expected a NodeSLO spec, a NodeSLO or the "
                     "slo-controller-config ConfigMap");
  } else {
    src.spec = std::move(doc);
  }
  return src;
}

}  // namespace koord::slo
