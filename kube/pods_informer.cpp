#include "kube/pods_informer.h"

#include <functional>
#include <string_view>

namespace koord {

PodsInformer::PodsInformer(boost::asio::io_context& io, KubeletClient& client,
                           std::chrono::nanoseconds interval, const Clock& clock,
                           FailureLog& failures)
    : client_(client), interval_(interval), clock_(&clock), failures_(failures), timer_(io) {}

void PodsInformer::start() {
  stopped_ = false;
  started_ = true;
  poll();
}

void PodsInformer::stop() {
  stopped_ = true;
  timer_.cancel();
  client_.cancel();
}

void PodsInformer::schedule() {
  if (stopped_) return;
  timer_.expires_after(interval_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    // A handler already queued when syncNow cancelled the timer: that sync runs.
    if (ec || stopped_ || inFlight_) return;
    poll();
  });
}

void PodsInformer::syncNow() {
  if (stopped_ || !started_) return;  // before start: the first sync is start()'s
  if (inFlight_) {
    if (!again_) ++wakeUps_;
    again_ = true;
    return;
  }
  ++wakeUps_;
  timer_.cancel();
  poll();
}

void PodsInformer::poll() {
  auto begin = clock_->now();
  inFlight_ = true;
  client_.get("/pods/", [this, begin](Result<KubeletResponse> reply) {
    inFlight_ = false;
    KubeletRequestRecord rec;
    rec.seconds = std::chrono::duration<double>(clock_->now() - begin).count();
    rec.code = reply ? std::to_string(reply->status) : transportErrorClass(reply.error());
    rec.failure = apply(reply);
    if (record_) record_(rec);
    if (again_ && !stopped_) {
      again_ = false;
      timer_.cancel();
      poll();
      return;
    }
    schedule();
  });
}

std::string PodsInformer::apply(const Result<KubeletResponse>& reply) {
  const std::string key = "kubelet " + client_.endpoint() + "/pods/";
  std::string failure;
  std::string message;
  std::vector<Pod> parsed;
  if (!reply) {
    failure = "transport";
    message = reply.error().message;
  } else if (reply->status != 200) {
    failure = "status";
    message = "HTTP " + std::to_string(reply->status);
    if (reply->status == 401 || reply->status == 403) {
      message += " (check --kubelet-token-file and the nodes/proxy RBAC rule)";
    }
  } else if (synced_ && reply->body.size() == lastBodySize_ &&
             std::hash<std::string_view>{}(reply->body) == lastBodyHash_) {
    // Byte for byte the list we hold (its size and 64-bit hash): nothing to parse,
    // and nothing changed for those who follow the list.
    ++unchanged_;
    failures_.success(key);
    lastOk_ = true;
    lastError_.clear();
    return "";
  } else if (auto pods = parsePodList(reply->body); !pods) {
    failure = "invalid";
    message = "reply is not a PodList: " + pods.error().message;
  } else if (pods->empty()) {
    failure = "empty";
    message = "PodList with zero pods (kubelet restarting?)";
  } else {
    parsed = std::move(pods).value();
  }

  if (!failure.empty()) {
    lastOk_ = false;
    lastError_ = message;
    failures_.failure(key, Severity::kWarning,
                      key + ": " + message +
                          (synced_ ? "; keeping the last good pod list"
                                   : "; pods are unavailable, node metrics continue"));
    return failure;
  }
  failures_.success(key);
  if (!synced_) KLOG_INFO << key << ": " << parsed.size() << " pods";
  pods_ = std::move(parsed);
  lastBodySize_ = reply->body.size();
  lastBodyHash_ = std::hash<std::string_view>{}(reply->body);
  synced_ = true;
  lastOk_ = true;
  lastError_.clear();
  if (update_) update_(pods_);
  return "";
}

}  // namespace koord
