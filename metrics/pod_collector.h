// PodCollector: per-pod and per-container usage from cgroupfs, each
// --collect-res-used-interval, as koordlet's pod resource, throttling, BE and
// system collectors compute it (reference koordlet.md §3.2):
//  - CPU cores from the cumulative usage counter (v1 cpuacct.usage ns, v2 cpu.stat
//    usage_usec) over the injected clock's elapsed time;
//  - memory without page cache: v1 total_inactive_anon + total_active_anon +
//    total_unevictable, v2 inactive_anon + active_anon + unevictable (memory.stat);
//    with page cache, those and (total_)active_file + (total_)inactive_file;
//  - throttled ratio Δnr_throttled / Δnr_periods (cpu.stat);
//  - the BE aggregate (usage of the besteffort QoS dir, Σ batch-cpu requests of BE
//    pods, real limit = min(smallest BE cpuset, besteffort quota)), in milli-cores;
//  - system usage = node − Σ pods, clamped at 0, only from a fresh node sample;
//  - PSI of pods and containers when the PSICollector gate is on and the kernel
//    has it (checked once at the kubepods root; absent = logged once, skipped).
// A cgroup that vanishes mid-read (pod deleted) is normal: no error, no sample.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/host_paths.h"
#include "base/pinned_files.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"
#include "metrics/node_collector.h"
#include "metrics/proc_parsers.h"

namespace koord {

struct CgroupUsage {
  std::optional<double> cpuCores;
  std::optional<uint64_t> memoryBytes;
  // With page cache: the same plus active_file and inactive_file (NodeMetric's
  // usageWithPageCache), from the same memory.stat read.
  std::optional<uint64_t> memoryWithPageCacheBytes;
  std::optional<double> throttledRatio;
  std::array<std::optional<Pressure>, 3> pressure;  // by PsiResource
};

struct ContainerUsage {
  const Pod* pod = nullptr;
  const Container* container = nullptr;
  std::string id;  // "<runtime>://<id>", koordlet's container_id label
  CgroupUsage usage;
};

struct PodUsage {
  const Pod* pod = nullptr;
  CgroupUsage usage;
  std::vector<ContainerUsage> containers;
};

struct BeUsage {
  std::optional<double> usageMilli;
  double requestMilli = 0;
  std::optional<double> realLimitMilli;
};

struct PodsSample {
  Clock::Monotonic at{};
  std::vector<PodUsage> pods;  // pods whose cgroup was found this round
  // Changes whenever the pods and containers in `pods` are not those of the round
  // before (by uid and container id): what holds state per owner need not look for
  // gone ones while it stays the same.
  uint64_t ownersVersion = 0;
  BeUsage be;
  std::optional<double> systemCpuCores;
  std::optional<double> systemMemoryBytes;
};

// Outcome of reading one cgroup file: vanished (ENOENT) is normal, failed is not.
enum class CgroupRead { kOk, kVanished, kFailed };

class PodCollector {
 public:
  struct Config {
    std::string cgroupRoot;
    bool psiEnabled = false;  // feature gate PSICollector
    std::chrono::nanoseconds psiInterval = std::chrono::seconds(10);
    std::chrono::nanoseconds nodeStaleness = std::chrono::seconds(10);
    // Cgroup files kept open between rounds (base/pinned_files.h): about 3 per pod
    // and container; past this they are opened and closed every round.
    size_t maxOpenFiles = 16384;
  };
  PodCollector(Config config, CgroupLayout layout, const Clock& clock);

  struct Outcome {
    PodsSample sample;
    std::vector<Error> errors;  // unreadable or malformed files, not vanished cgroups
  };
  // `pods` must outlive the returned sample (it points into it).
  Outcome collect(const std::vector<Pod>& pods, const NodeSample* node);

  Support psiSupport() const { return psi_; }
  const std::string& psiReason() const { return psiReason_; }
  // Cgroups held (one per cgroup read last round, with its rate state and open
  // files): bounded by the pods.
  size_t stateEntries() const;
  // Cgroup files held open (about 3 per cgroup read last round, at most maxOpenFiles).
  size_t openFiles() const { return budget_.open(); }

 private:
  // The files of a cgroup the collector reads, each opened on first use.
  enum Slot : size_t {
    kUsage,
    kMemoryStat,
    kCpuStat,
    kCpuPressure,
    kMemoryPressure,
    kIoPressure,
    kCpusetEffective,
    kQuota,
    kPeriod,
    kSlotCount
  };
  // One cgroup read in the last round: its paths and descriptors made once (not a
  // path string per file per round), and its counters' last values.
  struct Cgroup {
    std::string dir;
    // Only the slots read are made (3 of 9 on most cgroups): 8 bytes for the others.
    std::array<std::unique_ptr<PinnedFile>, kSlotCount> files;
    uint64_t usage = 0;  // cpu usage (ns) at usageAt
    Clock::Monotonic usageAt{};
    bool hasUsage = false;
    uint64_t periods = 0;
    uint64_t throttled = 0;
    bool hasThrottle = false;
    bool sampled = false;  // read whole once: in a sample (PodsSample::ownersVersion)
    uint64_t round = 0;
  };

  // A container of a pod seen last round: its ids and dir made once.
  struct ContainerState {
    std::string runtime;  // as the pod lists it
    std::string rawId;
    std::string id;  // "<runtime>://<id>"
    Cgroup cg;
  };
  // A pod seen last round, by uid: its dir and its containers' made once (not a
  // path and an id string per cgroup per round), with their cgroups' state.
  struct PodState {
    KubeQos qos{};
    Cgroup cg;
    std::vector<ContainerState> containers;  // a handful: found by a scan
  };

  // The pod's state, made (or remade, when its QoS dir changed) on first use;
  // marked as read this round.
  PodState& podState(const Pod& pod);
  // The container's state in `ps`, made on first use; nullptr when its id makes no
  // dir (the error is pushed). Marked as read this round.
  ContainerState* containerState(PodState& ps, const Container& c, std::vector<Error>& errors);
  PinnedFile& file(Cgroup& cg, Slot slot);
  // Owners' bookkeeping (PodsSample::ownersVersion): a cgroup in this round's
  // sample; a pod's state about to go, with its containers.
  void sampled(Cgroup& cg);
  void dropped(const PodState& ps);
  CgroupRead readCpu(Cgroup& cg, CgroupUsage& out, std::vector<Error>& errors,
                     CgroupUsage* throttle);
  std::optional<double> cpuRate(Cgroup& cg, uint64_t usageNs, Clock::Monotonic at);
  void throttleRatio(Cgroup& cg, uint64_t periods, uint64_t throttled, CgroupUsage& out);
  // Reads one cgroup; false when it vanished (ENOENT) so the caller drops it.
  bool readCgroup(Cgroup& cg, bool withPsi, CgroupUsage& out, std::vector<Error>& errors);
  template <typename T, typename Parse>
  CgroupRead readParsed(Cgroup& cg, Slot slot, Parse parse, T& out, std::vector<Error>& errors);
  // pickFlatKeyed's rule: keys after the first `required` may be missing.
  CgroupRead readPicked(Cgroup& cg, Slot slot, std::span<const std::string_view> keys,
                        std::span<std::optional<uint64_t>> values, std::vector<Error>& errors,
                        size_t required = SIZE_MAX);
  void detectPsi();
  void collectBe(const std::vector<Pod>& pods, Outcome& out);
  void prune();

  Config config_;
  CgroupLayout layout_;
  const Clock* clock_;
  FileBudget budget_;
  std::string buf_;  // the file read last, reused
  uint64_t round_ = 0;
  uint64_t ownersVersion_ = 0;
  bool ownersChanged_ = false;  // this round: a cgroup sampled first, or a sampled one dropped
  std::unordered_map<std::string, PodState> pods_;  // by uid
  Cgroup be_;                                       // the besteffort QoS dir
  Support psi_ = Support::kUnknown;
  std::string psiReason_;
  std::optional<Clock::Monotonic> lastPsi_;
};

}  // namespace koord
