// StatusReporter against the API server stand-in: a PUT of /status with the
// object's resourceVersion; a 409 re-reads and retries; a 422 ends the report with
// the field's cause; an unreachable server ends it with the transport error. Real
// time, bounded waits.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>

#include "base/clock.h"
#include "base/log.h"
#include "base/read_file.h"
#include "kube/api_client.h"
#include "kube/status_reporter.h"
#include "tests/support/run_until.h"
#include "tests/support/test_apiserver.h"

namespace test_kube_status_reporter {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using koord::test::runUntil;
using koord::test::TestApiServer;

namespace {

nlohmann::json capturedNodeMetric() {
  const char* dir = std::getenv("KOORDLET_FIXTURES");
  REQUIRE(dir != nullptr);
  auto text = readFile(std::string(dir) + "/kube-api/nodemetric-get.body");
  REQUIRE(text.ok());
  return nlohmann::json::parse(*text);
}

nlohmann::json status(const std::string& updateTime, const std::string& cpu) {
  return {{"updateTime", updateTime},
          {"nodeMetric", {{"nodeUsage", {{"resources", {{"cpu", cpu}, {"memory", "3Gi"}}}}}}}};
}

struct Fixture {
  Fixture() {
    ApiClientConfig cc;
    cc.api.server = server.url();
    cc.qps = 0;
    client = std::make_unique<ApiClient>(io, cc, clock);
    reporter = std::make_unique<StatusReporter>(
        *client, "nodemetrics", "/apis/slo.koordinator.sh/v1alpha1/nodemetrics/rig-node", clock,
        failures);
  }
  ~Fixture() {
    reporter.reset();
    client.reset();
  }
  bool reportOnce(const nlohmann::json& object, const nlohmann::json& st) {
    std::optional<bool> result;
    REQUIRE(reporter->report(
        object, [st]() -> Result<nlohmann::json> { return st; }, [&](bool ok) { result = ok; }));
    REQUIRE(runUntil(io, [&] { return result.has_value(); }));
    return *result;
  }
  TestApiServer server;
  boost::asio::io_context io;
  SystemClock clock;
  FailureLog failures{clock};
  std::unique_ptr<ApiClient> client;
  std::unique_ptr<StatusReporter> reporter;
};

}  // namespace

TEST_CASE("A status report is a PUT of /status that the server stores", "[reporter]") {
  Fixture f;
  auto stored = f.server.put("nodemetrics", capturedNodeMetric());
  CHECK(f.reportOnce(stored, status("2026-11-24T11:50:00Z", "1250m")));
  auto now = f.server.get("nodemetrics", "rig-node");
  REQUIRE(now);
  CHECK((*now)["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"] == "1250m");
  CHECK((*now)["spec"] == stored["spec"]);  // the spec is not ours to change
  CHECK(f.server.count("update", "nodemetrics/status") == 1);
  CHECK(f.reporter->succeeded() == 1);
  CHECK(f.reporter->lastSuccess().has_value());
  // managedFields are not sent back.
  for (const auto& r : f.server.requests()) {
    if (r.verb == "update") CHECK(r.body.find("managedFields") == std::string::npos);
  }
}

TEST_CASE("A 409 on a stale object is re-read and retried within the report", "[reporter]") {
  Fixture f;
  auto old = f.server.put("nodemetrics", capturedNodeMetric());
  // koord-manager changes the object after we read it.
  auto changed = old;
  changed["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] = 45;
  f.server.put("nodemetrics", changed);
  CHECK(f.reportOnce(old, status("2026-11-24T11:51:00Z", "900m")));
  CHECK(f.reporter->conflicts() == 1);
  CHECK(f.server.count("update", "nodemetrics/status") == 2);
  CHECK(f.server.count("get", "nodemetrics") == 1);
  auto now = f.server.get("nodemetrics", "rig-node");
  CHECK((*now)["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] == 45);
  CHECK((*now)["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"] == "900m");
}

TEST_CASE("A 422 ends the report with the field's cause, and the next report is fresh",
          "[reporter]") {
  Fixture f;
  auto stored = f.server.put("nodemetrics", capturedNodeMetric());
  CHECK_FALSE(f.reportOnce(stored, status("yesterday", "1")));
  CHECK(f.reporter->lastError().find("422") != std::string::npos);
  CHECK(f.reporter->lastError().find("updateTime") != std::string::npos);
  CHECK(f.server.count("update", "nodemetrics/status") == 1);  // not retried
  CHECK(
      f.reportOnce(*f.server.get("nodemetrics", "rig-node"), status("2026-11-24T11:52:00Z", "1")));
  CHECK(f.reporter->lastError().empty());
  CHECK(f.reporter->failed() == 1);
  CHECK(f.reporter->succeeded() == 1);
}

TEST_CASE("A status that cannot be built skips the report without a request", "[reporter]") {
  Fixture f;
  auto stored = f.server.put("nodemetrics", capturedNodeMetric());
  std::optional<bool> result;
  f.reporter->report(
      stored, []() -> Result<nlohmann::json> { return makeError("NodeMetric rig-node: bad spec"); },
      [&](bool ok) { result = ok; });
  REQUIRE(result.has_value());
  CHECK_FALSE(*result);
  CHECK(f.reporter->lastError() == "NodeMetric rig-node: bad spec");
  CHECK(f.server.requests().empty());
}

TEST_CASE("An unreachable server fails the report with the transport error", "[reporter]") {
  Fixture f;
  auto stored = f.server.put("nodemetrics", capturedNodeMetric());
  f.server.stop();
  CHECK_FALSE(f.reportOnce(stored, status("2026-11-24T11:53:00Z", "1")));
  CHECK(f.reporter->lastError().find("connect") != std::string::npos);
  f.server.start();
  CHECK(f.reportOnce(stored, status("2026-11-24T11:54:00Z", "1")));
}

}  // namespace test_kube_status_reporter
