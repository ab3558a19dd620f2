// The agent's side of host applications (qos/host_apps.h, metrics/
// host_app_collector.h): which apps (the NodeSLO in force), their usage into the
// cache and /metrics, and what NodeMetric reports of them.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include "agent/agent.h"
#include "qos/host_apps.h"

namespace koord {

void Agent::collectHostApps() {
  const auto& apps = config_.current().hostApplications;
  hostAppCpuCores_ = 0;
  hostAppMemoryBytes_ = 0;
  if (!hostApps_) hostApps_ = std::make_unique<HostAppCollector>(opts_.paths.cgroupRoot, *layout_);
  std::vector<HostAppTarget> targets;
  targets.reserve(apps.size());
  std::vector<Error> refused;
  for (const HostApplication& app : apps) {
    std::string dir = hostAppCgroupDir(app, *layout_);
    if (dir.empty()) {
      refused.push_back(makeError("host application " + app.name +
                                  ": its cgroup would be a kubepods QoS dir or above kubepods "
                                  "(every pod's usage, not the app's); not read, not written"));
      continue;
    }
    targets.push_back({app.name, std::move(dir)});
  }
  const auto begin = clock_->now();
  auto out = hostApps_->collect(targets, begin);
  for (Error& e : refused) out.errors.push_back(std::move(e));
  exporter_.recordCollector("host_application",
                            std::chrono::duration<double>(clock_->now() - begin).count(),
                            out.errors.size());

  std::set<std::string> owners;
  std::vector<HostAppUsageRow> rows;
  for (const HostAppUsage& u : out.apps) {
    const std::string owner = HostAppCollector::owner(u.name);
    owners.insert(owner);
    cache_.append(MetricKind::kHostAppMemoryBytes, owner, "", begin, u.memoryBytes);
    cache_.append(MetricKind::kHostAppMemoryWithPageCacheBytes, owner, "", begin,
                  u.memoryWithPageCacheBytes);
    hostAppMemoryBytes_ += u.memoryBytes;
    if (!u.cpuCores) continue;  // the first read of an app: no rate yet
    cache_.append(MetricKind::kHostAppCpuCores, owner, "", begin, *u.cpuCores);
    hostAppCpuCores_ += *u.cpuCores;
    const auto app = std::find_if(apps.begin(), apps.end(),
                                  [&](const HostApplication& a) { return a.name == u.name; });
    rows.push_back({u.name, app->priorityText, app->qosText, *u.cpuCores, u.memoryBytes});
  }
  exporter_.recordHostApps(rows);
  if (owners != hostAppOwners_) {
    hostAppOwners_ = std::move(owners);
    ++hostAppOwnersVersion_;
  }

  // One streak per app: an app whose cgroup is missing says so once (the NodeSLO
  // names a cgroup this node does not have), then a count, then a recovery line.
  std::set<std::string> failing;
  for (const Error& e : out.errors) {
    const std::string key = "host application " + failureKey(e.message);
    failures_.failure(key, Severity::kWarning,
                      "host application not read (left out of NodeMetric): " + e.message);
    failing.insert(key);
  }
  for (const auto& key : hostAppFailing_) {
    if (!failing.contains(key)) failures_.success(key);
  }
  hostAppFailing_ = std::move(failing);
}

std::vector<HostAppInfo> Agent::hostAppInfos() const {
  std::vector<HostAppInfo> out;
  for (const HostApplication& a : config_.current().hostApplications) {
    out.push_back({a.name, a.priorityText, a.qosText});
  }
  return out;
}

}  // namespace koord
