#include "kube/informer_state.h"

#include <algorithm>

namespace koord {

std::chrono::nanoseconds Backoff::next() {
  double r = random_ ? random_() : 0.0;
  r = std::clamp(r, 0.0, 1.0);
  // Jitter after the cap, so a fleet retrying an API server that is down does not
  // fall into step at exactly the cap.
  const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(base_ * (1.0 + r));
  base_ = std::min<std::chrono::nanoseconds>(base_ * 2, kCap);
  return wait;
}

InformerState::Action InformerState::next() {
  switch (pending_) {
    case Pending::kList:
      if (lists_) ++relists_;
      lists_ = true;
      return {Step::kList, "", {}};
    case Pending::kWatch:
      return {Step::kWatch, rv_, {}};
    case Pending::kWaitThenResume:
      pending_ = rv_.empty() ? Pending::kList : Pending::kWatch;
      return {Step::kWait, "", waitFor_};
  }
  return {};
}

void InformerState::listed(std::string resourceVersion, std::optional<nlohmann::json> object) {
  rv_ = std::move(resourceVersion);
  object_ = std::move(object);
  synced_ = true;
  lastFailureTransport_ = false;
  // A list after a 410 is not yet progress: a server that answers every watch from
  // it with 410 again (a watch cache behind its storage) must meet a growing
  // back-off, not a list-watch loop at the rate limit. The watch's first event or
  // bookmark, or its clean end, clears it.
  if (!goneOnce_) backoff_.reset();
  pending_ = rv_.empty() ? Pending::kList : Pending::kWatch;
  if (rv_.empty()) {
    // A list without a resourceVersion cannot start a watch: treat as a failure.
    waitFor_ = backoff_.next();
    pending_ = Pending::kWaitThenResume;
  }
}

bool InformerState::event(const WatchEvent& e) {
  switch (e.type) {
    case WatchEventType::kError:
      failed(e.statusCode == 410 ? 410u : 0u);
      return false;
    case WatchEventType::kBookmark:
      rv_ = e.resourceVersion;
      backoff_.reset();
      goneOnce_ = false;
      return false;
    case WatchEventType::kAdded:
    case WatchEventType::kModified:
      object_ = e.object;
      break;
    case WatchEventType::kDeleted:
      object_.reset();
      break;
  }
  rv_ = e.resourceVersion;
  backoff_.reset();
  goneOnce_ = false;
  lastFailureTransport_ = false;
  pending_ = Pending::kWatch;
  return true;
}

void InformerState::watchEnded() {
  goneOnce_ = false;
  pending_ = rv_.empty() ? Pending::kList : Pending::kWatch;
}

void InformerState::failed(unsigned httpStatus, std::optional<std::chrono::seconds> retryAfter) {
  if (httpStatus == 410) {
    rv_.clear();
    if (!goneOnce_) {
      goneOnce_ = true;
      pending_ = Pending::kList;
      return;
    }
  }
  // A reply after failures without one: the server is back. Its first answers may
  // still be errors (a 429 while its storage initialises, a 403 before its RBAC
  // cache is loaded); the back-off grown during the outage must not delay them.
  if (httpStatus != 0 && lastFailureTransport_) backoff_.reset();
  lastFailureTransport_ = httpStatus == 0;
  if (retryAfter && (httpStatus == 429 || httpStatus == 503)) {
    // The server says when: wait that, not the back-off (client-go does the same).
    // At least 1 s: "Retry-After: 0" must not become a loop.
    waitFor_ =
        std::clamp<std::chrono::nanoseconds>(*retryAfter, std::chrono::seconds(1), kMaxRetryAfter);
  } else {
    waitFor_ = backoff_.next();
  }
  pending_ = Pending::kWaitThenResume;
}

}  // namespace koord
