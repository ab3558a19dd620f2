// PodEvictor against the API server stand-in, on a real io_context: the Eviction's
// request and body, what each answer does to the ledger (201, 404, 409, 429 budget,
// throttling 429, 403, no server), the Event on the pod, one request per UID, the
// bounded queue and stop(). The evictor's clock is a ManualClock (back-offs, latency,
// the Events' timestamps); the sockets run in real time with wide bounds.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "kube/api_client.h"
#include "kube/eviction_ledger.h"
#include "kube/pod_evictor.h"
#include "tests/support/run_until.h"
#include "tests/support/test_apiserver.h"

namespace test_kube_pod_evictor {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using koord::test::runsOutOfWork;
using koord::test::runUntil;
using koord::test::TestApiServer;
using nlohmann::json;
using State = EvictionLedger::State;

namespace {

PodEvictorConfig baseConfig() {
  PodEvictorConfig c;
  c.nodeName = "rig-node";
  return c;
}

EvictionRequest request(const std::string& name, const std::string& uid,
                        const std::string& ns = "colo") {
  return EvictionRequest{uid, ns, name, "BEMemoryEvict",
                         "trigger by koordlet feature BEMemoryEvict, kill pod: " + name};
}

struct Fixture {
  explicit Fixture(PodEvictorConfig config = baseConfig()) {
    ApiClientConfig cc;
    cc.api.server = server.url();
    cc.qps = 0;
    client = std::make_unique<ApiClient>(io, cc, clock);
    evictor = std::make_unique<PodEvictor>(*client, ledger, clock, std::move(config));
    evictor->onResult([this](const EvictionResult& r) { results.push_back(r); });
  }
  ~Fixture() {
    evictor.reset();
    client.reset();
  }
  void putPod(const std::string& name, const std::string& uid, const std::string& phase = "Running",
              const std::string& ns = "colo") {
    server.put("pods", {{"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
                        {"status", {{"phase", phase}}}});
  }
  // Runs until n results and no Event in flight.
  void waitResults(size_t n) {
    REQUIRE(runUntil(io, [&] { return results.size() >= n && evictor->eventsInFlight() == 0; }));
  }
  std::vector<TestApiServer::LoggedRequest> logged(const std::string& resource) const {
    std::vector<TestApiServer::LoggedRequest> out;
    for (auto& r : server.requests()) {
      if (r.resource == resource) out.push_back(r);
    }
    return out;
  }
  uint64_t count(EvictionOutcome o) const {
    auto it = evictor->counts().find(o);
    return it == evictor->counts().end() ? 0 : it->second;
  }

  TestApiServer server;
  boost::asio::io_context io;
  ManualClock clock;  // wall 2023-11-14T22:13:20Z
  EvictionLedger ledger;
  std::unique_ptr<ApiClient> client;
  std::unique_ptr<PodEvictor> evictor;
  std::vector<EvictionResult> results;
};

}  // namespace

TEST_CASE("an accepted eviction marks the pod evicted and records koordlet's Event on it",
          "[evictor]") {
  Fixture f;
  f.putPod("be-1", "uid-1");
  CHECK(f.evictor->submit(request("be-1", "uid-1")) == SubmitResult::kAccepted);
  CHECK(f.ledger.state("uid-1", f.clock.now()) == State::kInFlight);  // at once
  CHECK(f.evictor->inFlight() == 1);
  f.clock.advance(250ms);
  f.waitResults(1);

  const EvictionResult& r = f.results.at(0);
  CHECK(r.outcome == EvictionOutcome::kEvicted);
  CHECK(std::string(toString(r.outcome)) == "evicted");
  CHECK(r.httpStatus == 201);
  CHECK(r.latency == 250ms);
  CHECK(r.request.uid == "uid-1");
  CHECK(f.ledger.state("uid-1", f.clock.now()) == State::kEvicted);
  CHECK_FALSE(f.server.get("pods", "be-1", "colo").has_value());
  CHECK(f.count(EvictionOutcome::kEvicted) == 1);
  CHECK(f.evictor->inFlight() == 0);

  auto evictions = f.logged("pods/eviction");
  REQUIRE(evictions.size() == 1);
  CHECK(evictions[0].method == "POST");
  CHECK(evictions[0].target == "/api/v1/namespaces/colo/pods/be-1/eviction");

  REQUIRE(f.evictor->eventsSent() == 1);
  auto events = f.logged("events");
  REQUIRE(events.size() == 1);
  CHECK(events[0].target == "/api/v1/namespaces/colo/events");
  CHECK(events[0].status == 201);
  const json e = json::parse(events[0].body);
  CHECK(e["apiVersion"] == "v1");
  CHECK(e["kind"] == "Event");
  CHECK(e["metadata"] == json{{"generateName", "be-1."}, {"namespace", "colo"}});
  CHECK(e["involvedObject"] == json{{"kind", "Pod"},
                                    {"apiVersion", "v1"},
                                    {"namespace", "colo"},
                                    {"name", "be-1"},
                                    {"uid", "uid-1"}});
  CHECK(e["reason"] == "evictPodSuccess");
  CHECK(e["type"] == "Warning");
  CHECK(e["message"] ==
        "evict Pod:colo/be-1, reason: evicted, message: trigger by koordlet feature "
        "BEMemoryEvict, kill pod: be-1");
  CHECK(e["source"] == json{{"component", "koordlet"}, {"host", "rig-node"}});
  // ManualClock's wall clock starts at 1'700'000'000 s; 250 ms later, whole seconds.
  CHECK(e["firstTimestamp"] == "2023-11-14T22:13:20Z");
  CHECK(e["lastTimestamp"] == "2023-11-14T22:13:20Z");
  CHECK(e["count"] == 1);
}

TEST_CASE("the Eviction carries the UID precondition, and gracePeriodSeconds only when set",
          "[evictor]") {
  SECTION("the pod's own grace period: the field is left out") {
    Fixture f;
    f.putPod("be-1", "uid-1");
    f.evictor->submit(request("be-1", "uid-1"));
    f.waitResults(1);
    auto evictions = f.logged("pods/eviction");
    REQUIRE(evictions.size() == 1);
    CHECK(evictions[0].contentType.rfind("application/json", 0) == 0);
    const json body = json::parse(evictions[0].body);
    CHECK(body == json{{"apiVersion", "policy/v1"},
                       {"kind", "Eviction"},
                       {"metadata", {{"name", "be-1"}, {"namespace", "colo"}}},
                       {"deleteOptions", {{"preconditions", {{"uid", "uid-1"}}}}}});
  }
  SECTION("a configured grace period, even 0, is sent") {
    PodEvictorConfig c = baseConfig();
    c.gracePeriodSeconds = 0;
    Fixture f(c);
    f.putPod("be-1", "uid-1");
    f.evictor->submit(request("be-1", "uid-1"));
    f.waitResults(1);
    CHECK(f.results.at(0).outcome == EvictionOutcome::kEvicted);
    const json body = json::parse(f.logged("pods/eviction").at(0).body);
    CHECK(body["deleteOptions"] ==
          json{{"preconditions", {{"uid", "uid-1"}}}, {"gracePeriodSeconds", 0}});
  }
}

TEST_CASE("a UID mismatch is a conflict: that UID is gone, skipped not counted, no Event",
          "[evictor]") {
  Fixture f;
  f.putPod("be-2", "uid-new");  // recreated under the same name
  f.evictor->submit(request("be-2", "uid-old"));
  f.waitResults(1);
  const EvictionResult& r = f.results.at(0);
  CHECK(r.outcome == EvictionOutcome::kConflict);
  CHECK(r.httpStatus == 409);
  CHECK(r.message.find("the UID in the precondition (uid-old) does not match the UID in record "
                       "(uid-new)") != std::string::npos);
  CHECK(f.ledger.state("uid-old", f.clock.now()) == State::kGone);
  // Not counted as released (a static pod's kubelet UID always gets this 409 while it
  // runs): the next victim is asked instead, and this one not for two minutes.
  CHECK_FALSE(f.ledger.pending("uid-old", f.clock.now()));
  CHECK(f.ledger.blocked("uid-old", f.clock.now()));
  CHECK(f.server.get("pods", "be-2", "colo").has_value());  // the new pod stays
  CHECK(runsOutOfWork(f.io));
  CHECK(f.server.count("create", "events") == 0);
  CHECK(f.evictor->eventsSent() + f.evictor->eventsFailed() == 0);
}

TEST_CASE("a pod that is gone is not_found, skipped not counted, and gets no Event", "[evictor]") {
  Fixture f;
  f.evictor->submit(request("gone", "uid-gone"));
  f.waitResults(1);
  CHECK(f.results.at(0).outcome == EvictionOutcome::kNotFound);
  CHECK(f.results.at(0).httpStatus == 404);
  CHECK(f.results.at(0).message == "pods \"gone\" not found");
  CHECK(f.ledger.state("uid-gone", f.clock.now()) == State::kGone);
  CHECK_FALSE(f.ledger.pending("uid-gone", f.clock.now()));
  f.clock.advance(EvictionLedger::kEvictedTtl);
  CHECK_FALSE(f.ledger.blocked("uid-gone", f.clock.now()));
  CHECK(runsOutOfWork(f.io));
  CHECK(f.server.count("create", "events") == 0);
}

TEST_CASE("a disruption budget's 429 blocks the pod for its back-off, then it may go",
          "[evictor]") {
  Fixture f;
  f.putPod("be-run", "uid-run");
  f.server.protect("colo", "be-run", "be-run");
  f.evictor->submit(request("be-run", "uid-run"));
  f.waitResults(1);
  const EvictionResult& r = f.results.at(0);
  CHECK(r.outcome == EvictionOutcome::kBudget);
  CHECK(r.httpStatus == 429);
  CHECK(r.message ==
        "Cannot evict pod as it would violate the pod's disruption budget.; The disruption "
        "budget be-run needs 1 healthy pods and has 1 currently");
  CHECK(f.ledger.blocked("uid-run", f.clock.now()));
  CHECK(f.server.get("pods", "be-run", "colo").has_value());

  // The failure is recorded on the pod.
  REQUIRE(f.evictor->eventsSent() == 1);
  const json e = json::parse(f.logged("events").at(0).body);
  CHECK(e["reason"] == "evictPodFail");
  CHECK(e["message"] ==
        "evict Pod:colo/be-run, reason: evicted, message: trigger by koordlet feature "
        "BEMemoryEvict, kill pod: be-run, error " +
            r.message);

  CHECK(f.evictor->submit(request("be-run", "uid-run")) == SubmitResult::kBlocked);
  f.server.unprotect("colo", "be-run");
  f.clock.advance(EvictionLedger::kRefusedFirst - 1s);
  CHECK(f.evictor->submit(request("be-run", "uid-run")) == SubmitResult::kBlocked);
  f.clock.advance(1s);
  CHECK(f.evictor->submit(request("be-run", "uid-run")) == SubmitResult::kAccepted);
  f.waitResults(2);
  CHECK(f.results.at(1).outcome == EvictionOutcome::kEvicted);
  CHECK(f.server.count("create", "pods/eviction") == 2);
  CHECK(f.count(EvictionOutcome::kBudget) == 1);
  CHECK(f.count(EvictionOutcome::kEvicted) == 1);
}

TEST_CASE("a throttling 429 fails the pod, counted, for the Retry-After, then it is asked again",
          "[evictor]") {
  Fixture f;
  f.putPod("be-1", "uid-1");
  f.server.addFault({TestApiServer::Fault::kTooManyRequests, 1, "/eviction", 30});
  f.evictor->submit(request("be-1", "uid-1"));
  f.waitResults(1);
  CHECK(f.results.at(0).outcome == EvictionOutcome::kThrottled);
  CHECK(f.results.at(0).httpStatus == 429);
  CHECK_FALSE(f.results.at(0).message.empty());
  CHECK(f.ledger.state("uid-1", f.clock.now()) == State::kFailed);
  f.clock.advance(29s);
  CHECK(f.ledger.pending("uid-1", f.clock.now()));  // the next victim is not asked
  CHECK_FALSE(f.ledger.blocked("uid-1", f.clock.now()));
  CHECK(f.evictor->submit(request("be-1", "uid-1")) == SubmitResult::kPending);
  f.clock.advance(1s);
  CHECK_FALSE(f.ledger.pending("uid-1", f.clock.now()));
  CHECK(f.evictor->submit(request("be-1", "uid-1")) == SubmitResult::kAccepted);
  f.waitResults(2);
  CHECK(f.results.at(1).outcome == EvictionOutcome::kEvicted);
  CHECK_FALSE(f.server.get("pods", "be-1", "colo").has_value());
}

TEST_CASE("a 403 is forbidden and no server at all is an error; both fail the pod, counted",
          "[evictor]") {
  Fixture f;
  f.putPod("be-1", "uid-1");
  f.server.addFault({TestApiServer::Fault::kForbidden, 1, "/eviction", 1});
  f.evictor->submit(request("be-1", "uid-1"));
  f.waitResults(1);
  CHECK(f.results.at(0).outcome == EvictionOutcome::kForbidden);
  CHECK(f.results.at(0).httpStatus == 403);
  CHECK(f.ledger.state("uid-1", f.clock.now()) == State::kFailed);
  CHECK(f.ledger.pending("uid-1", f.clock.now()));

  f.putPod("be-2", "uid-2");
  f.server.stop();
  f.evictor->submit(request("be-2", "uid-2"));
  REQUIRE(runUntil(f.io, [&] { return f.results.size() == 2 && f.evictor->eventsFailed() == 1; }));
  CHECK(f.results.at(1).outcome == EvictionOutcome::kError);
  CHECK(f.results.at(1).httpStatus == 0);
  CHECK(f.results.at(1).message.find("connect") != std::string::npos);
  CHECK(f.ledger.state("uid-2", f.clock.now()) == State::kFailed);
  CHECK(f.count(EvictionOutcome::kError) == 1);
  CHECK(f.count(EvictionOutcome::kForbidden) == 1);
}

TEST_CASE("a pod already in flight is not asked for twice", "[evictor]") {
  Fixture f;
  f.putPod("be-1", "uid-1");
  CHECK(f.evictor->submit(request("be-1", "uid-1")) == SubmitResult::kAccepted);
  CHECK(f.evictor->submit(request("be-1", "uid-1")) == SubmitResult::kPending);
  f.waitResults(1);
  CHECK(runsOutOfWork(f.io));
  CHECK(f.results.size() == 1);
  CHECK(f.server.count("create", "pods/eviction") == 1);
  // Evicted is still pending: a later round does not ask again.
  CHECK(f.evictor->submit(request("be-1", "uid-1")) == SubmitResult::kPending);
}

TEST_CASE("names that are not DNS names are refused before any request", "[evictor]") {
  Fixture f;
  CHECK(f.evictor->submit(request("be-1", "uid-1", "Colo")) == SubmitResult::kInvalid);
  CHECK(f.evictor->submit(request("../nodes/rig-node", "uid-2")) == SubmitResult::kInvalid);
  CHECK(f.evictor->submit(request("be-1?dryRun=All", "uid-3")) == SubmitResult::kInvalid);
  CHECK(f.evictor->submit(request("be-1", "")) == SubmitResult::kInvalid);
  auto why = PodEvictor::check(request("../nodes/rig-node", "uid-2"));
  REQUIRE_FALSE(why.ok());
  CHECK(why.error().message ==
        "eviction of colo/../nodes/rig-node: name \"../nodes/rig-node\" is not a DNS subdomain");
  why = PodEvictor::check(request("be-1", "uid-1", "Colo"));
  REQUIRE_FALSE(why.ok());
  CHECK(why.error().message == "eviction of Colo/be-1: namespace \"Colo\" is not a DNS label");
  why = PodEvictor::check(request("be-1", ""));
  REQUIRE_FALSE(why.ok());
  CHECK(why.error().message == "eviction of colo/be-1: uid is empty");
  CHECK(PodEvictor::check(request("be-1", "uid-1")).ok());
  CHECK(f.ledger.size() == 0);
  CHECK(f.evictor->inFlight() + f.evictor->queued() == 0);
  CHECK(runsOutOfWork(f.io));
  CHECK(f.server.requests().empty());
}

TEST_CASE("at most maxInFlight evictions are sent, maxQueued wait in order, more are dropped",
          "[evictor]") {
  PodEvictorConfig c = baseConfig();
  c.maxInFlight = 1;
  c.maxQueued = 2;
  Fixture f(c);
  size_t mostInFlight = 0;
  f.evictor->onResult([&](const EvictionResult& r) {
    f.results.push_back(r);
    mostInFlight = std::max(mostInFlight, f.evictor->inFlight());
  });
  for (int i = 1; i <= 4; ++i) f.putPod("be-" + std::to_string(i), "uid-" + std::to_string(i));
  CHECK(f.evictor->submit(request("be-1", "uid-1")) == SubmitResult::kAccepted);
  CHECK(f.evictor->submit(request("be-2", "uid-2")) == SubmitResult::kAccepted);
  CHECK(f.evictor->submit(request("be-3", "uid-3")) == SubmitResult::kAccepted);
  CHECK(f.evictor->inFlight() == 1);
  CHECK(f.evictor->queued() == 2);
  CHECK(f.evictor->submit(request("be-4", "uid-4")) == SubmitResult::kQueueFull);
  CHECK(f.evictor->dropped() == 1);
  CHECK(f.ledger.state("uid-4", f.clock.now()) == State::kNone);  // not counted as released
  CHECK(f.ledger.state("uid-3", f.clock.now()) == State::kInFlight);

  f.waitResults(3);
  CHECK(mostInFlight <= 1);
  auto evictions = f.logged("pods/eviction");
  REQUIRE(evictions.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(evictions[i].target ==
          "/api/v1/namespaces/colo/pods/be-" + std::to_string(i + 1) + "/eviction");
  }
  CHECK(f.server.get("pods", "be-4", "colo").has_value());
  // With room again, the dropped pod can be submitted.
  CHECK(f.evictor->submit(request("be-4", "uid-4")) == SubmitResult::kAccepted);
  f.waitResults(4);
  CHECK(f.count(EvictionOutcome::kEvicted) == 4);
}

TEST_CASE("with events off an eviction sends no Event", "[evictor]") {
  PodEvictorConfig c = baseConfig();
  c.events = false;
  Fixture f(c);
  f.putPod("be-1", "uid-1");
  f.evictor->submit(request("be-1", "uid-1"));
  f.waitResults(1);
  CHECK(f.results.at(0).outcome == EvictionOutcome::kEvicted);
  CHECK(runsOutOfWork(f.io));
  CHECK(f.server.count("create", "events") == 0);
  CHECK(f.evictor->eventsSent() + f.evictor->eventsFailed() == 0);
}

TEST_CASE("a refused Event is counted and the eviction still counts as evicted", "[evictor]") {
  Fixture f;
  f.putPod("be-1", "uid-1");
  f.server.addFault({TestApiServer::Fault::kForbidden, -1, "/events", 1});
  f.evictor->submit(request("be-1", "uid-1"));
  f.waitResults(1);
  CHECK(f.results.at(0).outcome == EvictionOutcome::kEvicted);
  CHECK(f.ledger.state("uid-1", f.clock.now()) == State::kEvicted);
  CHECK(f.evictor->eventsFailed() == 1);
  CHECK(f.evictor->eventsSent() == 0);
  CHECK(runsOutOfWork(f.io));
  CHECK(f.server.count("create", "events") == 1);  // never retried
}

TEST_CASE("stop cancels queued and in-flight evictions and forgets them in the ledger",
          "[evictor]") {
  PodEvictorConfig c = baseConfig();
  c.maxInFlight = 1;
  Fixture f(c);
  for (int i = 1; i <= 3; ++i) f.putPod("be-" + std::to_string(i), "uid-" + std::to_string(i));
  for (int i = 1; i <= 3; ++i) {
    REQUIRE(f.evictor->submit(request("be-" + std::to_string(i), "uid-" + std::to_string(i))) ==
            SubmitResult::kAccepted);
  }
  REQUIRE(f.ledger.size() == 3);
  f.evictor->stop();
  CHECK(f.ledger.size() == 0);
  CHECK(f.evictor->inFlight() == 0);
  CHECK(f.evictor->queued() == 0);
  CHECK(f.evictor->submit(request("be-1", "uid-1")) == SubmitResult::kStopped);
  CHECK(runsOutOfWork(f.io));
  CHECK(f.results.empty());
  CHECK(f.server.count("create", "pods/eviction") <= 1);  // only the one in flight could go
  CHECK(f.server.get("pods", "be-2", "colo").has_value());
  CHECK(f.server.get("pods", "be-3", "colo").has_value());
}

TEST_CASE("a negative grace period or no slot at all is a configuration error", "[evictor]") {
  TestApiServer server;
  boost::asio::io_context io;
  ManualClock clock;
  EvictionLedger ledger;
  ApiClientConfig cc;
  cc.api.server = server.url();
  ApiClient client(io, cc, clock);
  PodEvictorConfig negative = baseConfig();
  negative.gracePeriodSeconds = -1;
  CHECK_THROWS_WITH(PodEvictor(client, ledger, clock, negative),
                    Catch::Contains("gracePeriodSeconds"));
  PodEvictorConfig none = baseConfig();
  none.maxInFlight = 0;
  CHECK_THROWS_WITH(PodEvictor(client, ledger, clock, none), Catch::Contains("maxInFlight"));
}

TEST_CASE("a budget the server has not processed yet is a budget refusal with a back-off",
          "[evictor]") {
  Fixture f;
  f.putPod("be-run", "uid-run");
  f.server.protect("colo", "be-run", "be-run", /*processed=*/false);  // Retry-After: 10
  f.evictor->submit(request("be-run", "uid-run"));
  f.waitResults(1);
  CHECK(f.results.at(0).outcome == EvictionOutcome::kBudget);
  CHECK(f.results.at(0).message.find("still being processed") != std::string::npos);
  CHECK(f.ledger.blocked("uid-run", f.clock.now()));
  // Its Retry-After (10 s) is the first back-off's length anyway.
  f.clock.advance(EvictionLedger::kRefusedFirst);
  CHECK_FALSE(f.ledger.blocked("uid-run", f.clock.now()));
}

}  // namespace test_kube_pod_evictor
