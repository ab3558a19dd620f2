#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "qos/host_app_cpuset.h"
#include "qos/host_apps.h"
#include "qos/slo_config.h"

namespace test_qos_host_apps {  // this file's own names: tests build as unity chunks

using namespace koord;
using json = nlohmann::json;

namespace {

std::string all(const std::vector<std::string>& notes) {
  std::string s;
  for (const auto& n : notes) s += n + "\n";
  return s;
}

}  // namespace

TEST_CASE("host applications parse with their classes and cgroup path") {
  std::vector<std::string> notes;
  const auto apps = parseHostApplications(json::parse(R"([
    {"name": "nginx", "priority": "koord-prod", "qos": "LS"},
    {"name": "db", "priority": "koord-mid", "qos": "LSR",
     "cgroupPath": {"base": "KubepodsBesteffort", "parentDir": "host/", "relativePath": "db"},
     "strategy": {}}
  ])"),
                                          notes);
  INFO(all(notes));
  REQUIRE(apps.size() == 2);
  CHECK(notes.empty());
  CHECK(apps[0].name == "nginx");
  CHECK(apps[0].priority == PriorityClass::kProd);
  CHECK(apps[0].qos == KoordQos::kLS);
  CHECK_FALSE(apps[0].hasCgroupPath);
  CHECK(apps[1].base == HostAppBase::kKubepodsBesteffort);
  CHECK(apps[1].priorityText == "koord-mid");
}

TEST_CASE("a bad host application entry is named and skipped, the others kept") {
  std::vector<std::string> notes;
  const auto apps = parseHostApplications(json::parse(R"([
    {"name": "ok"},
    {"priority": "koord-prod"},
    {"name": "x", "qos": "GOLD"},
    {"name": "y", "priority": "high"},
    {"name": "z", "cgroupPath": {"parentDir": "../etc"}},
    {"name": "w", "cgroupPath": {"relativePath": "/abs"}},
    {"name": "v", "cgroupPath": {"base": "Kubepods"}},
    {"name": "a/b"},
    {"name": "ok"},
    {"name": "u", "cgroupPath": "root"},
    {"name": "t", "cgroupPath": {"base": "Elsewhere", "relativePath": "t"}},
    7
  ])"),
                                          notes);
  const std::string n = all(notes);
  INFO(n);
  REQUIRE(apps.size() == 2);  // "ok" and "t" (read as CgroupRoot)
  CHECK(apps[1].name == "t");
  CHECK(apps[1].base == HostAppBase::kCgroupRoot);
  for (const char* want : {
           "spec.hostApplications[1]: name: missing; skipped, the others kept",
           "spec.hostApplications[2] (name \"x\"): qos: want LSE, LSR, LS, BE, SYSTEM or \"\", "
           "got \"GOLD\"",
           "spec.hostApplications[3] (name \"y\"): priority: want koord-prod",
           "spec.hostApplications[4] (name \"z\"): cgroupPath.parentDir: must stay under its base",
           "spec.hostApplications[5] (name \"w\"): cgroupPath.relativePath: must be relative",
           "spec.hostApplications[6] (name \"v\"): cgroupPath: names its base itself (Kubepods)",
           "spec.hostApplications[7] (name \"a/b\"): name: must be one path component",
           "spec.hostApplications[8] (name \"ok\"): name repeats an earlier entry",
           "spec.hostApplications[9] (name \"u\"): cgroupPath: expected an object, got string",
           "spec.hostApplications[10] (name \"t\"): cgroupPath.base \"Elsewhere\" is not",
           "spec.hostApplications[11]: expected an object, got number",
       }) {
    CHECK(n.find(want) != std::string::npos);
  }
}

TEST_CASE("a host application's cgroup follows koordlet's rules on every layout") {
  const CgroupLayout v1fs(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  const CgroupLayout v2sd(CgroupVersion::kV2, CgroupDriver::kSystemd);
  HostApplication a;
  a.name = "nginx";
  a.qos = KoordQos::kLSR;
  CHECK(hostAppCgroupDir(a, v1fs) == "host-latency-sensitive/nginx");
  a.qos = KoordQos::kBE;
  CHECK(hostAppCgroupDir(a, v2sd) == "host-best-effort/nginx");
  a.qos = KoordQos::kSystem;
  CHECK(hostAppCgroupDir(a, v1fs) == "nginx");
  a.hasCgroupPath = true;
  a.base = HostAppBase::kKubepodsBurstable;
  a.parentDir = "host/";
  a.relativePath = "nginx.slice";
  CHECK(hostAppCgroupDir(a, v1fs) == "kubepods/burstable/host/nginx.slice");
  CHECK(hostAppCgroupDir(a, v2sd) == "kubepods.slice/kubepods-burstable.slice/host/nginx.slice");
  a.base = HostAppBase::kCgroupRoot;
  a.parentDir = "";
  CHECK(hostAppCgroupDir(a, v2sd) == "nginx.slice");  // the name is not appended
  // Never a kube-QoS dir or above kubepods: every pod's cgroup, not an app's.
  a.base = HostAppBase::kKubepods;
  a.parentDir = "burstable";
  a.relativePath = "";
  CHECK(hostAppCgroupDir(a, v1fs) == "");
  a.base = HostAppBase::kCgroupRoot;
  a.parentDir = "kubepods";
  CHECK(hostAppCgroupDir(a, v1fs) == "");
  CHECK(hostAppCgroupDir(a, v2sd) == "kubepods");  // not systemd's kubepods.slice
  HostApplication named;
  named.name = "kubepods.slice";
  CHECK(hostAppCgroupDir(named, v2sd) == "");
  const CgroupLayout prefixed(CgroupVersion::kV1, CgroupDriver::kCgroupfs, "test/x");
  a.parentDir = "test";
  CHECK(hostAppCgroupDir(a, prefixed) == "");  // an ancestor of test/x/kubepods
}

TEST_CASE("the NodeSLO carries its valid host applications and names the bad ones in its notes") {
  auto spec = parseNodeSlo(R"({"hostApplications": [
      {"name": "nginx", "priority": "koord-prod", "qos": "LS"},
      {"name": "bad", "qos": "GOLD"}]})",
                           "slo.json");
  REQUIRE(spec.ok());
  REQUIRE(spec->hostApplications.size() == 1);
  CHECK(spec->hostApplications[0].name == "nginx");
  CHECK(all(spec->notes).find("spec.hostApplications[1] (name \"bad\"): qos") != std::string::npos);
  // The list as given stays in the effective spec (GET /config shows it).
  CHECK(spec->effective["hostApplications"].size() == 2);
}

TEST_CASE(
    "LS host applications get the LS share pools' cpus, others nothing, and none without "
    "pools") {
  auto spec = parseNodeSlo(R"({"hostApplications": [
      {"name": "nginx", "qos": "LS"},
      {"name": "db", "qos": "LSR", "cgroupPath": {"parentDir": "host", "relativePath": "db"}},
      {"name": "web", "qos": "LS", "cgroupPath": {"base": "KubepodsBurstable", "relativePath": "web"}}]})",
                           "slo.json");
  REQUIRE(spec.ok());
  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  CHECK(planHostAppCpusets(*spec, nullptr, layout).empty());  // pools not known yet
  CpuSetRule rule;
  CHECK(planHostAppCpusets(*spec, &rule, layout).empty());  // no pool: no empty cpuset
  rule.sharePools = {CpuSharePool{0, 0, {0, 1, 2}}, CpuSharePool{0, 1, {8, 9}}};
  const auto writes = planHostAppCpusets(*spec, &rule, layout);
  REQUIRE(writes.size() == 2);
  CHECK(writes[0].dir == "host-latency-sensitive/nginx");
  CHECK(writes[0].knob == Knob::kCpusetCpus);
  CHECK(writes[0].value.cpus == std::vector<int>{0, 1, 2, 8, 9});
  CHECK(writes[0].owner == kOwnerHostAppCpuset);
  CHECK(writes[1].dir == "kubepods/burstable/web");
}

}  // namespace test_qos_host_apps
