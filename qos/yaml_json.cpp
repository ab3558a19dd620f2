// The YAML subset and strict JSON readers (see the header).
#include "qos/yaml_json.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

namespace koord {

namespace {

using json = nlohmann::json;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

struct ConvertError {
  std::string message;
};

std::string position(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return file + ": ";
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": ";
}

// yaml-cpp 0.7's LoadAll never returns on a stream where a document begins with a
// token no node begins with (a ',' at block level: yaml-cpp issue #1040, fixed in
// 0.8 by PR #1319): the parser reports an empty document at the same place again
// and again, and LoadAll keeps every one, until memory runs out. The fuzzer found
// it with ",#". A stream holds at most one document more than it has "---" and
// "..." markers, so a first pass that counts documents (building nothing) and
// stops past that many tells the runaway apart before LoadAll is called.
size_t maxDocuments(std::string_view text) {
  size_t markers = 0;
  for (size_t at = 0; at < text.size();) {
    const std::string_view line = text.substr(at, text.find('\n', at) - at);
    if (line.starts_with("---") || line.starts_with("...")) ++markers;
    at += line.size() + 1;
  }
  return markers + 1;
}

struct RunawayDocuments {
  YAML::Mark mark;
};

class DocumentCounter : public YAML::EventHandler {
 public:
  explicit DocumentCounter(size_t limit) : limit_(limit) {}
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > limit_) throw RunawayDocuments{mark};
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  size_t limit_;
  size_t documents_ = 0;
};

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
  uint64_t limit =
      negative ? static_cast<uint64_t>(kInt64Max) + 1 : static_cast<uint64_t>(kInt64Max);
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
    if (++values_ > kMaxJsonValues) {
      throw ConvertError{position(file_, n.Mark()) + "more than " + std::to_string(kMaxJsonValues) +
                         " values (YAML aliases expanding?)"};
    }
    if (depth > kMaxJsonDepth) {
      throw ConvertError{position(file_, n.Mark()) + "nested deeper than " +
                         std::to_string(kMaxJsonDepth) + " levels"};
    }
    if (depth <= 2) {
      const YAML::Mark m = n.Mark();
      marks_[pointer] = TextMark{m.pos, m.line, m.column};
    }
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

  // Where each node at depth <= 2 started, by "/key/key" path.
  std::map<std::string, TextMark> takeMarks() { return std::move(marks_); }

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
  std::map<std::string, TextMark> marks_;
};

}  // namespace

TextMark YamlDocument::markOf(const std::string& pointer) const {
  auto it = marks.find(pointer);
  return it == marks.end() ? TextMark{} : it->second;
}

Result<YamlDocument> parseYaml(std::string_view text, const std::string& file) {
  YamlToJson yaml(file);
  YamlDocument out;
  try {
    const std::string whole(text);
    {
      std::istringstream in(whole);
      YAML::Parser parser(in);
      DocumentCounter counter(maxDocuments(text));
      while (parser.HandleNextDocument(counter)) {
      }
    }
    std::vector<YAML::Node> docs = YAML::LoadAll(whole);
    std::vector<const YAML::Node*> present;
    for (const auto& d : docs) {
      if (!d.IsNull()) present.push_back(&d);
    }
    out.documents = present.size();
    if (present.size() == 1) out.value = yaml.convert(*present[0]);
  } catch (const RunawayDocuments& e) {
    return makeError(position(file, e.mark) +
                     "invalid YAML: no node can begin here (a document that begins with ',')");
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp 0.7 gives this one the message "bad file".
    return makeError(position(file, e.mark) + "invalid YAML: nested too deeply");
  } catch (const YAML::Exception& e) {
    return makeError(position(file, e.mark) + "invalid YAML: " + e.msg);
  } catch (const ConvertError& e) {
    return makeError(e.message);
  }
  out.marks = yaml.takeMarks();
  return out;
}

JsonText parseStrictJson(const std::string& text) {
  JsonText out;
  bool tooDeep = false;
  json::parser_callback_t cb = [&tooDeep](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) {
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
  if (tooDeep) out.error = "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  return out;
}

std::string positionInScalar(std::string_view text, const TextMark& mark, const std::string& value,
                             size_t line, size_t column) {
  // pos -1: not recorded (yaml-cpp's null mark).
  if (mark.pos < 0 || static_cast<size_t>(mark.pos) >= text.size()) return "";
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

}  // namespace koord
