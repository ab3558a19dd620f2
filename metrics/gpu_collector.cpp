#include "metrics/gpu_collector.h"

#include <climits>
#include <cstdlib>

#include "base/host_paths.h"
#include "base/read_file.h"

namespace koord {
namespace {

bool isHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// "cri-containerd-<id>.scope", "docker-<id>.scope", "crio-<id>.scope" or "<id>".
std::string containerIdOf(std::string_view segment) {
  if (segment.ends_with(".scope")) segment.remove_suffix(6);
  if (const auto dash = segment.rfind('-'); dash != std::string_view::npos) {
    segment.remove_prefix(dash + 1);
  }
  return isHex64(segment) ? std::string(segment) : std::string();
}

// "pod<uid>" or "kubepods-<class>-pod<uid_underscores>.slice" -> the uid with dashes.
std::string podUidOf(std::string_view segment) {
  if (segment.ends_with(".slice")) segment.remove_suffix(6);
  const auto at = segment.rfind("pod");
  if (at == std::string_view::npos) return "";
  if (at != 0 && segment[at - 1] != '-') return "";
  std::string uid(segment.substr(at + 3));
  for (char& c : uid) {
    if (c == '_') c = '-';
  }
  // A kube pod uid: 36 characters of hex and dashes.
  if (uid.size() != 36) return "";
  for (char c : uid) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return "";
  }
  return uid;
}

// Calls fn with each non-empty '/'-separated segment of `path` until it returns true.
template <typename Fn>
void forEachSegment(std::string_view path, Fn fn) {
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    const std::string_view seg = path.substr(i, j - i);
    i = j + 1;
    if (!seg.empty() && fn(seg)) return;
  }
}

}  // namespace

std::optional<ProcessOwner> parseProcessOwner(std::string_view procCgroup) {
  // Each line "<id>:<controllers>:<path>"; the first path under kubepods decides
  // (all of a process's hierarchies agree on it).
  size_t start = 0;
  while (start < procCgroup.size()) {
    size_t end = procCgroup.find('\n', start);
    if (end == std::string_view::npos) end = procCgroup.size();
    std::string_view line = procCgroup.substr(start, end - start);
    start = end + 1;
    const auto c1 = line.find(':');
    const auto c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::string_view path = line.substr(c2 + 1);
    if (path.find("kubepods") == std::string_view::npos) continue;
    ProcessOwner owner;
    forEachSegment(path, [&](std::string_view seg) {
      if (owner.podUid.empty()) {
        owner.podUid = podUidOf(seg);
      } else {
        owner.containerId = containerIdOf(seg);
      }
      return !owner.containerId.empty();
    });
    if (!owner.podUid.empty()) return owner;
  }
  return std::nullopt;
}

std::string pcieRootOf(std::string_view resolvedPath) {
  // A path segment "pci" + 4 hex + ":" + 2 hex.
  auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  };
  std::string root;
  forEachSegment(resolvedPath, [&](std::string_view seg) {
    if (seg.size() == 10 && seg.starts_with("pci") && hex(seg[3]) && hex(seg[4]) && hex(seg[5]) &&
        hex(seg[6]) && seg[7] == ':' && hex(seg[8]) && hex(seg[9])) {
      root = seg;
    }
    return !root.empty();
  });
  return root;
}

GpuCollector::GpuCollector(std::unique_ptr<GpuLibrary> library, std::string procRoot,
                           std::string sysRoot)
    : library_(std::move(library)), procRoot_(std::move(procRoot)), sysRoot_(std::move(sysRoot)) {}

Status GpuCollector::start() {
  inventory_.clear();
  auto system = library_->system();
  if (!system) return system.error();
  auto devices = library_->devices();
  if (!devices) return devices.error();
  system_ = *system;
  for (GpuDeviceInfo& d : *devices) {
    GpuInventory g;
    g.place = readGpuPlace(sysRoot_, d.busId);
    if (!d.busId.empty() && d.busId.find('/') == std::string::npos) {
      const std::string link = HostPaths::join(sysRoot_, "bus/pci/devices/" + d.busId);
      if (char* real = ::realpath(link.c_str(), nullptr)) {
        g.pcieId = pcieRootOf(real);
        std::free(real);
      }
    }
    g.info = std::move(d);
    inventory_.push_back(std::move(g));
  }
  return Ok{};
}

std::vector<unsigned> GpuCollector::markUnhealthy(const std::string& uuid, const std::string& why) {
  std::vector<unsigned> marked;
  for (GpuInventory& g : inventory_) {
    if (!uuid.empty() && g.info.uuid != uuid) continue;
    if (!g.info.healthy) continue;  // the first reason stays
    g.info.healthy = false;
    g.info.unhealthyReason = why;
    marked.push_back(g.info.minor);
  }
  return marked;
}

std::optional<ProcessOwner> GpuCollector::ownerOf(int pid) {
  auto text = readFile(HostPaths::join(procRoot_, std::to_string(pid) + "/cgroup"), 64 * 1024);
  if (!text) return std::nullopt;  // gone since the driver listed it
  return parseProcessOwner(*text);
}

GpuRound GpuCollector::collect(uint64_t nowMicros) {
  GpuRound round;
  for (const GpuInventory& g : inventory_) {
    auto usage = library_->usage(g.info.index, lastMicros_);
    if (!usage) {
      round.errors.push_back("GPU " + std::to_string(g.info.minor) + " (" + g.info.uuid +
                             "): " + usage.error().message);
      continue;
    }
    const unsigned minor = g.info.minor;
    round.node[minor] = GpuUse{static_cast<double>(usage->coreUtil), usage->memoryUsed};
    for (const GpuProcessUsage& p : usage->processes) {
      const auto owner = ownerOf(p.pid);
      if (!owner) continue;
      const double core = p.smUtil ? static_cast<double>(*p.smUtil) : 0.0;
      GpuUse& pod = round.pods[owner->podUid][minor];
      pod.core += core;
      pod.memory += p.memoryUsed;
      if (!owner->containerId.empty()) {
        GpuUse& c = round.containers[owner->containerId][minor];
        c.core += core;
        c.memory += p.memoryUsed;
      }
    }
  }
  lastMicros_ = nowMicros;
  return round;
}

}  // namespace koord
