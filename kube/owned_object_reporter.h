// OwnedObjectReporter: keeps one cluster-scoped object named after the node (its
// NodeResourceTopology, its Device) saying what the agent computed, as koordlet's
// reporters of both do: create it when absent, update it only when what the agent manages in it
// differs, and send nothing otherwise. The caller syncs every --node-topology-sync-interval with
// the object its informer last saw (a watch: changes by others are seen and undone
// at the next sync, as koordlet's informer does).
//
// Requests:
//  * absent (informer synced, no object): POST the new object; a 409 AlreadyExists
//    (created meanwhile) GETs it and carries on as below;
//  * present and different: PUT it with the content applied, carrying its
//    resourceVersion; a 409 Conflict GETs it and tries again (up to kMaxAttempts per
//    sync); a 404 (deleted meanwhile) creates it;
//  * present and the same: nothing.
// The informer's copy may not have caught up with our own last write yet (the watch
// event comes a moment after the reply): while it still shows the resourceVersion
// our write replaced, the object our write returned stands in for it, so a sync
// right after a write does not send the same update again.
// Our write's reply stands in for one sync only: after that the informer is believed
// (a deletion right after our create is then seen and undone).
// A failed sync is counted and logged once per streak (FailureLog key "kube-api <resource>"); the
// syncs after it are skipped for a back-off of 3 s doubling to 5 min (at least a reply's
// Retry-After, at most 5 min), so a lasting refusal (403, 422) costs a few writes an hour, not one
// per sync. A success or a change of content ends the back-off. Never retried in a loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "kube/api_client.h"

namespace koord {

// One kind's content: what the agent manages in its object, and the three things
// the reporter asks of it.
class ReportedContent {
 public:
  virtual ~ReportedContent() = default;
  // The object to create (name, owner reference to the Node when its uid is known).
  virtual nlohmann::json newObject(std::string_view nodeName, std::string_view nodeUid) const = 0;
  // The server's object with the content applied: the body of an update.
  virtual nlohmann::json applied(const nlohmann::json& current) const = 0;
  // Why the server's object differs from the content; nullopt when it says the same.
  virtual std::optional<std::string> differs(const nlohmann::json& current) const = 0;
  virtual bool equals(const ReportedContent& other) const = 0;
};

// A ReportedContent from a content type and its three pure functions (the kind's
// object file: kube/nrt_object.h, kube/device_object.h).
template <typename Content,
          nlohmann::json (*New)(std::string_view, std::string_view, const Content&),
          nlohmann::json (*Apply)(const nlohmann::json&, const Content&),
          std::optional<std::string> (*Differs)(const nlohmann::json&, const Content&)>
class ContentReport final : public ReportedContent {
 public:
  explicit ContentReport(Content content) : content_(std::move(content)) {}
  nlohmann::json newObject(std::string_view nodeName, std::string_view nodeUid) const override {
    return New(nodeName, nodeUid, content_);
  }
  nlohmann::json applied(const nlohmann::json& current) const override {
    return Apply(current, content_);
  }
  std::optional<std::string> differs(const nlohmann::json& current) const override {
    return Differs(current, content_);
  }
  bool equals(const ReportedContent& other) const override {
    const auto* o = dynamic_cast<const ContentReport*>(&other);
    return o != nullptr && o->content_ == content_;
  }

 private:
  Content content_;
};

struct ReportedKind {
  std::string resource;        // "noderesourcetopologies", for requests and logs
  std::string collectionPath;  // "/apis/<group>/<version>/<resource>"
};

class OwnedObjectReporter {
 public:
  static constexpr int kMaxAttempts = 5;
  static constexpr std::chrono::seconds kFirstBackoff{3};
  static constexpr std::chrono::seconds kMaxBackoff{300};

  OwnedObjectReporter(ApiClient& client, ReportedKind kind, std::string nodeName,
                      const Clock& clock, FailureLog& failures);
  ~OwnedObjectReporter();
  OwnedObjectReporter(const OwnedObjectReporter&) = delete;
  OwnedObjectReporter& operator=(const OwnedObjectReporter&) = delete;

  // One sync of `content` onto `current` (the informer's object; nullopt: there is
  // none). nodeUid: the Node's metadata.uid, for the owner reference of a created
  // object ("" = none). Returns false (and does nothing) while a sync is in flight
  // or backing off after a failure.
  bool sync(const std::optional<nlohmann::json>& current,
            std::shared_ptr<const ReportedContent> content, const std::string& nodeUid);
  void cancel();

  bool inFlight() const { return inFlight_.has_value(); }
  uint64_t creates() const { return creates_; }
  uint64_t updates() const { return updates_; }
  uint64_t unchanged() const { return unchanged_; }  // syncs that sent nothing
  uint64_t conflicts() const { return conflicts_; }
  uint64_t failed() const { return failed_; }
  const std::string& lastError() const { return lastError_; }
  const std::string& lastChange() const { return lastChange_; }  // why the last write was sent
  size_t lastBodyBytes() const { return lastBodyBytes_; }
  std::optional<Clock::Wall> lastSuccess() const { return lastSuccess_; }
  // Failed syncs in a row, and when the next may start.
  int failureStreak() const { return streak_; }
  Clock::Monotonic retryAt() const { return retryAt_; }

 private:
  void create(int attempt);
  void update(const nlohmann::json& current, int attempt);
  void reread(int attempt);
  void written(const std::string& basedOnRv, const ApiReply& reply);
  void fail(const std::string& verb, const Result<ApiReply>& reply);
  void finish(bool ok, const std::string& error);

  ApiClient& client_;
  ReportedKind kind_;
  std::string failureKey_;
  std::string nodeName_;
  std::string path_;
  const Clock* clock_;
  FailureLog& failures_;
  std::shared_ptr<const ReportedContent> content_;
  std::string nodeUid_;
  std::optional<ApiClient::RequestId> inFlight_;
  // Our last write's reply and the resourceVersion of the object it replaced.
  std::optional<nlohmann::json> lastWritten_;
  std::string replacedRv_;
  std::optional<std::chrono::seconds> retryAfter_;  // of the failing reply
  int streak_ = 0;
  Clock::Monotonic retryAt_{};
  uint64_t creates_ = 0;
  uint64_t updates_ = 0;
  uint64_t unchanged_ = 0;
  uint64_t conflicts_ = 0;
  uint64_t failed_ = 0;
  std::string lastError_;
  std::string lastChange_;
  size_t lastBodyBytes_ = 0;
  std::optional<Clock::Wall> lastSuccess_;
};

}  // namespace koord
