// Pod-level values at sandbox creation (issue 46): what BatchResource,
// CPUNormalization and CPUSetAllocator decide for a pod at PreRunPodSandbox, on
// both hook paths, written through the one executor on this loop, as koordlet's
// hooks write them there, instead of waiting for the reconciler's next round after
// the next kubelet poll.
//
// The adapters' threads only post here. NRI's RunPodSandbox comes after the runtime
// made the pod's cgroup; koord-runtime-proxy's PreRunPodSandbox before: so a pod
// waits, bounded (kMaxPending pods, kPendingFor each), and is written as soon as its
// cgroup's file reads, polled every kRetryEvery meanwhile. The dir is ours (layout
// from the uid and kube QoS), never the runtime's cgroup-parent string; the
// executor's checks (inside kubepods, in range, read before write) apply as to
// every write, and /explain records them.
#include "agent/agent.h"

#include <boost/asio/post.hpp>

#include "base/log.h"

namespace koord {
namespace {

constexpr size_t kMaxPending = 256;
constexpr auto kPendingFor = std::chrono::seconds(30);
constexpr auto kRetryEvery = std::chrono::milliseconds(20);

}  // namespace

SandboxSink Agent::sandboxSink() {
  return [this](const HookPod& pod, const HookIntent& intent) {
    // The pod's identity and QoS only: its labels, annotations and containers have
    // been read into the intent.
    HookPod who;
    who.uid = pod.uid;
    who.ns = pod.ns;
    who.name = pod.name;
    who.kubeQos = pod.kubeQos;
    who.rawQos = pod.rawQos;
    boost::asio::post(io_, [this, who = std::move(who), intent, since = clock_->now()]() mutable {
      onSandbox(std::move(who), std::move(intent), since);
    });
  };
}

void Agent::onSandbox(HookPod pod, HookIntent intent, Clock::Monotonic since) {
  if (stopped_ || !executor_ || !layout_ || !isSafePathComponent(pod.uid)) return;
  PendingSandbox p;
  p.dir = layout_->podDir(pod.kubeQos, pod.uid);
  p.writes = sandboxWrites(pod, intent, p.dir);
  if (p.writes.empty()) return;
  p.ns = std::move(pod.ns);
  p.name = std::move(pod.name);
  p.since = since;
  p.deadline = clock_->now() + kPendingFor;
  if (pendingSandboxes_.size() >= kMaxPending && !pendingSandboxes_.contains(pod.uid)) {
    // Bounded: the oldest waiting pod is left to the reconciler.
    auto oldest = std::min_element(
        pendingSandboxes_.begin(), pendingSandboxes_.end(),
        [](const auto& a, const auto& b) { return a.second.since < b.second.since; });
    pendingSandboxes_.erase(oldest);
    ++sandboxDropped_;
  }
  pendingSandboxes_[pod.uid] = std::move(p);
  applyPendingSandboxes();
}

void Agent::applyPendingSandboxes() {
  const Clock::Monotonic now = clock_->now();
  for (auto it = pendingSandboxes_.begin(); it != pendingSandboxes_.end();) {
    PendingSandbox& p = it->second;
    // The cgroup exists once its first file reads (ENOENT until the runtime made it).
    if (executor_->readNow(p.dir, p.writes.front().knob)) {
      const ExecutorStats st = executor_->apply(std::move(p.writes));
      ++sandboxWritten_;
      KLOG_V(3) << "sandbox " << p.ns << "/" << p.name << ": pod values in " << p.dir << " "
                << std::chrono::duration<double, std::milli>(now - p.since).count()
                << " ms after the hook (" << st.written << " written)";
      it = pendingSandboxes_.erase(it);
    } else if (now >= p.deadline) {
      ++sandboxExpired_;
      KLOG_WARNING << "sandbox " << p.ns << "/" << p.name << ": no cgroup " << p.dir << " within "
                   << kPendingFor.count() << " s of its hook; the reconciler sets its values";
      it = pendingSandboxes_.erase(it);
    } else {
      ++it;
    }
  }
  if (stopped_ || pendingSandboxes_.empty() || sandboxTimerArmed_) return;
  sandboxTimerArmed_ = true;
  sandboxTimer_.expires_after(kRetryEvery);
  sandboxTimer_.async_wait([this](const boost::system::error_code& ec) {
    sandboxTimerArmed_ = false;
    if (!ec) applyPendingSandboxes();
  });
}

}  // namespace koord
