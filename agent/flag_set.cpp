#include "agent/flag_set.h"

#include <cassert>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "base/duration.h"

namespace koord {
namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isHexDigit(char c) { return isDigit(c) || (lower(c) >= 'a' && lower(c) <= 'f'); }

// Go allows '_' in a number only between digits or right after a base prefix
// (strconv's underscoreOK); `s` may carry a sign.
bool underscoresOk(std::string_view s) {
  char saw = '^';  // '^' start, '0' digit, '_' underscore, '!' anything else
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  size_t i = 0;
  bool hex = false;
  if (s.size() >= 2 && s[0] == '0' &&
      (lower(s[1]) == 'b' || lower(s[1]) == 'o' || lower(s[1]) == 'x')) {
    i = 2;
    saw = '0';
    hex = lower(s[1]) == 'x';
  }
  for (; i < s.size(); ++i) {
    if (isDigit(s[i]) || (hex && isHexDigit(s[i]))) {
      saw = '0';
      continue;
    }
    if (s[i] == '_') {
      if (saw != '0') return false;
      saw = '_';
      continue;
    }
    if (saw == '_') return false;
    saw = '!';
  }
  return saw != '_';
}

int digitValue(char c) {
  if (isDigit(c)) return c - '0';
  if (lower(c) >= 'a' && lower(c) <= 'z') return lower(c) - 'a' + 10;
  return 99;
}

enum class NumError { kNone, kSyntax, kRange };

// The unsigned core of Go's ParseUint; `s` has no sign.
NumError parseUnsigned(std::string_view s, int base, int bits, uint64_t* out) {
  if (s.empty()) return NumError::kSyntax;
  const std::string_view whole = s;
  const bool literal = base == 0;
  if (literal) {
    base = 10;
    if (s[0] == '0') {
      if (s.size() >= 3 && lower(s[1]) == 'b') {
        base = 2;
        s.remove_prefix(2);
      } else if (s.size() >= 3 && lower(s[1]) == 'o') {
        base = 8;
        s.remove_prefix(2);
      } else if (s.size() >= 3 && lower(s[1]) == 'x') {
        base = 16;
        s.remove_prefix(2);
      } else {
        base = 8;
        s.remove_prefix(1);
      }
    }
  }
  const uint64_t maxValue = bits >= 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
  uint64_t value = 0;
  bool range = false;
  bool underscores = false;
  for (char c : s) {
    if (c == '_' && literal) {
      underscores = true;
      continue;
    }
    const int d = digitValue(c);
    if (d >= base) return NumError::kSyntax;
    if (range) continue;  // keep checking syntax, as Go does
    const auto ub = static_cast<uint64_t>(base);
    const auto ud = static_cast<uint64_t>(d);
    if (value > (maxValue - ud) / ub) {
      range = true;
      continue;
    }
    value = value * ub + ud;
  }
  if (underscores && !underscoresOk(whole)) return NumError::kSyntax;
  if (range) return NumError::kRange;
  *out = value;
  return NumError::kNone;
}

Error numberError(std::string_view what, std::string_view text, NumError e) {
  std::string msg = "invalid " + std::string(what) + " " + quoteText(text);
  if (e == NumError::kRange) msg += ": out of range";
  return makeError(std::move(msg));
}

// Checks Go's float literal grammar (after an optional sign) and returns the text
// with underscores removed, or "" when it is not a float literal.
std::string cleanFloatLiteral(std::string_view s) {
  std::string out;
  size_t i = 0;
  bool hex = false;
  if (s.size() >= 2 && s[0] == '0' && lower(s[1]) == 'x') {
    hex = true;
    out = "0x";
    i = 2;
  }
  bool digits = false;
  bool dot = false;
  bool underscores = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      underscores = true;
    } else if (c == '.' && !dot) {
      dot = true;
      out.push_back(c);
    } else if (isDigit(c) || (hex && isHexDigit(c))) {
      digits = true;
      out.push_back(c);
    } else {
      break;
    }
  }
  if (!digits) return "";
  // Exponent: mandatory 'p' for hex (as in Go), optional 'e' for decimal.
  if (i < s.size() && lower(s[i]) == (hex ? 'p' : 'e')) {
    out.push_back(s[i]);
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) out.push_back(s[i++]);
    bool expDigits = false;
    for (; i < s.size() && (isDigit(s[i]) || s[i] == '_'); ++i) {
      if (s[i] == '_') {
        underscores = true;
        continue;
      }
      expDigits = true;
      out.push_back(s[i]);
    }
    if (!expDigits) return "";
  } else if (hex) {
    return "";
  }
  if (i != s.size()) return "";
  if (underscores && !underscoresOk(s)) return "";
  return out;
}

// Matches `s` against "inf", "infinity" or "nan" ignoring case; sets *out.
bool parseSpecialFloat(std::string_view s, bool neg, bool hadSign, double* out) {
  std::string l;
  for (char c : s) l.push_back(lower(c));
  if (l == "inf" || l == "infinity") {
    *out = neg ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  if (l == "nan" && !hadSign) {
    *out = std::nan("");
    return true;
  }
  return false;
}

// k8s StringSlice prints its value as CSV; fields with a comma or quote are quoted.
std::string formatCommaList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    const std::string& f = items[i];
    if (f.find_first_of(",\"\r\n") == std::string::npos && (f.empty() || f[0] != ' ')) {
      out += f;
      continue;
    }
    out.push_back('"');
    for (char c : f) {
      if (c == '"') out.push_back('"');
      out.push_back(c);
    }
    out.push_back('"');
  }
  return out;
}

// One parser per FlagType, for not-implemented flags and the typed bindings.
Status checkValue(FlagType type, std::string_view v) {
  switch (type) {
    case FlagType::kString:
      return Ok{};
    case FlagType::kBool:
      if (auto r = parseGoBool(v); !r) return r.error();
      return Ok{};
    case FlagType::kInt:  // Go's int is 64 bits on the platforms koordlet ships for
    case FlagType::kInt64:
      if (auto r = parseGoInt(v, 0, 64); !r) return r.error();
      return Ok{};
    case FlagType::kUint64:
      if (auto r = parseGoUint(v, 0, 64); !r) return r.error();
      return Ok{};
    case FlagType::kDouble:
      if (auto r = parseGoFloat(v); !r) return r.error();
      return Ok{};
    case FlagType::kDuration:
      if (auto r = parseGoDuration(v); !r) return r.error();
      return Ok{};
    case FlagType::kStringSlice:
      if (auto r = parseCommaList(v); !r) return r.error();
      return Ok{};
  }
  return Ok{};
}

// Go prints int and int64 flags as "int", uint and uint64 as "uint", and any
// other flag.Value as "value"; "strings" is pflag's name for a string slice.
struct TypeText {
  const char* name;
  const char* zero;
};
TypeText typeText(FlagType type) {
  switch (type) {
    case FlagType::kString:
      return {"string", ""};
    case FlagType::kBool:
      return {"", "false"};
    case FlagType::kInt:
    case FlagType::kInt64:
      return {"int", "0"};
    case FlagType::kUint64:
      return {"uint", "0"};
    case FlagType::kDouble:
      return {"float", "0"};
    case FlagType::kDuration:
      return {"duration", "0s"};
    case FlagType::kStringSlice:
      return {"strings", "[]"};
  }
  return {"value", ""};
}

}  // namespace

Result<bool> parseGoBool(std::string_view text) {
  static constexpr std::string_view kTrue[] = {"1", "t", "T", "TRUE", "true", "True"};
  static constexpr std::string_view kFalse[] = {"0", "f", "F", "FALSE", "false", "False"};
  for (auto t : kTrue) {
    if (text == t) return true;
  }
  for (auto f : kFalse) {
    if (text == f) return false;
  }
  return makeError("invalid boolean " + quoteText(text));
}

Result<uint64_t> parseGoUint(std::string_view text, int base, int bits) {
  uint64_t value = 0;
  NumError e = parseUnsigned(text, base, bits, &value);
  if (e != NumError::kNone) return numberError("unsigned integer", text, e);
  return value;
}

Result<int64_t> parseGoInt(std::string_view text, int base, int bits) {
  std::string_view s = text;
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  uint64_t magnitude = 0;
  NumError e = parseUnsigned(s, base, 64, &magnitude);
  if (e != NumError::kNone) return numberError("integer", text, e);
  const uint64_t cutoff = uint64_t{1} << (bits - 1);  // |min| of a `bits`-bit int
  if ((!neg && magnitude >= cutoff) || (neg && magnitude > cutoff)) {
    return numberError("integer", text, NumError::kRange);
  }
  return neg ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

Result<double> parseGoFloat(std::string_view text) {
  std::string_view s = text;
  bool neg = false;
  bool hadSign = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    hadSign = true;
    s.remove_prefix(1);
  }
  double value = 0;
  if (parseSpecialFloat(s, neg, hadSign, &value)) return value;
  const std::string clean = cleanFloatLiteral(s);
  if (clean.empty()) return makeError("invalid number " + quoteText(text));

  const bool hex = clean.size() > 2 && clean[1] == 'x';
  const char* first = clean.data() + (hex ? 2 : 0);
  const char* last = clean.data() + clean.size();
  auto [ptr, ec] = std::from_chars(first, last, value,
                                   hex ? std::chars_format::hex : std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports underflow and overflow alike; Go rounds underflow to a
    // denormal or zero and only rejects overflow. strtod tells them apart.
    errno = 0;
    value = std::strtod(clean.c_str(), nullptr);
    if (std::isinf(value)) return makeError("invalid number " + quoteText(text) + ": out of range");
  } else if (ec != std::errc() || ptr != last) {
    return makeError("invalid number " + quoteText(text));
  }
  return neg ? -value : value;
}

std::string formatGoFloat(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return std::signbit(value) ? "-0" : "0";
  // Shortest round-trip digits from to_chars, laid out by strconv's rule for
  // shortest 'g': exponent form when the decimal exponent is < -4 or >= 6.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.2345e+06"
  bool neg = false;
  if (!sci.empty() && sci[0] == '-') {
    neg = true;
    sci.erase(0, 1);
  }
  const size_t ePos = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < ePos; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  const int exp = std::atoi(sci.c_str() + ePos + 1);
  std::string out = neg ? "-" : "";
  if (exp < -4 || exp >= 6) {
    out.push_back(digits[0]);
    if (digits.size() > 1) {
      out.push_back('.');
      out += digits.substr(1);
    }
    out.push_back('e');
    out.push_back(exp < 0 ? '-' : '+');
    const int a = exp < 0 ? -exp : exp;
    if (a < 10) out.push_back('0');
    out += std::to_string(a);
    return out;
  }
  const int nd = static_cast<int>(digits.size());
  const int dp = exp + 1;  // digits before the decimal point
  if (dp <= 0) {
    out += "0.";
    out += std::string(static_cast<size_t>(-dp), '0');
    out += digits;
  } else if (dp >= nd) {
    out += digits;
    out += std::string(static_cast<size_t>(dp - nd), '0');
  } else {
    out += digits.substr(0, static_cast<size_t>(dp));
    out.push_back('.');
    out += digits.substr(static_cast<size_t>(dp));
  }
  return out;
}

Result<std::vector<std::string>> parseCommaList(std::string_view text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t i = 0;
  while (true) {
    std::string field;
    if (i < text.size() && text[i] == '"') {
      ++i;
      bool closed = false;
      while (i < text.size()) {
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        field.push_back(text[i++]);
      }
      if (!closed || (i < text.size() && text[i] != ',')) {
        return makeError("invalid list " + quoteText(text) + ": unbalanced '\"' in a quoted item");
      }
    } else {
      while (i < text.size() && text[i] != ',') {
        if (text[i] == '"') {
          return makeError("invalid list " + quoteText(text) +
                           ": '\"' inside an unquoted item (quote the whole item)");
        }
        field.push_back(text[i++]);
      }
    }
    out.push_back(std::move(field));
    if (i >= text.size()) break;
    ++i;  // the comma
  }
  return out;
}

void FlagSet::add(std::string name, Flag flag) {
  // Registering a name twice is a programming error (Go panics); keep the first.
  assert(flags_.find(name) == flags_.end());
  flags_.emplace(std::move(name), std::move(flag));
}

void FlagSet::stringVar(std::string* target, std::string name, std::string help) {
  Flag f;
  f.typeName = "string";
  f.defaultText = *target;
  f.quoteDefault = true;
  f.help = std::move(help);
  f.set = [target](std::string_view v) -> Status {
    target->assign(v);
    return Ok{};
  };
  add(std::move(name), std::move(f));
}

// A Setter that parses with `parse` and stores into *target; the parse result may
// be wider than T (ints are parsed bounded to T's width first).
template <typename T, typename Parse>
FlagSet::Setter storeInto(T* target, Parse parse) {
  return [target, parse](std::string_view v) -> Status {
    auto parsed = parse(v);
    if (!parsed) return parsed.error();
    *target = static_cast<T>(*parsed);
    return Ok{};
  };
}

void FlagSet::typedVar(std::string name, std::string typeName, std::string defaultText,
                       std::string zeroText, std::string help, Setter set) {
  Flag f;
  f.typeName = std::move(typeName);
  f.defaultText = std::move(defaultText);
  f.zeroText = std::move(zeroText);
  f.help = std::move(help);
  f.set = std::move(set);
  add(std::move(name), std::move(f));
}

void FlagSet::boolVar(bool* target, std::string name, std::string help) {
  Flag f;
  f.defaultText = *target ? "true" : "false";
  f.zeroText = "false";
  f.help = std::move(help);
  f.isBool = true;
  f.set = storeInto(target, parseGoBool);
  add(std::move(name), std::move(f));
}

void FlagSet::intVar(int* target, std::string name, std::string help) {
  // Bounded to 32 bits: the C++ int it is stored in.
  typedVar(std::move(name), "int", std::to_string(*target), "0", std::move(help),
           storeInto(target, [](std::string_view v) { return parseGoInt(v, 0, 32); }));
}

void FlagSet::int64Var(int64_t* target, std::string name, std::string help) {
  typedVar(std::move(name), "int", std::to_string(*target), "0", std::move(help),
           storeInto(target, [](std::string_view v) { return parseGoInt(v, 0, 64); }));
}

void FlagSet::uint64Var(uint64_t* target, std::string name, std::string help) {
  typedVar(std::move(name), "uint", std::to_string(*target), "0", std::move(help),
           storeInto(target, [](std::string_view v) { return parseGoUint(v, 0, 64); }));
}

void FlagSet::doubleVar(double* target, std::string name, std::string help) {
  typedVar(std::move(name), "float", formatGoFloat(*target), "0", std::move(help),
           storeInto(target, parseGoFloat));
}

void FlagSet::durationVar(std::chrono::nanoseconds* target, std::string name, std::string help) {
  typedVar(std::move(name), "duration", formatGoDuration(*target), "0s", std::move(help),
           storeInto(target, parseGoDuration));
}

void FlagSet::stringSliceVar(std::vector<std::string>* target, std::string name, std::string help) {
  Flag f;
  f.typeName = "strings";
  f.defaultText = "[" + formatCommaList(*target) + "]";
  f.zeroText = "[]";
  f.help = std::move(help);
  f.set = [target, replaced = false](std::string_view v) mutable -> Status {
    auto items = parseCommaList(v);
    if (!items) return items.error();
    if (!replaced) target->clear();
    replaced = true;
    target->insert(target->end(), items->begin(), items->end());
    return Ok{};
  };
  add(std::move(name), std::move(f));
}

void FlagSet::funcVar(std::string name, std::string typeName, std::string defaultText,
                      std::string help, Setter set, bool isBool) {
  Flag f;
  f.typeName = isBool ? "" : std::move(typeName);
  f.defaultText = std::move(defaultText);
  f.zeroText = isBool ? "false" : "";
  f.help = std::move(help);
  f.isBool = isBool;
  f.set = std::move(set);
  add(std::move(name), std::move(f));
}

void FlagSet::notImplemented(std::string name, FlagType type, std::string defaultText,
                             std::string help) {
  const TypeText t = typeText(type);
  Flag f;
  f.typeName = t.name;
  f.defaultText = std::move(defaultText);
  f.zeroText = t.zero;
  f.quoteDefault = type == FlagType::kString;
  f.help = std::move(help);
  f.isBool = type == FlagType::kBool;
  f.notImplemented = true;
  f.set = [type](std::string_view v) { return checkValue(type, v); };
  add(std::move(name), std::move(f));
}

void FlagSet::notImplementedFunc(std::string name, std::string typeName, std::string defaultText,
                                 std::string help, Setter validate, bool isBool) {
  const std::string key = name;
  funcVar(std::move(name), std::move(typeName), std::move(defaultText), std::move(help),
          std::move(validate), isBool);
  flags_.find(key)->second.notImplemented = true;
}

Status FlagSet::parse(const std::vector<std::string>& args) {
  // The last bare boolean seen, for a hint when "-flag false" leaves "false" behind.
  std::string lastBareBool;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      std::string msg =
          "unexpected argument " + quoteText(arg) + ": koordlet takes no positional arguments";
      if (!lastBareBool.empty()) {
        msg += "; a boolean flag takes its value after '=', as in --" + lastBareBool + "=" + arg;
      }
      return makeError(std::move(msg));
    }
    size_t dashes = 1;
    if (arg[1] == '-') {
      dashes = 2;
      if (arg.size() == 2) {  // "--": the end of the flags
        if (i + 1 < args.size()) {
          return makeError("unexpected argument " + quoteText(args[i + 1]) +
                           " after \"--\": koordlet takes no positional arguments");
        }
        return Ok{};
      }
    }
    std::string_view name = std::string_view(arg).substr(dashes);
    if (name.empty() || name[0] == '-' || name[0] == '=') {
      return makeError("bad flag syntax: " + arg);
    }
    bool hasValue = false;
    std::string_view value;
    if (size_t eq = name.find('=', 1); eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasValue = true;
    }
    auto it = flags_.find(name);
    if (it == flags_.end()) {
      if (name == "h" || name == "help") {  // like Go: help unless defined otherwise
        helpRequested_ = true;
        return Ok{};
      }
      return makeError("flag provided but not defined: " + std::string(dashes, '-') +
                       std::string(name));
    }
    Flag& flag = it->second;
    const std::string display = "--" + it->first;
    lastBareBool.clear();
    if (flag.isBool) {
      if (!hasValue) {
        value = "true";
        lastBareBool = it->first;
      }
    } else if (!hasValue) {
      if (i + 1 >= args.size()) return makeError("flag " + display + ": needs a value");
      // As in Go, the next argument is the value even if it starts with '-'.
      value = args[++i];
    }
    if (Status st = flag.set(value); !st) {
      return makeError("flag " + display + ": " + st.error().message);
    }
    flag.given = true;
    if (flag.notImplemented) {
      bool seen = false;
      for (const auto& n : notImplementedGiven_) seen = seen || n == it->first;
      if (!seen) notImplementedGiven_.push_back(it->first);
    }
  }
  return Ok{};
}

std::vector<std::string> FlagSet::given() const {
  std::vector<std::string> out;
  for (const auto& [name, flag] : flags_) {
    if (flag.given) out.push_back(name);
  }
  return out;
}

bool FlagSet::isGiven(std::string_view name) const {
  auto it = flags_.find(name);
  return it != flags_.end() && it->second.given;
}

std::vector<FlagInfo> FlagSet::list() const {
  std::vector<FlagInfo> out;
  out.reserve(flags_.size());
  for (const auto& [name, flag] : flags_) {
    FlagInfo info;
    info.name = name;
    info.typeName = flag.isBool ? "bool" : flag.typeName;
    info.defaultText = flag.quoteDefault ? quoteText(flag.defaultText) : flag.defaultText;
    info.help = flag.help;
    info.implemented = !flag.notImplemented;
    out.push_back(std::move(info));
  }
  return out;
}

std::string FlagSet::usage() const {
  std::string out;
  for (const auto& [name, flag] : flags_) {
    std::string line = "  -" + name;
    if (!flag.typeName.empty()) line += " " + flag.typeName;
    // Go keeps a one-letter boolean's help on its line and indents the rest.
    line += line.size() <= 4 ? "\t" : "\n    \t";
    std::string help = flag.help;
    if (flag.defaultText != flag.zeroText) {
      help += " (default ";
      help += flag.quoteDefault ? quoteText(flag.defaultText) : flag.defaultText;
      help += ")";
    }
    if (flag.notImplemented) help += " (accepted for koordlet compatibility; not implemented)";
    for (char c : help) {
      line.push_back(c);
      if (c == '\n') line += "    \t";
    }
    out += line;
    out.push_back('\n');
  }
  return out;
}

}  // namespace koord
