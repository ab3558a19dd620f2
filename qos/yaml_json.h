// Config text to nlohmann::json: a YAML 1.2 core-schema subset (what a hand-edited
// config holds) and strict JSON (what koord-manager reads in a ConfigMap's data, and
// pod annotations), each with the position of an error. Knows nothing of NodeSLO:
// qos/slo_config.cpp gives the result a meaning.
//
// YAML rules: plain 65 is an integer, "65" / '65' are strings, only true/false (any
// case form) are booleans ("yes" is a string), ~ / null / empty is null. Duplicate
// keys, mapping keys that are not scalars, tags beyond !!str/int/bool/float/null and
// text that is not UTF-8 are errors. Aliases are expanded, at most kMaxJsonValues
// values and kMaxJsonDepth levels deep (an alias bomb would otherwise expand
// exponentially). Merge keys (<<) are not supported.
//
// Lives in qos/, not base/: it needs yaml-cpp and nlohmann_json, and base/ depends
// on no third-party library.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace koord {

// Bounds on what a config text may make us build: real files nest 6 levels and
// hold a few hundred values.
inline constexpr int kMaxJsonDepth = 64;
inline constexpr size_t kMaxJsonValues = 200000;

// Where a node starts in the text, 0-based (yaml-cpp's Mark); -1 when unknown.
struct TextMark {
  int pos = -1;
  int line = -1;
  int column = -1;
};

// The one document of a YAML text.
struct YamlDocument {
  // The non-empty documents the text holds. Only a single one is converted: with
  // more, `value` stays null and the caller says what it expected.
  size_t documents = 0;
  nlohmann::json value;  // null: empty text, only comments, or an empty document
  // Where each node at depth <= 2 starts, by JSON pointer ("", "/data", "/data/key").
  std::map<std::string, TextMark> marks;

  TextMark markOf(const std::string& pointer) const;
};

// Errors name the file and position: "<file>:<line>:<column>: invalid YAML: <what>",
// or "<file>:<line>:<column>: <what>" for a value the rules above refuse.
Result<YamlDocument> parseYaml(std::string_view text, const std::string& file);

// Strict JSON. error is "" when parsed; otherwise line/column (1-based, 0 when not
// about a position) locate it inside the text.
struct JsonText {
  nlohmann::json value;
  std::string error;
  size_t line = 0;
  size_t column = 0;
};
JsonText parseStrictJson(const std::string& text);

// The file position "<line>:<column>" of (line, column) inside a YAML scalar value
// that starts at `mark`: exact for literal blocks (`|`, how every real ConfigMap is
// written) and single-line quoted values, "" otherwise.
std::string positionInScalar(std::string_view text, const TextMark& mark, const std::string& value,
                             size_t line, size_t column);

}  // namespace koord
