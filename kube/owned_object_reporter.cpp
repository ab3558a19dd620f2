#include "kube/owned_object_reporter.h"

#include "kube/api_status.h"

#include <algorithm>
#include <utility>

namespace koord {
namespace {

std::string rvOf(const nlohmann::json& obj) {
  const auto ptr = "/metadata/resourceVersion"_json_pointer;
  return obj.is_object() && obj.contains(ptr) && obj[ptr].is_string() ? obj[ptr].get<std::string>()
                                                                      : std::string();
}

}  // namespace

OwnedObjectReporter::OwnedObjectReporter(ApiClient& client, ReportedKind kind, std::string nodeName,
                                         const Clock& clock, FailureLog& failures)
    : client_(client),
      kind_(std::move(kind)),
      failureKey_("kube-api " + kind_.resource),
      nodeName_(std::move(nodeName)),
      path_(kind_.collectionPath + "/" + nodeName_),
      clock_(&clock),
      failures_(failures) {}

OwnedObjectReporter::~OwnedObjectReporter() { cancel(); }

void OwnedObjectReporter::cancel() {
  if (inFlight_) client_.cancel(*inFlight_);
  inFlight_.reset();
}

bool OwnedObjectReporter::sync(const std::optional<nlohmann::json>& current,
                               std::shared_ptr<const ReportedContent> content,
                               const std::string& nodeUid) {
  if (inFlight_ || !content) return false;
  if (streak_ > 0 && clock_->now() < retryAt_ && content_ && content->equals(*content_)) {
    return false;
  }
  content_ = std::move(content);
  nodeUid_ = nodeUid;
  const nlohmann::json* seen = current ? &*current : nullptr;
  // The informer still shows what our last write replaced: our reply is newer. For
  // this one sync only.
  std::optional<nlohmann::json> written = std::exchange(lastWritten_, std::nullopt);
  if (written && (seen == nullptr ? replacedRv_.empty() : rvOf(*seen) == replacedRv_)) {
    seen = &*written;
  }
  if (seen == nullptr) {
    lastChange_ = "absent";
    create(1);
    return true;
  }
  auto why = content_->differs(*seen);
  if (!why) {
    ++unchanged_;
    return true;
  }
  lastChange_ = *why;
  update(*seen, 1);
  return true;
}

void OwnedObjectReporter::create(int attempt) {
  ApiRequest req;
  req.verb = "POST";
  req.resource = kind_.resource;
  req.path = kind_.collectionPath;
  req.body = content_->newObject(nodeName_, nodeUid_).dump();
  lastBodyBytes_ = req.body.size();
  inFlight_ = client_.send(std::move(req), [this, attempt](Result<ApiReply> reply) {
    inFlight_.reset();
    if (reply.ok() && reply->status == 201) {
      ++creates_;
      written("", *reply);
      return;
    }
    if (reply.ok() && reply->status == 409 && attempt < kMaxAttempts) {
      ++conflicts_;  // created meanwhile: read it and update it
      reread(attempt + 1);
      return;
    }
    fail("POST", reply);
  });
}

void OwnedObjectReporter::update(const nlohmann::json& current, int attempt) {
  ApiRequest req;
  req.verb = "PUT";
  req.resource = kind_.resource;
  req.path = path_;
  req.body = content_->applied(current).dump();
  lastBodyBytes_ = req.body.size();
  const std::string basedOn = rvOf(current);
  inFlight_ = client_.send(std::move(req), [this, attempt, basedOn](Result<ApiReply> reply) {
    inFlight_.reset();
    if (reply.ok() && reply->status == 200) {
      ++updates_;
      written(basedOn, *reply);
      return;
    }
    if (reply.ok() && reply->status == 409 && attempt < kMaxAttempts) {
      ++conflicts_;
      reread(attempt + 1);
      return;
    }
    if (reply.ok() && reply->status == 404 && attempt < kMaxAttempts) {
      create(attempt + 1);
      return;
    }
    fail("PUT", reply);
  });
}

void OwnedObjectReporter::reread(int attempt) {
  ApiRequest req;
  req.verb = "GET";
  req.resource = kind_.resource;
  req.path = path_;
  inFlight_ = client_.send(std::move(req), [this, attempt](Result<ApiReply> reply) {
    inFlight_.reset();
    if (reply.ok() && reply->status == 404) {
      create(attempt);
      return;
    }
    if (!reply.ok() || reply->status != 200) {
      fail("GET", reply);
      return;
    }
    auto object = nlohmann::json::parse(reply->body, nullptr, false);
    if (object.is_discarded() || !object.is_object()) {
      finish(false, "GET " + kind_.resource + ": the reply is not a JSON object");
      return;
    }
    if (!content_->differs(object)) {
      finish(true, "");
      return;
    }
    update(object, attempt);
  });
}

void OwnedObjectReporter::written(const std::string& basedOnRv, const ApiReply& reply) {
  auto object = nlohmann::json::parse(reply.body, nullptr, false);
  if (!object.is_discarded() && object.is_object()) {
    lastWritten_ = std::move(object);
    replacedRv_ = basedOnRv;
  } else {
    lastWritten_.reset();
  }
  finish(true, "");
}

void OwnedObjectReporter::fail(const std::string& verb, const Result<ApiReply>& reply) {
  const std::string source = verb + " " + kind_.resource;
  if (!reply.ok()) {
    finish(false, source + ": " + reply.error().message);
    return;
  }
  retryAfter_ = reply->retryAfter;
  std::string why = source + ": HTTP " + std::to_string(reply->status);
  auto st = parseStatus(reply->body, source);
  if (st.ok()) why += " " + st->reason + ": " + st->message;
  if (reply->status == 409) why += " (gave up after " + std::to_string(kMaxAttempts) + " attempts)";
  finish(false, why);
}

void OwnedObjectReporter::finish(bool ok, const std::string& error) {
  if (ok) {
    lastSuccess_ = clock_->wallNow();
    lastError_.clear();
    streak_ = 0;
    failures_.success(failureKey_);
  } else {
    ++failed_;
    lastError_ = error;
    failures_.failure(failureKey_, Severity::kWarning, error);
    // 3 s doubling to 5 min; a Retry-After at least, never past 5 min.
    std::chrono::seconds wait = kFirstBackoff * (1LL << std::min(streak_, 7));
    if (retryAfter_) wait = std::max(wait, *retryAfter_);
    wait = std::min(wait, kMaxBackoff);
    ++streak_;
    retryAt_ = clock_->now() + wait;
  }
  retryAfter_.reset();
}

}  // namespace koord
