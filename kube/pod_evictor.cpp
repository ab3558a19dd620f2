#include "kube/pod_evictor.h"

#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/time_format.h"
#include "kube/api_status.h"
#include "kube/http_client.h"
#include "kube/object_name.h"

namespace koord {
namespace {

std::string podPath(const EvictionRequest& r) {
  return "/api/v1/namespaces/" + r.ns + "/pods/" + r.name;
}

EvictionOutcome outcomeOf(unsigned httpStatus, const ApiStatus* status) {
  switch (classify(httpStatus, status)) {
    case ApiOutcome::kOk:
      return EvictionOutcome::kEvicted;
    case ApiOutcome::kNotFound:
      return EvictionOutcome::kNotFound;
    case ApiOutcome::kConflict:
      return EvictionOutcome::kConflict;
    case ApiOutcome::kBudget:
      return EvictionOutcome::kBudget;
    case ApiOutcome::kThrottled:
      return EvictionOutcome::kThrottled;
    case ApiOutcome::kUnauthorized:
    case ApiOutcome::kForbidden:
      return EvictionOutcome::kForbidden;
    default:
      return EvictionOutcome::kError;
  }
}

// The Status message with the causes it does not already say ("Cannot evict pod as
// it would violate the pod's disruption budget.; The disruption budget be-run needs
// 1 healthy pods and has 1 currently"); "HTTP <code>" when the body is no Status.
std::string statusText(unsigned httpStatus, const Result<ApiStatus>& st) {
  if (!st.ok() || (st->message.empty() && st->causes.empty())) {
    return httpStatus / 100 == 2 ? "" : "HTTP " + std::to_string(httpStatus);
  }
  std::string text = st->message;
  for (const StatusCause& c : st->causes) {
    if (c.message.empty() || text.find(c.message) != std::string::npos) continue;
    text += (text.empty() ? "" : "; ") + c.message;
  }
  return text;
}

}  // namespace

const char* toString(EvictionOutcome o) {
  switch (o) {
    case EvictionOutcome::kEvicted:
      return "evicted";
    case EvictionOutcome::kNotFound:
      return "not_found";
    case EvictionOutcome::kConflict:
      return "conflict";
    case EvictionOutcome::kBudget:
      return "budget";
    case EvictionOutcome::kThrottled:
      return "throttled";
    case EvictionOutcome::kForbidden:
      return "forbidden";
    case EvictionOutcome::kError:
      return "error";
  }
  return "error";
}

const char* toString(SubmitResult r) {
  switch (r) {
    case SubmitResult::kAccepted:
      return "accepted";
    case SubmitResult::kInvalid:
      return "invalid";
    case SubmitResult::kPending:
      return "pending";
    case SubmitResult::kBlocked:
      return "blocked";
    case SubmitResult::kQueueFull:
      return "queue_full";
    case SubmitResult::kStopped:
      return "stopped";
  }
  return "invalid";
}

PodEvictor::PodEvictor(ApiClient& client, EvictionLedger& ledger, const Clock& clock,
                       PodEvictorConfig config)
    : client_(client), ledger_(ledger), clock_(clock), config_(std::move(config)) {
  if (config_.maxInFlight == 0) {
    throw std::invalid_argument("pod evictor: maxInFlight must be at least 1");
  }
  if (config_.gracePeriodSeconds && *config_.gracePeriodSeconds < 0) {
    throw std::invalid_argument("pod evictor: gracePeriodSeconds must not be negative, got " +
                                std::to_string(*config_.gracePeriodSeconds));
  }
}

PodEvictor::~PodEvictor() { stop(); }

void PodEvictor::onResult(std::function<void(const EvictionResult&)> callback) {
  onResult_ = std::move(callback);
}

void PodEvictor::stop() {
  stopped_ = true;
  for (auto& [key, p] : inFlight_) {
    if (p.id) client_.cancel(*p.id);
    ledger_.forget(p.request.uid);
  }
  inFlight_.clear();
  for (const Pending& p : queue_) ledger_.forget(p.request.uid);
  queue_.clear();
  for (const auto& [key, id] : events_) client_.cancel(id);
  events_.clear();
}

Status PodEvictor::check(const EvictionRequest& r) {
  const std::string what = "eviction of " + r.ns + "/" + r.name + ": ";
  if (!isDnsLabel(r.ns)) return makeError(what + "namespace \"" + r.ns + "\" is not a DNS label");
  if (!isDnsSubdomain(r.name)) {
    return makeError(what + "name \"" + r.name + "\" is not a DNS subdomain");
  }
  if (r.uid.empty()) return makeError(what + "uid is empty");
  // Cannot fail after the checks above; kept as the transport's own guard.
  if (!validTarget(podPath(r) + "/eviction")) return makeError(what + "invalid request target");
  return Ok{};
}

SubmitResult PodEvictor::submit(EvictionRequest request) {
  if (stopped_) return SubmitResult::kStopped;
  if (!check(request).ok()) return SubmitResult::kInvalid;
  const Clock::Monotonic now = clock_.now();
  if (ledger_.pending(request.uid, now)) return SubmitResult::kPending;
  if (ledger_.blocked(request.uid, now)) return SubmitResult::kBlocked;
  if (inFlight_.size() >= config_.maxInFlight && queue_.size() >= config_.maxQueued) {
    ++dropped_;
    return SubmitResult::kQueueFull;
  }
  ledger_.requested(request.uid, now);
  queue_.push_back(Pending{std::move(request), now, std::nullopt});
  pump();
  return SubmitResult::kAccepted;
}

void PodEvictor::pump() {
  while (!stopped_ && !queue_.empty() && inFlight_.size() < config_.maxInFlight) {
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    send(std::move(p));
  }
}

std::string PodEvictor::evictionBody(const EvictionRequest& r) const {
  nlohmann::ordered_json deleteOptions{{"preconditions", {{"uid", r.uid}}}};
  if (config_.gracePeriodSeconds) deleteOptions["gracePeriodSeconds"] = *config_.gracePeriodSeconds;
  nlohmann::ordered_json body{{"apiVersion", "policy/v1"},
                              {"kind", "Eviction"},
                              {"metadata", {{"name", r.name}, {"namespace", r.ns}}},
                              {"deleteOptions", std::move(deleteOptions)}};
  return body.dump();
}

void PodEvictor::send(Pending p) {
  ApiRequest req;
  req.verb = "POST";
  req.path = podPath(p.request) + "/eviction";
  req.resource = "pods/eviction";
  req.body = evictionBody(p.request);
  req.timeout = config_.requestTimeout;
  const uint64_t key = nextKey_++;
  // The client calls back later, on the loop, never from inside send().
  auto [it, inserted] = inFlight_.emplace(key, std::move(p));
  it->second.id = client_.send(
      std::move(req), [this, key](Result<ApiReply> reply) { answered(key, std::move(reply)); });
}

void PodEvictor::answered(uint64_t key, Result<ApiReply> reply) {
  auto it = inFlight_.find(key);
  if (it == inFlight_.end()) return;  // cancelled
  Pending p = std::move(it->second);
  inFlight_.erase(it);
  const Clock::Monotonic now = clock_.now();

  EvictionResult result;
  result.request = std::move(p.request);
  result.latency = now - p.submitted;
  std::optional<std::chrono::seconds> retryAfter;
  if (!reply.ok()) {
    result.outcome = EvictionOutcome::kError;
    result.message = reply.error().message;
  } else {
    result.httpStatus = reply->status;
    retryAfter = reply->retryAfter;
    const std::string source =
        "POST pods/eviction " + result.request.ns + "/" + result.request.name;
    auto st = parseStatus(reply->body, source);
    result.outcome = outcomeOf(reply->status, st.ok() ? &*st : nullptr);
    result.message = statusText(reply->status, st);
  }

  const std::string& uid = result.request.uid;
  switch (result.outcome) {
    case EvictionOutcome::kEvicted:
      ledger_.evicted(uid, now);
      break;
    case EvictionOutcome::kNotFound:
    case EvictionOutcome::kConflict:
      ledger_.gone(uid, now);
      break;
    case EvictionOutcome::kBudget:
      ledger_.refused(uid, now, retryAfter);
      break;
    default:  // throttled, forbidden, error: nothing said about the pod
      ledger_.failed(uid, now, retryAfter);
      break;
  }
  ++counts_[result.outcome];

  // No Event for not_found and conflict: the pod the strategy chose is gone (deleted,
  // or replaced by one with a new UID), so there is no object to record it on.
  if (config_.events && result.outcome != EvictionOutcome::kNotFound &&
      result.outcome != EvictionOutcome::kConflict) {
    sendEvent(result.request, result.outcome, result.message);
  }
  pump();
  if (onResult_) onResult_(result);
}

std::string PodEvictor::eventBody(const EvictionRequest& r, EvictionOutcome outcome,
                                  const std::string& error) const {
  const bool ok = outcome == EvictionOutcome::kEvicted;
  std::string message =
      "evict Pod:" + r.ns + "/" + r.name + ", reason: evicted, message: " + r.message;
  if (!ok) message += ", error " + error;
  const std::string now = rfc3339(clock_.wallNow());
  nlohmann::ordered_json event{{"apiVersion", "v1"},
                               {"kind", "Event"},
                               {"metadata", {{"generateName", r.name + "."}, {"namespace", r.ns}}},
                               {"involvedObject",
                                {{"kind", "Pod"},
                                 {"namespace", r.ns},
                                 {"name", r.name},
                                 {"uid", r.uid},
                                 {"apiVersion", "v1"}}},
                               {"reason", ok ? "evictPodSuccess" : "evictPodFail"},
                               {"message", message},
                               {"source", {{"component", "koordlet"}, {"host", config_.nodeName}}},
                               {"firstTimestamp", now},
                               {"lastTimestamp", now},
                               {"count", 1},
                               {"type", "Warning"}};
  return event.dump();
}

void PodEvictor::sendEvent(const EvictionRequest& r, EvictionOutcome outcome,
                           const std::string& error) {
  if (events_.size() >= kMaxEventsInFlight) {
    ++eventsFailed_;
    return;
  }
  ApiRequest req;
  req.verb = "POST";
  req.path = "/api/v1/namespaces/" + r.ns + "/events";
  req.resource = "events";
  req.body = eventBody(r, outcome, error);
  const uint64_t key = nextKey_++;
  events_[key] = client_.send(std::move(req), [this, key](Result<ApiReply> reply) {
    if (events_.erase(key) == 0) return;
    if (reply.ok() && reply->status / 100 == 2) {
      ++eventsSent_;
    } else {
      ++eventsFailed_;
    }
  });
}

}  // namespace koord
