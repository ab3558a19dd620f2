// Where a NodeSLO spec comes from in a config file: the three forms an operator
// may hand the agent (a bare spec, a NodeSLO object, koord-manager's
// slo-controller-config ConfigMap), unwrapped into one NodeSLO-shaped overlay that
// remembers where each spec field was written, so messages name the place the
// operator edits ("data.resource-threshold-config: clusterStrategy...").
// The rules (which data keys, what is not applied) are in qos/slo_config.h.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "qos/slo_schema.h"
#include "qos/yaml_json.h"

namespace koord::slo {

struct Source {
  json spec = json::object();                 // NodeSLO-spec-shaped overlay
  std::map<std::string, std::string> prefix;  // spec field -> path shown in messages
  std::string label = "spec";                 // NodeSloSpec::source
  std::vector<std::string> notes;             // what the file held but is not applied

  // "spec.<field>", or where a ConfigMap put it.
  std::string pathOf(std::string_view field) const;
};

// Unwraps the file's document (a mapping). kind NodeSLO, or no kind and "spec"
// but no spec field: the NodeSLO's spec. kind ConfigMap, or no kind and "data" but
// no spec field: the slo-controller-config data keys. No kind: a bare spec.
// A kind that is not a string or names another object is an error returned here;
// problems inside the document are added to v (the spec's own fields are not
// checked yet). text and yaml locate a JSON error inside a ConfigMap data value.
Result<Source> sourceOf(json doc, std::string_view text, const YamlDocument& yaml,
                        const std::string& file, Validator& v);

}  // namespace koord::slo
