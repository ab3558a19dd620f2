// Tests for kube/api_status: the Status bodies of a real kube-apiserver 1.32 (401,
// 403, 404, 409, 422, an Eviction's 429 and 201) and what the client does next.
#include <catch2/catch.hpp>

#include <string>

#include "base/read_file.h"
#include "kube/api_status.h"
#include "tests/support/temp_tree.h"

namespace test_kube_api_status {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

ApiStatus fixture(const std::string& name) {
  auto body = readFile(test::fixturePath("kube-api/" + name + ".body"));
  REQUIRE(body.ok());
  auto s = parseStatus(*body, name);
  REQUIRE(s.ok());
  return *s;
}

}  // namespace

TEST_CASE("real Status replies give their code and reason and what to do next") {
  struct Case {
    const char* name;
    int64_t code;
    const char* reason;
    ApiOutcome outcome;
  };
  for (const Case& c :
       {Case{"unauthorized-401", 401, "Unauthorized", ApiOutcome::kUnauthorized},
        Case{"node-delete-forbidden-403", 403, "Forbidden", ApiOutcome::kForbidden},
        Case{"nodeslo-get-missing-404", 404, "NotFound", ApiOutcome::kNotFound},
        Case{"nodemetric-status-put-stale-409", 409, "Conflict", ApiOutcome::kConflict},
        Case{"nodemetric-status-patch-invalid-422", 422, "Invalid", ApiOutcome::kInvalid},
        Case{"pod-eviction-pdb-429", 429, "TooManyRequests", ApiOutcome::kBudget},
        Case{"pod-eviction-201", 201, "", ApiOutcome::kOk}}) {
    INFO(c.name);
    const ApiStatus s = fixture(c.name);
    CHECK(s.code == c.code);
    CHECK(s.reason == c.reason);
    CHECK(classify(static_cast<unsigned>(s.code), &s) == c.outcome);
  }
}

TEST_CASE("a 422 names the field at fault and a PDB's 429 its DisruptionBudget cause") {
  const ApiStatus invalid = fixture("nodemetric-status-patch-invalid-422");
  REQUIRE(invalid.causes.size() == 1);
  CHECK(invalid.causes[0].field == "status.updateTime");
  CHECK(invalid.causes[0].reason == "FieldValueTypeInvalid");
  const ApiStatus budget = fixture("pod-eviction-pdb-429");
  CHECK(budget.hasCause("DisruptionBudget"));
  CHECK(budget.causes[0].field.empty());
  CHECK(fixture("pod-eviction-201").status == "Success");
}

TEST_CASE("a 429 without a budget cause is throttling, and 5xx are retried") {
  ApiStatus rate;
  rate.code = 429;
  CHECK(classify(429, &rate) == ApiOutcome::kThrottled);
  CHECK(classify(429) == ApiOutcome::kThrottled);
  CHECK(classify(410) == ApiOutcome::kExpired);
  CHECK(classify(500) == ApiOutcome::kRetry);
  CHECK(classify(503) == ApiOutcome::kRetry);
  CHECK(classify(400) == ApiOutcome::kInvalid);
  CHECK(classify(302) == ApiOutcome::kOther);
  CHECK(std::string(toString(ApiOutcome::kBudget)) == "disruption_budget");
}

TEST_CASE("a reply that is not a Status is refused naming the request and field") {
  auto error = [](const std::string& body) {
    auto s = parseStatus(body, "PUT nodemetrics/n/status");
    REQUIRE_FALSE(s.ok());
    return s.error().message;
  };
  CHECK(error("<html>").find("PUT nodemetrics/n/status: reply is not JSON: ") == 0);
  CHECK(error("[]") == "PUT nodemetrics/n/status: reply is an array, not a Status");
  CHECK(error(R"({"kind":"NodeMetric"})") ==
        "PUT nodemetrics/n/status: Status.kind: \"NodeMetric\", not Status");
  CHECK(error(R"({"kind":"Status"})") == "PUT nodemetrics/n/status: Status.code: missing");
  CHECK(error(R"({"kind":"Status","code":409,"reason":5})") ==
        "PUT nodemetrics/n/status: Status.reason: expected a string, got a number");
  CHECK(error(R"({"kind":"Status","code":422,"details":{"causes":{}}})") ==
        "PUT nodemetrics/n/status: Status.details.causes: expected an array, got an object");
  CHECK(error(R"({"kind":"Status","code":422,"details":{"causes":[{"field":1}]}})") ==
        "PUT nodemetrics/n/status: Status.details.causes[0].field: expected a string, got a "
        "number");
}

}  // namespace test_kube_api_status
