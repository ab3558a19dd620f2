// api_status: what a kube-apiserver reply means for the request that got it. Every
// error (and some successes, an Eviction's 201) carries a `Status` body: code,
// reason, message and details.causes (field errors of a 422, the DisruptionBudget of
// an Eviction's 429). parseStatus reads it; classify says what the client does next.
//
// Decisions (client-go's rules, written down once):
//  * 409 Conflict: the object changed under us: re-read it and retry (a NodeMetric
//    status update), never blindly.
//  * 410 Gone / Expired: a watch's or list's resourceVersion is too old: re-list.
//  * 429 TooManyRequests: retry after Retry-After (the caller's header); an
//    Eviction's 429 with cause DisruptionBudget is a refusal to evict, not a rate
//    limit: the pod stays, the eviction is tried on a later round.
//  * 5xx: retry with back-off (honouring a Retry-After). 401/403: credentials or
//    RBAC; retrying will not help until they change (the token is re-read when it
//    rotates). 404: absent. 400 and 422: our request was wrong: never retried as is,
//    logged with the causes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord {

struct StatusCause {
  std::string reason;  // "FieldValueTypeInvalid", "DisruptionBudget"
  std::string message;
  std::string field;  // "status.updateTime"; "" when none
};

struct ApiStatus {
  std::string status;  // "Success" | "Failure"
  int64_t code = 0;
  std::string reason;  // "Conflict", "NotFound", "TooManyRequests", ...
  std::string message;
  std::vector<StatusCause> causes;
  bool hasCause(std::string_view reason) const;
};

// Parses a Status body; `source` names it in errors ("PUT nodemetrics/rig-node/status").
Result<ApiStatus> parseStatus(std::string_view body, const std::string& source);

enum class ApiOutcome {
  kOk,            // 2xx
  kConflict,      // 409: re-read and retry
  kExpired,       // 410: re-list
  kThrottled,     // 429 (not a DisruptionBudget): wait Retry-After, retry
  kBudget,        // 429 with cause DisruptionBudget: not evicted now
  kRetry,         // 5xx: back off and retry
  kUnauthorized,  // 401
  kForbidden,     // 403
  kNotFound,      // 404
  kInvalid,       // 400, 422: our request is wrong; not retried as is
  kOther,         // anything else
};
const char* toString(ApiOutcome o);

// From the HTTP status and, when the body was a Status, its reason and causes.
ApiOutcome classify(unsigned httpStatus, const ApiStatus* status = nullptr);

}  // namespace koord
