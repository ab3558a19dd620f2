// The wake-up on new pod cgroups (issue 46, cgroupfs/pod_dir_watch.h): without it the
// agent learns of a pod at the next kubelet poll (--kubelet-sync-interval, 10 s), and
// a BE pod runs that long with the kubelet's limits. A pod dir made or removed under
// the kubepods root or its QoS dirs (three inotify watches on one hierarchy, however
// many pods) writes the sandboxes waiting for their cgroup and asks the kubelet for
// its pods now; the new list runs the strategies that follow the pod list
// (the hooks' reconciler among them) in a round at once, not at the next collect tick.
//
// Bounded: a burst of events costs one sync per debounce window (kDebounce), and a
// sync in flight takes at most one more after it (PodsInformer::syncNow). The tree
// removed (the kubelet restarted with another driver, a test) is watched again once
// it is back (polled every kRebuildEvery). Where inotify is refused (its instance or
// watch limit reached), the agent says so once and lists the dirs every kPollEvery
// instead: koordlet_feature_supported{feature="pod_cgroup_watch"} 0 then.
#include "agent/agent.h"

#include <dirent.h>

#include <cerrno>

#include <boost/asio/post.hpp>

#include "base/log.h"

namespace koord {
namespace {

constexpr auto kDebounce = std::chrono::milliseconds(50);
constexpr auto kRebuildEvery = std::chrono::seconds(1);
constexpr auto kPollEvery = std::chrono::seconds(1);

// The pod dirs directly under `dir` (both drivers' names); nullopt when unreadable.
std::optional<std::set<std::string>> podDirsIn(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return std::nullopt;
  std::set<std::string> out;
  while (const dirent* e = readdir(d)) {
    if (auto uid = podUidOfDir(e->d_name)) out.insert(*uid);
  }
  closedir(d);
  return out;
}

}  // namespace

std::vector<std::string> Agent::podWatchDirs() const {
  std::vector<std::string> out;
  for (KubeQos q : {KubeQos::kGuaranteed, KubeQos::kBurstable, KubeQos::kBestEffort}) {
    std::string p = layout_->filePath(opts_.paths.cgroupRoot, "cpu", layout_->qosDir(q), "");
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
  }
  return out;
}

void Agent::startPodWatch() {
  if (stopped_ || !layout_ || watchMode_ == WatchMode::kPolling) return;
  podWatchTimer_.cancel();
  const std::vector<std::string> dirs = podWatchDirs();
  Status s = podWatch_.open(dirs);
  if (!s) {
    const std::string& why = s.error().message;
    if (podWatch_.openErrno() == ENOENT) {
      // Not there yet (the kubelet makes the QoS dirs at its start): try again.
      exporter_.setFeatureSupported("pod_cgroup_watch", false);
      podWatchTimer_.expires_after(kRebuildEvery);
      podWatchTimer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) startPodWatch();
      });
      return;
    }
    watchMode_ = WatchMode::kPolling;
    watchFallback_ = why;
    exporter_.setFeatureSupported("pod_cgroup_watch", false);
    KLOG_WARNING << "pod cgroup wake-up: inotify refused (" << why
                 << "): listing the kubepods dirs every " << kPollEvery.count()
                 << " s instead; raise fs.inotify.max_user_instances / max_user_watches to "
                    "have it back";
    pollPodDirs();
    return;
  }
  exporter_.setFeatureSupported("pod_cgroup_watch", true);
  watchMode_ = WatchMode::kInotify;
  podWatchFd_ = std::make_unique<boost::asio::posix::stream_descriptor>(io_, podWatch_.fd());
  KLOG_INFO << "pod cgroup wake-up: inotify on " << dirs.size() << " kubepods dirs";
  readPodWatch();
}

void Agent::readPodWatch() {
  podWatchFd_->async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [this](const boost::system::error_code& ec) {
        if (ec || stopped_) return;
        auto changes = podWatch_.read();
        if (!changes) {
          KLOG_WARNING << "pod cgroup wake-up: " << changes.error().message;
          return;
        }
        const size_t events = changes->added.size() + changes->removed.size();
        if (events > 0 || changes->overflow) podCgroupsChanged(events);
        if (changes->treeGone) {
          // A watched dir went: the tree was removed. Watch it again once it is back.
          ++watchRebuilds_;
          KLOG_INFO << "pod cgroup wake-up: the kubepods tree was removed; watching it again "
                       "once it is back";
          podWatchFd_->release();
          podWatchFd_.reset();
          podWatch_.close();
          watchMode_ = WatchMode::kOff;
          podCgroupsChanged(0);
          podWatchTimer_.expires_after(kRebuildEvery);
          podWatchTimer_.async_wait([this](const boost::system::error_code& e) {
            if (!e) startPodWatch();
          });
          return;
        }
        readPodWatch();
      });
}

void Agent::pollPodDirs() {
  if (stopped_) return;
  std::set<std::string> now;
  for (const std::string& d : podWatchDirs()) {
    if (auto in = podDirsIn(d)) now.merge(*in);
  }
  if (now != polledPodDirs_) {
    size_t changed = 0;
    for (const std::string& u : now) changed += polledPodDirs_.contains(u) ? 0 : 1;
    for (const std::string& u : polledPodDirs_) changed += now.contains(u) ? 0 : 1;
    polledPodDirs_ = std::move(now);
    podCgroupsChanged(changed);
  }
  podWatchTimer_.expires_after(kPollEvery);
  podWatchTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) pollPodDirs();
  });
}

void Agent::podCgroupsChanged(size_t events) {
  podDirEvents_ += events;
  if (wakeArmed_ || stopped_) return;
  wakeArmed_ = true;
  wakeTimer_.expires_after(kDebounce);
  wakeTimer_.async_wait([this](const boost::system::error_code& ec) {
    wakeArmed_ = false;
    if (ec || stopped_) return;
    ++podWakeUps_;
    if (executor_) executor_->cgroupsMayHaveChanged();
    // A pod's cgroups came or went: the strategies that follow the pods run in the
    // next round even when the kubelet's list did not change (it may have named the
    // pod before its dirs were there).
    if (qos_) qos_->podsChanged();
    applyPendingSandboxes();
    if (podSyncStarted_) {
      wokenSync_ = true;
      informer_.syncNow();
    }
  });
}

}  // namespace koord
