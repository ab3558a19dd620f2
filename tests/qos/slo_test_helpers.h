// Helpers shared by the NodeSLO config tests (test_slo_config.cpp, test_slo_schema.cpp,
// test_slo_source.cpp, test_yaml_json.cpp): parse through parseNodeSlo and look at
// the result or the error.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "qos/slo_config.h"
#include "tests/support/temp_tree.h"

namespace koord::slo_test {

using json = nlohmann::json;

inline std::string fixture(const std::string& rel) {
  std::ifstream in(test::fixturePath(rel), std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline NodeSloSpec parseOk(const std::string& text, const std::string& file = "slo.yaml") {
  auto r = parseNodeSlo(text, file);
  if (!r.ok()) FAIL(r.error().message);
  return *r;
}

inline std::string parseError(const std::string& text, const std::string& file = "slo.yaml") {
  auto r = parseNodeSlo(text, file);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

inline bool anyNoteContains(const NodeSloSpec& s, const std::string& needle) {
  return std::any_of(s.notes.begin(), s.notes.end(),
                     [&](const std::string& n) { return contains(n, needle); });
}

inline const json& at(const NodeSloSpec& s, const std::string& pointer) {
  return s.effective.at(json::json_pointer(pointer));
}

}  // namespace koord::slo_test
