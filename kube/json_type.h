// "a string", "a number", ...: how parse errors name the JSON type they got; and the
// optional-member lookup every object parser shares.
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

// The member `key` of an object, or nullptr when `obj` is not an object or the member is
// absent or null (JSON's null is "not given" in Kubernetes objects).
inline const nlohmann::json* jsonMember(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace koord
