// The text of a JSON quantity (see the header).
#include "kube/json_quantity.h"

#include <string_view>

namespace koord {

namespace {

// Go's strings.TrimSpace, ASCII part.
std::string_view trimSpace(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\v\f\r";
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

}  // namespace

std::optional<std::string> jsonQuantityText(const nlohmann::json& v) {
  if (v.is_string()) return std::string(trimSpace(v.get_ref<const std::string&>()));
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return v.dump();
  return std::nullopt;
}

}  // namespace koord
