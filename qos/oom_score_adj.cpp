// The OOMScoreAdj hook's rule (see the header).
#include "qos/oom_score_adj.h"

#include <charconv>
#include <vector>

#include <nlohmann/json.hpp>

namespace koord {
namespace {

Result<int64_t> inRange(int64_t v, const char* annotation) {
  if (v < kOomScoreAdjMin || v > kOomScoreAdjMax) {
    return Error{std::string("annotation ") + annotation + ": " + std::to_string(v) +
                 " is outside [-1000, 1000]"};
  }
  return v;
}

}  // namespace

Result<std::optional<int64_t>> oomScoreAdjFor(const std::map<std::string, std::string>& annotations,
                                              std::string_view container) {
  auto spec = annotations.find(kOomScoreAdjSpecAnnotation);
  if (spec != annotations.end() && !spec->second.empty()) {
    const nlohmann::json j = nlohmann::json::parse(spec->second, nullptr, false);
    if (!j.is_object()) {
      return Error{std::string("annotation ") + kOomScoreAdjSpecAnnotation +
                   ": not a JSON object of container name to integer"};
    }
    auto it = j.find(std::string(container));
    for (auto e = j.begin(); e != j.end(); ++e) {
      if (!e->is_number_integer()) {
        return Error{std::string("annotation ") + kOomScoreAdjSpecAnnotation + ": \"" + e.key() +
                     "\": " + e->dump() + " is not an integer"};
      }
    }
    if (it != j.end()) {
      auto v = inRange(it->get<int64_t>(), kOomScoreAdjSpecAnnotation);
      if (!v) return v.error();
      return std::optional<int64_t>(*v);
    }
  }
  auto pod = annotations.find(kOomScoreAdjAnnotation);
  if (pod == annotations.end() || pod->second.empty()) return std::optional<int64_t>();
  const std::string& text = pod->second;
  int64_t v = 0;
  const char* begin = text.data();
  if (!text.empty() && text.front() == '+') ++begin;
  auto [end, ec] = std::from_chars(begin, text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || begin == text.data() + text.size()) {
    return Error{std::string("annotation ") + kOomScoreAdjAnnotation + ": \"" + text +
                 "\" is not an integer"};
  }
  auto r = inRange(v, kOomScoreAdjAnnotation);
  if (!r) return r.error();
  return std::optional<int64_t>(*r);
}

}  // namespace koord
