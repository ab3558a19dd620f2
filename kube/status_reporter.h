// StatusReporter: writes the status subresource of one object (the node's
// NodeMetric) with optimistic concurrency, as koordlet's UpdateStatus with
// RetryOnConflict: PUT <object>/status carrying the object's resourceVersion; a 409
// (the object changed since we read it) re-reads the object and tries again with
// its new resourceVersion, up to kMaxAttempts in one report. Anything else that
// fails ends the report; the next one comes at the caller's next interval (a report
// is never retried in a loop).
//
// The body is the object as last read, its status replaced and
// metadata.managedFields left out (an update without managedFields keeps the
// server's).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "base/result.h"
#include "kube/api_client.h"

namespace koord {

class StatusReporter {
 public:
  static constexpr int kMaxAttempts = 5;
  // Builds the status to write; an error skips this report (and is its lastError).
  using BuildFn = std::function<Result<nlohmann::json>()>;
  using DoneFn = std::function<void(bool ok)>;

  // resource: "nodemetrics" (counts and messages); objectPath: the object's URL
  // path, "/apis/slo.koordinator.sh/v1alpha1/nodemetrics/rig-node".
  StatusReporter(ApiClient& client, std::string resource, std::string objectPath,
                 const Clock& clock, FailureLog& failures);
  ~StatusReporter();
  StatusReporter(const StatusReporter&) = delete;
  StatusReporter& operator=(const StatusReporter&) = delete;

  // One report of `build()`'s status onto `object` (the latest copy the caller
  // has). Ignored while one is in flight (returns false). done, when given, runs
  // once at the end.
  bool report(const nlohmann::json& object, BuildFn build, DoneFn done = {});
  void cancel();

  bool inFlight() const { return inFlight_.has_value(); }
  std::optional<Clock::Wall> lastSuccess() const { return lastSuccess_; }
  const std::string& lastError() const { return lastError_; }  // "" after a success
  uint64_t succeeded() const { return succeeded_; }
  uint64_t failed() const { return failedReports_; }
  uint64_t conflicts() const { return conflicts_; }
  size_t lastBodyBytes() const { return lastBodyBytes_; }

 private:
  void put(nlohmann::json object, int attempt);
  void reread(int attempt);
  void finish(bool ok, const std::string& error);

  ApiClient& client_;
  std::string resource_;
  std::string path_;
  const Clock* clock_;
  FailureLog& failures_;
  BuildFn build_;
  DoneFn done_;
  std::optional<ApiClient::RequestId> inFlight_;
  std::optional<Clock::Wall> lastSuccess_;
  std::string lastError_;
  uint64_t succeeded_ = 0;
  uint64_t failedReports_ = 0;
  uint64_t conflicts_ = 0;
  size_t lastBodyBytes_ = 0;
};

}  // namespace koord
