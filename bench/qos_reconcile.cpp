// Memory-QoS + resctrl reconcile benchmark (not a test): the cost of one full round
// of both strategies at N pods, through the real QosManager/Executor and
// ResctrlManager/ResctrlWriter, on a synthetic node built as files: a cgroup v2
// kubepods tree (memory.min/low/high, memory.oom.group, cgroup.threads) and a resctrl
// tree copied from the Intel capture (tests/fixtures/resctrl/goresctrl/resctrl.full),
// under a tmpfs (/dev/shm when present) so the figure is our CPU and syscalls, not a
// disk. Resctrl writes go through tests/support/fake_resctrl_kernel.h (kernfs
// semantics on regular files), which adds a re-render of the group's schemata file
// per schemata line written (at most 2 per group per round). Neither kernel feature exists on the
// dev machine (cgroup v1 host, no RDT); kernfs files cost the same syscalls as tmpfs ones, the
// kernel's own work behind a write (resctrl MSR updates, moving a task) is not in this figure.
//
// Rounds: "cold" (empty groups, every value written: N pods × 2 containers of
// memory knobs, every thread moved), "steady" (nothing changed: every file read and
// compared, nothing written), "config change" (every pod's percents changed: every
// memory value rewritten, schemata rewritten, no task moves).
//   qos_reconcile PODS [ROUNDS]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "bench/synthetic_ids.h"
#include "qos/hook_reconcile.h"
#include "qos/memory_qos.h"
#include "qos/qos_manager.h"
#include "qos/resctrl_manager.h"
#include "tests/support/fake_resctrl_kernel.h"

namespace fs = std::filesystem;
using namespace koord;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kMi = int64_t{1} << 20;
constexpr int kThreadsPerContainer = 4;

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::trunc) << text;
}

using bench::cidOf;
using bench::uidOf;

struct Node {
  fs::path root;
  HostPaths paths;
  CgroupLayout layout{CgroupVersion::kV2, CgroupDriver::kCgroupfs};
  std::vector<Pod> pods;
  size_t dirs = 0;
  size_t threads = 0;
};

void memoryFiles(Node& n, const std::string& dir) {
  const fs::path d = n.root / "cgroup" / dir;
  put(d / "memory.min", "0\n");
  put(d / "memory.low", "0\n");
  put(d / "memory.high", "max\n");
  put(d / "memory.oom.group", "0\n");
  put(d / "cgroup.threads", "");  // every v2 cgroup has it; containers get threads below
  ++n.dirs;
}

Node build(const fs::path& root, size_t count, const std::string& fixtures) {
  Node n;
  n.root = root;
  n.paths.procRoot = (root / "proc").string();
  n.paths.sysFsRoot = (root / "sys-fs").string();
  n.paths.cgroupRoot = (root / "cgroup").string();
  n.paths.varRunRoot = (root / "var-run").string();
  put(root / "proc" / "cpuinfo",
      "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu cat_l3 cdp_l3 mba cqm_llc\n\n");
  fs::create_directories(root / "sys-fs");
  fs::copy(fixtures + "/resctrl/goresctrl/resctrl.full", root / "sys-fs" / "resctrl",
           fs::copy_options::recursive);
  put(root / "cgroup" / "cgroup.controllers", "cpuset cpu io memory pids\n");
  for (const std::string& dir : {n.layout.kubeRootDir(), n.layout.qosDir(KubeQos::kBurstable),
                                 n.layout.qosDir(KubeQos::kBestEffort)}) {
    memoryFiles(n, dir);
  }
  int32_t tid = 10000;
  for (size_t i = 0; i < count; ++i) {
    Pod p;
    p.uid = uidOf(i);
    p.ns = "bench";
    p.name = "bench-" + std::to_string(i);
    p.phase = "Running";
    // 1/5 LSR (Guaranteed), 1/2 LS (Burstable), the rest BE.
    if (i % 10 < 2) {
      p.kubeQos = KubeQos::kGuaranteed;
      p.koordQos = KoordQos::kLSR;
    } else if (i % 10 < 7) {
      p.kubeQos = KubeQos::kBurstable;
      p.koordQos = KoordQos::kLS;
    } else {
      p.kubeQos = KubeQos::kBestEffort;
      p.koordQos = KoordQos::kBE;
    }
    const std::string podDir = n.layout.podDir(p.kubeQos, p.uid);
    memoryFiles(n, podDir);
    for (size_t c = 0; c < 2; ++c) {
      Container ctr;
      ctr.name = "c" + std::to_string(c);
      ctr.runtime = "containerd";
      ctr.id = cidOf(i, c);
      if (p.koordQos == KoordQos::kBE) {
        ctr.requests.batchMemoryBytes = 256 * kMi;
        ctr.limits.batchMemoryBytes = 512 * kMi;
      } else {
        ctr.requests.memoryBytes = 512 * kMi;
        if (p.koordQos == KoordQos::kLSR) ctr.limits.memoryBytes = 512 * kMi;
      }
      const std::string dir = *n.layout.containerDir(podDir, ctr.runtime, ctr.id);
      memoryFiles(n, dir);
      std::string tids;
      for (int t = 0; t < kThreadsPerContainer; ++t) tids += std::to_string(tid++) + "\n";
      put(n.root / "cgroup" / dir / "cgroup.threads", tids);
      n.threads += kThreadsPerContainer;
      p.containers.push_back(std::move(ctr));
    }
    n.pods.push_back(std::move(p));
  }
  return n;
}

NodeSloSpec config(int64_t minPct, int64_t lowPct, int64_t beEnd) {
  NodeSloSpec spec = defaultNodeSlo();
  for (ResourceQos* q : {&spec.qos.lsr, &spec.qos.ls, &spec.qos.be}) {
    q->memory.enable = true;
    q->memory.minLimitPercent = minPct;
    q->memory.lowLimitPercent = lowPct;
    q->memory.throttlingPercent = 80;
    q->resctrl.enable = true;
  }
  spec.qos.be.resctrl.catRangeEndPercent = beEnd;
  spec.qos.be.resctrl.mbaPercent = 50;
  return spec;
}

double ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double cpuMs() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::stoul(argv[1]) : 500;
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 20;
  const char* fixtures = KOORDLET_FIXTURES_DIR;
  const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  const fs::path root = base / ("koordlet-bench-" + std::to_string(::getpid()));
  Node node = build(root, count, fixtures);

  ManualClock clock;
  FailureLog failures(clock);
  ExecutorConfig ec;
  ec.cgroupRoot = node.paths.cgroupRoot;
  KnobSupport support = KnobSupport::probe(node.paths.cgroupRoot, node.layout);
  Executor executor(ec, node.layout, support, clock, failures);
  QosManagerConfig qc;
  qc.cgroupRoot = node.paths.cgroupRoot;
  qc.nodeAllocatableMemory = 64 * 1024 * kMi;
  QosManager qos(qc, node.layout, CpuTopology{}, executor, clock);
  // Memory QoS and the runtime hooks' reconciler at their defaults; no CPU strategy.
  HookGates hooks;
  hooks.cpuBurst = false;
  hooks.cpuSuppress = false;
  hooks.memoryQos = true;
  qos.add(std::make_unique<MemoryQosStrategy>(1s, true, node.layout, false));
  qos.add(std::make_unique<HookReconcileStrategy>(1s, hooks));
  resctrl::ResctrlManagerConfig rc;
  rc.paths = node.paths;
  rc.stateFile = (root / "var-run" / "resctrl-groups").string();
  // Stands in for the resctrl kernel: mkdir seeds a group's files, a one-line schemata
  // write replaces that resource (tests/support/fake_resctrl_kernel.h).
  test::FakeKernel kernel((root / "sys-fs" / "resctrl").string());
  resctrl::ResctrlManager rdt(rc, node.layout, clock, failures, resctrl::systemMounter(),
                              kernel.ops());
  MetricCache cache({}, clock.now());

  std::printf("%zu pods, %zu cgroup dirs with memory knobs, %zu threads, tree under %s\n", count,
              node.dirs, node.threads, base.c_str());
  std::printf("%-14s %10s %10s %10s %8s %8s %8s %8s\n", "round", "memory ms", "resctrl ms",
              "total ms", "cpu ms", "cg writes", "schemata", "tasks");
  auto runRound = [&](const char* name, const NodeSloSpec& spec, std::vector<double>* totals) {
    clock.advance(1s);
    const double cpu0 = cpuMs();
    const auto t0 = std::chrono::steady_clock::now();
    QosRound q = qos.runDue(node.pods, cache, spec);
    const auto t1 = std::chrono::steady_clock::now();
    resctrl::ResctrlRound r = rdt.runDue(node.pods, spec.qos);
    const auto t2 = std::chrono::steady_clock::now();
    const double cpu = cpuMs() - cpu0;
    if (!q.report(MemoryQosStrategy::kName) || !r.ran ||
        r.status != resctrl::ResctrlStatus::kReady) {
      std::fprintf(stderr, "round %s did not run (resctrl %s)\n", name,
                   resctrl::statusName(r.status));
      std::exit(1);
    }
    if (totals) totals->push_back(ms(t2 - t0));
    if (!totals || totals->size() == 1) {
      std::printf("%-14s %10.2f %10.2f %10.2f %8.1f %8llu %8llu %8llu\n", name, ms(t1 - t0),
                  ms(t2 - t1), ms(t2 - t0), cpu, (unsigned long long)q.writes.written,
                  (unsigned long long)r.writes.schemataWritten,
                  (unsigned long long)r.writes.tasksWritten);
    }
  };
  runRound("cold", config(50, 80, 30), nullptr);
  std::vector<double> steady;
  for (int i = 0; i < rounds; ++i) runRound("steady", config(50, 80, 30), &steady);
  std::vector<double> change;
  for (int i = 0; i < rounds; ++i) {
    // Alternate two configs so every round rewrites every value.
    runRound("config change", i % 2 ? config(50, 80, 30) : config(40, 70, 20), &change);
  }
  auto report = [](const char* name, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::printf("%-14s over %zu rounds: p50 %.2f ms, p90 %.2f ms, max %.2f ms\n", name, v.size(),
                v[v.size() / 2], v[v.size() * 9 / 10], v.back());
  };
  report("steady", steady);
  report("config change", change);
  std::error_code err;
  fs::remove_all(root, err);
  return 0;
}
