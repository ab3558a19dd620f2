#include "metrics/node_hardware.h"

#include <charconv>
#include <filesystem>
#include <set>

#include "base/read_file.h"

namespace koord {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// The first value of `key` in "key<tabs>: value" lines.
bool findField(std::string_view text, std::string_view key, std::string* out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (trim(line.substr(0, colon)) == key) {
      *out = std::string(trim(line.substr(colon + 1)));
      return true;
    }
  }
  return false;
}

std::string firstLine(const std::string& path) {
  auto text = readFile(path, 4096);
  if (!text) return "";
  return std::string(trim(*text));
}

}  // namespace

CpuInfoText parseCpuInfo(std::string_view text) {
  CpuInfoText out;
  if (!findField(text, "model name", &out.model)) findField(text, "Model Name", &out.model);
  findField(text, "vendor_id", &out.vendorId);
  return out;
}

Result<int64_t> parseNodeMemTotal(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t key = line.find("MemTotal:");
    if (key == std::string_view::npos) continue;
    std::string_view rest = trim(line.substr(key + 9));
    int64_t kb = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kb);
    if (ec != std::errc() || kb < 0 ||
        trim(std::string_view(p, rest.data() + rest.size() - p)) != "kB") {
      return makeError("MemTotal: cannot parse \"" + std::string(rest) + "\" (want \"<n> kB\")");
    }
    if (kb > INT64_MAX / 1024) return makeError("MemTotal: " + std::string(rest) + " overflows");
    return kb * 1024;
  }
  return makeError("no MemTotal line");
}

CpuBasicInfo readCpuBasicInfo(const HostPaths& paths, const CpuTopology& topo) {
  CpuBasicInfo out;
  if (auto text = readFile(paths.proc("cpuinfo"), 4u << 20)) {
    CpuInfoText info = parseCpuInfo(*text);
    out.cpuModel = std::move(info.model);
    out.vendorId = std::move(info.vendorId);
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
