// CPU topology from sysfs (see the header). The reader is thin: it lists what
// to read, hands each file's text to a parser and prefixes errors with the path.
#include "metrics/cpu_topology.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <map>
#include <system_error>

#include "base/quote.h"
#include "base/read_file.h"
#include "base/text_scan.h"
#include "cgroupfs/cgroup_parsers.h"

namespace koord {
namespace {

using text::cat;

// One sysfs attribute's text without its final '\n' (optional, see the header).
std::string_view dropNewline(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

// "cpu12" -> 12, "node3" -> 3; anything else (cpufreq, cpuidle, has_cpu, ...) -> -1.
int numberedEntry(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return -1;
  const std::string_view digits = name.substr(prefix.size());
  uint64_t n = 0;
  if (text::toU64(digits, n) != nullptr || n > 65535) return -1;
  return static_cast<int>(n);
}

// The numbered entries (cpuN, nodeM) of a directory, ascending. ENOENT is
// returned as an error with sysErrno set, so callers can tell "absent".
Result<std::vector<int>> listNumbered(const std::string& dir, std::string_view prefix) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return makeError(cat(dir, ": ", ec.message()), ec.value());
  std::vector<int> ids;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const int id = numberedEntry(it->path().filename().string(), prefix);
    if (id >= 0) ids.push_back(id);
  }
  if (ec) return makeError(cat(dir, ": ", ec.message()), ec.value());
  std::sort(ids.begin(), ids.end());
  return ids;
}

template <typename T>
Result<T> readParsed(const std::string& path, Result<T> (*parse)(std::string_view)) {
  auto text = readFile(path);
  if (!text) return text.error();  // already names the path
  auto parsed = parse(*text);
  if (!parsed) return inFile(path, parsed.error());
  return parsed;
}

// CPU id -> NUMA node from devices/system/node/node*/cpulist; empty when the
// kernel has no node directory (CONFIG_NUMA off), so every CPU is on node 0.
Result<std::map<int, int>> readNumaNodes(const HostPaths& paths) {
  const std::string nodeRoot = paths.sys("devices/system/node");
  std::map<int, int> nodeOf;
  auto nodes = listNumbered(nodeRoot, "node");
  if (!nodes) {
    if (nodes.error().sysErrno == ENOENT) return nodeOf;
    return nodes.error();
  }
  for (const int node : *nodes) {
    auto cpus = readParsed(HostPaths::join(nodeRoot, cat("node", std::to_string(node), "/cpulist")),
                           parseSysfsCpuList);
    if (!cpus) return cpus.error();
    for (const int cpu : *cpus) nodeOf.emplace(cpu, node);
  }
  return nodeOf;
}

}  // namespace

std::vector<int> CpuTopology::ids() const {
  std::vector<int> out;
  out.reserve(cpus.size());
  for (const CpuInfo& c : cpus) out.push_back(c.id);
  return out;
}

Result<std::vector<int>> parseSysfsCpuList(std::string_view text) {
  // Trailing NUL bytes after the list are padding (a real capture of an arm64
  // node's node/nodeN/cpulist reads "0-31\n\0"), not part of it.
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  // parseCpuList wants the kernel's '\n'; give it back when the text lacks it.
  if (!text.empty() && text.back() != '\n') return parseCpuList(std::string(text) + '\n');
  return parseCpuList(text);
}

Result<int> parseSysfsId(std::string_view text) {
  const std::string_view s = dropNewline(text);
  int value = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (s.empty() || ec != std::errc() || ptr != end || value < -1) {
    return makeError(cat("id ", quoteText(s, 40), " is not an integer >= -1"));
  }
  return value;
}

Result<CpuTopology> readCpuTopology(const HostPaths& paths) {
  const std::string cpuRoot = paths.sys("devices/system/cpu");
  const std::string onlinePath = HostPaths::join(cpuRoot, "online");
  std::vector<int> online;
  if (auto text = readFile(onlinePath); text) {
    auto parsed = parseSysfsCpuList(*text);
    if (!parsed) return inFile(onlinePath, parsed.error());
    online = std::move(*parsed);
  } else if (text.error().sysErrno == ENOENT) {
    // Kernels without CPU hotplug have no online file: every cpuN is online.
    auto listed = listNumbered(cpuRoot, "cpu");
    if (!listed) return listed.error();
    online = std::move(*listed);
  } else {
    return text.error();
  }

  auto nodeOf = readNumaNodes(paths);
  if (!nodeOf) return nodeOf.error();

  CpuTopology topo;
  topo.cpus.reserve(online.size());
  for (const int id : online) {
    const std::string dir = HostPaths::join(cpuRoot, cat("cpu", std::to_string(id), "/topology"));
    const std::string corePath = dir + "/core_id";
    auto coreText = readFile(corePath);
    if (!coreText) {
      std::error_code ec;
      if (coreText.error().sysErrno == ENOENT && !std::filesystem::exists(dir, ec)) continue;
      return coreText.error();
    }
    auto core = parseSysfsId(*coreText);
    if (!core) return inFile(corePath, core.error());
    auto socket = readParsed(dir + "/physical_package_id", parseSysfsId);
    if (!socket) return socket.error();
    CpuInfo info;
    info.id = id;
    info.core = *core;
    info.socket = *socket;
    if (auto it = nodeOf->find(id); it != nodeOf->end()) info.node = it->second;
    topo.cpus.push_back(info);
  }
  if (topo.cpus.empty()) return makeError(cat(onlinePath, ": no online CPU has a topology"));
  // Offline CPUs whose topology is still readable: only lscpu's numbering of
  // cores and sockets (the node topology report) counts them. Unreadable ones are
  // skipped: an offline CPU is nobody's business.
  if (auto listed = listNumbered(cpuRoot, "cpu"); listed) {
    for (const int id : *listed) {
      if (std::binary_search(online.begin(), online.end(), id)) continue;
      const std::string dir = HostPaths::join(cpuRoot, cat("cpu", std::to_string(id), "/topology"));
      auto core = readParsed(dir + "/core_id", parseSysfsId);
      auto socket = readParsed(dir + "/physical_package_id", parseSysfsId);
      if (!core || !socket) continue;
      CpuInfo info{id, *core, *socket, 0};
      if (auto it = nodeOf->find(id); it != nodeOf->end()) info.node = it->second;
      topo.offline.push_back(info);
    }
  }
  return topo;
}

Result<CpuTopology> cpuTopologyFromIds(std::vector<int> ids) {
  if (ids.empty()) return makeError("no CPU listed");
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  CpuTopology topo;
  topo.placement = false;
  for (const int id : ids) topo.cpus.push_back(CpuInfo{id, id, 0, 0});
  return topo;
}

}  // namespace koord
