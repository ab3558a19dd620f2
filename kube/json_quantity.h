// A Kubernetes resource.Quantity as JSON carries it (PodSpec resources,
// koordinator's node reservation and extended resource spec annotations): the text
// Quantity.UnmarshalJSON would parse, for parseQuantity / parseQuantityMilli
// (kube/pod.h).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace koord {

// A string with surrounding ASCII blanks trimmed (UnmarshalJSON's
// strings.TrimSpace), or a bare number: its raw text is gone once parsed, so an
// integer reads as its digits and a float as its shortest round-trip form. nullopt
// when v is neither; the caller names the type in its own words.
std::optional<std::string> jsonQuantityText(const nlohmann::json& v);

}  // namespace koord
