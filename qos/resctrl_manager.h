// resctrl_manager: the resctrl reconcile loop (gate RdtResctrl, every
// --reconcile-interval-seconds, after a collection round). Detects RDT once
// (resctrl_detect.h; no CPU support is final and logged once; a missing tree is
// re-checked each round, logged once), reads the info tree, lists each active pod's
// threads from its cgroups (v1 `tasks` of the cpu hierarchy, v2 `cgroup.threads`),
// plans (resctrl_plan.h) and writes (resctrl_writer.h). Monitoring (gate
// ResctrlCollector) reads our groups' mon_data.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/host_paths.h"
#include "base/log.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"
#include "qos/resctrl_plan.h"
#include "qos/slo_config.h"
#include "resctrl/group_ownership.h"
#include "resctrl/monitor.h"
#include "resctrl/resctrl_detect.h"
#include "resctrl/resctrl_writer.h"

namespace koord::resctrl {

struct ResctrlManagerConfig {
  HostPaths paths;
  std::chrono::nanoseconds interval = std::chrono::seconds(1);  // <= 0: off
  bool gate = true;                                             // RdtResctrl
  bool allowMount = false;                                      // --resctrl-mount
  std::string stateFile;                                        // --resctrl-state-file
  bool adoptGroups = false;                                     // --resctrl-adopt-groups
  bool dryRun = false;
};

struct ResctrlRound {
  bool ran = false;  // the interval was due and the gate on
  ResctrlStatus status = ResctrlStatus::kNoCpuSupport;
  WriterStats writes;
  std::vector<std::string> errors;  // plan and thread-listing errors (writer logs its own)
  std::optional<double> seconds;
};

class ResctrlManager {
 public:
  // mounter and fileOps are the kernel-facing calls (mount(2); mkdir and the single
  // write() per line or tid), injected so tests act as the kernel on a temp tree.
  ResctrlManager(ResctrlManagerConfig config, CgroupLayout layout, const Clock& clock,
                 FailureLog& failures, Mounter mounter = systemMounter(),
                 ResctrlFileOps fileOps = systemResctrlFileOps());
  // The writer holds a pointer to ownership_: the manager stays where it was made.
  ResctrlManager(const ResctrlManager&) = delete;
  ResctrlManager& operator=(const ResctrlManager&) = delete;

  // One round when the gate is on and the interval is due (a quarter interval of
  // slack, as the QoS manager). Detection runs every due round until the CPU is found
  // unsupported (final: later rounds return at once with kNoCpuSupport); cpuinfo is
  // read once. A tree not mounted, failing to mount or malformed is logged once per
  // streak (FailureLog key "resctrl-detect") and the round does nothing else.
  ResctrlRound runDue(const std::vector<Pod>& pods, const ResourceQosStrategy& config);

  // Monitoring counters of LSR/LS/BE when the last round found the tree ready, else
  // nothing.
  MonRead collect() const;

  // nullopt until the first detection; then whether the CPU offers RDT (cat_l3 and
  // mba), for koordlet_feature_supported{feature="resctrl"}. A supported CPU whose
  // tree is not mounted (or malformed) is still supported: that is a separate,
  // possibly passing condition, reported by status().
  std::optional<bool> supported() const;
  ResctrlStatus status() const { return status_; }

 private:
  // Threads of the pods whose threads the plan may move (v1 cpu `tasks`, v2
  // `cgroup.threads`, of the pod dir and its direct children).
  std::vector<PodThreads> listThreads(const std::vector<Pod>& pods,
                                      const ResourceQosStrategy& config,
                                      std::vector<std::string>& errors) const;
  ResctrlManagerConfig config_;
  CgroupLayout layout_;
  const Clock* clock_;
  FailureLog* failures_;
  Mounter mounter_;
  GroupOwnership ownership_;
  ResctrlWriter writer_;
  std::optional<CpuRdtFlags> flags_;
  std::optional<Clock::Monotonic> last_;
  ResctrlStatus status_ = ResctrlStatus::kNoCpuSupport;
};

}  // namespace koord::resctrl
