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
    HookIntent podValues = intent;
    // An LS pod's normalized quota (CPUNormalization) is CPU burst's to step from, or
    // the reconciler's: only BE quotas and a pinned pod's -1 are written here.
    if (podValues.cfsQuota && *podValues.cfsQuota != -1 && pod.rawQos != KoordQos::kBE) {
      podValues.cfsQuota.reset();
    }
    boost::asio::post(io_, [this, uid = pod.uid, ns = pod.ns, name = pod.name, qos = pod.kubeQos,
                            podValues = std::move(podValues), since = clock_->now()]() mutable {
      onSandbox(std::move(uid), std::move(ns), std::move(name), qos, std::move(podValues), since);
    });
  };
}

void Agent::onSandbox(std::string uid, std::string ns, std::string name, KubeQos kubeQos,
                      HookIntent intent, Clock::Monotonic since) {
  if (stopped_ || !executor_ || !layout_ || !isSafePathComponent(uid)) return;
  PendingSandbox p;
  p.ns = std::move(ns);
  p.name = std::move(name);
  p.dir = layout_->podDir(kubeQos, uid);
  // The pod's cpuset is never set at its level (containers get theirs).
  appendHookWrites(p.writes, p.dir, intent, false);
  if (p.writes.empty()) return;
  auto why = std::make_shared<WriteReason>();
  why->add("stage", "PreRunPodSandbox", "runtime hook");
  why->rule =
      "the pod's own values at its sandbox, as the runtime hooks decide them (BatchResource: "
      "cpu.shares from the batch-cpu requests, quota from the limits, memory limit from the "
      "batch-memory limits; CPUSetAllocator: an unlimited quota for a pinned pod; "
      "CPUNormalization); the reconciler keeps them";
  for (CgroupWrite& w : p.writes) w.why = why;
  p.since = since;
  p.deadline = clock_->now() + kPendingFor;
  if (pendingSandboxes_.size() >= kMaxPending && !pendingSandboxes_.contains(uid)) {
    // Bounded: the oldest waiting pod is left to the reconciler.
    auto oldest = std::min_element(
        pendingSandboxes_.begin(), pendingSandboxes_.end(),
        [](const auto& a, const auto& b) { return a.second.since < b.second.since; });
    pendingSandboxes_.erase(oldest);
    ++sandboxDropped_;
  }
  pendingSandboxes_[uid] = std::move(p);
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
