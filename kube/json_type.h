// "a string", "a number", ...: how parse errors name the JSON type they got.
#pragma once

#include <nlohmann/json.hpp>

namespace koord {

inline const char* jsonTypeName(const nlohmann::json& v) {
  if (v.is_string()) return "a string";
  if (v.is_number()) return "a number";
  if (v.is_boolean()) return "a boolean";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return "null";
}

}  // namespace koord
