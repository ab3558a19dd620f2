#include "qos/write_reasons.h"

#include <cstdio>

namespace koord {

namespace {

// The member at a dotted path, or nullptr.
const nlohmann::json* at(const nlohmann::json& root, std::string_view path) {
  const nlohmann::json* node = &root;
  while (!path.empty()) {
    const size_t dot = path.find('.');
    const std::string key(path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    if (!node->is_object()) return nullptr;
    const auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

}  // namespace

std::string sloFieldSource(const NodeSloSpec& spec, std::string_view path) {
  const nlohmann::json* given = at(spec.given, path);
  return given != nullptr && !given->is_null() ? spec.origin : "default";
}

WriteInput sloInput(const NodeSloSpec& spec, std::string_view path) {
  const nlohmann::json* value = at(spec.effective, path);
  std::string text = "null";
  if (value != nullptr) text = value->is_string() ? value->get<std::string>() : value->dump();
  return WriteInput{std::string(path), std::move(text), sloFieldSource(spec, path)};
}

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

}  // namespace koord
