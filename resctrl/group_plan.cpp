#include "resctrl/group_plan.h"

#include "base/text_scan.h"

namespace koord::resctrl {

Result<std::vector<int32_t>> parseTids(std::string_view content, const std::string& file) {
  std::vector<int32_t> out;
  text::Lines lines(content);
  std::string_view raw;
  bool terminated = false;
  int lineNo = 0;
  while (lines.next(raw, terminated)) {
    ++lineNo;
    const std::string_view field = text::trim(raw, " \t\r");
    if (field.empty()) continue;
    uint64_t v = 0;
    const char* why = text::toU64(field, v);
    // tid 0 is refused: written to a tasks file it means "the writing thread", which
    // would move the agent itself into the group.
    if (why == nullptr && (v == 0 || v > INT32_MAX)) why = "is not a valid tid";
    if (why != nullptr) {
      return makeError(text::cat(file, ":", std::to_string(lineNo), ": \"", field, "\" ", why));
    }
    out.push_back(static_cast<int32_t>(v));
  }
  return out;
}

}  // namespace koord::resctrl
