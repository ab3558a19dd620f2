#include "qos/slo_config.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <utility>

namespace koord {

const char* toString(CpuSuppressPolicy p) {
  switch (p) {
    case CpuSuppressPolicy::kCpuset:
      return "cpuset";
    case CpuSuppressPolicy::kCfsQuota:
      return "cfsQuota";
  }
  return "cpuset";
}

const char* toString(CpuBurstPolicy p) {
  switch (p) {
    case CpuBurstPolicy::kNone:
      return "none";
    case CpuBurstPolicy::kCpuBurstOnly:
      return "cpuBurstOnly";
    case CpuBurstPolicy::kCfsQuotaBurstOnly:
      return "cfsQuotaBurstOnly";
    case CpuBurstPolicy::kAuto:
      return "auto";
  }
  return "none";
}

namespace {

using json = nlohmann::json;

// Bounds on what a config file may make us build: real files nest 6 levels and
// hold a few hundred values; YAML aliases could otherwise expand exponentially.
constexpr int kMaxDepth = 64;
constexpr size_t kMaxValues = 200000;
constexpr size_t kMaxErrors = 20;
constexpr int64_t kNoMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
constexpr const char* kAnnotationWhere = "annotation koordinator.sh/cpuBurst: ";

// ---------------------------------------------------------------------------
// Schema of the strict blocks (field names and ranges from the NodeSLO CRD and
// koordinator's validator tags).

enum class Type { kBool, kInt, kEnum, kBlock, kObject, kArray, kAny };

struct Block;

struct Field {
  std::string_view name;
  Type type = Type::kAny;
  int64_t lo = kNoMin;
  int64_t hi = kNoMax;
  std::vector<std::string_view> values;  // kEnum
  const Block* block = nullptr;          // kBlock
};

Field field(std::string_view name, Type type) {
  Field f;
  f.name = name;
  f.type = type;
  return f;
}
Field boolean(std::string_view name) { return field(name, Type::kBool); }
Field integer(std::string_view name, int64_t lo = kNoMin, int64_t hi = kNoMax) {
  Field f = field(name, Type::kInt);
  f.lo = lo;
  f.hi = hi;
  return f;
}
Field percent(std::string_view name) { return integer(name, 0, 100); }
Field oneOf(std::string_view name, std::vector<std::string_view> values) {
  Field f = field(name, Type::kEnum);
  f.values = std::move(values);
  return f;
}
Field nested(std::string_view name, const Block& block) {
  Field f = field(name, Type::kBlock);
  f.block = &block;
  return f;
}
Field object(std::string_view name) { return field(name, Type::kObject); }
Field list(std::string_view name) { return field(name, Type::kArray); }
Field any(std::string_view name) { return field(name, Type::kAny); }

bool equalsFolded(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Edit distance, case-insensitive, for "did you mean".
size_t distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

struct Block {
  std::vector<Field> fields;
  bool strict = true;

  // Exact name first, then a case-insensitive match (Go's encoding/json rule).
  const Field* find(std::string_view name) const {
    for (const auto& f : fields) {
      if (f.name == name) return &f;
    }
    for (const auto& f : fields) {
      if (equalsFolded(f.name, name)) return &f;
    }
    return nullptr;
  }
};

// The field whose name is within 3 edits of key, if any (for "did you mean").
std::string_view closestField(const Block& b, std::string_view key) {
  std::string_view best;
  size_t bestDistance = 4;
  for (const auto& f : b.fields) {
    size_t d = distance(key, f.name);
    if (d < bestDistance) {
      bestDistance = d;
      best = f.name;
    }
  }
  return best;
}

std::string joinChoices(const std::vector<std::string_view>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += (i + 1 == values.size()) ? " or " : ", ";
    out += values[i];
  }
  return out;
}

const Block& thresholdBlock() {
  static const Block b{{
      boolean("enable"),
      percent("cpuSuppressThresholdPercent"),
      percent("cpuSuppressMinPercent"),
      oneOf("cpuSuppressPolicy", {"cpuset", "cfsQuota"}),
      percent("memoryEvictThresholdPercent"),
      percent("memoryEvictLowerPercent"),
      integer("memoryAllocatableEvictThresholdPercent", 0),
      integer("memoryAllocatableEvictLowerPercent", 0),
      percent("cpuEvictBESatisfactionUpperPercent"),
      percent("cpuEvictBESatisfactionLowerPercent"),
      percent("cpuEvictBEUsageThresholdPercent"),
      integer("cpuEvictTimeWindowSeconds", 1),
      percent("cpuEvictThresholdPercent"),
      percent("cpuEvictLowerPercent"),
      integer("cpuAllocatableEvictThresholdPercent", 0),
      integer("cpuAllocatableEvictLowerPercent", 0),
      oneOf("cpuEvictPolicy", {"evictByRealLimit", "evictByAllocatable"}),
      integer("evictEnabledPriorityThreshold", std::numeric_limits<int32_t>::min(),
              std::numeric_limits<int32_t>::max()),
      integer("allocatableEvictPriorityThreshold", 0, 7999),
  }};
  return b;
}

const std::vector<std::string_view> kBurstPolicies = {"none", "cpuBurstOnly", "cfsQuotaBurstOnly",
                                                      "auto"};

const Block& cpuBurstBlock() {
  static const Block b{{
      oneOf("policy", kBurstPolicies),
      integer("cpuBurstPercent", 0, 10000),
      integer("cfsQuotaBurstPercent", 100),
      integer("cfsQuotaBurstPeriodSeconds", -1),
      percent("sharePoolThresholdPercent"),
  }};
  return b;
}

// The pod annotation is koordinator's CPUBurstConfig: the strategy without the
// node-level sharePoolThresholdPercent.
const Block& cpuBurstAnnotationBlock() {
  static const Block b{{
      oneOf("policy", kBurstPolicies),
      integer("cpuBurstPercent", 0, 10000),
      integer("cfsQuotaBurstPercent", 100),
      integer("cfsQuotaBurstPeriodSeconds", -1),
  }};
  return b;
}

const Block& cpuQosBlock() {
  static const Block b{{
      boolean("enable"),
      integer("groupIdentity", -1, 2),
      integer("schedIdle", 0, 1),
      boolean("coreExpeller"),
  }};
  return b;
}

const Block& memoryQosBlock() {
  static const Block b{{
      boolean("enable"),
      percent("minLimitPercent"),
      percent("lowLimitPercent"),
      percent("throttlingPercent"),
      percent("wmarkRatio"),
      integer("wmarkScalePermill", 1, 1000),
      integer("wmarkMinAdj", -25, 50),
      integer("priorityEnable", 0, 1),
      integer("priority", 0, 12),
      integer("oomKillGroup", 0, 1),
      boolean("pageCacheEnable"),
      percent("pageCacheLimitPercent"),
      integer("pageCacheLimitSize", 0),
      boolean("pageCacheReclaimSync"),
  }};
  return b;
}

const Block& resctrlQosBlock() {
  static const Block b{{
      boolean("enable"),
      percent("catRangeStartPercent"),
      percent("catRangeEndPercent"),
      integer("mbaPercent", 1, 100),
  }};
  return b;
}

const Block& classBlock() {
  static const Block b{{
      nested("cpuQOS", cpuQosBlock()),
      nested("memoryQOS", memoryQosBlock()),
      nested("resctrlQOS", resctrlQosBlock()),
      object("blkioQOS"),
      object("networkQOS"),
  }};
  return b;
}

const std::vector<std::string_view> kClassNames = {"lsrClass", "lsClass", "beClass", "systemClass",
                                                   "cgroupRoot"};

const Block& resourceQosBlock() {
  static const Block b{{
      object("policies"),
      nested("lsrClass", classBlock()),
      nested("lsClass", classBlock()),
      nested("beClass", classBlock()),
      nested("systemClass", classBlock()),
      nested("cgroupRoot", classBlock()),
  }};
  return b;
}

// Top level of the spec: lenient (newer koordinator versions add fields).
const Block& specBlock() {
  static const Block b{{
                           nested("resourceUsedThresholdWithBE", thresholdBlock()),
                           nested("resourceQOSStrategy", resourceQosBlock()),
                           nested("cpuBurstStrategy", cpuBurstBlock()),
                           object("systemStrategy"),
                           object("extensions"),
                           list("hostApplications"),
                       },
                       /*strict=*/false};
  return b;
}

// ---------------------------------------------------------------------------
// Validation.

std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return "string " + v.dump(-1, ' ', false, json::error_handler_t::replace);
    case json::value_t::boolean:
      return "boolean " + v.dump();
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer " + v.dump();
    case json::value_t::number_float:
      return "number " + v.dump();
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "a list";
    case json::value_t::null:
      return "null";
    default:
      return "an unsupported value";
  }
}

// "a.b" + "c" -> "a.b.c"; a path ending in a space (a ConfigMap key, "data.x: ")
// takes the name directly.
std::string child(const std::string& path, std::string_view name) {
  if (path.empty() || path.back() == ' ') return path + std::string(name);
  return path + "." + std::string(name);
}

class Validator {
 public:
  explicit Validator(std::string where) : where_(std::move(where)) {}

  void fail(const std::string& path, const std::string& reason) {
    add(where_ + path + ": " + reason);
  }
  // A message that already carries its own location.
  void add(std::string message) {
    if (errors_.size() < kMaxErrors) {
      errors_.push_back(std::move(message));
    } else {
      truncated_ = true;
    }
  }
  bool ok() const { return errors_.empty(); }
  Error error() const {
    std::string out;
    for (const auto& e : errors_) {
      if (!out.empty()) out += '\n';
      out += e;
    }
    if (truncated_) out += "\n" + where_ + "more problems not shown";
    return makeError(out);
  }

  void checkBlock(json& obj, const Block& b, const std::string& path) {
    if (!obj.is_object()) {
      fail(path, "expected an object, got " + describe(obj));
      return;
    }
    checkMembers(obj, b, [&](std::string_view name) { return child(path, name); });
  }

  // Renames case-folded names to the canonical one, drops nulls (= not set), and
  // checks each known member; unknown members are errors in strict blocks.
  void checkMembers(json& obj, const Block& b,
                    const std::function<std::string(std::string_view)>& pathOf) {
    std::vector<std::string> keys;
    for (const auto& item : obj.items()) keys.push_back(item.key());
    for (const auto& key : keys) {
      const Field* f = b.find(key);
      if (f == nullptr) {
        if (b.strict) fail(pathOf(key), unknownField(b, key));
        continue;
      }
      std::string name(f->name);
      if (name != key) {
        if (obj.contains(name)) {
          fail(pathOf(key), "set twice, also as " + name);
          continue;
        }
        obj[name] = std::move(obj[key]);
        obj.erase(key);
      }
      json& v = obj[name];
      if (v.is_null()) {
        obj.erase(name);
        continue;
      }
      checkField(v, *f, pathOf(name));
    }
  }

  void checkField(json& v, const Field& f, const std::string& path) {
    switch (f.type) {
      case Type::kBool:
        if (!v.is_boolean()) fail(path, "expected a boolean, got " + describe(v));
        break;
      case Type::kInt:
        checkInt(v, f, path);
        break;
      case Type::kEnum:
        if (!v.is_string()) {
          fail(path, "expected a string, got " + describe(v));
        } else if (std::find(f.values.begin(), f.values.end(), v.get<std::string>()) ==
                   f.values.end()) {
          fail(path, "unknown " + std::string(f.name) + " " +
                         v.dump(-1, ' ', false, json::error_handler_t::replace) + "; expected " +
                         joinChoices(f.values));
        }
        break;
      case Type::kBlock:
        checkBlock(v, *f.block, path);
        break;
      case Type::kObject:
        if (!v.is_object()) fail(path, "expected an object, got " + describe(v));
        break;
      case Type::kArray:
        if (!v.is_array()) fail(path, "expected a list, got " + describe(v));
        break;
      case Type::kAny:
        break;
    }
  }

 private:
  void checkInt(const json& v, const Field& f, const std::string& path) {
    if (!v.is_number_integer()) {
      fail(path, "expected an integer, got " + describe(v));
      return;
    }
    std::string range;
    if (f.lo != kNoMin && f.hi != kNoMax) {
      range = "out of range " + std::to_string(f.lo) + ".." + std::to_string(f.hi);
    } else if (f.lo != kNoMin) {
      range = "below the minimum " + std::to_string(f.lo);
    } else if (f.hi != kNoMax) {
      range = "above the maximum " + std::to_string(f.hi);
    } else {
      range = "out of range";
    }
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kNoMax)) {
      fail(path, v.dump() + " is " + range);
      return;
    }
    int64_t x = v.get<int64_t>();
    if (x < f.lo || x > f.hi) fail(path, std::to_string(x) + " is " + range);
  }

  static std::string unknownField(const Block& b, std::string_view key) {
    std::string_view best = closestField(b, key);
    if (!best.empty()) return "unknown field; did you mean " + std::string(best) + "?";
    if (b.fields.size() > 6) return "unknown field";
    std::vector<std::string_view> names;
    for (const auto& f : b.fields) names.push_back(f.name);
    return "unknown field; expected " + joinChoices(names);
  }

  std::string where_;
  std::vector<std::string> errors_;
  bool truncated_ = false;
};

// ---------------------------------------------------------------------------
// YAML -> JSON, YAML 1.2 core schema (see the header for the rules).

struct ConvertError {
  std::string message;
};

std::string position(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return file + ": ";
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": ";
}

enum class IntParse { kNotInt, kOverflow, kOk };

IntParse parseInt(const std::string& s, int64_t* out) {
  std::string_view v(s);
  bool negative = false;
  if (!v.empty() && (v[0] == '-' || v[0] == '+')) {
    negative = v[0] == '-';
    v.remove_prefix(1);
  }
  int base = 10;
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'o')) {
    if (negative || s[0] == '+') return IntParse::kNotInt;  // YAML 1.2: unsigned only
    base = v[1] == 'x' ? 16 : 8;
    v.remove_prefix(2);
  }
  if (v.empty()) return IntParse::kNotInt;
  for (char c : v) {
    bool ok = base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                         : (c >= '0' && c < static_cast<char>('0' + base));
    if (!ok) return IntParse::kNotInt;
  }
  uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), magnitude, base);
  if (ec != std::errc() || end != v.data() + v.size()) return IntParse::kOverflow;
  uint64_t limit = negative ? static_cast<uint64_t>(kNoMax) + 1 : static_cast<uint64_t>(kNoMax);
  if (magnitude > limit) return IntParse::kOverflow;
  *out = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return IntParse::kOk;
}

// [-+]? ( . digits | digits [ . digits* ] ) ( [eE] [-+]? digits )?
bool isFloat(const std::string& s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t intDigits = 0, fracDigits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++intDigits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++fracDigits;
  }
  if (intDigits == 0 && fracDigits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t expDigits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++expDigits;
    if (expDigits == 0) return false;
  }
  return i == s.size();
}

// YAML text must be Unicode; invalid UTF-8 would also make json::dump() throw when
// GET /config prints the spec.
bool isUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t extra = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3;
    } else {
      return false;
    }
    if (s.size() - i <= extra) return false;
    auto c1 = static_cast<unsigned char>(s[i + 1]);
    // Overlong forms, UTF-16 surrogates, code points past U+10FFFF.
    if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) ||
        (c == 0xf4 && c1 > 0x8f)) {
      return false;
    }
    for (size_t k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += extra + 1;
  }
  return true;
}

class YamlToJson {
 public:
  explicit YamlToJson(std::string file) : file_(std::move(file)) {}

  json convert(const YAML::Node& n, int depth = 0, const std::string& pointer = "") {
    if (++values_ > kMaxValues) {
      throw ConvertError{position(file_, n.Mark()) + "more than " + std::to_string(kMaxValues) +
                         " values (YAML aliases expanding?)"};
    }
    if (depth > kMaxDepth) {
      throw ConvertError{position(file_, n.Mark()) + "nested deeper than " +
                         std::to_string(kMaxDepth) + " levels"};
    }
    if (depth <= 2) marks_[pointer] = n.Mark();
    switch (n.Type()) {
      case YAML::NodeType::Scalar:
        return scalar(n);
      case YAML::NodeType::Sequence: {
        json out = json::array();
        for (const auto& item : n) {
          out.push_back(convert(item, depth + 1, pointer + "/" + std::to_string(out.size())));
        }
        return out;
      }
      case YAML::NodeType::Map: {
        json out = json::object();
        // Range-for on pairs: yaml-cpp's iterator operator-> trips GCC's
        // dangling-pointer warning.
        for (const auto& kv : n) {
          const YAML::Node& key = kv.first;
          if (!key.IsScalar()) {
            throw ConvertError{position(file_, key.Mark()) +
                               "a mapping key must be a plain value (an unrendered template?)"};
          }
          const std::string& name = key.Scalar();
          if (!isUtf8(name)) throw ConvertError{position(file_, key.Mark()) + "invalid UTF-8"};
          if (out.contains(name)) {
            throw ConvertError{position(file_, key.Mark()) + "duplicate key \"" + name + "\""};
          }
          out[name] = convert(kv.second, depth + 1, pointer + "/" + name);
        }
        return out;
      }
      default:
        return nullptr;
    }
  }

  // Where a node at depth <= 2 started, by "/key/key" path.
  YAML::Mark markOf(const std::string& pointer) const {
    auto it = marks_.find(pointer);
    return it == marks_.end() ? YAML::Mark::null_mark() : it->second;
  }

 private:
  json scalar(const YAML::Node& n) {
    const std::string& tag = n.Tag();
    const std::string& s = n.Scalar();
    if (!isUtf8(s)) throw ConvertError{position(file_, n.Mark()) + "invalid UTF-8"};
    if (tag == "!") return s;  // quoted or block scalar: always a string
    if (tag == "?" || tag.empty()) return plain(n, s);
    if (tag == "tag:yaml.org,2002:str") return s;
    if (tag == "tag:yaml.org,2002:null") return nullptr;
    if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:bool" ||
        tag == "tag:yaml.org,2002:float") {
      json v = plain(n, s);
      bool fits = tag.ends_with("int")    ? v.is_number_integer()
                  : tag.ends_with("bool") ? v.is_boolean()
                                          : v.is_number();
      if (!fits) {
        throw ConvertError{position(file_, n.Mark()) + "\"" + s + "\" is not a valid " + tag};
      }
      return v;
    }
    throw ConvertError{position(file_, n.Mark()) + "unsupported YAML tag " + tag};
  }

  json plain(const YAML::Node& n, const std::string& s) {
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
    if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
    int64_t i = 0;
    switch (parseInt(s, &i)) {
      case IntParse::kOk:
        return i;
      case IntParse::kOverflow:
        throw ConvertError{position(file_, n.Mark()) + "integer " + s + " is out of range"};
      case IntParse::kNotInt:
        break;
    }
    if (isFloat(s)) return std::strtod(s.c_str(), nullptr);
    return s;
  }

  std::string file_;
  size_t values_ = 0;
  std::map<std::string, YAML::Mark> marks_;
};

// ---------------------------------------------------------------------------
// Strict JSON (ConfigMap data values, the pod annotation).

struct JsonText {
  json value;
  std::string error;  // "" when parsed
  size_t line = 0;    // 1-based position of the error inside the text
  size_t column = 0;
};

JsonText parseJson(const std::string& text) {
  JsonText out;
  bool tooDeep = false;
  json::parser_callback_t cb = [&tooDeep](int depth, json::parse_event_t, json&) {
    if (depth > kMaxDepth) {
      tooDeep = true;
      return false;
    }
    return true;
  };
  try {
    out.value = json::parse(text, cb);
  } catch (const json::parse_error& e) {
    // e.byte counts the characters read, the last one being where parsing failed.
    size_t p = e.byte == 0 ? 0 : std::min<size_t>(e.byte - 1, text.size());
    auto last = text.begin() + static_cast<std::ptrdiff_t>(p);
    out.line = 1 + static_cast<size_t>(std::count(text.begin(), last, '\n'));
    size_t nl = p == 0 ? std::string::npos : text.rfind('\n', p - 1);
    size_t lineStart = nl == std::string::npos ? 0 : nl + 1;
    out.column = p - lineStart + 1;
    // "[json.exception.parse_error.101] parse error at line 5, column 5: <what>"
    std::string what = e.what();
    size_t col = what.find("column ");
    size_t colon = col == std::string::npos ? std::string::npos : what.find(": ", col);
    out.error = colon == std::string::npos ? what : what.substr(colon + 2);
    return out;
  } catch (const json::exception& e) {
    out.error = e.what();
    return out;
  }
  if (tooDeep) out.error = "nested deeper than " + std::to_string(kMaxDepth) + " levels";
  return out;
}

// The file position of (line, column) inside a ConfigMap data value that starts at
// `mark`: exact for literal blocks (`|`, how every real config is written) and
// single-line quoted values, "" otherwise.
std::string filePositionInValue(std::string_view text, const YAML::Mark& mark,
                                const std::string& value, size_t line, size_t column) {
  if (mark.is_null() || mark.pos < 0 || static_cast<size_t>(mark.pos) >= text.size()) return "";
  char indicator = text[static_cast<size_t>(mark.pos)];
  if (indicator == '|') {
    size_t p = text.find('\n', static_cast<size_t>(mark.pos));
    // The block's indentation is that of its first non-blank line.
    size_t indent = 0;
    while (p != std::string_view::npos && p + 1 < text.size()) {
      size_t start = p + 1;
      size_t q = start;
      while (q < text.size() && text[q] == ' ') ++q;
      if (q < text.size() && text[q] != '\n' && text[q] != '\r') {
        indent = q - start;
        break;
      }
      p = text.find('\n', start);
    }
    return std::to_string(mark.line + 1 + static_cast<int>(line)) + ":" +
           std::to_string(indent + column);
  }
  if ((indicator == '\'' || indicator == '"') && value.find('\n') == std::string::npos) {
    return std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1 + column);
  }
  return "";
}

// ---------------------------------------------------------------------------
// Defaults (koordinator pkg/util/sloconfig/nodeslo_config.go, reference §5.1).

json cpuQosJson(int64_t groupIdentity, bool coreExpeller) {
  return {{"enable", false},
          {"groupIdentity", groupIdentity},
          {"schedIdle", 0},
          {"coreExpeller", coreExpeller}};
}

json memoryQosJson(int64_t wmarkRatio, int64_t wmarkScalePermill, int64_t wmarkMinAdj) {
  return {{"enable", false},
          {"minLimitPercent", 0},
          {"lowLimitPercent", 0},
          {"throttlingPercent", 0},
          {"wmarkRatio", wmarkRatio},
          {"wmarkScalePermill", wmarkScalePermill},
          {"wmarkMinAdj", wmarkMinAdj},
          {"priorityEnable", 0},
          {"priority", 0},
          {"oomKillGroup", 0}};
}

json resctrlQosJson(int64_t catRangeEnd) {
  return {{"enable", false},
          {"catRangeStartPercent", 0},
          {"catRangeEndPercent", catRangeEnd},
          {"mbaPercent", 100}};
}

json blkioNone() { return {{"enable", false}}; }

json networkNone() {
  return {{"enable", false},
          {"ingressRequest", 0},
          {"ingressLimit", 0},
          {"egressRequest", 0},
          {"egressLimit", 0}};
}

json classJson(json cpu, json memory, json resctrl) {
  return {{"cpuQOS", std::move(cpu)},
          {"memoryQOS", std::move(memory)},
          {"resctrlQOS", std::move(resctrl)},
          {"blkioQOS", blkioNone()},
          {"networkQOS", networkNone()}};
}

const json& defaultSpecJson() {
  static const json spec = {
      {"resourceUsedThresholdWithBE",
       {{"enable", false},
        {"cpuSuppressThresholdPercent", 65},
        {"cpuSuppressPolicy", "cpuset"},
        {"memoryEvictThresholdPercent", 70},
        {"cpuEvictPolicy", "evictByRealLimit"}}},
      {"resourceQOSStrategy",
       {{"policies", {{"cpuPolicy", "groupIdentity"}, {"netQOSPolicy", "tc"}}},
        {"lsrClass",
         classJson(cpuQosJson(2, true), memoryQosJson(95, 20, -25), resctrlQosJson(100))},
        {"lsClass",
         classJson(cpuQosJson(2, true), memoryQosJson(95, 20, -25), resctrlQosJson(100))},
        {"beClass",
         classJson(cpuQosJson(-1, false), memoryQosJson(95, 20, 50), resctrlQosJson(30))},
        {"systemClass",
         classJson(cpuQosJson(0, false), memoryQosJson(0, 50, 0), resctrlQosJson(100))},
        {"cgroupRoot", {{"blkioQOS", blkioNone()}}}}},
      {"cpuBurstStrategy",
       {{"policy", "none"},
        {"cpuBurstPercent", 1000},
        {"cfsQuotaBurstPercent", 300},
        {"cfsQuotaBurstPeriodSeconds", -1},
        {"sharePoolThresholdPercent", 50}}},
      {"systemStrategy", {{"totalNetworkBandwidth", "0"}}},
      {"extensions", json::object()},
  };
  return spec;
}

// File fields replace defaults, objects merge field by field, arrays replace, a
// null keeps the default.
void mergeInto(json& base, const json& overlay) {
  if (!base.is_object() || !overlay.is_object()) {
    base = overlay;
    return;
  }
  for (const auto& item : overlay.items()) {
    if (item.value().is_null()) continue;
    auto it = base.find(item.key());
    if (it == base.end() || it->is_null()) {
      base[item.key()] = item.value();
    } else {
      mergeInto(*it, item.value());
    }
  }
}

// ---------------------------------------------------------------------------
// Typed view of the (validated) effective spec.

const json& member(const json& obj, std::string_view key) {
  static const json kEmpty = json::object();
  if (!obj.is_object()) return kEmpty;
  auto it = obj.find(key);
  return it == obj.end() ? kEmpty : *it;
}

int64_t intOr(const json& obj, std::string_view key, int64_t fallback) {
  const json& v = member(obj, key);
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

bool boolOr(const json& obj, std::string_view key, bool fallback) {
  const json& v = member(obj, key);
  return v.is_boolean() ? v.get<bool>() : fallback;
}

std::string stringOr(const json& obj, std::string_view key, const std::string& fallback) {
  const json& v = member(obj, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

CpuBurstPolicy burstPolicyOf(const std::string& s, CpuBurstPolicy fallback) {
  if (s == "none") return CpuBurstPolicy::kNone;
  if (s == "cpuBurstOnly") return CpuBurstPolicy::kCpuBurstOnly;
  if (s == "cfsQuotaBurstOnly") return CpuBurstPolicy::kCfsQuotaBurstOnly;
  if (s == "auto") return CpuBurstPolicy::kAuto;
  return fallback;
}

// Fills the fields present in `obj` (a validated cpuBurstStrategy or annotation).
void applyBurst(const json& obj, CpuBurstConfig* c) {
  c->policy = burstPolicyOf(stringOr(obj, "policy", ""), c->policy);
  c->cpuBurstPercent = intOr(obj, "cpuBurstPercent", c->cpuBurstPercent);
  c->cfsQuotaBurstPercent = intOr(obj, "cfsQuotaBurstPercent", c->cfsQuotaBurstPercent);
  c->cfsQuotaBurstPeriodSeconds =
      intOr(obj, "cfsQuotaBurstPeriodSeconds", c->cfsQuotaBurstPeriodSeconds);
  c->sharePoolThresholdPercent =
      intOr(obj, "sharePoolThresholdPercent", c->sharePoolThresholdPercent);
}

ResourceQos classFrom(const json& obj) {
  ResourceQos q;
  const json& cpu = member(obj, "cpuQOS");
  q.cpu.enable = boolOr(cpu, "enable", q.cpu.enable);
  q.cpu.groupIdentity = intOr(cpu, "groupIdentity", q.cpu.groupIdentity);
  q.cpu.schedIdle = intOr(cpu, "schedIdle", q.cpu.schedIdle);
  q.cpu.coreExpeller = boolOr(cpu, "coreExpeller", q.cpu.coreExpeller);
  const json& mem = member(obj, "memoryQOS");
  MemoryQos& m = q.memory;
  m.enable = boolOr(mem, "enable", m.enable);
  m.minLimitPercent = intOr(mem, "minLimitPercent", m.minLimitPercent);
  m.lowLimitPercent = intOr(mem, "lowLimitPercent", m.lowLimitPercent);
  m.throttlingPercent = intOr(mem, "throttlingPercent", m.throttlingPercent);
  m.wmarkRatio = intOr(mem, "wmarkRatio", m.wmarkRatio);
  m.wmarkScalePermill = intOr(mem, "wmarkScalePermill", m.wmarkScalePermill);
  m.wmarkMinAdj = intOr(mem, "wmarkMinAdj", m.wmarkMinAdj);
  m.priorityEnable = intOr(mem, "priorityEnable", m.priorityEnable);
  m.priority = intOr(mem, "priority", m.priority);
  m.oomKillGroup = intOr(mem, "oomKillGroup", m.oomKillGroup);
  const json& rdt = member(obj, "resctrlQOS");
  q.resctrl.enable = boolOr(rdt, "enable", q.resctrl.enable);
  q.resctrl.catRangeStartPercent =
      intOr(rdt, "catRangeStartPercent", q.resctrl.catRangeStartPercent);
  q.resctrl.catRangeEndPercent = intOr(rdt, "catRangeEndPercent", q.resctrl.catRangeEndPercent);
  q.resctrl.mbaPercent = intOr(rdt, "mbaPercent", q.resctrl.mbaPercent);
  return q;
}

NodeSloSpec typedFrom(json effective) {
  NodeSloSpec s;
  const json& t = member(effective, "resourceUsedThresholdWithBE");
  s.threshold.enable = boolOr(t, "enable", s.threshold.enable);
  s.threshold.cpuSuppressThresholdPercent =
      intOr(t, "cpuSuppressThresholdPercent", s.threshold.cpuSuppressThresholdPercent);
  if (member(t, "cpuSuppressMinPercent").is_number_integer()) {
    s.threshold.cpuSuppressMinPercent = intOr(t, "cpuSuppressMinPercent", 0);
  }
  s.threshold.cpuSuppressPolicy = stringOr(t, "cpuSuppressPolicy", "cpuset") == "cfsQuota"
                                      ? CpuSuppressPolicy::kCfsQuota
                                      : CpuSuppressPolicy::kCpuset;
  s.threshold.memoryEvictThresholdPercent =
      intOr(t, "memoryEvictThresholdPercent", s.threshold.memoryEvictThresholdPercent);
  applyBurst(member(effective, "cpuBurstStrategy"), &s.cpuBurst);
  const json& q = member(effective, "resourceQOSStrategy");
  s.qos.lsr = classFrom(member(q, "lsrClass"));
  s.qos.ls = classFrom(member(q, "lsClass"));
  s.qos.be = classFrom(member(q, "beClass"));
  s.qos.system = classFrom(member(q, "systemClass"));
  s.qos.cgroupRoot = classFrom(member(q, "cgroupRoot"));
  s.effective = std::move(effective);
  return s;
}

// ---------------------------------------------------------------------------
// The three file forms.

struct Source {
  json spec = json::object();                 // NodeSLO-shaped overlay
  std::map<std::string, std::string> prefix;  // spec field -> path shown in messages
  std::string label = "spec";
  std::vector<std::string> notes;

  std::string pathOf(std::string_view field) const {
    auto it = prefix.find(std::string(field));
    return it == prefix.end() ? "spec." + std::string(field) : it->second;
  }
};

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

void fromConfigMap(const json& doc, std::string_view text, const YamlToJson& yaml,
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
    JsonText parsed = parseJson(value);
    if (!parsed.error.empty()) {
      std::string at = parsed.line == 0 ? ""
                                        : filePositionInValue(text, yaml.markOf("/data/" + key),
                                                              value, parsed.line, parsed.column);
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

// Orderings koordinator's validator requires, checked on the merged spec.
void checkOrdering(const json& effective, const Source& src, Validator& v) {
  static const std::pair<std::string_view, std::string_view> kPairs[] = {
      {"memoryEvictLowerPercent", "memoryEvictThresholdPercent"},
      {"memoryAllocatableEvictLowerPercent", "memoryAllocatableEvictThresholdPercent"},
      {"cpuEvictBESatisfactionLowerPercent", "cpuEvictBESatisfactionUpperPercent"},
      {"cpuEvictLowerPercent", "cpuEvictThresholdPercent"},
      {"cpuAllocatableEvictLowerPercent", "cpuAllocatableEvictThresholdPercent"},
  };
  const json& t = member(effective, "resourceUsedThresholdWithBE");
  for (const auto& [lower, upper] : kPairs) {
    const json& lo = member(t, lower);
    const json& hi = member(t, upper);
    if (lo.is_number_integer() && hi.is_number_integer() &&
        lo.get<int64_t>() >= hi.get<int64_t>()) {
      v.fail(src.pathOf("resourceUsedThresholdWithBE"), std::string(lower) + " " + lo.dump() +
                                                            " must be below " + std::string(upper) +
                                                            " " + hi.dump());
    }
  }
  const json& q = member(effective, "resourceQOSStrategy");
  for (std::string_view cls : kClassNames) {
    const json& r = member(member(q, cls), "resctrlQOS");
    const json& start = member(r, "catRangeStartPercent");
    const json& end = member(r, "catRangeEndPercent");
    if (start.is_number_integer() && end.is_number_integer() &&
        start.get<int64_t>() >= end.get<int64_t>()) {
      v.fail(src.pathOf("resourceQOSStrategy") + "." + std::string(cls) + ".resctrlQOS",
             "catRangeStartPercent " + start.dump() + " must be below catRangeEndPercent " +
                 end.dump() + " (an empty range is an empty cache mask)");
    }
  }
}

}  // namespace

NodeSloSpec defaultNodeSlo() { return typedFrom(defaultSpecJson()); }

CpuQos noneCpuQos() { return CpuQos{false, 0, 0, false}; }

MemoryQos noneMemoryQos() {
  MemoryQos m;
  m.enable = false;
  m.minLimitPercent = 0;
  m.lowLimitPercent = 0;
  m.throttlingPercent = 0;
  m.wmarkRatio = 0;
  m.wmarkScalePermill = 50;
  m.wmarkMinAdj = 0;
  m.priorityEnable = 0;
  m.priority = 0;
  m.oomKillGroup = 0;
  return m;
}

ResctrlQos noneResctrlQos() { return ResctrlQos{false, 0, 100, 100}; }

ResourceQosStrategy resetDisabled(const ResourceQosStrategy& qos) {
  ResourceQosStrategy out = qos;
  for (ResourceQos* c : {&out.lsr, &out.ls, &out.be}) {
    if (!c->cpu.enable) c->cpu = noneCpuQos();
    if (!c->memory.enable) c->memory = noneMemoryQos();
    if (!c->resctrl.enable) c->resctrl = noneResctrlQos();
  }
  return out;
}

Result<NodeSloSpec> parseNodeSlo(std::string_view text, std::string_view fileName) {
  const std::string file(fileName);
  if (text.size() > kMaxSloConfigBytes) {
    return makeError(file + ": " + std::to_string(text.size()) + " bytes, more than the " +
                     std::to_string(kMaxSloConfigBytes) + "-byte limit for a config file");
  }
  YamlToJson yaml(file);
  json doc;
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(std::string(text));
    std::vector<const YAML::Node*> present;
    for (const auto& d : docs) {
      if (!d.IsNull()) present.push_back(&d);
    }
    if (present.size() > 1) {
      return makeError(file + ": " + std::to_string(present.size()) +
                       " YAML documents; expected one (a spec, a NodeSLO or a ConfigMap)");
    }
    if (!present.empty()) doc = yaml.convert(*present[0]);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp 0.7 gives this one the message "bad file".
    return makeError(position(file, e.mark) + "invalid YAML: nested too deeply");
  } catch (const YAML::Exception& e) {
    return makeError(position(file, e.mark) + "invalid YAML: " + e.msg);
  } catch (const ConvertError& e) {
    return makeError(e.message);
  }

  if (doc.is_null()) return defaultNodeSlo();  // empty file or only comments
  if (!doc.is_object()) {
    return makeError(file + ": expected a mapping (a spec, a NodeSLO or a ConfigMap), got " +
                     describe(doc));
  }

  Validator v(file + ": ");
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

  if (v.ok()) {
    v.checkMembers(src.spec, specBlock(), [&](std::string_view f) { return src.pathOf(f); });
  }
  if (!v.ok()) return v.error();

  json effective = defaultSpecJson();
  mergeInto(effective, src.spec);
  checkOrdering(effective, src, v);
  if (!v.ok()) return v.error();

  // Unknown top-level fields are kept (newer koordinator versions add some), but
  // said so, since a misspelt strategy name would otherwise go unnoticed.
  for (const auto& item : src.spec.items()) {
    if (specBlock().find(item.key()) != nullptr) continue;
    std::string_view close = closestField(specBlock(), item.key());
    src.notes.push_back(src.pathOf(item.key()) + ": not a field this agent knows, kept as-is" +
                        (close.empty() ? "" : "; did you mean " + std::string(close) + "?"));
  }

  NodeSloSpec spec = typedFrom(std::move(effective));
  spec.source = src.label;
  spec.notes = std::move(src.notes);
  return spec;
}

Result<CpuBurstConfig> mergeCpuBurstAnnotation(const CpuBurstConfig& node, std::string_view text) {
  if (text.size() > 65536) {
    return makeError(std::string(kAnnotationWhere) + "longer than 65536 bytes");
  }
  JsonText parsed = parseJson(std::string(text));
  if (!parsed.error.empty()) {
    std::string at = parsed.line == 0 ? "" : " at column " + std::to_string(parsed.column);
    if (parsed.line > 1) {
      at = " at line " + std::to_string(parsed.line) + ", column " + std::to_string(parsed.column);
    }
    return makeError(std::string(kAnnotationWhere) + "invalid JSON" + at + ": " + parsed.error);
  }
  json& obj = parsed.value;
  if (!obj.is_object()) {
    return makeError(std::string(kAnnotationWhere) + "expected a JSON object, got " +
                     describe(obj));
  }
  Validator v(kAnnotationWhere);
  v.checkBlock(obj, cpuBurstAnnotationBlock(), "");
  if (!v.ok()) return v.error();
  CpuBurstConfig out = node;
  applyBurst(obj, &out);
  return out;
}

}  // namespace koord
