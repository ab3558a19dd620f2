// The NodeSLO schema and its checks: which fields each block of the spec has, their
// types and ranges (from the NodeSLO CRD and koordinator's validator tags), and a
// Validator that checks a JSON tree against them, collecting every problem as
// "<where><field path>: <reason>". The reading rules it implements are in
// qos/slo_config.h; this file knows no file format (qos/yaml_json.h) and no
// ConfigMap (qos/slo_source.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace koord::slo {

using json = nlohmann::json;

enum class Type { kBool, kInt, kEnum, kBlock, kObject, kArray, kAny };

struct Block;

struct Field {
  std::string_view name;
  Type type = Type::kAny;
  int64_t lo = std::numeric_limits<int64_t>::min();  // kInt
  int64_t hi = std::numeric_limits<int64_t>::max();
  std::vector<std::string_view> values;  // kEnum
  const Block* block = nullptr;          // kBlock
};

// A field checked only to be a list / to be present.
Field list(std::string_view name);
Field any(std::string_view name);

struct Block {
  std::vector<Field> fields;
  bool strict = true;  // an unknown field is an error (else it is kept)

  // Exact name first, then a case-insensitive match (Go's encoding/json rule).
  const Field* find(std::string_view name) const;
};

// The top level of the spec: lenient (newer koordinator versions add fields).
const Block& specBlock();
// The pod annotation koordinator.sh/cpuBurst: koordinator's CPUBurstConfig, the
// strategy without the node-level sharePoolThresholdPercent.
const Block& cpuBurstAnnotationBlock();

// The field whose name is within 3 edits of key (case-insensitive), "" if none:
// for "did you mean".
std::string_view closestField(const Block& b, std::string_view key);

// "string \"x\"", "integer 5", "an object", ...: how a message names what it got.
std::string describe(const json& v);

// Collects the problems of one source (at most 20, then "more problems not shown").
class Validator {
 public:
  // where: the prefix of every message, e.g. "slo.yaml: ".
  explicit Validator(std::string where) : where_(std::move(where)) {}

  void fail(const std::string& path, const std::string& reason);
  // A message that already carries its own location.
  void add(std::string message);
  bool ok() const { return errors_.empty(); }
  // All problems, one per line.
  Error error() const;

  // obj must be an object; its members are checked as checkMembers does, each
  // named path + "." + name (or path + name when path ends in a space, as a
  // ConfigMap key "data.x: " does).
  void checkBlock(json& obj, const Block& b, const std::string& path);
  // Renames case-folded names to the canonical one, drops nulls (= not set), and
  // checks each known member; unknown members are errors in strict blocks.
  void checkMembers(json& obj, const Block& b,
                    const std::function<std::string(std::string_view)>& pathOf);

 private:
  void checkField(json& v, const Field& f, const std::string& path);
  void checkInt(const json& v, const Field& f, const std::string& path);

  std::string where_;
  std::vector<std::string> errors_;
  bool truncated_ = false;
};

// The orderings koordinator's validator requires, on the merged spec: each
// eviction *LowerPercent below its threshold/upper, and catRangeStartPercent below
// catRangeEndPercent in each class. pathOf names a spec field where the operator
// set it.
void checkOrdering(const json& effective,
                   const std::function<std::string(std::string_view)>& pathOf, Validator& v);

// Reading a checked tree: the member, or an empty object when absent or when obj
// is not an object; the typed value or the fallback.
const json& member(const json& obj, std::string_view key);
int64_t intOr(const json& obj, std::string_view key, int64_t fallback);
bool boolOr(const json& obj, std::string_view key, bool fallback);
std::string stringOr(const json& obj, std::string_view key, const std::string& fallback);

}  // namespace koord::slo
