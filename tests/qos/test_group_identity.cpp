#include <catch2/catch.hpp>

#include <sstream>

#include "base/read_file.h"
#include "cgroupfs/executor.h"
#include "qos/group_identity.h"
#include "tests/support/log_capture.h"
#include "tests/support/temp_tree.h"

namespace test_qos_group_identity {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

NodeSloSpec specWith(bool lsr, bool ls, bool be, std::string policy = "") {
  std::ostringstream y;
  y << "resourceQOSStrategy:\n"
    << "  lsrClass: {cpuQOS: {enable: " << (lsr ? "true" : "false") << ", groupIdentity: 2}}\n"
    << "  lsClass: {cpuQOS: {enable: " << (ls ? "true" : "false") << ", groupIdentity: 2}}\n"
    << "  beClass: {cpuQOS: {enable: " << (be ? "true" : "false") << ", groupIdentity: -1}}\n";
  if (!policy.empty()) y << "policies: {cpuPolicy: " << policy << "}\n";
  y << "hostApplications:\n"
    << "- {name: nginx, qos: LS, cgroupPath: {parentDir: host, relativePath: nginx}}\n"
    << "- {name: backup, qos: BE}\n";
  auto s = parseNodeSlo(y.str(), "slo.yaml");
  REQUIRE(s.ok());
  return *s;
}

Pod pod(std::string uid, KubeQos kube, KoordQos label, std::string annotation = "") {
  Pod p;
  p.uid = uid;
  p.ns = "default";
  p.name = uid;
  p.phase = "Running";
  p.kubeQos = kube;
  p.koordQos = label;
  if (!annotation.empty()) p.annotations[kCpuQosAnnotation] = annotation;
  return p;
}

}  // namespace

TEST_CASE("bvt values follow koordlet's table for every pod kind") {
  const BvtRule all = bvtRule(specWith(true, true, true));
  CHECK(all.enable);
  CHECK(podBvt(pod("a", KubeQos::kGuaranteed, KoordQos::kLSE), all) == 2);
  CHECK(podBvt(pod("a", KubeQos::kGuaranteed, KoordQos::kLSR), all) == 2);
  CHECK(podBvt(pod("a", KubeQos::kBurstable, KoordQos::kLS), all) == 2);
  CHECK(podBvt(pod("a", KubeQos::kBestEffort, KoordQos::kBE), all) == -1);
  CHECK(podBvt(pod("a", KubeQos::kGuaranteed, KoordQos::kNone), all) == 2);
  CHECK(podBvt(pod("a", KubeQos::kBurstable, KoordQos::kNone), all) == 2);
  CHECK(podBvt(pod("a", KubeQos::kBestEffort, KoordQos::kSystem), all) == -1);

  // LSR off: a Guaranteed pod without a label falls to LS; LS off too: 0.
  const BvtRule lsOnly = bvtRule(specWith(false, true, false));
  CHECK(podBvt(pod("a", KubeQos::kGuaranteed, KoordQos::kNone), lsOnly) == 2);
  CHECK(podBvt(pod("a", KubeQos::kGuaranteed, KoordQos::kLSR), lsOnly) == 0);
  CHECK(podBvt(pod("a", KubeQos::kBestEffort, KoordQos::kBE), lsOnly) == 0);
  const BvtRule none = bvtRule(specWith(false, false, false));
  CHECK_FALSE(none.enable);
  CHECK(podBvt(pod("a", KubeQos::kGuaranteed, KoordQos::kNone), none) == 0);
  // The coreSched policy turns group identity off whatever the classes say.
  CHECK_FALSE(bvtRule(specWith(true, true, true, "coreSched")).enable);
}

TEST_CASE("an LS pod's cpuQOS annotation overrides its value; a bad one is named and ignored") {
  const BvtRule rule = bvtRule(specWith(true, true, true));
  CHECK(podBvt(
            pod("a", KubeQos::kBurstable, KoordQos::kLS, R"({"enable": true, "groupIdentity": 1})"),
            rule) == 1);
  CHECK(podBvt(pod("a", KubeQos::kBurstable, KoordQos::kLS, R"({"groupIdentity": 1})"), rule) ==
        0);  // not enabled
  std::string error;
  CHECK(podBvt(
            pod("a", KubeQos::kBurstable, KoordQos::kLS, R"({"enable": true, "groupIdentity": 7})"),
            rule, &error) == 2);
  CHECK(error ==
        "pod default/a: annotation koordinator.sh/cpuQOS: groupIdentity must be an "
        "integer -1..2, got 7; the LS value applies");
  // Only LS pods read it.
  CHECK(podBvt(pod("a", KubeQos::kBestEffort, KoordQos::kBE,
                   R"({"enable": true, "groupIdentity": 2})"),
               rule) == -1);
}

TEST_CASE("the plan writes the kube-QoS dirs, every pod and container and the host applications") {
  const NodeSloSpec spec = specWith(true, true, true);
  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  const Pod ls = pod("ls", KubeQos::kBurstable, KoordQos::kLS);
  const Pod be = pod("be", KubeQos::kBestEffort, KoordQos::kBE);
  Pod done = pod("done", KubeQos::kBurstable, KoordQos::kLS);
  done.phase = "Succeeded";
  QosSnapshot snap;
  snap.pods.push_back(PodView{&ls, KoordQos::kLS, "kubepods/burstable/podls", {}, {}, {}, {}});
  ContainerView c1;
  c1.id = "containerd://c1";
  c1.dir = "kubepods/burstable/podls/c1";
  snap.pods.back().containers.push_back(c1);
  snap.pods.push_back(PodView{&be, KoordQos::kBE, "kubepods/besteffort/podbe", {}, {}, {}, {}});
  snap.pods.push_back(PodView{&done, KoordQos::kLS, "kubepods/burstable/poddone", {}, {}, {}, {}});
  const BvtPlan plan = planGroupIdentity(snap, spec, layout);
  std::vector<std::pair<std::string, int64_t>> got;
  for (const auto& w : plan.writes) {
    CHECK(w.knob == Knob::kCpuBvtWarpNs);
    CHECK(w.owner == kOwnerGroupIdentity);
    got.emplace_back(w.dir, w.value.number);
  }
  CHECK(got == std::vector<std::pair<std::string, int64_t>>{
                   {"kubepods", 0},
                   {"kubepods/burstable", 2},
                   {"kubepods/besteffort", -1},
                   {"kubepods/burstable/podls", 2},
                   {"kubepods/burstable/podls/c1", 2},
                   {"kubepods/besteffort/podbe", -1},
                   {"host/nginx", 2},
                   {"host-best-effort/backup", -1},
               });
}

TEST_CASE(
    "on a tree that has cpu.bvt_warp_ns the executor writes the plan, host apps included, "
    "and nothing outside them") {
  test::LogCapture logs;
  test::TempTree tree;
  for (const char* dir :
       {"kubepods", "kubepods/burstable", "kubepods/besteffort", "kubepods/burstable/podls",
        "host/nginx", "host-best-effort/backup", "host/other"}) {
    tree.write(std::string("cpu/") + dir + "/cpu.bvt_warp_ns", "0\n");
  }
  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  const KnobSupport support = KnobSupport::probe(tree.path(), layout);
  REQUIRE(support.has(Knob::kCpuBvtWarpNs));
  ExecutorConfig config;
  config.cgroupRoot = tree.path();
  Executor exec(config, layout, support, logs.clock, logs.failures);
  const NodeSloSpec spec = specWith(true, true, true);
  const Pod ls = pod("ls", KubeQos::kBurstable, KoordQos::kLS);
  QosSnapshot snap;
  snap.pods.push_back(PodView{&ls, KoordQos::kLS, "kubepods/burstable/podls", {}, {}, {}, {}});
  BvtPlan plan = planGroupIdentity(snap, spec, layout);
  plan.writes.push_back({"host/other", Knob::kCpuBvtWarpNs, KnobValue::of(2), kOwnerGroupIdentity});

  // Host app dirs are outside kubepods: refused until the agent allows them.
  auto stats = exec.apply(plan.writes);
  CHECK(stats.refused == 3);
  exec.allowOutside({"host/nginx", "host-best-effort/backup"});
  stats = exec.apply(plan.writes);
  CHECK(stats.refused == 1);  // host/other: no NodeSLO names it
  auto read = [&](const char* dir) {
    auto t = readFile(tree.path(std::string("cpu/") + dir + "/cpu.bvt_warp_ns"));
    REQUIRE(t.ok());
    return *t;
  };
  CHECK(read("kubepods") == "0\n");  // the Guaranteed root: always 0
  CHECK(read("kubepods/burstable") == "2\n");
  CHECK(read("kubepods/besteffort") == "-1\n");
  CHECK(read("kubepods/burstable/podls") == "2\n");
  CHECK(read("host/nginx") == "2\n");
  CHECK(read("host-best-effort/backup") == "-1\n");
  CHECK(read("host/other") == "0\n");
  // A value the kernel would refuse is refused, not clamped.
  CHECK(exec.apply({{"kubepods/burstable", Knob::kCpuBvtWarpNs, KnobValue::of(3),
                     kOwnerGroupIdentity}})
            .refused == 1);
}

TEST_CASE("the group identity sysctl is switched on with the rule, sched_core off first") {
  const BvtRule on = bvtRule(specWith(true, false, false));
  const BvtRule off = bvtRule(specWith(false, false, false));
  using W = std::vector<std::pair<std::string, int64_t>>;
  CHECK(groupIdentitySysctls(on, {0, 1}) ==
        W{{"sched_core", 0}, {"sched_group_identity_enabled", 1}});
  CHECK(groupIdentitySysctls(on, {0, 0}) == W{{"sched_group_identity_enabled", 1}});
  CHECK(groupIdentitySysctls(on, {0, std::nullopt}) == W{{"sched_group_identity_enabled", 1}});
  CHECK(groupIdentitySysctls(on, {1, 1}).empty());             // already on
  CHECK(groupIdentitySysctls(on, {std::nullopt, 1}).empty());  // no such sysctl
  CHECK(groupIdentitySysctls(off, {0, 1}).empty());            // the rule is off
}

}  // namespace test_qos_group_identity
