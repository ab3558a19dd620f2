// Executor: the one place that writes cgroup files. Strategies hand it intended
// writes; it checks each is inside the kubepods hierarchy and within the knob's
// range (a value outside it is refused and counted, never clamped to the nearest
// bound), reads the file and drops writes equal to what it already holds,
// orders the rest as the
// kernel requires (for hierarchical knobs: decreases child-first, then increases
// parent-first; a CPU list that is neither grows to the union parent-first and
// shrinks child-first), writes, and records every change in a bounded JSON-lines
// audit log. ENOENT (a pod just deleted) is normal; EINVAL, EACCES, EBUSY and other
// errors are counted and logged once per path; EROFS (a read-only mount) once for
// the whole root. With dry-run it logs what it would write, and writes
// nothing.
//
// Forced rewrites (--resource-force-update-seconds): every write reads the file
// first (within the verify period below), so a value changed behind our back is
// repaired. A file that already holds the target is left alone, as koordlet's
// read-before-write leaves it (its forced update only re-checks the file), with one
// exception of ours: a CPU list (cpuset.cpus) is written again once it was last
// written (or first seen equal) forceUpdate ago, because that write has effects a
// read cannot show: the kernel re-applies the cgroup's CPUs to every task's
// affinity, undoing a sched_setaffinity behind the cgroup's back. Rewriting every
// other equal knob changed nothing, and at 500 pods on v2 it was ~10,000 writes and
// audit lines a minute, in one burst (bench/RESULTS.md, issue 20).
//
// Verification (--resource-verify-seconds, ours): a file the executor has read or
// written is trusted to hold that text for `verify`; reads within it (the read
// before a write, and read() for strategies stepping from the current value) use
// the known text and touch no file. koordlet trusts its own last write until the
// forced update; we re-read each file at least every `verify`, so a value changed
// behind our back is repaired within that (0: read the file every time).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "cgroupfs/knob.h"
#include "cgroupfs/layout.h"
#include "cgroupfs/write_reason.h"

namespace koord {

struct CgroupWrite {
  std::string dir;  // relative to the hierarchy root (as CgroupLayout returns it)
  Knob knob;
  KnobValue value;
  std::string owner;             // the strategy that wants it: one owner per knob per cgroup
  WriteReasonPtr why = nullptr;  // what decided it (GET /explain); may be null
};

// A write refused before any attempt, kept on the knob it was meant for.
struct KnobRefusal {
  std::string value;   // the value asked, rendered
  std::string reason;  // "second_owner", "out_of_range"
  std::string by;      // the owner that asked
  std::string message;
  Clock::Wall at{};
};

// What the executor knows of one knob in one cgroup (GET /explain). Lives in the
// owner record, so it goes when the knob's owner is let go (its pod gone, its
// strategy no longer asking for two force periods).
struct KnobRecord {
  std::string dir;
  Knob knob = Knob::kCpuShares;
  std::string owner;
  std::optional<KnobValue> asked;    // the value its owner asked for last
  WriteReasonPtr why;                // and why
  std::optional<KnobValue> written;  // the value we last wrote (dry-run: would have)
  Clock::Wall writtenAt{};
  bool writtenDryRun = false;
  // Someone else's value, found where we had written ours (the last time it
  // happened; kept after the repair), and how many times so far.
  std::optional<std::string> drift;
  std::string driftReplaced;  // what we had written there, rendered
  Clock::Wall driftAt{};
  uint64_t drifts = 0;
  std::optional<KnobRefusal> refusal;  // the last refused write, within 2 force periods
};

struct ExecutorConfig {
  std::string cgroupRoot;
  std::chrono::seconds forceUpdate{60};
  std::chrono::seconds verify{10};  // see "Verification" above; 0 = always read
  bool dryRun = false;
  std::string auditPath;            // "" = no audit log
  size_t auditMaxBytes = 4u << 20;  // rotate to <path>.1 past this; one old file kept
  int64_t pageSize = 4096;          // memory targets round down to it, as the kernel does
};

struct ExecutorStats {
  uint64_t written = 0;
  uint64_t unchanged = 0;    // file already held the value, or cached and not due
  uint64_t unsupported = 0;  // knob absent on this kernel
  uint64_t vanished = 0;     // ENOENT: the cgroup is gone
  uint64_t invalid = 0;      // EINVAL
  uint64_t denied = 0;       // EACCES / EPERM
  uint64_t failed = 0;       // any other error (EBUSY and EROFS among them)
  uint64_t refused = 0;      // outside the kubepods hierarchy, a second owner, out of range
  uint64_t drifted = 0;      // a file we wrote found holding another value (then repaired)
  uint64_t skippedGone = 0;  // not tried: its cgroup was found gone (see cgroupsMayHaveChanged)
  ExecutorStats& operator+=(const ExecutorStats& o) {
    written += o.written;
    unchanged += o.unchanged;
    unsupported += o.unsupported;
    vanished += o.vanished;
    invalid += o.invalid;
    denied += o.denied;
    failed += o.failed;
    refused += o.refused;
    drifted += o.drifted;
    skippedGone += o.skippedGone;
    return *this;
  }
};

class Executor {
 public:
  // Per write attempted: "succeeded", "unchanged", "unsupported", "vanished",
  // "invalid" (EINVAL, ERANGE), "denied" (EACCES, EPERM), "busy" (EBUSY),
  // "read_only" (EROFS), "failed" (any other error); and the time it took (for
  // koordlet_resource_update_duration_milliseconds).
  using Observer = std::function<void(const char* status, double millis)>;

  Executor(ExecutorConfig config, CgroupLayout layout, KnobSupport support, const Clock& clock,
           FailureLog& failures);

  void onWrite(Observer observer) { observer_ = std::move(observer); }
  // Per write refused before any attempt: "outside_kubepods", "second_owner",
  // "out_of_range" (koordlet_resource_update_refused_total).
  using RefusalObserver = std::function<void(const char* reason)>;
  void onRefuse(RefusalObserver observer) { refusalObserver_ = std::move(observer); }
  // Per file found changed behind our back (koordlet_resource_drift_total): the
  // knob's v1 name.
  using DriftObserver = std::function<void(const char* knob)>;
  void onDrift(DriftObserver observer) { driftObserver_ = std::move(observer); }

  // Knob owners held (for the churn tests and the soak): an owner not asked to write
  // a knob for two force periods lets it go, so the map follows the live cgroups.
  size_t ownerCount() const { return owners_.size(); }
  // Files whose text is known (read or written within `verify`, see above); bounded
  // by the files touched in one verify period.
  size_t knownCount() const { return known_.size(); }

  // Lets go of the owners of `dir` and of every cgroup under it: the caller's pod
  // left. Without it a gone pod's owners stay two force periods, which under churn
  // (a pod a second) is a hundred pods' worth more than the live ones.
  void forgetUnder(std::string_view dir);

  // A cgroup found gone (ENOENT and its directory absent: a terminated container or a
  // finished pod the kubelet still lists, a stopped host application) is not written
  // again, nor counted
  // "vanished" again, until the caller says cgroups may have changed (the pod list
  // changed) or a force period passes (a host application's cgroup comes back without
  // any pod list change). Without it the same write is planned and found gone every
  // round.
  void cgroupsMayHaveChanged() { gone_.clear(); }
  size_t goneCount() const { return gone_.size(); }

  // Directories outside kubepods the executor may also write, exactly these (not
  // their children): the host applications' cgroups the NodeSLO names. Replaced
  // whole on each call; a dir with an empty, "." or ".." part is never allowed.
  void allowOutside(std::vector<std::string> dirs) { outside_ = std::move(dirs); }

  // Applies one batch in the order described above. Returns the batch's counts
  // (also accumulated in stats()). Counts and observer calls are per attempted
  // write: a CPU list that is neither a subset nor a superset of the file's is
  // written twice (the union, then the target). Refused writes are counted but not
  // observed (nothing was attempted).
  ExecutorStats apply(std::vector<CgroupWrite> writes);

  const ExecutorStats& stats() const { return stats_; }

  // The knobs held in `dir` (and, with below, in every cgroup under it), by dir then
  // knob; `knob` narrows to one. A walk of every owner: for an operator's question,
  // not for a round.
  std::vector<KnobRecord> explain(std::string_view dir, bool below,
                                  std::optional<Knob> knob = std::nullopt) const;
  // The file's text now, trimmed, read from the file (no known text): what the
  // kernel holds. Errors: unsupported here, or readFile's.
  Result<std::string> readNow(const std::string& dir, Knob knob) const;
  // Whether a file's text holds `asked`, compared as apply() compares (memory
  // page-rounded, v2 shares by their rendered weight, else by parsed value).
  bool holds(Knob knob, const KnobValue& asked, std::string_view kernelText) const;
  // A value as this hierarchy's file shows it.
  std::string render(Knob knob, const KnobValue& value) const {
    return renderKnob(knob, layout_.version(), value, weights_);
  }
  // The knobs this kernel has (probed once when the agent built the executor).
  const KnobSupport& support() const { return support_; }
  // How v2 cpu.weight is rendered from shares and read back: the node runtime's
  // conversion (cpu_weight.h), linear until the agent has read it off a container.
  // A change forgets what was written to cpu.weight under the old conversion: that
  // value reads back as another weight now, and rewriting it is no drift.
  void setCpuWeightConversion(CpuWeightConversion c);
  CpuWeightConversion cpuWeightConversion() const { return weights_; }

  // The value a knob's file holds now, in v1 units, read the way apply() reads it
  // (strategies that step from the current value get it here), except that an empty
  // v2 cpuset.cpus ("the parent's") reads as the CPUs in force, from its file row's
  // fallback (cgroup_files.h: "Reading a v2 cpuset"). Errors: the knob is
  // unsupported on this kernel, the file is missing (sysErrno ENOENT) or unreadable,
  // or its text does not parse. Within `verify` of the last read or write the known
  // text answers and no file is read.
  Result<KnobValue> read(const std::string& dir, Knob knob) const;

 private:
  struct Cached {
    std::string text;
    Clock::Monotonic at{};
  };
  // What a file held when last read or written, and when.
  struct Known {
    std::string text;  // as read (a written value with its newline, as the kernel shows it)
    Clock::Monotonic at{};
  };
  // The file's text: the known text within `verify`, else read (and known
  // from then on). Errors as readFile's.
  // knownAt, when given: when that text was read (now, if read now).
  // The view is into known_ (or readBuf_): good until either changes.
  // fresh: read the file whatever is known.
  // wasRead: false when the known text answered.
  Result<std::string_view> currentText(const std::string& path, Clock::Monotonic* knownAt = nullptr,
                                       bool fresh = false, bool* wasRead = nullptr) const;
  void know(const std::string& path, const std::string& text);
  // A write that passed the checks and differs from the file (or is a CPU list due
  // for its forced rewrite), with what the file held when read.
  struct Pending {
    const CgroupWrite* write;
    std::string path;
    KnobValue target;     // within the knob's range (page-rounded for memory)
    std::string text;     // rendered target
    std::string oldText;  // the file's text, trimmed
    std::optional<KnobValue> current;
    size_t depth;  // components in dir: orders hierarchical writes
  };
  bool insideKubepods(const std::string& dir) const;
  // Checks (kubepods, owner, range), reads the file; returns the write when it must
  // happen.
  std::optional<Pending> admit(const CgroupWrite& write, ExecutorStats& batch);
  // Writes text (the target or an intermediate CPU union); false on failure.
  bool writeFile(const Pending& p, const std::string& text, const std::string& oldText,
                 ExecutorStats& batch);
  // The failure-log key of writes refused by a read-only mount: one per root.
  std::string readOnlyKey() const;
  void audit(const Pending& p, const std::string& oldText, const std::string& newText);
  // The value the kernel will hold for `value` (memory rounded down to pages).
  KnobValue aimedAt(Knob knob, KnobValue value) const;
  // Keeps the value written (or, dry, that would have been) on its knob's record.
  void noteWritten(const Pending& p, const std::string& text, bool dryRun);
  void observe(const char* status, Clock::Monotonic since) const;
  ExecutorConfig config_;
  CgroupLayout layout_;
  CpuWeightConversion weights_ = CpuWeightConversion::kLinear;
  std::string kubeRoot_;              // layout_.kubeRootDir(), made once: asked for every write
  std::vector<std::string> outside_;  // allowOutside()
  KnobSupport support_;
  const Clock* clock_;
  FailureLog* failures_;
  void refuse(const char* reason, ExecutorStats& batch);
  // What happened to a knob beyond its owner's asks (GET /explain): allocated on
  // the first write, drift or refusal, so a knob that always held its value costs
  // a pointer.
  struct Events {
    std::optional<KnobValue> written;
    Clock::Wall writtenAt{};
    bool writtenDryRun = false;
    std::optional<std::string> drift;
    std::string driftReplaced;
    Clock::Wall driftAt{};
    uint64_t drifts = 0;
    std::optional<KnobRefusal> refusal;
    Clock::Monotonic refusedAt{};
  };
  struct Owner {
    std::string name;
    Clock::Monotonic lastAsked{};
    // The last value asked and found equal to the file, and until when that
    // finding holds (the known text's verify period, the forced rewrite's due
    // time, whichever is first); reset whenever a write may follow.
    KnobValue same;
    Clock::Monotonic sameUntil{};
    KnobValue asked;  // the last value asked, and why
    WriteReasonPtr why;
    std::unique_ptr<Events> events;
    Events& ev() {
      if (!events) events = std::make_unique<Events>();
      return *events;
    }
  };
  // Records a refusal on the knob's record (creating none: a knob nobody owns has
  // no record to show it in).
  void noteRefusal(Owner& own, const CgroupWrite& write, const char* reason, std::string message);
  // A file we wrote holds another value: counted, kept on the record, observed.
  void noteDrift(Owner& own, const CgroupWrite& write, const std::string& text);
  Observer observer_;
  RefusalObserver refusalObserver_;
  DriftObserver driftObserver_;
  ExecutorStats stats_;
  // CPU list path -> its last write, or the moment it was first seen equal: the
  // forced rewrite's clock. No other knob is rewritten when equal, so none is kept.
  std::map<std::string, Cached> cache_;
  // path -> known text; mutable: read() is a const query that may learn a file.
  mutable std::unordered_map<std::string, Known> known_;
  mutable std::string readBuf_;  // what currentText reads into, kept
  // (dir, knob) -> owner, hashed: every write looks its owner up, and an ordered
  // map compared long paths that share ~100 bytes of prefix a dozen times a lookup.
  // Looked up by (string_view, knob), so a write that finds its owner allocates no
  // key. forgetUnder (a pod gone) walks it all.
  struct OwnerHash {
    using is_transparent = void;
    template <typename A>
    size_t operator()(const A& a) const {
      return std::hash<std::string_view>()(std::string_view(a.first)) * 31 +
             static_cast<size_t>(a.second);
    }
  };
  struct OwnerEqual {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return a.second == b.second && std::string_view(a.first) == std::string_view(b.first);
    }
  };
  std::unordered_map<std::pair<std::string, Knob>, Owner, OwnerHash, OwnerEqual> owners_;
  void noteIfGone(const std::string& path, Clock::Monotonic now);
  // Directories of files found gone (absent themselves) -> when (cgroupsMayHaveChanged).
  // Looked up by string_view (std::equal_to<> and a transparent hash): no key is
  // built for the lookup each write makes while the map holds anything.
  struct DirHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, Clock::Monotonic, DirHash, std::equal_to<>> gone_;
  bool unsupportedLogged_[kKnobCount] = {};  // one line per knob, ever
  std::optional<Clock::Monotonic> swept_;    // the last sweep of the maps above
};

}  // namespace koord
