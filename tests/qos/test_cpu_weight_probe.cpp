// Tests for qos/cpu_weight_probe: the runtime's conversion read off a throw-away v2 tree
// (systemd driver) shaped as runc 1.3 leaves it: LS containers at the weight of their
// request's shares, BE ones at what the agent wrote.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "qos/cpu_weight_probe.h"
#include "tests/support/temp_tree.h"

namespace test_qos_cpu_weight_probe {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

const CgroupLayout kLayout(CgroupVersion::kV2, CgroupDriver::kSystemd);

Pod pod(const std::string& uid, KubeQos kube, KoordQos label, std::optional<int64_t> cpuMilli) {
  Pod p;
  p.uid = uid;
  p.ns = "default";
  p.name = uid;
  p.kubeQos = kube;
  p.koordQos = label;
  Container c;
  c.name = "c";
  c.runtime = "containerd";
  c.id = uid + "id";
  c.requests.cpuMilli = cpuMilli;
  p.containers.push_back(c);
  return p;
}

std::string weightFile(const Pod& p) {
  return *kLayout.containerDir(kLayout.podDir(p.kubeQos, p.uid), "containerd", p.uid + "id") +
         "/cpu.weight";
}

}  // namespace

TEST_CASE("the conversion is read off a container whose two conversions differ",
          "[cpu_weight_probe]") {
  test::TempTree tree;
  // A BE pod (the agent's own value there, whatever it is), a BestEffort-sized LS pod
  // (2 shares: 1 either way), then a 1-CPU LS pod at runc 1.3's 100.
  const Pod be = pod("be", KubeQos::kBestEffort, KoordQos::kBE, 1000);
  const Pod small = pod("small", KubeQos::kBurstable, KoordQos::kLS, 1);
  const Pod ls = pod("ls", KubeQos::kBurstable, KoordQos::kLS, 1000);
  tree.write(weightFile(be), "39\n");
  tree.write(weightFile(small), "1\n");
  tree.write(weightFile(ls), "100\n");
  auto seen = probeCpuWeightConversion({be, small, ls}, kLayout, tree.path(), 8);
  REQUIRE(seen);
  CHECK(seen->conversion == CpuWeightConversion::kQuadratic);
  CHECK(seen->shares == 1024);
  CHECK(seen->weight == 100);
  CHECK(seen->pod == "default/ls c");
  CHECK(seen->dir + "/cpu.weight" == weightFile(ls));

  // The linear runtime's 39 for the same pod.
  tree.write(weightFile(ls), "39\n");
  seen = probeCpuWeightConversion({be, small, ls}, kLayout, tree.path(), 8);
  REQUIRE(seen);
  CHECK(seen->conversion == CpuWeightConversion::kLinear);
}

TEST_CASE(
    "nothing is decided from weights that are neither conversion's, from v1, or past the "
    "read budget",
    "[cpu_weight_probe]") {
  test::TempTree tree;
  const Pod a = pod("a", KubeQos::kBurstable, KoordQos::kNone, 1000);
  const Pod b = pod("b", KubeQos::kBurstable, KoordQos::kNone, 2000);
  tree.write(weightFile(a), "250\n");  // someone else's value
  CHECK(!probeCpuWeightConversion({a}, kLayout, tree.path(), 8));
  // No file yet (the container not made): skipped, the next one decides.
  auto seen = probeCpuWeightConversion({pod("gone", KubeQos::kBurstable, KoordQos::kNone, 1000), b},
                                       kLayout, tree.path(), 8);
  CHECK(!seen);
  tree.write(weightFile(b), "174\n");  // 2048 shares on the curve (linear: 79)
  seen = probeCpuWeightConversion({a, b}, kLayout, tree.path(), 8);
  REQUIRE(seen);
  CHECK(seen->conversion == CpuWeightConversion::kQuadratic);
  CHECK(!probeCpuWeightConversion({a, b}, kLayout, tree.path(), 1));  // one read: a only
  CHECK(!probeCpuWeightConversion({b}, CgroupLayout(CgroupVersion::kV1, CgroupDriver::kSystemd),
                                  tree.path(), 8));
}

}  // namespace test_qos_cpu_weight_probe
