// The NodeSLO field tables and the Validator (see the header).
#include "qos/slo_schema.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace koord::slo {

namespace {

constexpr size_t kMaxErrors = 20;
constexpr int64_t kNoMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

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

// "a.b" + "c" -> "a.b.c"; a path ending in a space (a ConfigMap key, "data.x: ")
// takes the name directly.
std::string child(const std::string& path, std::string_view name) {
  if (path.empty() || path.back() == ' ') return path + std::string(name);
  return path + "." + std::string(name);
}

}  // namespace

Field list(std::string_view name) { return field(name, Type::kArray); }
Field any(std::string_view name) { return field(name, Type::kAny); }

const Block& cpuBurstAnnotationBlock() {
  static const Block b{{
      oneOf("policy", kBurstPolicies),
      integer("cpuBurstPercent", 0, 10000),
      integer("cfsQuotaBurstPercent", 100),
      integer("cfsQuotaBurstPeriodSeconds", -1),
  }};
  return b;
}

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

const Field* Block::find(std::string_view name) const {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  for (const auto& f : fields) {
    if (equalsFolded(f.name, name)) return &f;
  }
  return nullptr;
}

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

namespace {

std::string unknownField(const Block& b, std::string_view key) {
  std::string_view best = closestField(b, key);
  if (!best.empty()) return "unknown field; did you mean " + std::string(best) + "?";
  if (b.fields.size() > 6) return "unknown field";
  std::vector<std::string_view> names;
  for (const auto& f : b.fields) names.push_back(f.name);
  return "unknown field; expected " + joinChoices(names);
}

}  // namespace

void Validator::fail(const std::string& path, const std::string& reason) {
  add(where_ + path + ": " + reason);
}

void Validator::add(std::string message) {
  if (errors_.size() < kMaxErrors) {
    errors_.push_back(std::move(message));
  } else {
    truncated_ = true;
  }
}

Error Validator::error() const {
  std::string out;
  for (const auto& e : errors_) {
    if (!out.empty()) out += '\n';
    out += e;
  }
  if (truncated_) out += "\n" + where_ + "more problems not shown";
  return makeError(out);
}

void Validator::checkBlock(json& obj, const Block& b, const std::string& path) {
  if (!obj.is_object()) {
    fail(path, "expected an object, got " + describe(obj));
    return;
  }
  checkMembers(obj, b, [&](std::string_view name) { return child(path, name); });
}

void Validator::checkMembers(json& obj, const Block& b,
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

void Validator::checkField(json& v, const Field& f, const std::string& path) {
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

void Validator::checkInt(const json& v, const Field& f, const std::string& path) {
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

void checkOrdering(const json& effective,
                   const std::function<std::string(std::string_view)>& pathOf, Validator& v) {
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
      v.fail(pathOf("resourceUsedThresholdWithBE"), std::string(lower) + " " + lo.dump() +
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
      v.fail(pathOf("resourceQOSStrategy") + "." + std::string(cls) + ".resctrlQOS",
             "catRangeStartPercent " + start.dump() + " must be below catRangeEndPercent " +
                 end.dump() + " (an empty range is an empty cache mask)");
    }
  }
}

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

}  // namespace koord::slo
