// Tests for qos/restore_plan: the kubelet's values for every knob the agent may own,
// only for the strategies the flags turn on; pods built by hand, no filesystem.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "qos/restore_plan.h"

namespace test_qos_restore_plan {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

Container container(const std::string& name, std::optional<int64_t> cpuLimit,
                    std::optional<int64_t> memLimit, std::optional<int64_t> cpuRequest) {
  Container c;
  c.name = name;
  c.runtime = "containerd";
  c.id = name + "id";
  c.limits.cpuMilli = cpuLimit;
  c.limits.memoryBytes = memLimit;
  c.requests.cpuMilli = cpuRequest;
  return c;
}

Pod pod(const std::string& uid, KubeQos kube, KoordQos label, std::vector<Container> cs) {
  Pod p;
  p.uid = uid;
  p.ns = "default";
  p.name = uid;
  p.phase = "Running";
  p.kubeQos = kube;
  p.koordQos = label;
  p.containers = std::move(cs);
  return p;
}

// "dir knob" -> rendered value.
std::map<std::string, std::string> plan(const RestoreInput& in) {
  std::map<std::string, std::string> out;
  for (const CgroupWrite& w : planRestore(in)) {
    CHECK(w.owner == kOwnerRestore);
    REQUIRE(w.why);
    const std::string key = w.dir + " " + knobSpec(w.knob).name;
    CHECK_FALSE(out.contains(key));
    out[key] = renderKnob(w.knob, in.layout.version(), w.value);
  }
  return out;
}

RestoreInput node(RestoreScope scope) {
  RestoreInput in;
  in.scope = scope;
  in.support = KnobSupport::all();
  in.fullCpus = {0, 1, 2, 3};
  in.besteffortDirs = {"kubepods/besteffort/podb", "kubepods/besteffort/podb/bid",
                       "kubepods/besteffort/podgone"};
  std::vector<Pod> pods;
  // LS: 2 containers with limits (1500m + 500m, 1 GiB + 1 GiB).
  pods.push_back(pod("ls", KubeQos::kBurstable, KoordQos::kLS,
                     {container("a", 1500, 1 << 30, 1000), container("b", 500, 1 << 30, 250)}));
  // LS without a limit on one container: the pod is unlimited.
  pods.push_back(pod(
      "open", KubeQos::kBurstable, KoordQos::kLS,
      {container("c", 1000, std::nullopt, 100), container("d", std::nullopt, std::nullopt, 100)}));
  // BE with batch resources only: no kube requests or limits.
  Pod be = pod("b", KubeQos::kBestEffort, KoordQos::kBE,
               {container("b", std::nullopt, std::nullopt, std::nullopt)});
  be.containers[0].requests.batchCpuMilli = 2000;
  be.containers[0].limits.batchMemoryBytes = int64_t{2} << 30;
  pods.push_back(be);
  in.pods = std::move(pods);
  return in;
}

}  // namespace

TEST_CASE("restore puts suppress's knobs back: besteffort quota unlimited, every BE cpuset full",
          "[restore]") {
  RestoreScope s;
  s.cpuSuppress = true;
  auto p = plan(node(s));
  CHECK(p ==
        std::map<std::string, std::string>{{"kubepods/besteffort cpu.cfs_quota_us", "-1"},
                                           {"kubepods/besteffort cpuset.cpus", "0-3"},
                                           {"kubepods/besteffort/podb cpuset.cpus", "0-3"},
                                           {"kubepods/besteffort/podb/bid cpuset.cpus", "0-3"},
                                           {"kubepods/besteffort/podgone cpuset.cpus", "0-3"}});
}

TEST_CASE("restore gives pods and containers the kubelet's quota, shares and memory limit",
          "[restore]") {
  RestoreScope s;
  s.cpuBurst = true;
  s.batchResource = true;
  auto p = plan(node(s));
  // LS pod: 2000m summed -> 200000; containers their own; burst 0.
  CHECK(p["kubepods/burstable/podls cpu.cfs_quota_us"] == "200000");
  CHECK(p["kubepods/burstable/podls/aid cpu.cfs_quota_us"] == "150000");
  CHECK(p["kubepods/burstable/podls/bid cpu.cfs_quota_us"] == "50000");
  CHECK(p["kubepods/burstable/podls cpu.cfs_burst_us"] == "0");
  CHECK(p["kubepods/burstable/podls/aid cpu.cfs_burst_us"] == "0");
  // A container without a limit: the pod is unlimited, that container too.
  CHECK(p["kubepods/burstable/podopen cpu.cfs_quota_us"] == "-1");
  CHECK(p["kubepods/burstable/podopen/cid cpu.cfs_quota_us"] == "100000");
  CHECK(p["kubepods/burstable/podopen/did cpu.cfs_quota_us"] == "-1");
  // Shares and memory limits only for BE pods (the hooks' BatchResource).
  CHECK_FALSE(p.contains("kubepods/burstable/podls cpu.shares"));
  CHECK(p["kubepods/besteffort/podb cpu.shares"] == "2");
  CHECK(p["kubepods/besteffort/podb/bid cpu.shares"] == "2");
  CHECK(p["kubepods/besteffort/podb cpu.cfs_quota_us"] == "-1");
  CHECK(p["kubepods/besteffort/podb memory.limit_in_bytes"] == "-1");
  CHECK(p["kubepods/besteffort/podb/bid memory.limit_in_bytes"] == "-1");
  // Nothing of suppress's: its gate is off.
  CHECK_FALSE(p.contains("kubepods/besteffort cpu.cfs_quota_us"));
  CHECK_FALSE(p.contains("kubepods/besteffort/podb cpuset.cpus"));
}

TEST_CASE(
    "restore resets memory QoS and group identity to the kernel's defaults everywhere "
    "they are written",
    "[restore]") {
  RestoreScope s;
  s.memoryQos = true;
  s.groupIdentity = true;
  auto p = plan(node(s));
  for (const std::string dir : {"kubepods", "kubepods/burstable", "kubepods/besteffort",
                                "kubepods/burstable/podls", "kubepods/burstable/podls/aid"}) {
    INFO(dir);
    CHECK(p[dir + " memory.min"] == "0");
    CHECK(p[dir + " memory.low"] == "0");
    CHECK(p[dir + " memory.high"] == "max");
    CHECK(p[dir + " memory.wmark_scale_factor"] == "50");
    CHECK(p[dir + " cpu.bvt_warp_ns"] == "0");
  }
  CHECK_FALSE(p.contains("kubepods/burstable/podls cpu.cfs_quota_us"));
}

TEST_CASE("restore touches no knob when no strategy that writes it is on", "[restore]") {
  CHECK(plan(node(RestoreScope{})).empty());
}

TEST_CASE(
    "without the kubelet's pod list restore keeps to the kube-QoS dirs and the "
    "besteffort tree",
    "[restore]") {
  RestoreScope s;
  s.cpuSuppress = true;
  s.cpuBurst = true;
  RestoreInput in = node(s);
  in.pods = std::nullopt;
  auto p = plan(in);
  CHECK(p.size() == 5);
  CHECK(p["kubepods/besteffort cpu.cfs_quota_us"] == "-1");
}

TEST_CASE(
    "on cgroup v2 a cpuset goes back to the full set: a cgroup with tasks cannot take an "
    "empty one",
    "[restore]") {
  RestoreScope s;
  s.cpuSuppress = true;
  RestoreInput in = node(s);
  in.layout = CgroupLayout(CgroupVersion::kV2, CgroupDriver::kSystemd);
  in.besteffortDirs = {"kubepods.slice/kubepods-besteffort.slice/x"};
  auto p = plan(in);
  CHECK(p["kubepods.slice/kubepods-besteffort.slice cpuset.cpus"] == "0-3");
  CHECK(p["kubepods.slice/kubepods-besteffort.slice/x cpuset.cpus"] == "0-3");
  CHECK(p["kubepods.slice/kubepods-besteffort.slice cpu.cfs_quota_us"] == "max");
}

TEST_CASE(
    "restore gives CPUSetAllocator's containers the full set, but not BE pods' and not "
    "Guaranteed pods' under the kubelet's static policy",
    "[restore]") {
  RestoreScope s;
  s.cpusetAllocator = true;
  RestoreInput in = node(s);
  in.pods->push_back(
      pod("g", KubeQos::kGuaranteed, KoordQos::kLS, {container("g", 1000, 1 << 30, 1000)}));
  auto p = plan(in);
  CHECK(p["kubepods/burstable/podls/aid cpuset.cpus"] == "0-3");
  CHECK(p["kubepods/podg/gid cpuset.cpus"] == "0-3");
  CHECK_FALSE(p.contains("kubepods/besteffort/podb/bid cpuset.cpus"));
  CHECK_FALSE(
      p.contains("kubepods/burstable/podls cpuset.cpus"));  // pods: the kubelet never narrows
  s.kubeletStaticCpuPolicy = true;
  in.scope = s;
  p = plan(in);
  CHECK(p["kubepods/burstable/podls/aid cpuset.cpus"] == "0-3");
  CHECK_FALSE(p.contains("kubepods/podg/gid cpuset.cpus"));
}

TEST_CASE("restore never sets a container's memory.oom.group: the kubelet's", "[restore]") {
  RestoreScope s;
  s.memoryQos = true;
  auto p = plan(node(s));
  CHECK(p["kubepods/burstable/podls memory.oom.group"] == "0");
  CHECK_FALSE(p.contains("kubepods/burstable/podls/aid memory.oom.group"));
}

}  // namespace test_qos_restore_plan
