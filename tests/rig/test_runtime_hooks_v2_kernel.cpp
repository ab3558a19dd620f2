// The runtime hooks' reconciler on a real cgroup v2 kernel (Debian 6.1 and 6.12 under
// the QEMU rig): what NRI would have put in a container's spec, written by the
// reconciler for containers NRI missed, through the real Executor, in a private
// kubepods tree (systemd names) with +cpu +cpuset +memory delegated at every level.
//
// A BE pod with batch resources (two containers, one without a batch-cpu limit) and
// an LSR pod the scheduler bound to CPU 1, preset with the kubelet's values (BE:
// weight 1 from shares 2; LSR: cpu.max "100000 100000"). It shows, per kernel: every
// write accepted; cpu.max, memory.max and cpuset.cpus read back as the container
// intent NRI returns; a fresh executor (empty cache, so it reads every file) finds
// nothing to change, so cpu.weight holds the converted shares too; a second round
// writes nothing.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cgroupfs/executor.h"
#include "qos/hook_reconcile.h"
#include "qos/runtime_hooks.h"
#include "tests/support/cgroup_v2_dirs.h"
#include "tests/support/kernel_io.h"
#include "tests/support/log_capture.h"
#include "tests/support/skip.h"

namespace test_rig_runtime_hooks_v2_kernel {  // this file's own names: tests build as unity chunks

using namespace koord;
namespace fs = std::filesystem;

namespace {

constexpr CgroupVersion kV2 = CgroupVersion::kV2;

using test::kCgroupV2Root;
using test::rawWrite;
using test::readTrimmed;

// The private tree: created in order, removed deepest first.
class Tree {
 public:
  explicit Tree(const std::string& prefix) : layout_(kV2, CgroupDriver::kSystemd, prefix) {
    REQUIRE(rawWrite(kCgroupV2Root + "/cgroup.subtree_control", kControllers) == 0);
    dirs_.make(prefix, kControllers);
    for (KubeQos q : {KubeQos::kGuaranteed, KubeQos::kBurstable, KubeQos::kBestEffort}) {
      dirs_.make(layout_.qosDir(q), kControllers);
    }
  }

  const CgroupLayout& layout() const { return layout_; }
  void mkdir(const std::string& dir, bool delegate) {
    dirs_.make(dir, delegate ? kControllers : "");
  }
  std::string file(const std::string& dir, const char* f) const {
    return test::CgroupV2Dirs::file(dir, f);
  }

 private:
  static constexpr const char* kControllers = "+cpu +cpuset +memory";
  CgroupLayout layout_;
  test::CgroupV2Dirs dirs_;
};

Container container(std::string name, std::string id) {
  Container c;
  c.name = std::move(name);
  c.runtime = "containerd";
  c.id = std::move(id);
  return c;
}

}  // namespace

TEST_CASE(
    "on v2 the hooks reconciler lands the values NRI would have set, and the kernel "
    "accepts every one",
    "[v2][hooks]") {
  if (std::string why = test::cgroupV2UnavailableReason(); !why.empty()) KOORDLET_SKIP(why);
  Tree tree("koordlet-hookrig-" + std::to_string(::getpid()));
  const CgroupLayout& layout = tree.layout();

  std::vector<Pod> pods(2);
  Pod& be = pods[0];
  be.uid = "be000000-0000-4000-8000-00000000000a";
  be.ns = "default";
  be.name = "be-pod-demo";
  be.phase = "Running";
  be.kubeQos = KubeQos::kBestEffort;
  be.koordQos = KoordQos::kBE;
  be.labels["koordinator.sh/qosClass"] = "BE";
  be.containers = {container("stress", "be0a0c0"), container("sidecar", "be0a0c1")};
  be.containers[0].requests.batchCpuMilli = 4000;
  be.containers[0].limits.batchCpuMilli = 4000;
  be.containers[0].limits.batchMemoryBytes = int64_t{4} << 30;
  be.containers[1].requests.batchCpuMilli = 500;  // no batch-cpu limit: quota -1
  be.containers[1].limits.batchMemoryBytes = int64_t{256} << 20;
  Pod& lsr = pods[1];
  lsr.uid = "15a00000-0000-4000-8000-00000000000b";
  lsr.ns = "default";
  lsr.name = "lsr-pod-demo";
  lsr.phase = "Running";
  lsr.kubeQos = KubeQos::kGuaranteed;
  lsr.koordQos = KoordQos::kLSR;
  lsr.labels["koordinator.sh/qosClass"] = "LSR";
  lsr.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"1"})";
  lsr.containers = {container("app", "15a0bc0")};
  lsr.containers[0].requests.cpuMilli = lsr.containers[0].limits.cpuMilli = 1000;

  // The kubelet's dirs and values; the snapshot as the QoS manager builds it.
  QosSnapshot snap;
  for (const Pod& p : pods) {
    PodView v;
    v.pod = &p;
    v.qos = p.qosWithDefault();
    v.dir = layout.podDir(p.kubeQos, p.uid);
    tree.mkdir(v.dir, true);
    if (auto it = p.annotations.find("scheduling.koordinator.sh/resource-status");
        it != p.annotations.end()) {
      v.pinnedCpus = *parseResourceStatusCpuset(it->second);
    }
    for (const Container& c : p.containers) {
      ContainerView cv;
      cv.container = &c;
      cv.id = "containerd://" + c.id;
      cv.dir = *layout.containerDir(v.dir, c.runtime, c.id);
      tree.mkdir(cv.dir, false);
      v.containers.push_back(cv);
    }
    snap.pods.push_back(std::move(v));
  }
  const std::string lsrPod = snap.pods[1].dir;
  const std::string lsrCtr = snap.pods[1].containers[0].dir;
  REQUIRE(rawWrite(tree.file(lsrPod, "cpu.max"), "100000 100000") == 0);
  REQUIRE(rawWrite(tree.file(lsrCtr, "cpu.max"), "100000 100000") == 0);

  const NodeSloSpec spec;
  HookContext ctx;
  ctx.spec = &spec;
  ctx.version = kV2;
  const HookReconcileResult plan = reconcileHooks(snap, ctx);
  INFO(plan.errors.size() << " errors");
  REQUIRE(plan.errors.empty());
  REQUIRE(plan.writes.size() >= 8);

  test::LogCapture log;
  ExecutorConfig config;
  config.cgroupRoot = kCgroupV2Root;
  const KnobSupport support = KnobSupport::probe(kCgroupV2Root, layout);
  {
    Executor exec(config, layout, support, log.clock, log.failures);
    const ExecutorStats s = exec.apply(plan.writes);
    INFO(log.log.str());
    // Writes that change nothing are skipped: a new cgroup's cpu.max is already "max".
    CHECK(s.written + s.unchanged == plan.writes.size());
    CHECK(s.written >= 8);
    CHECK(s.invalid + s.denied + s.failed + s.refused + s.unsupported + s.vanished == 0);
    const ExecutorStats again = exec.apply(plan.writes);
    CHECK(again.written == 0);
  }
  {
    // A fresh executor has no cache: it reads every file and finds each value held.
    Executor fresh(config, layout, support, log.clock, log.failures);
    const ExecutorStats s = fresh.apply(plan.writes);
    CHECK(s.written == 0);
    CHECK(s.unchanged == plan.writes.size());
  }

  // What NRI returns for each container is what the kernel now holds.
  for (const PodView& pv : snap.pods) {
    auto hp = hookPodFromKubelet(*pv.pod);
    REQUIRE(hp.ok());
    for (const ContainerView& cv : pv.containers) {
      const HookContainer* hc = hp->container(cv.container->name);
      REQUIRE(hc != nullptr);
      const HookIntent intent = containerIntent(*hp, *hc, ctx, nullptr);
      INFO(cv.dir);
      const std::string max = readTrimmed(tree.file(cv.dir, "cpu.max"));
      REQUIRE(intent.cfsQuota);
      CHECK(max == (*intent.cfsQuota < 0 ? std::string("max") : std::to_string(*intent.cfsQuota)) +
                       " 100000");
      if (intent.memoryLimit) {
        CHECK(readTrimmed(tree.file(cv.dir, "memory.max")) ==
              (*intent.memoryLimit < 0 ? std::string("max") : std::to_string(*intent.memoryLimit)));
      }
      if (intent.cpuset && !intent.cpuset->empty()) {
        CHECK(readTrimmed(tree.file(cv.dir, "cpuset.cpus")) == *intent.cpuset);
      }
    }
  }
  // The figures themselves, from the pod specs.
  CHECK(readTrimmed(tree.file(snap.pods[0].containers[0].dir, "cpu.max")) == "400000 100000");
  CHECK(readTrimmed(tree.file(snap.pods[0].containers[0].dir, "memory.max")) == "4294967296");
  CHECK(readTrimmed(tree.file(snap.pods[0].containers[1].dir, "cpu.max")) == "max 100000");
  CHECK(readTrimmed(tree.file(snap.pods[0].dir, "cpu.max")) == "max 100000");
  CHECK(readTrimmed(tree.file(snap.pods[0].dir, "memory.max")) ==
        std::to_string((int64_t{4} << 30) + (int64_t{256} << 20)));
  CHECK(readTrimmed(tree.file(lsrCtr, "cpuset.cpus")) == "1");
  CHECK(readTrimmed(tree.file(lsrCtr, "cpu.max")) == "max 100000");
  CHECK(readTrimmed(tree.file(lsrPod, "cpu.max")) == "max 100000");
  CHECK(readTrimmed(tree.file(snap.pods[0].containers[0].dir, "cpu.weight")) != "100");
  WARN("hooks rig: " << plan.writes.size()
                     << " intended writes, every one accepted or already held");
}

}  // namespace test_rig_runtime_hooks_v2_kernel
