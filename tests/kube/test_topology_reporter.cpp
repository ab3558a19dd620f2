// TopologyReporter against the API server stand-in: the object is created when
// absent, updated only when what the agent manages in it changed, and a stale copy
// (the informer behind our own write), a concurrent change (409) or a deletion
// (404) end in one correct write. Real time, bounded waits.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>

#include "base/clock.h"
#include "base/log.h"
#include "kube/api_client.h"
#include "kube/topology_reporter.h"
#include "tests/support/run_until.h"
#include "tests/support/test_apiserver.h"

namespace test_kube_topology_reporter {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using koord::test::runUntil;
using koord::test::TestApiServer;

namespace {

NrtContent content(const std::string& pool) {
  NrtContent c;
  c.annotations = {{kAnnoCpuSharedPools, R"([{"socket":0,"node":0,"cpuset":")" + pool + R"("}])"},
                   {kAnnoCpuManagerPolicy, R"({"policy":"none"})"}};
  c.zones = {NrtZone{"node-0", "Node", {{"cpu", "4"}, {"memory", "8Gi"}}}};
  return c;
}

struct Fixture {
  Fixture() {
    ApiClientConfig cc;
    cc.api.server = server.url();
    cc.qps = 0;
    client = std::make_unique<ApiClient>(io, cc, clock);
    reporter = std::make_unique<TopologyReporter>(*client, "rig-node", backoffClock, failures);
  }
  ~Fixture() {
    reporter.reset();
    client.reset();
  }
  std::optional<nlohmann::json> stored() {
    return server.get("noderesourcetopologies", "rig-node");
  }
  // One sync against `seen` (what an informer would hand over), run to its end.
  void syncOnce(const std::optional<nlohmann::json>& seen, const NrtContent& c) {
    REQUIRE(reporter->sync(seen, c, "node-uid"));
    REQUIRE(runUntil(io, [&] { return !reporter->inFlight(); }));
  }
  size_t writes() {
    return server.count("create", "noderesourcetopologies") +
           server.count("update", "noderesourcetopologies");
  }
  TestApiServer server;
  boost::asio::io_context io;
  SystemClock clock;
  ManualClock backoffClock;  // the reporter's: its back-off, stepped by the test
  FailureLog failures{clock};
  std::unique_ptr<ApiClient> client;
  std::unique_ptr<TopologyReporter> reporter;
};

std::string poolOf(const nlohmann::json& obj) {
  return obj["metadata"]["annotations"][kAnnoCpuSharedPools].get<std::string>();
}

}  // namespace

TEST_CASE("the topology is created once, then written only when it changes",
          "[topology-reporter]") {
  Fixture f;
  f.syncOnce(std::nullopt, content("0-3"));
  auto obj = f.stored();
  REQUIRE(obj);
  CHECK(f.server.count("create", "noderesourcetopologies") == 1);
  CHECK((*obj)["metadata"]["ownerReferences"][0]["uid"] == "node-uid");
  CHECK(poolOf(*obj) == R"([{"socket":0,"node":0,"cpuset":"0-3"}])");
  CHECK(f.reporter->creates() == 1);

  // The same content, many times: no request at all.
  const size_t before = f.server.requests().size();
  for (int i = 0; i < 5; ++i) f.syncOnce(f.stored(), content("0-3"));
  CHECK(f.server.requests().size() == before);
  CHECK(f.reporter->unchanged() == 5);

  // A pinned pod shrinks the pool: one update.
  f.syncOnce(f.stored(), content("2-3"));
  CHECK(f.server.count("update", "noderesourcetopologies") == 1);
  CHECK(poolOf(*f.stored()) == R"([{"socket":0,"node":0,"cpuset":"2-3"}])");
  CHECK(f.reporter->lastChange() == "annotation node.koordinator.sh/cpu-shared-pools");
  CHECK(f.failures.activeStreaks() == 0);
}

TEST_CASE("a copy older than our own write does not send the write again", "[topology-reporter]") {
  Fixture f;
  f.syncOnce(std::nullopt, content("0-3"));
  f.syncOnce(std::nullopt, content("0-3"));  // the informer has not seen our create
  CHECK(f.writes() == 1);
  const auto before = f.stored();
  f.syncOnce(before, content("1-3"));
  REQUIRE(f.writes() == 2);
  // The informer has not seen our update yet: it still hands over `before`.
  f.syncOnce(before, content("1-3"));
  CHECK(f.writes() == 2);
  // Once it catches up, it is followed again; someone else's edit is undone.
  auto edited = *f.stored();
  edited["metadata"]["annotations"][kAnnoCpuSharedPools] = "[]";
  edited = f.server.put("noderesourcetopologies", edited);
  f.syncOnce(edited, content("1-3"));
  CHECK(f.writes() == 3);
  CHECK(poolOf(*f.stored()) == R"([{"socket":0,"node":0,"cpuset":"1-3"}])");
}

TEST_CASE("a conflict re-reads and writes once; a deleted object is created again",
          "[topology-reporter]") {
  Fixture f;
  f.syncOnce(std::nullopt, content("0-3"));
  auto stale = *f.stored();
  auto other = stale;
  other["metadata"]["labels"]["example.com/x"] = "y";
  f.server.put("noderesourcetopologies", other);  // a new resourceVersion
  f.syncOnce(stale, content("0-1"));
  CHECK(f.reporter->conflicts() == 1);
  CHECK(f.server.count("update", "noderesourcetopologies") == 2);  // the 409 and the retry
  auto now = *f.stored();
  CHECK(poolOf(now) == R"([{"socket":0,"node":0,"cpuset":"0-1"}])");
  CHECK(now["metadata"]["labels"]["example.com/x"] == "y");

  f.server.remove("noderesourcetopologies", "rig-node");
  f.syncOnce(now, content("0-2"));  // the informer has not seen the deletion
  REQUIRE(f.stored());
  CHECK(poolOf(*f.stored()) == R"([{"socket":0,"node":0,"cpuset":"0-2"}])");
  CHECK(f.reporter->creates() == 2);
  CHECK(f.reporter->failed() == 0);
}

TEST_CASE("a deletion right after our create is believed at the second sync",
          "[topology-reporter]") {
  Fixture f;
  f.syncOnce(std::nullopt, content("0-3"));
  REQUIRE(f.server.remove("noderesourcetopologies", "rig-node"));
  f.syncOnce(std::nullopt, content("0-3"));  // could be the informer lagging: trusted once
  CHECK(f.reporter->creates() == 1);
  f.syncOnce(std::nullopt, content("0-3"));  // still absent: it is gone
  CHECK(f.reporter->creates() == 2);
  CHECK(f.stored());
}

TEST_CASE("a failing sync backs off 3 s doubling, and a new content or success ends it",
          "[topology-reporter]") {
  Fixture f;
  f.server.stop();
  f.syncOnce(std::nullopt, content("0-3"));
  CHECK(f.reporter->failed() == 1);
  CHECK(f.reporter->lastError().rfind("POST noderesourcetopologies: ", 0) == 0);
  CHECK_FALSE(f.reporter->sync(std::nullopt, content("0-3"), "node-uid"));  // backing off
  f.backoffClock.advance(3s);
  f.syncOnce(std::nullopt, content("0-3"));  // fails again: now 6 s
  CHECK(f.reporter->failureStreak() == 2);
  f.backoffClock.advance(3s);
  CHECK_FALSE(f.reporter->sync(std::nullopt, content("0-3"), "node-uid"));
  f.backoffClock.advance(3s);
  f.server.start();
  f.syncOnce(std::nullopt, content("0-3"));
  CHECK(f.reporter->creates() == 1);
  CHECK(f.reporter->failureStreak() == 0);
  CHECK(f.reporter->lastError().empty());
  // Far into a streak the wait stays at 5 min.
  f.server.stop();
  for (int i = 0; i < 12; ++i) {
    f.backoffClock.advance(TopologyReporter::kMaxBackoff);
    f.syncOnce(f.stored(), content(i % 2 == 0 ? "1-3" : "1-2"));
  }
  CHECK(f.reporter->retryAt() - f.backoffClock.now() == TopologyReporter::kMaxBackoff);
  // A new content does not wait for the back-off.
  CHECK(f.reporter->sync(f.stored(), content("2-3"), "node-uid"));
  REQUIRE(runUntil(f.io, [&] { return !f.reporter->inFlight(); }));
}

}  // namespace test_kube_topology_reporter
