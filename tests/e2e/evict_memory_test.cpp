// End-to-end BEMemoryEvict (reference koordlet.md §4.5) on this machine's real cgroup
// v1 kernel: the real koordlet binary over tests/support/evict_node.h's scene (three
// pods holding real memory in their cgroups, the kubelet and API server stand-ins,
// the step scene: the NodeSLO's threshold lowered under the node's use).
//
// Cases: the eviction as the NodeSLO's threshold goes under the node's use (once per
// pod, the LS pod never, the Event, the metrics, /config and the audit log, and the
// figure: crossing to request); --dry-run (decided, logged once, nothing sent);
// a PodDisruptionBudget's 429 (not retried in a loop; the next victim meanwhile; the
// pod evicted after its back-off once the budget allows).
//
// Real time, with deadlines for a loaded 2-core machine. Needs root and cgroup v1.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/support/evict_node.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"

namespace test_e2e_evict_memory {  // this file's own names: one e2e binary, unity chunks

namespace {

using json = nlohmann::json;
using koord::test::EvictNode;
using koord::test::waitFor;
using namespace std::chrono_literals;

constexpr auto kPhase = 30s;
const std::string kBig = EvictNode::kBig;
const std::string kSmall = EvictNode::kSmall;
const std::string kLs = EvictNode::kLs;
const koord::test::Labels kOnNode{{"node", EvictNode::kNodeName}};

koord::test::Labels requests(const std::string& result) {
  return {{"node", EvictNode::kNodeName}, {"feature", "BEMemoryEvict"}, {"result", result}};
}

}  // namespace

TEST_CASE("the BE pod with the most memory is evicted once through the API, an LS pod never",
          "[e2e][evict]") {
  KOORDLET_SKIP_UNLESS_EMPTY(EvictNode::unavailableReason());
  EvictNode s(std::getenv("KOORDLET_BIN"), {});
  const std::string ready = s.waitReady(kPhase);
  if (!ready.empty()) FAIL(s.fail("ready: " + ready));
  // Nothing is over the threshold yet: no eviction for a few rounds.
  std::this_thread::sleep_for(3s);
  REQUIRE(s.count("") == 0);

  // be-big's hog holds its memory, under the threshold: still nothing.
  s.startBigHog();
  std::this_thread::sleep_for(3s);
  REQUIRE(s.count("") == 0);
  // The NodeSLO's threshold goes under the node's use.
  const auto crossed = s.crossThreshold();
  std::string why = waitFor(kPhase, [&]() -> std::string {
    return s.count(kBig) > 0 ? "" : "no eviction of be-big yet";
  });
  if (!why.empty()) FAIL(s.fail(why));
  const EvictNode::Seen first = s.evictions().front();
  const double seconds = std::chrono::duration<double>(first.at - crossed).count();
  std::printf(
      "FIGURE memory eviction: %.2f s from the NodeSLO threshold under the node's use to the "
      "Eviction request (collection interval 1 s)\n",
      seconds);
  CHECK(first.pod == kBig);
  CHECK(first.status == 201);
  CHECK(first.body["apiVersion"] == "policy/v1");
  CHECK(first.body["kind"] == "Eviction");
  CHECK(first.body["deleteOptions"]["preconditions"]["uid"] == EvictNode::uid(kBig));
  CHECK_FALSE(first.body["deleteOptions"].contains("gracePeriodSeconds"));
  // Within two collection intervals (the watch brings the NodeSLO in milliseconds),
  // plus the poll of the stand-in's log.
  CHECK(seconds < 2.5);

  // The pod stays listed, its memory held, past the 4 s cool-down: its eviction is
  // pending, so neither it nor another pod is asked for.
  std::this_thread::sleep_for(7s);
  CHECK(s.count(kBig) == 1);
  CHECK(s.count(kSmall) == 0);
  CHECK(s.count(kLs) == 0);

  // The kubelet kills it: memory back, the pod gone; nothing more is evicted.
  s.killBig();
  std::this_thread::sleep_for(6s);
  CHECK(s.count("") == 1);
  CHECK(s.metric("koordlet_pod_eviction",
                 {{"node", EvictNode::kNodeName}, {"reason", "evicted"}}) == 1);
  CHECK(s.metric("koordlet_pod_eviction_requests_total", requests("evicted")) == 1);
  CHECK(s.metric("koordlet_pod_eviction_detail", {{"node", EvictNode::kNodeName},
                                                  {"pod_namespace", EvictNode::kNamespace},
                                                  {"pod_name", kBig},
                                                  {"reason", "evicted"}}) == 1);
  CHECK(s.metric("koordlet_eviction_enabled", kOnNode) == 1);
  // koordlet's Event on the pod.
  const std::vector<json> events = s.events(kBig);
  for (const json& e : events) {
    CHECK(e["reason"] == "evictPodSuccess");
    CHECK(e["type"] == "Warning");
    CHECK(e["source"]["component"] == "koordlet");
    CHECK(e["message"].get<std::string>().find("trigger by koordlet feature BEMemoryEvict") !=
          std::string::npos);
  }
  CHECK(events.size() == 1);
  CHECK(s.logCount("evicted pod colo/be-big") == 1);
  // /config shows the feature's last decision: under the threshold again.
  auto config = s.config();
  REQUIRE(config);
  CHECK((*config)["strategies"]["eviction"]["lastDecisions"]["BEMemoryEvict"]
            .get<std::string>()
            .rfind("below threshold", 0) == 0);
  // The audit log has the eviction and its answer.
  CHECK(s.auditLog().find(R"("evict":"colo/be-big")") != std::string::npos);
  CHECK(s.agent().terminate(10s) == 0);
}

TEST_CASE("with --dry-run the eviction is decided, logged once (per 2 minutes), nothing sent",
          "[e2e][evict]") {
  KOORDLET_SKIP_UNLESS_EMPTY(EvictNode::unavailableReason());
  EvictNode s(std::getenv("KOORDLET_BIN"), {"--dry-run"});
  const std::string ready = s.waitReady(kPhase);
  if (!ready.empty()) FAIL(s.fail("ready: " + ready));
  s.startBigHog();
  std::this_thread::sleep_for(3s);  // a few rounds with the hog held (see evict_node.h)
  s.crossThreshold();
  const std::string line = "dry-run: would evict pod colo/be-big";
  std::string why = waitFor(
      kPhase, [&]() -> std::string { return s.logCount(line) > 0 ? "" : "no dry-run decision"; });
  if (!why.empty()) FAIL(s.fail(why));
  std::this_thread::sleep_for(8s);  // two cool-downs: still logged once, never sent
  CHECK(s.logCount(line) == 1);
  CHECK(s.count("") == 0);
  CHECK(s.metric("koordlet_pod_eviction_requests_total", requests("dry_run")) == 1);
  CHECK_FALSE(
      s.metric("koordlet_pod_eviction", {{"node", EvictNode::kNodeName}, {"reason", "evicted"}})
          .has_value());
  CHECK(s.agent().terminate(10s) == 0);
}

TEST_CASE("a PodDisruptionBudget's 429 is not retried in a loop, and the pod goes once allowed",
          "[e2e][evict]") {
  KOORDLET_SKIP_UNLESS_EMPTY(EvictNode::unavailableReason());
  EvictNode s(std::getenv("KOORDLET_BIN"), {});
  s.api().protect(EvictNode::kNamespace, kBig, "be-budget");
  const std::string ready = s.waitReady(kPhase);
  if (!ready.empty()) FAIL(s.fail("ready: " + ready));
  s.startBigHog();
  std::this_thread::sleep_for(3s);  // a few rounds with the hog held (see evict_node.h)
  s.crossThreshold();
  std::string why = waitFor(kPhase, [&]() -> std::string {
    return s.count(kBig, 429) > 0 ? "" : "no refused eviction of be-big yet";
  });
  if (!why.empty()) FAIL(s.fail(why));
  const auto refusedAt = s.evictions().back().at;
  s.api().unprotect(EvictNode::kNamespace, kBig);
  // Within its back-off (10 s) be-big is not asked again; the next victim is.
  std::this_thread::sleep_for(8s);
  CHECK(s.count(kBig) == 1);
  CHECK(s.count(kSmall, 201) == 1);
  CHECK(s.count(kLs) == 0);
  // After the back-off, once: the budget allows it now.
  why = waitFor(kPhase, [&]() -> std::string {
    return s.count(kBig, 201) > 0 ? "" : "be-big not evicted after its back-off";
  });
  if (!why.empty()) FAIL(s.fail(why));
  const double after = std::chrono::duration<double>(s.evictions().back().at - refusedAt).count();
  CHECK(after >= 9.0);
  CHECK(s.count(kBig) == 2);
  CHECK(s.metric("koordlet_pod_eviction_requests_total", requests("budget")) == 1);
  CHECK(s.logCount("refused (budget)") == 1);
  CHECK(s.agent().terminate(10s) == 0);
}

TEST_CASE(
    "a throttling 429 keeps the pod counted: no other victim is asked, the same pod is "
    "asked again after its back-off, and the log says so",
    "[e2e][evict]") {
  KOORDLET_SKIP_UNLESS_EMPTY(EvictNode::unavailableReason());
  EvictNode s(std::getenv("KOORDLET_BIN"), {});
  // API priority and fairness: 429 without a DisruptionBudget cause.
  s.api().addFault({koord::test::TestApiServer::Fault::kTooManyRequests, 1, "/eviction", 5});
  const std::string ready = s.waitReady(kPhase);
  if (!ready.empty()) FAIL(s.fail("ready: " + ready));
  s.startBigHog();
  std::this_thread::sleep_for(3s);  // a few rounds with the hog held (see evict_node.h)
  s.crossThreshold();
  std::string why = waitFor(kPhase, [&]() -> std::string {
    return s.count(kBig, 429) > 0 ? "" : "no throttled eviction of be-big yet";
  });
  if (!why.empty()) FAIL(s.fail(why));
  // Within its back-off be-big still counts as releasing: be-small is not asked.
  std::this_thread::sleep_for(4s);
  CHECK(s.count(kSmall) == 0);
  why = waitFor(kPhase, [&]() -> std::string {
    return s.count(kBig, 201) > 0 ? "" : "be-big not evicted after its back-off";
  });
  if (!why.empty()) FAIL(s.fail(why));
  CHECK(s.count(kBig) == 2);
  CHECK(s.count(kSmall) == 0);
  CHECK(s.logCount("throttled by the API server") == 1);
  CHECK(s.logCount("stays counted as releasing") == 1);
  CHECK(s.logCount("the next victim is tried") == 0);
  CHECK(s.agent().terminate(10s) == 0);
}

}  // namespace test_e2e_evict_memory
