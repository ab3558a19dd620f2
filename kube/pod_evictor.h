// PodEvictor: the executor of evictions (issue 17). The strategies decide which pods
// go (EvictionRequest, kube/eviction_ledger.h); the PodEvictor asks the API server to
// evict them through the Eviction API, as koordlet's evictor does:
//   POST /api/v1/namespaces/<ns>/pods/<name>/eviction
// with a policy/v1 Eviction whose deleteOptions.preconditions.uid is the pod's UID
// (a pod deleted and created again under the same name is not evicted by mistake),
// and then a core/v1 Event on the pod saying what happened.
//
// Decisions:
//  * submit() marks the pod in flight in the ledger at once, so the next strategy
//    round counts its release and never asks for it twice; it refuses a pod that is
//    pending (in flight or evicted) or blocked (refused, in back-off).
//  * At most maxInFlight Evictions are sent at once; the others wait in a bounded
//    queue (maxQueued), in order. A submit beyond it is dropped (counted): the next
//    round asks again if the pressure is still there.
//  * Answers (the ledger's states, kube/eviction_ledger.h): 201/200 evicted; 404
//    not_found and 409 conflict (the UID precondition failed) mark the pod gone: the
//    API has no pod of that UID, the next victim is asked; 429 DisruptionBudget
//    (budget) refuses it for a back-off (a budget's 429 may carry a Retry-After while
//    the server has not processed the budget yet), the next victim is asked; any
//    other 429 (throttled), 401/403 (forbidden), 5xx and no reply (error) say nothing
//    about the pod: it fails, stays counted for a back-off (its Retry-After
//    lengthening it), then is asked again. The PodEvictor itself never retries.
//  * Events are best effort: one POST per answer, never retried, never in the way
//    of an eviction; failures are counted. At most kMaxEventsInFlight at once, more
//    are counted as failed without a request.
//  * Names are checked (DNS label namespace, DNS subdomain name) before they go into
//    a path; a bad one is refused at submit().
//  * Everything runs on the ApiClient's io_context thread; no threads of its own.
//    The ApiClient and the ledger must outlive the PodEvictor; an onResult callback
//    may submit() or stop(), not destroy it.
//    stop() (and the destructor) cancel what is queued or in flight and forget
//    those pods in the ledger: no answer will come to mark them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/result.h"
#include "kube/api_client.h"
#include "kube/eviction_ledger.h"

namespace koord {

struct PodEvictorConfig {
  std::string nodeName;  // the Events' source.host
  // Sent as deleteOptions.gracePeriodSeconds; nullopt: the pod's own (the field is
  // left out). Negative: std::invalid_argument at construction.
  std::optional<int64_t> gracePeriodSeconds;
  size_t maxQueued = 64;   // submitted requests waiting for a slot
  size_t maxInFlight = 4;  // concurrent Eviction POSTs; 0: std::invalid_argument
  bool events = true;      // an Event on the pod after each answer
  // An Eviction's deadline. A real kube-apiserver (1.32) answers a UID precondition
  // conflict on a pod that is not Running only after retrying it 20 x 500 ms, so
  // about 10 s: the client's usual 10 s would cut that answer off.
  std::chrono::nanoseconds requestTimeout = std::chrono::seconds(30);
};

// What became of one Eviction; the value is a metric label ("evicted", "budget").
enum class EvictionOutcome {
  kEvicted,    // 200/201
  kNotFound,   // 404: the pod is gone
  kConflict,   // 409: the UID precondition failed, that pod is gone
  kBudget,     // 429 with cause DisruptionBudget
  kThrottled,  // any other 429
  kForbidden,  // 401/403
  kError,      // 5xx, no reply, anything else
};
const char* toString(EvictionOutcome o);

// Why submit() did or did not take a request.
enum class SubmitResult {
  kAccepted,   // sent now or queued
  kInvalid,    // a namespace, name or uid that cannot go into the request
  kPending,    // the ledger has it in flight or evicted
  kBlocked,    // the ledger has it refused, in back-off
  kQueueFull,  // maxQueued waiting already: dropped
  kStopped,    // after stop()
};
const char* toString(SubmitResult r);

struct EvictionResult {
  EvictionRequest request;
  EvictionOutcome outcome = EvictionOutcome::kError;
  unsigned httpStatus = 0;              // 0: no reply
  std::string message;                  // the Status message (and causes), or the transport error
  std::chrono::nanoseconds latency{0};  // submit() to answer, by the injected clock
};

class PodEvictor {
 public:
  static constexpr size_t kMaxEventsInFlight = 16;

  PodEvictor(ApiClient& client, EvictionLedger& ledger, const Clock& clock,
             PodEvictorConfig config);
  ~PodEvictor();
  PodEvictor(const PodEvictor&) = delete;
  PodEvictor& operator=(const PodEvictor&) = delete;

  SubmitResult submit(EvictionRequest request);
  // Why submit() would refuse a request as kInvalid, naming the field: "eviction of
  // colo/../x: name \"../x\" is not a DNS subdomain". Ok otherwise.
  static Status check(const EvictionRequest& request);
  // Called once per answered Eviction, on the loop thread, after the ledger and the
  // counts were updated.
  void onResult(std::function<void(const EvictionResult&)> callback);
  // Cancels queued and in-flight Evictions (their pods are forgotten in the ledger)
  // and in-flight Events; later submits are refused with kStopped.
  void stop();

  // Answered Evictions by outcome.
  const std::map<EvictionOutcome, uint64_t>& counts() const { return counts_; }
  uint64_t eventsSent() const { return eventsSent_; }      // created (2xx)
  uint64_t eventsFailed() const { return eventsFailed_; }  // refused, no reply, or over the bound
  uint64_t dropped() const { return dropped_; }            // kQueueFull submits
  size_t inFlight() const { return inFlight_.size(); }
  size_t queued() const { return queue_.size(); }
  size_t eventsInFlight() const { return events_.size(); }

  // The Eviction's and the Event's bodies as sent (the Event stamped now).
  std::string evictionBody(const EvictionRequest& r) const;
  std::string eventBody(const EvictionRequest& r, EvictionOutcome outcome,
                        const std::string& error) const;

 private:
  struct Pending {
    EvictionRequest request;
    Clock::Monotonic submitted{};
    std::optional<ApiClient::RequestId> id;
  };
  void pump();
  void send(Pending p);
  void answered(uint64_t key, Result<ApiReply> reply);
  void sendEvent(const EvictionRequest& r, EvictionOutcome outcome, const std::string& error);

  ApiClient& client_;
  EvictionLedger& ledger_;
  const Clock& clock_;
  PodEvictorConfig config_;
  std::function<void(const EvictionResult&)> onResult_;
  std::deque<Pending> queue_;
  std::map<uint64_t, Pending> inFlight_;             // by our key
  std::map<uint64_t, ApiClient::RequestId> events_;  // Events in flight, by our key
  uint64_t nextKey_ = 1;
  bool stopped_ = false;
  std::map<EvictionOutcome, uint64_t> counts_;
  uint64_t eventsSent_ = 0;
  uint64_t eventsFailed_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace koord
