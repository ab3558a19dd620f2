#include "metrics/node_hardware.h"

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <set>

#include "base/read_file.h"
#include "base/text_scan.h"

namespace koord {
namespace {

// The first value of `key` in "key<tabs>: value" lines.
bool findField(std::string_view text, std::string_view key, std::string* out) {
  text::Lines lines(text);
  std::string_view line;
  bool terminated = false;
  while (lines.next(line, terminated)) {
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && text::trim(line.substr(0, colon)) == key) {
      *out = std::string(text::trim(line.substr(colon + 1)));
      return true;
    }
  }
  return false;
}

std::string firstLine(const std::string& path) {
  auto text = readFile(path, 4096);
  if (!text) return "";
  return std::string(text::trim(*text));
}

}  // namespace

CpuInfoText parseCpuInfo(std::string_view text) {
  CpuInfoText out;
  if (!findField(text, "model name", &out.model)) findField(text, "Model Name", &out.model);
  findField(text, "vendor_id", &out.vendorId);
  return out;
}

Result<int64_t> parseNodeMemTotal(std::string_view text) {
  text::Lines lines(text);
  std::string_view line;
  bool terminated = false;
  while (lines.next(line, terminated)) {
    const size_t key = line.find("MemTotal:");
    if (key == std::string_view::npos) continue;
    const std::string_view rest = text::trim(line.substr(key + 9));
    text::Fields fields(rest);
    const std::string_view number = fields.next();
    const std::string_view unit = fields.next();
    uint64_t kb = 0;
    if (text::toU64(number, kb) != nullptr || unit != "kB" || !fields.next().empty()) {
      return makeError("MemTotal: cannot parse \"" + std::string(rest) + "\" (want \"<n> kB\")");
    }
    if (kb > static_cast<uint64_t>(INT64_MAX) / 1024) {
      return makeError("MemTotal: " + std::string(rest) + " overflows");
    }
    return static_cast<int64_t>(kb) * 1024;
  }
  return makeError("no MemTotal line");
}

CpuBasicInfo readCpuBasicInfo(const HostPaths& paths, const CpuTopology& topo) {
  CpuBasicInfo out;
  // koordlet's value for a model or vendor it cannot find (arm64 names neither).
  out.cpuModel = out.vendorId = "unknown";
  if (auto text = readFile(paths.proc("cpuinfo"), 4u << 20)) {
    CpuInfoText info = parseCpuInfo(*text);
    if (!info.model.empty()) out.cpuModel = std::move(info.model);
    if (!info.vendorId.empty()) out.vendorId = std::move(info.vendorId);
  }
  const std::string smt = firstLine(paths.sys("devices/system/cpu/smt/active"));
  if (!smt.empty()) {
    out.hyperThreadEnabled = smt == "1";
  } else if (topo.placement) {
    std::set<std::pair<int, int>> cores;
    for (const CpuInfo& c : topo.cpus) cores.insert({c.socket, c.core});
    out.hyperThreadEnabled = cores.size() < topo.cpus.size();
  }
  out.turboEnabled = firstLine(paths.sys("devices/system/cpu/intel_pstate/no_turbo")) == "0";
  out.catL3CbmMask = firstLine(paths.sysFs("resctrl/info/L3/cbm_mask"));
  return out;
}

Result<std::map<int, int64_t>> readNumaMemory(const HostPaths& paths) {
  std::map<int, int64_t> out;
  const std::string dir = paths.sys("devices/system/node");
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return out;  // no NUMA sysfs: the caller uses /proc/meminfo
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= 4 || name.compare(0, 4, "node") != 0) continue;
    int id = 0;
    auto [p, perr] = std::from_chars(name.data() + 4, name.data() + name.size(), id);
    if (perr != std::errc() || p != name.data() + name.size()) continue;
    const std::string file = entry.path().string() + "/meminfo";
    auto text = readFile(file);
    if (!text) continue;  // a node directory without meminfo: no memory info there
    auto bytes = parseNodeMemTotal(*text);
    if (!bytes) return makeError(file + ": " + bytes.error().message);
    out[id] = *bytes;
  }
  return out;
}

}  // namespace koord
