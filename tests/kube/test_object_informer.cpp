// ObjectInformer against the API server stand-in (tests/support/test_apiserver):
// list, watch, changes, deletes, the server's watch timeout, a compacted
// resourceVersion after a restart, 429 with Retry-After, a hung watch and a watch cut
// mid-event. The stand-in runs on its own thread; the informer's io_context runs
// here in bounded steps, in real time (these are the driver's I/O paths; the
// decisions are InformerState's, tested without time in test_informer_state.cpp).
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>

#include "base/clock.h"
#include "base/log.h"
#include "kube/api_client.h"
#include "kube/object_informer.h"
#include "tests/support/run_until.h"
#include "tests/support/test_apiserver.h"

namespace test_kube_object_informer {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using koord::test::runUntil;
using koord::test::TestApiServer;
using Steady = std::chrono::steady_clock;

namespace {

nlohmann::json nodeSlo(const std::string& name, int percent) {
  return {{"apiVersion", "slo.koordinator.sh/v1alpha1"},
          {"kind", "NodeSLO"},
          {"metadata", {{"name", name}}},
          {"spec", {{"resourceUsedThresholdWithBE", {{"cpuSuppressThresholdPercent", percent}}}}}};
}

std::optional<int> percentOf(const std::optional<nlohmann::json>& o) {
  if (!o) return std::nullopt;
  return (*o)["spec"]["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"].get<int>();
}

struct Fixture {
  explicit Fixture(std::chrono::seconds watchTimeout = 60s, std::chrono::seconds grace = 30s) {
    ApiClientConfig cc;
    cc.api.server = server.url();
    cc.api.token = "t0ken";
    cc.qps = 0;  // no client-side limit: the tests count requests
    client = std::make_unique<ApiClient>(io, cc, clock);
    ObjectInformerConfig ic;
    ic.resource = "nodeslos";
    ic.collectionPath = "/apis/slo.koordinator.sh/v1alpha1/nodeslos";
    ic.name = "rig-node";
    ic.watchTimeout = watchTimeout;
    ic.idleGrace = grace;
    // Jitter 0: waits are the back-off's base (800 ms first).
    informer =
        std::make_unique<ObjectInformer>(io, *client, ic, clock, failures, [] { return 0.0; });
    informer->onChange([this](const std::optional<nlohmann::json>& o) {
      ++changes;
      last = percentOf(o);
    });
  }
  ~Fixture() {
    informer.reset();
    client.reset();
  }
  TestApiServer server{TestApiServer::Options{"t0ken", 0ms, false}};
  boost::asio::io_context io;
  SystemClock clock;
  FailureLog failures{clock};
  std::unique_ptr<ApiClient> client;
  std::unique_ptr<ObjectInformer> informer;
  int changes = 0;
  std::optional<int> last;
};

}  // namespace

TEST_CASE("The informer lists, then sees edits and a delete through its watch", "[informer]") {
  Fixture f;
  f.server.put("nodeslos", nodeSlo("rig-node", 60));
  f.server.put("nodeslos", nodeSlo("other-node", 10));
  f.informer->start();
  REQUIRE(runUntil(f.io, [&] { return f.informer->watching(); }));
  CHECK(f.informer->synced());
  CHECK(f.last == 60);
  CHECK(f.changes == 1);

  f.server.put("nodeslos", nodeSlo("rig-node", 70));
  REQUIRE(runUntil(f.io, [&] { return f.last == 70; }));
  f.server.put("nodeslos", nodeSlo("other-node", 20));  // not ours: no change
  f.server.remove("nodeslos", "rig-node");
  REQUIRE(runUntil(f.io, [&] { return !f.last.has_value(); }));
  CHECK(f.changes == 3);
  CHECK(f.server.count("list", "nodeslos") == 1);
  CHECK(f.informer->lastError().empty());

  // The request carried the selector, bookmarks and the token.
  bool sawWatch = false;
  for (const auto& r : f.server.requests()) {
    if (r.verb != "watch") continue;
    sawWatch = true;
    CHECK(r.target.find("fieldSelector=metadata.name%3Drig-node") != std::string::npos);
    CHECK(r.target.find("allowWatchBookmarks=true") != std::string::npos);
    CHECK(r.authorization == "Bearer t0ken");
  }
  CHECK(sawWatch);
}

TEST_CASE("A watch the server ends at its timeout is opened again without a list", "[informer]") {
  Fixture f(1s);
  f.server.put("nodeslos", nodeSlo("rig-node", 60));
  f.informer->start();
  REQUIRE(runUntil(f.io, [&] { return f.server.count("watch", "nodeslos") >= 3; }));
  CHECK(f.server.count("list", "nodeslos") == 1);
  CHECK(f.informer->lastError().empty());
  f.server.put("nodeslos", nodeSlo("rig-node", 61));
  REQUIRE(runUntil(f.io, [&] { return f.last == 61; }));
}

TEST_CASE("After a restart that compacted history the informer re-lists and keeps up",
          "[informer]") {
  Fixture f;
  f.server.put("nodeslos", nodeSlo("rig-node", 60));
  f.informer->start();
  REQUIRE(runUntil(f.io, [&] { return f.informer->watching(); }));
  f.server.put("nodeslos", nodeSlo("rig-node", 65));
  f.server.compact(f.server.resourceVersion() + 1);
  f.server.restart();
  // The object changes while the informer is away.
  f.server.put("nodeslos", nodeSlo("rig-node", 75));
  REQUIRE(runUntil(f.io, [&] { return f.last == 75; }));
  REQUIRE(runUntil(f.io, [&] { return f.informer->watching(); }));
  CHECK(f.server.count("list", "nodeslos") >= 2);
  CHECK(f.informer->relists() >= 1);
}

TEST_CASE("A 429 on the list is waited out for its Retry-After, then the informer syncs",
          "[informer]") {
  Fixture f;
  f.server.put("nodeslos", nodeSlo("rig-node", 60));
  TestApiServer::FaultRule rule;
  rule.fault = TestApiServer::Fault::kTooManyRequests;
  rule.times = 1;
  rule.pathContains = "nodeslos";
  rule.retryAfterSeconds = 2;
  f.server.addFault(rule);
  const auto begin = Steady::now();
  f.informer->start();
  REQUIRE(runUntil(f.io, [&] { return f.informer->synced(); }));
  CHECK(Steady::now() - begin >= 1900ms);  // Retry-After 2 s, longer than the 800 ms back-off
  CHECK(f.last == 60);
}

TEST_CASE("A watch that hangs is replaced once silent past its timeout", "[informer]") {
  Fixture f(1s, 1s);
  f.server.put("nodeslos", nodeSlo("rig-node", 60));
  TestApiServer::FaultRule rule;
  rule.fault = TestApiServer::Fault::kWatchHang;
  rule.times = 1;
  f.server.addFault(rule);
  f.informer->start();
  REQUIRE(runUntil(f.io, [&] { return f.informer->synced(); }));
  // The hung watch (timeout 1 s + 1 s grace) is dropped and a new one opened.
  REQUIRE(runUntil(f.io, [&] { return f.server.count("watch", "nodeslos") >= 2; }));
  CHECK(f.informer->watchFailures() >= 1);
  f.server.put("nodeslos", nodeSlo("rig-node", 62));
  REQUIRE(runUntil(f.io, [&] { return f.last == 62; }));
}

TEST_CASE("A watch cut mid-event is resumed from the last resourceVersion", "[informer]") {
  Fixture f;
  f.server.put("nodeslos", nodeSlo("rig-node", 60));
  f.informer->start();
  REQUIRE(runUntil(f.io, [&] { return f.informer->watching(); }));
  TestApiServer::FaultRule rule;
  rule.fault = TestApiServer::Fault::kWatchCutMidEvent;
  rule.times = 1;
  f.server.addFault(rule);
  f.server.restart();  // the next watch gets the fault
  f.server.put("nodeslos", nodeSlo("rig-node", 66));
  REQUIRE(runUntil(f.io, [&] { return f.last == 66; }));
  CHECK(f.informer->watchFailures() >= 1);
  // Resumed from a resourceVersion, not re-listed: one list only.
  CHECK(f.server.count("list", "nodeslos") == 1);
}

TEST_CASE("A wrong token is a 401 the informer reports and keeps retrying", "[informer]") {
  Fixture f;
  f.server.put("nodeslos", nodeSlo("rig-node", 60));
  f.server.setBearerToken("rotated");
  f.informer->start();
  REQUIRE(runUntil(f.io, [&] { return f.server.count("list", "nodeslos") >= 2; }));
  CHECK_FALSE(f.informer->synced());
  CHECK(f.informer->lastError().find("401") != std::string::npos);
  f.server.setBearerToken("t0ken");
  REQUIRE(runUntil(f.io, [&] { return f.informer->synced(); }));
  CHECK(f.informer->lastError().empty());
}

}  // namespace test_kube_object_informer
