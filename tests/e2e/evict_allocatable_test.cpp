// End-to-end CPUAllocatableEvict and MemoryAllocatableEvict (koordlet v1.8; reference
// koordlet.md §4.4, §4.5) in the real koordlet binary over tests/support/evict_node.h's
// allocatable scene on this machine's real cgroup v1 kernel: two koord-batch pods ask
// for 1,500 milli-cores of batch-cpu and 320 MiB of batch-memory; the Node's batch
// allocatable (the API server stand-in, as koord-manager writes it) shrinks under what
// they ask, and the agent evicts through the Eviction API: the largest request first,
// each pod once, the LS pod (koord-prod, over the priority threshold) never.
//
// Real time, with deadlines for a loaded 2-core machine. Needs root and cgroup v1.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/support/evict_node.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"

namespace test_e2e_evict_allocatable {  // this file's own names: one e2e binary, unity chunks

namespace {

using json = nlohmann::json;
using koord::test::EvictNode;
using koord::test::EvictScene;
using koord::test::waitFor;
using namespace std::chrono_literals;

const std::string kBig = EvictNode::kBig;
const std::string kSmall = EvictNode::kSmall;
const std::string kLs = EvictNode::kLs;
constexpr auto kPhase = 30s;

std::string decision(EvictNode& s, const char* feature) {
  auto c = s.config();
  if (!c) return "no /config";
  const json& d = (*c)["strategies"]["eviction"]["lastDecisions"];
  return d.contains(feature) ? d[feature].get<std::string>() : "no decision";
}

bool eventSays(EvictNode& s, const std::string& pod, const std::string& words) {
  for (const json& e : s.events(pod)) {
    if (e.value("reason", "") == "evictPodSuccess" &&
        e.value("message", "").find(words) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE(
    "when the Node's batch allocatable shrinks under what batch pods request, the largest "
    "request is evicted once per pod, by CPU and then by memory, and an LS pod never",
    "[e2e][evict]") {
  KOORDLET_SKIP_UNLESS_EMPTY(EvictNode::unavailableReason());
  EvictNode s(std::getenv("KOORDLET_BIN"), {}, EvictScene::kAllocatable);
  const std::string ready = s.waitReady(kPhase);
  if (!ready.empty()) FAIL(s.fail("ready: " + ready));

  // 1. 1,500 of 4,000 milli-cores and 320 MiB of 1 GiB requested: nothing to do, past
  //    the CPU cool-down.
  std::this_thread::sleep_for(std::chrono::seconds(EvictNode::kCpuCoolSeconds + 3));
  REQUIRE(s.count("") == 0);
  CHECK(decision(s, "CPUAllocatableEvict") ==
        "kubernetes.io/batch-cpu: requested 1500 of 4000 allocatable (37%) <= 110%");
  CHECK(decision(s, "MemoryAllocatableEvict") ==
        "kubernetes.io/batch-memory: requested 335544320 of 1073741824 allocatable (31%) <= "
        "110%");

  // 2. koord-manager lowers batch-cpu to 1,200: 125% > 110%, release 300: be-big (1,000)
  //    alone covers it.
  s.setBatchAllocatable(1200, int64_t{1} << 30);
  std::string why = waitFor(kPhase, [&]() -> std::string {
    return s.count(kBig) > 0 ? "" : "no eviction of be-big yet";
  });
  if (!why.empty()) FAIL(s.fail(why));
  CHECK(s.evictions().front().pod == kBig);
  CHECK(s.evictions().front().status == 201);
  CHECK(s.evictions().front().body["deleteOptions"]["preconditions"]["uid"] ==
        EvictNode::uid(kBig));
  CHECK(decision(s, "CPUAllocatableEvict")
            .find("requested 1500 of 1200 allocatable (125%) > "
                  "110%: release 300 milli-cores") != std::string::npos);
  why = waitFor(kPhase, [&]() -> std::string {
    return eventSays(s, kBig, "trigger by koordlet feature CPUAllocatableEvict") ? "" : "no Event";
  });
  CHECK(why.empty());
  // Listed still (its grace period), past the cool-down: pending, not asked again.
  std::this_thread::sleep_for(std::chrono::seconds(EvictNode::kCpuCoolSeconds + 2));
  CHECK(s.count(kBig) == 1);
  CHECK(s.count(kSmall) == 0);

  // 3. The kubelet has killed it; koord-manager lowers batch-memory to 32 MiB: be-small's
  //    64 MiB is 200% of it, release 32 MiB.
  s.killBig();
  std::this_thread::sleep_for(2s);
  CHECK(s.count(kSmall) == 0);  // 500 of 1,200 milli-cores: under
  s.setBatchAllocatable(1200, int64_t{32} << 20);
  why = waitFor(kPhase, [&]() -> std::string {
    return s.count(kSmall) > 0 ? "" : "no eviction of be-small yet";
  });
  if (!why.empty()) FAIL(s.fail(why));
  why = waitFor(kPhase, [&]() -> std::string {
    return eventSays(s, kSmall, "trigger by koordlet feature MemoryAllocatableEvict") ? ""
                                                                                      : "no Event";
  });
  CHECK(why.empty());
  std::this_thread::sleep_for(6s);  // past the memory cool-down: pending, not asked again
  CHECK(s.count(kSmall) == 1);
  CHECK(s.count(kBig) == 1);
  CHECK(s.count(kLs) == 0);
  CHECK(s.count("") == 2);
  CHECK(s.auditLog().find(R"("evict":"colo/be-small")") != std::string::npos);
  CHECK(s.agent().terminate(10s) == 0);
}

}  // namespace test_e2e_evict_allocatable
