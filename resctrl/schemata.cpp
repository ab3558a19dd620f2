#include "resctrl/schemata.h"

#include <algorithm>
#include <cstdio>

#include "base/text_scan.h"

namespace koord::resctrl {
namespace {

// ceil(ways * percent / 100) in integers; ways <= 64, percent <= 100.
int64_t ceilWays(int ways, int64_t percent) { return (ways * percent + 99) / 100; }

std::string hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string line(const std::string& name, const SchemataResource& ids, const std::string& value) {
  std::string out = name + ":";
  for (size_t i = 0; i < ids.domains.size(); ++i) {
    if (i > 0) out += ';';
    out += std::to_string(ids.domains[i].id) + "=" + value;
  }
  return out;
}

}  // namespace

Result<uint64_t> l3Mask(int ways, uint64_t minCbmBits, int64_t startPercent, int64_t endPercent) {
  if (ways <= 0 || ways > 64) return makeError("cbm_mask has " + std::to_string(ways) + " ways");
  if (startPercent < 0 || endPercent > 100 || startPercent >= endPercent) {
    return makeError(text::cat("invalid cat range ", std::to_string(startPercent), "-",
                               std::to_string(endPercent), "%: need 0 <= start < end <= 100"));
  }
  if (minCbmBits > static_cast<uint64_t>(ways)) {
    return makeError(text::cat("min_cbm_bits ", std::to_string(minCbmBits), " exceeds ",
                               std::to_string(ways), " ways"));
  }
  int64_t startWay = ceilWays(ways, startPercent);
  int64_t endWay = ceilWays(ways, endPercent);
  if (startWay >= endWay) {
    return makeError(text::cat("cat range ", std::to_string(startPercent), "-",
                               std::to_string(endPercent), "% of ", std::to_string(ways),
                               " ways is empty"));
  }
  const auto minWays = static_cast<int64_t>(minCbmBits);
  if (endWay - startWay < minWays) {
    endWay = std::min<int64_t>(ways, startWay + minWays);
    startWay = endWay - minWays;
  }
  const uint64_t top = endWay == 64 ? ~uint64_t{0} : (uint64_t{1} << endWay) - 1;
  const uint64_t below = (uint64_t{1} << startWay) - 1;
  return top & ~below;
}

Result<uint64_t> mbValue(const MbInfo& mb, CpuVendor vendor, int64_t percent) {
  if (percent < 1 || percent > 100) {
    return makeError("invalid mbaPercent " + std::to_string(percent) + ": need 1..100");
  }
  const auto pct = static_cast<uint64_t>(percent);
  if (vendor == CpuVendor::kAmd) return pct == 100 ? uint64_t{2048} : 160 * pct / 100;
  const uint64_t gran = std::max<uint64_t>(mb.bandwidthGran, 1);
  uint64_t v = (pct + gran - 1) / gran * gran;
  v = std::max(v, mb.minBandwidth);
  return std::min<uint64_t>(v, 100);
}

Result<std::vector<std::string>> groupSchemata(const ResctrlInfo& info, CpuVendor vendor,
                                               const ClassShare& qos) {
  std::vector<std::string> out;
  if (info.l3) {
    auto mask = l3Mask(info.l3->ways, info.l3->minCbmBits, qos.catRangeStartPercent,
                       qos.catRangeEndPercent);
    if (!mask) return mask.error();
    const std::vector<std::string> names = info.l3->cdp
                                               ? std::vector<std::string>{"L3CODE", "L3DATA"}
                                               : std::vector<std::string>{"L3"};
    for (const auto& name : names) {
      const SchemataResource* ids = findResource(info.rootSchemata, name);
      if (ids == nullptr) return makeError("root schemata has no " + name + " line");
      out.push_back(line(name, *ids, hex(*mask)));
    }
  }
  const bool mbpsMode = vendor == CpuVendor::kIntel && info.mb && info.mb->rootMaxValue > 100;
  if (info.mb && !mbpsMode) {
    auto value = mbValue(*info.mb, vendor, qos.mbaPercent);
    if (!value) return value.error();
    const SchemataResource* ids = findResource(info.rootSchemata, "MB");
    if (ids == nullptr) return makeError("root schemata has no MB line");
    out.push_back(line("MB", *ids, std::to_string(*value)));
  }
  return out;
}

}  // namespace koord::resctrl
