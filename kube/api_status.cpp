#include "kube/api_status.h"

#include <nlohmann/json.hpp>

#include "base/quote.h"
#include "kube/json_type.h"

namespace koord {
namespace {

// A string member of `o`; absent is "", another type an error naming the field.
Result<std::string> stringField(const nlohmann::json& o, const char* key, const std::string& at) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::string();
  if (!it->is_string())
    return makeError(at + key + ": expected a string, got " + jsonTypeName(*it));
  return it->get<std::string>();
}

}  // namespace

bool ApiStatus::hasCause(std::string_view r) const {
  for (const StatusCause& c : causes) {
    if (c.reason == r) return true;
  }
  return false;
}

Result<ApiStatus> parseStatus(std::string_view body, const std::string& source) {
  const std::string at = source + ": Status.";
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) return makeError(source + ": reply is not JSON: " + quoteText(body, 80));
  if (!j.is_object()) return makeError(source + ": reply is " + jsonTypeName(j) + ", not a Status");
  auto kind = stringField(j, "kind", at);
  if (!kind) return kind.error();
  if (*kind != "Status") return makeError(at + "kind: " + quoteText(*kind, 40) + ", not Status");
  ApiStatus s;
  for (auto [key, into] : {std::pair{"status", &s.status}, std::pair{"reason", &s.reason},
                           std::pair{"message", &s.message}}) {
    auto v = stringField(j, key, at);
    if (!v) return v.error();
    *into = std::move(*v);
  }
  const auto code = j.find("code");
  if (code == j.end() || !code->is_number_integer()) return makeError(at + "code: missing");
  s.code = code->get<int64_t>();
  const auto details = j.find("details");
  if (details != j.end() && details->is_object()) {
    const auto causes = details->find("causes");
    if (causes != details->end() && !causes->is_array()) {
      return makeError(at + "details.causes: expected an array, got " + jsonTypeName(*causes));
    }
    if (causes != details->end()) {
      size_t i = 0;
      for (const nlohmann::json& c : *causes) {
        const std::string cat = at + "details.causes[" + std::to_string(i++) + "].";
        if (!c.is_object()) return makeError(cat.substr(0, cat.size() - 1) + ": not an object");
        StatusCause cause;
        for (auto [key, into] :
             {std::pair{"reason", &cause.reason}, std::pair{"message", &cause.message},
              std::pair{"field", &cause.field}}) {
          auto v = stringField(c, key, cat);
          if (!v) return v.error();
          *into = std::move(*v);
        }
        s.causes.push_back(std::move(cause));
      }
    }
  }
  return s;
}

const char* toString(ApiOutcome o) {
  switch (o) {
    case ApiOutcome::kOk:
      return "ok";
    case ApiOutcome::kConflict:
      return "conflict";
    case ApiOutcome::kExpired:
      return "expired";
    case ApiOutcome::kThrottled:
      return "throttled";
    case ApiOutcome::kBudget:
      return "disruption_budget";
    case ApiOutcome::kRetry:
      return "retry";
    case ApiOutcome::kUnauthorized:
      return "unauthorized";
    case ApiOutcome::kForbidden:
      return "forbidden";
    case ApiOutcome::kNotFound:
      return "not_found";
    case ApiOutcome::kInvalid:
      return "invalid";
    case ApiOutcome::kOther:
      return "other";
  }
  return "other";
}

ApiOutcome classify(unsigned httpStatus, const ApiStatus* status) {
  if (httpStatus >= 200 && httpStatus < 300) return ApiOutcome::kOk;
  switch (httpStatus) {
    case 400:
    case 422:
      return ApiOutcome::kInvalid;
    case 401:
      return ApiOutcome::kUnauthorized;
    case 403:
      return ApiOutcome::kForbidden;
    case 404:
      return ApiOutcome::kNotFound;
    case 409:
      return ApiOutcome::kConflict;
    case 410:
      return ApiOutcome::kExpired;
    case 429:
      return status != nullptr && status->hasCause("DisruptionBudget") ? ApiOutcome::kBudget
                                                                       : ApiOutcome::kThrottled;
    default:
      break;
  }
  if (httpStatus >= 500 && httpStatus < 600) return ApiOutcome::kRetry;
  return ApiOutcome::kOther;
}

}  // namespace koord
