// InformerState: the decisions of a list+watch informer for one named object
// (the node's own Node, NodeSLO, NodeMetric), apart from its I/O. The driver
// (kube/object_informer) asks next() what to do, does it, and reports back what
// happened; this class keeps the resourceVersion, the object and the back-off.
//
// Rules (client-go's reflector, written down once):
//  * Start with a LIST (fieldSelector metadata.name=<name>); its
//    metadata.resourceVersion is where the WATCH starts. The informer is synced
//    once a list succeeded.
//  * ADDED/MODIFIED replace the object, DELETED clears it, BOOKMARK only moves the
//    resourceVersion. Every event's resourceVersion is where the next watch
//    resumes.
//  * The server ending a watch cleanly (its timeoutSeconds) is normal: watch again
//    at once from the last resourceVersion. A watch that ends within a second
//    without an event is not (a proxy answering 200 with nothing, client-go's "very
//    short watch"): the driver reports it as a failure, so it backs off.
//  * 410 Gone (an ERROR event, or the watch's or list's status): the version is
//    compacted: LIST again, at once the first time, with back-off if it repeats
//    before the watch made progress (an event, a bookmark or a clean end): the
//    list in between does not count, or a 410 storm would be a tight list-watch
//    loop.
//  * Anything else that fails (transport, timeout, a watch silent past its timeout,
//    5xx, 401/403, a malformed event): wait the back-off and resume — watch from
//    the last resourceVersion when there is one, else list. A 429's or 503's
//    Retry-After is waited instead of the back-off (at most 5 minutes: a server's
//    typo must not park the informer for a day), as client-go does: a server that
//    is initialising says "retry in 1 s" and means it.
//  * The first HTTP reply after failures without one (the server is back) starts
//    the back-off again from its initial wait, so the errors a restarting server
//    gives for its first seconds (429, a 403 before its RBAC cache is loaded) do
//    not inherit the outage's 30 s.
//  * Back-off: 800 ms doubling to a 30 s cap, each wait jittered to [d, 2d) after
//    the cap (so [30 s, 60 s) at the cap, as client-go), back to 800 ms once a
//    watch delivered an event or a list succeeded. A Retry-After is waited for at
//    least 1 s. The jitter's random source is injected (tests fix it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "kube/watch_stream.h"

namespace koord {

class Backoff {
 public:
  static constexpr std::chrono::milliseconds kInitial{800};
  static constexpr std::chrono::seconds kCap{30};
  // random01: a value in [0, 1) per wait.
  explicit Backoff(std::function<double()> random01) : random_(std::move(random01)) {}
  // The next wait, then doubles the base.
  std::chrono::nanoseconds next();
  void reset() { base_ = kInitial; }
  std::chrono::nanoseconds base() const { return base_; }

 private:
  std::function<double()> random_;
  std::chrono::nanoseconds base_ = kInitial;
};

class InformerState {
 public:
  static constexpr std::chrono::minutes kMaxRetryAfter{5};
  enum class Step { kList, kWatch, kWait };
  struct Action {
    Step step = Step::kList;
    std::string resourceVersion;      // kWatch: where to resume
    std::chrono::nanoseconds wait{};  // kWait: how long; then next() again
  };

  explicit InformerState(std::function<double()> random01) : backoff_(std::move(random01)) {}

  // What to do now. After kWait the driver waits and calls next() again.
  Action next();

  // A LIST's reply, parsed: the List's resourceVersion and the item (nullopt: none).
  void listed(std::string resourceVersion, std::optional<nlohmann::json> object);
  // One decoded watch event. Returns true when the object changed (not a BOOKMARK).
  bool event(const WatchEvent& e);
  // The watch ended without error (the server's timeout).
  void watchEnded();
  // A request failed. httpStatus 0: no reply (transport, timeout, malformed).
  // retryAfter: from a 429/503.
  void failed(unsigned httpStatus, std::optional<std::chrono::seconds> retryAfter = std::nullopt);

  bool synced() const { return synced_; }
  const std::optional<nlohmann::json>& object() const { return object_; }
  const std::string& resourceVersion() const { return rv_; }
  uint64_t relists() const { return relists_; }  // lists after the first

 private:
  Backoff backoff_;
  std::optional<nlohmann::json> object_;
  std::string rv_;  // "" = list needed
  bool synced_ = false;
  bool lists_ = false;  // a list was ever done (counts relists)
  uint64_t relists_ = 0;
  // What next() returns; kWait is followed by pendingAfterWait_.
  enum class Pending { kList, kWatch, kWaitThenResume } pending_ = Pending::kList;
  std::chrono::nanoseconds waitFor_{};
  bool goneOnce_ = false;  // a 410 re-listed at once; another one before success backs off
  bool lastFailureTransport_ = false;  // the last failure had no HTTP reply
};

}  // namespace koord
