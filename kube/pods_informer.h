// PodsInformer: keeps the node's pod list from the kubelet's /pods/, polled every
// --kubelet-sync-interval. A reply that fails in any way (transport error or
// timeout, non-200 status, a body that is not a PodList, a PodList with zero pods,
// which koordlet reads as a restarting kubelet) leaves the last good list in
// force; the streak is logged once, then counted.
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this first.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "kube/http_client.h"  // transportErrorClass, for the code label
#include "kube/kubelet_client.h"
#include "kube/pod.h"

namespace koord {

// One request, for the koordlet_kubelet_request_* metrics.
struct KubeletRequestRecord {
  // HTTP status, or when no reply arrived why not (transportErrorClass, in
  // kube/http_client.h): koordlet records no sample then; a class keeps the label
  // short and bounded.
  std::string code;
  double seconds = 0;  // wall time of the request
  // "" on success, else why the reply was refused: transport, status, invalid, empty.
  std::string failure;
};

class PodsInformer {
 public:
  using RecordFn = std::function<void(const KubeletRequestRecord&)>;
  using UpdateFn = std::function<void(const std::vector<Pod>&)>;

  PodsInformer(boost::asio::io_context& io, KubeletClient& client,
               std::chrono::nanoseconds interval, const Clock& clock, FailureLog& failures);

  void onRecord(RecordFn fn) { record_ = std::move(fn); }
  void onUpdate(UpdateFn fn) { update_ = std::move(fn); }

  // First sync now, then every interval.
  void start();
  void stop();
  // A sync now (a pod cgroup came or went), then every interval from it; during a
  // request in flight, one more right after it (never two in flight, never a queue).
  void syncNow();
  uint64_t wakeUps() const { return wakeUps_; }  // syncs syncNow started or queued

  // The last good list (empty before the first success).
  const std::vector<Pod>& pods() const { return pods_; }
  bool synced() const { return synced_; }
  // Whether the last request succeeded, and why not.
  bool lastOk() const { return lastOk_; }
  const std::string& lastError() const { return lastError_; }
  // Good replies identical to the list held, so neither parsed nor passed on.
  uint64_t unchangedReplies() const { return unchanged_; }

  // Applies one reply as if it came from the kubelet (the request path calls it;
  // tests call it directly). Returns the failure kind, "" on success.
  std::string apply(const Result<KubeletResponse>& reply);

 private:
  void poll();
  void schedule();

  KubeletClient& client_;
  std::chrono::nanoseconds interval_;
  const Clock* clock_;
  FailureLog& failures_;
  boost::asio::steady_timer timer_;
  RecordFn record_;
  UpdateFn update_;
  std::vector<Pod> pods_;
  size_t lastBodySize_ = 0;  // of the reply pods_ came from
  uint64_t lastBodyHash_ = 0;
  uint64_t unchanged_ = 0;
  bool synced_ = false;
  bool lastOk_ = false;
  std::string lastError_;
  bool stopped_ = false;
  bool started_ = false;
  bool inFlight_ = false;
  bool again_ = false;  // syncNow during a request: one more after it
  uint64_t wakeUps_ = 0;
};

}  // namespace koord
