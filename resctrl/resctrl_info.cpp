#include "resctrl/resctrl_info.h"

#include <algorithm>
#include <cerrno>
#include <set>

#include "base/read_file.h"
#include "base/text_scan.h"

namespace koord::resctrl {
namespace {

// "key<blanks>: value" -> value when the line's key is `key`.
bool keyValue(std::string_view line, std::string_view key, std::string_view& value) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || text::trim(line.substr(0, colon)) != key) return false;
  value = line.substr(colon + 1);
  return true;
}

}  // namespace

CpuRdtFlags parseCpuInfoRdt(std::string_view cpuinfo) {
  CpuRdtFlags out;
  text::Lines lines(cpuinfo);
  std::string_view line;
  bool terminated = false;
  while (lines.next(line, terminated)) {
    std::string_view value;
    if (keyValue(line, "flags", value)) {
      text::Fields fields(value);
      for (std::string_view f = fields.next(); !f.empty(); f = fields.next()) {
        if (f == "cat_l3") out.catL3 = true;
        if (f == "mba") out.mba = true;
      }
    } else if (keyValue(line, "vendor_id", value) && text::trim(value) == "AuthenticAMD") {
      out.vendor = CpuVendor::kAmd;
    }
  }
  return out;
}

Result<uint64_t> parseCbmMask(std::string_view text, const std::string& file) {
  const std::string_view s = text::trim(text);
  if (s.empty()) return makeError(text::cat(file, ": empty cbm_mask"));
  if (s.size() > 16) return makeError(text::cat(file, ": cbm_mask \"", s, "\" is over 64 bits"));
  uint64_t v = 0;
  for (char c : s) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return makeError(text::cat(file, ": cbm_mask \"", s, "\" is not hex"));
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  if (v == 0 || (v & (v + 1)) != 0) {
    return makeError(
        text::cat(file, ": cbm_mask \"", s, "\" is not contiguous from bit 0 (2^k-1)"));
  }
  return v;
}

int cbmWays(uint64_t cbmMask) {
  int ways = 0;
  for (; cbmMask != 0; cbmMask >>= 1) ++ways;
  return ways;
}

Result<uint64_t> parseInfoNumber(std::string_view text, const std::string& file) {
  const std::string_view s = text::trim(text);
  uint64_t v = 0;
  if (const char* why = text::toU64(s, v)) {
    return makeError(text::cat(file, ": \"", s, "\" ", why));
  }
  return v;
}

Result<std::vector<SchemataResource>> parseSchemata(std::string_view content,
                                                    const std::string& file) {
  std::vector<SchemataResource> out;
  text::Lines lines(content);
  std::string_view raw;
  bool terminated = false;
  int lineNo = 0;
  while (lines.next(raw, terminated)) {
    ++lineNo;
    const std::string_view line = text::trim(raw);
    if (line.empty()) continue;
    auto bad = [&](std::string_view why) {
      return makeError(
          text::cat(file, ":", std::to_string(lineNo), ": ", why, " in \"", line, "\""));
    };
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return bad("no ':'");
    SchemataResource res;
    res.name = std::string(text::trim(line.substr(0, colon)));
    if (res.name.empty()) return bad("empty resource name");
    std::set<uint32_t> seen;
    text::Fields domains(line.substr(colon + 1), ";");
    for (std::string_view d = domains.next(); !d.empty(); d = domains.next()) {
      const size_t eq = d.find('=');
      if (eq == std::string_view::npos) return bad("domain without '='");
      uint64_t id = 0;
      if (text::toU64(text::trim(d.substr(0, eq)), id) != nullptr || id > UINT32_MAX) {
        return bad("cache id is not a number");
      }
      if (!seen.insert(static_cast<uint32_t>(id)).second) return bad("repeated cache id");
      const std::string_view value = text::trim(d.substr(eq + 1));
      if (value.empty()) return bad("empty value");
      res.domains.push_back({static_cast<uint32_t>(id), std::string(value)});
    }
    if (res.domains.empty()) return bad("no domains");
    out.push_back(std::move(res));
  }
  return out;
}

const SchemataResource* findResource(const std::vector<SchemataResource>& schemata,
                                     std::string_view name) {
  for (const auto& r : schemata) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

namespace {

// Reads and parses one info number; a missing file is an error (the directory existed).
Result<uint64_t> readInfoNumber(const std::string& path) {
  auto text = readFile(path);
  if (!text) return inFile(path, text.error());
  return parseInfoNumber(*text, path);
}

}  // namespace

Result<ResctrlInfo> readResctrlInfo(const HostPaths& paths) {
  ResctrlInfo info;
  const std::string schemataPath = paths.sysFs("resctrl/schemata");
  auto schemataText = readFile(schemataPath);
  if (!schemataText) return inFile(schemataPath, schemataText.error());
  auto schemata = parseSchemata(*schemataText, schemataPath);
  if (!schemata) return schemata.error();
  info.rootSchemata = std::move(*schemata);

  // L3: plain, else CDP (L3CODE carries the same cbm_mask as L3DATA).
  for (const char* dir : {"resctrl/info/L3", "resctrl/info/L3CODE"}) {
    const std::string maskPath = paths.sysFs(std::string(dir) + "/cbm_mask");
    auto maskText = readFile(maskPath);
    if (!maskText) {
      if (maskText.error().sysErrno == ENOENT) continue;
      return inFile(maskPath, maskText.error());
    }
    auto mask = parseCbmMask(*maskText, maskPath);
    if (!mask) return mask.error();
    auto minBits = readInfoNumber(paths.sysFs(std::string(dir) + "/min_cbm_bits"));
    if (!minBits) return minBits.error();
    L3Info l3;
    l3.cbmMask = *mask;
    l3.ways = cbmWays(*mask);
    l3.minCbmBits = *minBits;
    l3.cdp = std::string_view(dir).ends_with("L3CODE");
    info.l3 = l3;
    break;
  }

  const std::string granPath = paths.sysFs("resctrl/info/MB/bandwidth_gran");
  auto granText = readFile(granPath);
  if (granText) {
    auto gran = parseInfoNumber(*granText, granPath);
    if (!gran) return gran.error();
    if (*gran == 0) return makeError(granPath + ": bandwidth_gran is 0");
    auto minBw = readInfoNumber(paths.sysFs("resctrl/info/MB/min_bandwidth"));
    if (!minBw) return minBw.error();
    MbInfo mb;
    mb.bandwidthGran = *gran;
    mb.minBandwidth = *minBw;
    if (const SchemataResource* root = findResource(info.rootSchemata, "MB")) {
      for (const auto& d : root->domains) {
        uint64_t v = 0;
        if (text::toU64(d.value, v) == nullptr) mb.rootMaxValue = std::max(mb.rootMaxValue, v);
      }
    }
    info.mb = mb;
  } else if (granText.error().sysErrno != ENOENT) {
    return inFile(granPath, granText.error());
  }
  return info;
}

}  // namespace koord::resctrl
