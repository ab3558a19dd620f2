#include "kube/status_reporter.h"

#include "kube/api_status.h"

namespace koord {

StatusReporter::StatusReporter(ApiClient& client, std::string resource, std::string objectPath,
                               const Clock& clock, FailureLog& failures)
    : client_(client),
      resource_(std::move(resource)),
      path_(std::move(objectPath)),
      clock_(&clock),
      failures_(failures) {}

StatusReporter::~StatusReporter() { cancel(); }

void StatusReporter::cancel() {
  if (inFlight_) client_.cancel(*inFlight_);
  inFlight_.reset();
}

bool StatusReporter::report(const nlohmann::json& object, BuildFn build, DoneFn done) {
  if (inFlight_) return false;
  build_ = std::move(build);
  done_ = std::move(done);
  put(object, 1);
  return true;
}

void StatusReporter::put(nlohmann::json object, int attempt) {
  auto status = build_();
  if (!status.ok()) {
    finish(false, status.error().message);
    return;
  }
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) {
    finish(false, "the object has no metadata");
    return;
  }
  object["metadata"].erase("managedFields");
  object["status"] = std::move(*status);
  ApiRequest req;
  req.verb = "PUT";
  req.resource = resource_ + "/status";
  req.path = path_ + "/status";
  req.body = object.dump();
  lastBodyBytes_ = req.body.size();
  // The client calls back later, on the loop, never from inside send().
  inFlight_ = client_.send(std::move(req), [this, attempt](Result<ApiReply> reply) {
    inFlight_.reset();
    if (!reply.ok()) {
      finish(false, "PUT " + resource_ + "/status: " + reply.error().message);
      return;
    }
    if (reply->status == 200 || reply->status == 201) {
      finish(true, "");
      return;
    }
    const std::string source = "PUT " + resource_ + "/status";
    auto st = parseStatus(reply->body, source);
    const ApiOutcome outcome = classify(reply->status, st.ok() ? &*st : nullptr);
    if (outcome == ApiOutcome::kConflict && attempt < kMaxAttempts) {
      ++conflicts_;
      reread(attempt + 1);
      return;
    }
    std::string why = source + ": HTTP " + std::to_string(reply->status);
    if (st.ok()) {
      why += " " + st->reason + ": " + st->message;
      // The message usually lists the causes already; add those it does not.
      for (const auto& c : st->causes) {
        if (st->message.find(c.message) != std::string::npos) continue;
        why += "; " + (c.field.empty() ? std::string() : c.field + ": ") + c.message;
      }
    }
    if (outcome == ApiOutcome::kConflict)
      why += " (gave up after " + std::to_string(attempt) + " attempts)";
    finish(false, why);
  });
}

void StatusReporter::reread(int attempt) {
  ApiRequest req;
  req.verb = "GET";
  req.resource = resource_;
  req.path = path_;
  inFlight_ = client_.send(std::move(req), [this, attempt](Result<ApiReply> reply) {
    inFlight_.reset();
    if (!reply.ok()) {
      finish(false, "GET " + resource_ + ": " + reply.error().message);
      return;
    }
    if (reply->status != 200) {
      finish(false, "GET " + resource_ + ": HTTP " + std::to_string(reply->status));
      return;
    }
    auto object = nlohmann::json::parse(reply->body, nullptr, false);
    if (object.is_discarded() || !object.is_object()) {
      finish(false, "GET " + resource_ + ": the reply is not a JSON object");
      return;
    }
    put(std::move(object), attempt);
  });
}

void StatusReporter::finish(bool ok, const std::string& error) {
  const std::string key = "kube-api " + resource_ + "/status";
  if (ok) {
    ++succeeded_;
    lastSuccess_ = clock_->wallNow();
    lastError_.clear();
    failures_.success(key);
  } else {
    ++failedReports_;
    lastError_ = error;
    failures_.failure(key, Severity::kWarning, error);
  }
  auto done = std::move(done_);
  done_ = {};
  if (done) done(ok);
}

}  // namespace koord
