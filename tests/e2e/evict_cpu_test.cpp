// End-to-end BECPUEvict (reference koordlet.md §4.4) on this machine's real cgroup v1
// kernel: the real koordlet binary over tests/support/evict_node.h's CPU scene. be-big
// burns a core under its batch-cpu request; when the LS pod's burner starts, CPU
// suppress (policy cfsQuota) takes the besteffort quota to its floor while the BE
// batch request stays, the BE satisfaction (real limit / request) stays under the
// lower percent for the window, and be-big is evicted through the API stand-in:
// once, and no other pod.
//
// Real time, with deadlines for a loaded 2-core machine. Needs root, cgroup v1 and two
// CPUs.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/support/evict_node.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"

namespace test_e2e_evict_cpu {  // this file's own names: one e2e binary, unity chunks

namespace {

using json = nlohmann::json;
using koord::test::EvictNode;
using koord::test::EvictScene;
using koord::test::waitFor;
using namespace std::chrono_literals;

const std::string kBig = EvictNode::kBig;
const std::string kSmall = EvictNode::kSmall;
const std::string kLs = EvictNode::kLs;

}  // namespace

TEST_CASE("a BE pod starved of CPU by suppress under its batch request is evicted once",
          "[e2e][evict]") {
  KOORDLET_SKIP_UNLESS_EMPTY(EvictNode::cpuUnavailableReason());
  EvictNode s(std::getenv("KOORDLET_BIN"), {}, EvictScene::kCpu);
  const std::string ready = s.waitReady(30s);
  if (!ready.empty()) FAIL(s.fail("ready: " + ready));

  // be-big burns its core; BE is allowed about half the node: satisfied enough, and
  // past the cool-down (kCpuCoolSeconds from start) nothing is evicted.
  std::this_thread::sleep_for(std::chrono::seconds(EvictNode::kCpuCoolSeconds + 4));
  if (s.count("") != 0) {
    FAIL(s.fail("evicted before the LS load; besteffort quota " +
                std::to_string(s.beQuota().value_or(-2))));
  }
  CHECK(s.beQuota() != EvictNode::kQuotaFloor);

  // The LS load: suppress takes BE to the floor.
  s.startCpuPressure();
  std::string why = waitFor(30s, [&]() -> std::string {
    return s.beQuota() == EvictNode::kQuotaFloor ? "" : "the besteffort quota is not at the floor";
  });
  if (!why.empty()) FAIL(s.fail(why));
  const auto floored = std::chrono::steady_clock::now();
  why = waitFor(
      30s, [&]() -> std::string { return s.count(kBig) > 0 ? "" : "no eviction of be-big yet"; });
  if (!why.empty()) FAIL(s.fail(why));
  const EvictNode::Seen first = s.evictions().front();
  const double seconds = std::chrono::duration<double>(first.at - floored).count();
  std::printf(
      "FIGURE cpu eviction: %.2f s from the besteffort quota at its floor to the "
      "Eviction request (window %d s, collection interval 1 s)\n",
      seconds, EvictNode::kCpuWindowSeconds);
  CHECK(first.pod == kBig);
  CHECK(first.status == 201);
  CHECK(first.body["deleteOptions"]["preconditions"]["uid"] == EvictNode::uid(kBig));
  // The window's average satisfaction has to fall first; then within a round or two.
  CHECK(seconds < EvictNode::kCpuWindowSeconds + 4);

  // be-big stays listed and burning (its eviction pending): the release it stands for
  // covers the need, so be-small is not asked for, nor be-big again.
  std::this_thread::sleep_for(std::chrono::seconds(EvictNode::kCpuCoolSeconds + 3));
  CHECK(s.count(kBig) == 1);
  CHECK(s.count(kSmall) == 0);
  CHECK(s.count(kLs) == 0);
  CHECK(s.metric("koordlet_pod_eviction_requests_total", {{"node", EvictNode::kNodeName},
                                                          {"feature", "BECPUEvict"},
                                                          {"result", "evicted"}}) == 1);
  const std::vector<json> events = s.events(kBig);
  for (const json& e : events) {
    CHECK(e["reason"] == "evictPodSuccess");
    CHECK(e["message"].get<std::string>().find("BECPUEvict") != std::string::npos);
  }
  CHECK(events.size() == 1);
  // The audit log has the eviction beside the suppress writes.
  const std::string audit = s.auditLog();
  CHECK(audit.find("\"evict\":\"colo/be-big\"") != std::string::npos);
  CHECK(audit.find("\"result\":\"evicted\"") != std::string::npos);
  CHECK(audit.find("cpu.cfs_quota_us") != std::string::npos);
  CHECK(s.agent().terminate(10s) == 0);
}

}  // namespace test_e2e_evict_cpu
