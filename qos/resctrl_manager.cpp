#include "qos/resctrl_manager.h"

#include <cerrno>
#include <filesystem>

#include "base/read_file.h"
#include "base/text_scan.h"
#include "cgroupfs/cgroup_files.h"
#include "resctrl/schemata.h"

namespace koord::resctrl {
namespace {

constexpr const char* kDetectKey = "resctrl-detect";

// Whether the plan could move this pod's threads: active, classified into a group,
// its class enabled, and no per-pod group of its own. Only a shortcut to save reading
// the tasks of pods the plan would ignore (by default every class is disabled);
// planResctrl applies the same rules and stays the authority.
bool mayMoveThreads(const Pod& pod, const ResourceQosStrategy& config) {
  if (!pod.active()) return false;
  if (pod.annotations.count(kPodResctrlAnnotation) != 0) return false;
  const std::string_view group = groupForQos(pod.qosWithDefault());
  if (group == kGroupLSR) return config.lsr.resctrl.enable;
  if (group == kGroupLS) return config.ls.resctrl.enable;
  if (group == kGroupBE) return config.be.resctrl.enable;
  return false;
}

// Appends the tids of one cgroup's tasks file. A missing file is a cgroup that is gone
// (or not made yet): normal, nothing appended. Returns false when the cgroup is
// missing, so the caller can skip the pod.
bool readTids(const std::string& path, std::vector<int32_t>& tids,
              std::vector<std::string>& errors) {
  auto text = readFile(path);
  if (!text) {
    if (text.error().sysErrno == ENOENT) return false;
    errors.push_back(inFile(path, text.error()).message);
    return true;
  }
  auto parsed = parseTids(*text, path);
  if (!parsed) {
    errors.push_back(parsed.error().message);
    return true;
  }
  tids.insert(tids.end(), parsed->begin(), parsed->end());
  return true;
}

}  // namespace

ResctrlManager::ResctrlManager(ResctrlManagerConfig config, CgroupLayout layout, const Clock& clock,
                               FailureLog& failures, Mounter mounter, ResctrlFileOps fileOps)
    : config_(std::move(config)),
      layout_(std::move(layout)),
      clock_(&clock),
      failures_(&failures),
      mounter_(std::move(mounter)),
      ownership_(config_.stateFile, config_.adoptGroups),
      writer_(config_.paths.sysFs("resctrl"), ownership_, failures, config_.dryRun,
              std::move(fileOps)) {
  if (!ownership_.loadStatus()) {
    KLOG_WARNING << "resctrl: " << ownership_.loadStatus().error().message
                 << "; starting with no groups recorded as ours";
  }
}

ResctrlRound ResctrlManager::runDue(const std::vector<Pod>& pods,
                                    const ResourceQosStrategy& config) {
  ResctrlRound round;
  round.status = status_;
  if (!config_.gate || config_.interval.count() <= 0) return round;
  const Clock::Monotonic start = clock_->now();
  // A quarter interval of slack: rounds follow collection, which arrives with jitter,
  // and a round due 5 ms from now must not wait a whole extra interval.
  if (last_ && start - *last_ < config_.interval - config_.interval / 4) return round;
  last_ = start;
  round.ran = true;

  // No CPU support is final: cpuinfo does not change while the host is up.
  if (flags_ && !flags_->supported()) return round;

  Detection d = detectResctrl(config_.paths, config_.allowMount, mounter_, flags_);
  flags_ = d.flags;
  status_ = d.status;
  round.status = d.status;
  if (d.status == ResctrlStatus::kNoCpuSupport) {
    // Reached once: later rounds stop at the check above.
    KLOG_WARNING << "resctrl: not supported on this host (" << d.reason << "); resctrl QoS is off";
    return round;
  }
  if (d.status != ResctrlStatus::kReady) {
    failures_->failure(kDetectKey, Severity::kWarning,
                       text::cat("resctrl: ", statusName(d.status), ": ", d.reason));
    return round;
  }
  failures_->success(kDetectKey);

  const std::vector<PodThreads> threads = listThreads(pods, config, round.errors);
  ResctrlPlan plan = planResctrl(*d.info, d.flags.vendor, config, threads);
  round.errors.insert(round.errors.end(), plan.errors.begin(), plan.errors.end());
  round.writes = writer_.apply(plan);
  round.seconds = std::chrono::duration<double>(clock_->now() - start).count();
  return round;
}

std::vector<PodThreads> ResctrlManager::listThreads(const std::vector<Pod>& pods,
                                                    const ResourceQosStrategy& config,
                                                    std::vector<std::string>& errors) const {
  namespace fs = std::filesystem;
  const std::string& root = config_.paths.cgroupRoot;
  std::vector<PodThreads> out;
  for (const Pod& pod : pods) {
    if (!mayMoveThreads(pod, config)) continue;
    if (!isSafePathComponent(pod.uid)) {
      errors.push_back(text::cat("resctrl: pod ", pod.ns, "/", pod.name, ": uid \"", pod.uid,
                                 "\" is not a path component; its threads are not moved"));
      continue;
    }
    const std::string podDir = layout_.podDir(pod.kubeQos, pod.uid);
    PodThreads pt;
    pt.pod = &pod;
    // The pod dir itself (v1 may hold tasks there), then each direct child: the
    // containers and the pause sandbox. A pod without a dir has not started.
    if (!readTids(cgroupFilePath(layout_, root, podDir, CgroupFile::kThreads), pt.tids, errors)) {
      continue;
    }
    const std::string dirPath =
        layout_.filePath(root, cgroupFileSpec(CgroupFile::kThreads).v1Subsystem, podDir, "");
    std::error_code ec;
    fs::directory_iterator it(dirPath, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code typeEc;
      if (!it->is_directory(typeEc)) continue;
      // A container gone between listing and reading is normal: readTids skips it.
      const std::string child = podDir + "/" + it->path().filename().string();
      readTids(cgroupFilePath(layout_, root, child, CgroupFile::kThreads), pt.tids, errors);
    }
    if (ec && ec != std::errc::no_such_file_or_directory) {
      errors.push_back(text::cat(dirPath, ": ", ec.message()));
    }
    out.push_back(std::move(pt));
  }
  return out;
}

MonRead ResctrlManager::collect() const {
  if (!flags_ || status_ != ResctrlStatus::kReady) return {};
  return readMonData(config_.paths.sysFs("resctrl"), {kGroupLSR, kGroupLS, kGroupBE});
}

std::optional<bool> ResctrlManager::supported() const {
  if (!flags_) return std::nullopt;
  return flags_->supported();
}

}  // namespace koord::resctrl
