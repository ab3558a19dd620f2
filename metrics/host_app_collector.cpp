#include "metrics/host_app_collector.h"

#include <array>
#include <span>
#include <string_view>
#include <unordered_set>

#include "base/read_file.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/cgroup_parsers.h"

namespace koord {

namespace {

constexpr std::string_view kV1Memory[] = {"total_inactive_anon", "total_active_anon",
                                          "total_unevictable"};
constexpr std::string_view kV2Memory[] = {"inactive_anon", "active_anon", "unevictable"};
constexpr std::string_view kV2Usage[] = {"usage_usec"};

}  // namespace

HostAppCollector::Outcome HostAppCollector::collect(const std::vector<HostAppTarget>& targets,
                                                    Clock::Monotonic now) {
  Outcome out;
  const bool v2 = layout_.version() == CgroupVersion::kV2;
  std::unordered_set<std::string_view> listed;
  for (const HostAppTarget& t : targets) {
    listed.insert(t.name);
    auto fail = [&](const std::string& path, const Error& e) {
      out.errors.push_back(inFile(path, e));
      last_.erase(t.name);
    };
    // CPU counter.
    const std::string usagePath = cgroupFilePath(layout_, root_, t.dir, CgroupFile::kCpuUsage);
    if (auto st = readFileInto(usagePath, buf_); !st) {
      fail(usagePath, st.error());
      continue;
    }
    uint64_t usageNs = 0;
    if (v2) {
      std::array<std::optional<uint64_t>, 1> v;
      if (auto st = pickFlatKeyed(buf_, kV2Usage, v); !st) {
        fail(usagePath, st.error());
        continue;
      }
      usageNs = *v[0] * 1000;
    } else {
      auto n = parseSingleUint(buf_);
      if (!n) {
        fail(usagePath, n.error());
        continue;
      }
      usageNs = *n;
    }
    // Memory without page cache.
    const std::string statPath = cgroupFilePath(layout_, root_, t.dir, CgroupFile::kMemoryStat);
    if (auto st = readFileInto(statPath, buf_); !st) {
      fail(statPath, st.error());
      continue;
    }
    std::array<std::optional<uint64_t>, 3> mem;
    if (auto st = pickFlatKeyed(buf_, v2 ? std::span(kV2Memory) : std::span(kV1Memory), mem); !st) {
      fail(statPath, st.error());
      continue;
    }
    // With page cache.
    const std::string usageFile = cgroupFilePath(layout_, root_, t.dir, CgroupFile::kMemoryUsage);
    if (auto st = readFileInto(usageFile, buf_); !st) {
      fail(usageFile, st.error());
      continue;
    }
    auto withCache = parseSingleUint(buf_);
    if (!withCache) {
      fail(usageFile, withCache.error());
      continue;
    }

    HostAppUsage u;
    u.name = t.name;
    u.memoryBytes = static_cast<double>(*mem[0] + *mem[1] + *mem[2]);
    u.memoryWithPageCacheBytes = static_cast<double>(*withCache);
    auto it = last_.find(t.name);
    if (it != last_.end() && it->second.dir == t.dir && now > it->second.at &&
        usageNs >= it->second.usageNs) {
      const double seconds = std::chrono::duration<double>(now - it->second.at).count();
      u.cpuCores = static_cast<double>(usageNs - it->second.usageNs) / 1e9 / seconds;
    }
    last_[t.name] = Last{t.dir, usageNs, now};
    out.apps.push_back(std::move(u));
  }
  std::erase_if(last_, [&](const auto& kv) { return !listed.contains(kv.first); });
  return out;
}

}  // namespace koord
