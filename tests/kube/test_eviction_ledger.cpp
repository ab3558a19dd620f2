// EvictionLedger: the per-UID states a strategy round reads (in flight, evicted for
// 2 minutes, failed and counted or refused and skipped with a back-off of 10 s
// doubling to 5 min, lengthened by a Retry-After, gone for 2 minutes), and retain()
// freeing the pods no longer listed. ManualClock only.
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <string>

#include "base/clock.h"
#include "kube/eviction_ledger.h"

namespace test_kube_eviction_ledger {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using State = EvictionLedger::State;

TEST_CASE("an unknown pod is neither pending nor blocked", "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  CHECK(ledger.state("uid-1", clock.now()) == State::kNone);
  CHECK_FALSE(ledger.pending("uid-1", clock.now()));
  CHECK_FALSE(ledger.blocked("uid-1", clock.now()));
  CHECK(ledger.size() == 0);
}

TEST_CASE("a requested pod is pending until its answer, however long that takes", "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  ledger.requested("uid-1", clock.now());
  CHECK(ledger.state("uid-1", clock.now()) == State::kInFlight);
  CHECK(ledger.pending("uid-1", clock.now()));
  CHECK_FALSE(ledger.blocked("uid-1", clock.now()));
  clock.advance(1h);
  CHECK(ledger.state("uid-1", clock.now()) == State::kInFlight);
  CHECK_FALSE(ledger.pending("uid-2", clock.now()));
}

TEST_CASE("an evicted pod stays pending for two minutes, then may be evicted again", "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  ledger.requested("uid-1", clock.now());
  ledger.evicted("uid-1", clock.now());
  CHECK(ledger.state("uid-1", clock.now()) == State::kEvicted);
  CHECK(ledger.pending("uid-1", clock.now()));
  clock.advance(EvictionLedger::kEvictedTtl - 1s);
  CHECK(ledger.pending("uid-1", clock.now()));
  clock.advance(1s);
  CHECK(ledger.state("uid-1", clock.now()) == State::kNone);
  CHECK_FALSE(ledger.pending("uid-1", clock.now()));
  CHECK_FALSE(ledger.blocked("uid-1", clock.now()));
}

TEST_CASE("a refused pod is blocked for 10 s, doubling per refusal up to 5 min", "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  std::chrono::seconds expected = 10s;
  for (int refusal = 1; refusal <= 8; ++refusal) {
    INFO("refusal " << refusal);
    ledger.requested("uid-1", clock.now());
    ledger.refused("uid-1", clock.now());
    CHECK(ledger.state("uid-1", clock.now()) == State::kRefused);
    CHECK(ledger.blocked("uid-1", clock.now()));
    CHECK_FALSE(ledger.pending("uid-1", clock.now()));
    clock.advance(expected - 1ms);
    CHECK(ledger.blocked("uid-1", clock.now()));
    clock.advance(1ms);
    CHECK_FALSE(ledger.blocked("uid-1", clock.now()));
    CHECK(ledger.state("uid-1", clock.now()) == State::kNone);
    expected = std::min<std::chrono::seconds>(expected * 2, 5min);
  }
  CHECK(expected == 5min);  // the cap was reached within the loop
}

TEST_CASE("an eviction resets the back-off of earlier refusals", "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  ledger.refused("uid-1", clock.now());
  clock.advance(10s);
  ledger.refused("uid-1", clock.now());  // 20 s
  clock.advance(20s);
  ledger.evicted("uid-1", clock.now());
  clock.advance(EvictionLedger::kEvictedTtl);
  ledger.refused("uid-1", clock.now());
  clock.advance(10s);
  CHECK_FALSE(ledger.blocked("uid-1", clock.now()));  // 10 s again, not 40 s
}

TEST_CASE("a Retry-After lengthens a refusal's back-off but never shortens it", "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  ledger.refused("uid-1", clock.now(), 45s);
  clock.advance(44s);
  CHECK(ledger.blocked("uid-1", clock.now()));
  clock.advance(1s);
  CHECK_FALSE(ledger.blocked("uid-1", clock.now()));

  // A short Retry-After does not cut the back-off (20 s now, the second refusal).
  ledger.refused("uid-1", clock.now(), 1s);
  clock.advance(19s);
  CHECK(ledger.blocked("uid-1", clock.now()));
  clock.advance(1s);
  CHECK_FALSE(ledger.blocked("uid-1", clock.now()));

  // The Retry-After did not enter the doubling: the third refusal waits 40 s.
  ledger.refused("uid-1", clock.now());
  clock.advance(39s);
  CHECK(ledger.blocked("uid-1", clock.now()));
  clock.advance(1s);
  CHECK_FALSE(ledger.blocked("uid-1", clock.now()));
}

TEST_CASE("a Retry-After never backs a pod off longer than the 5-minute cap", "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  ledger.failed("uid-1", clock.now(), std::chrono::seconds(999'999'999));  // "31 years"
  clock.advance(EvictionLedger::kRefusedMax - 1s);
  CHECK(ledger.pending("uid-1", clock.now()));
  clock.advance(1s);
  CHECK_FALSE(ledger.pending("uid-1", clock.now()));
}

TEST_CASE("a failed pod stays counted for its back-off, doubling, then may be asked again",
          "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  ledger.requested("uid-1", clock.now());
  ledger.failed("uid-1", clock.now());
  CHECK(ledger.state("uid-1", clock.now()) == State::kFailed);
  CHECK(ledger.pending("uid-1", clock.now()));
  CHECK_FALSE(ledger.blocked("uid-1", clock.now()));
  clock.advance(EvictionLedger::kRefusedFirst);
  CHECK(ledger.state("uid-1", clock.now()) == State::kNone);
  ledger.failed("uid-1", clock.now());
  clock.advance(EvictionLedger::kRefusedFirst * 2 - 1s);
  CHECK(ledger.pending("uid-1", clock.now()));
  clock.advance(1s);
  CHECK_FALSE(ledger.pending("uid-1", clock.now()));
}

TEST_CASE("a gone pod is skipped, not counted, for two minutes", "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  ledger.requested("uid-1", clock.now());
  ledger.gone("uid-1", clock.now());
  CHECK(ledger.state("uid-1", clock.now()) == State::kGone);
  CHECK(ledger.blocked("uid-1", clock.now()));
  CHECK_FALSE(ledger.pending("uid-1", clock.now()));
  clock.advance(EvictionLedger::kEvictedTtl - 1s);
  CHECK(ledger.blocked("uid-1", clock.now()));
  clock.advance(1s);
  CHECK(ledger.state("uid-1", clock.now()) == State::kNone);
}

TEST_CASE("forget drops a pod's entry whatever its state", "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  ledger.requested("uid-1", clock.now());
  ledger.refused("uid-2", clock.now());
  ledger.forget("uid-1");
  ledger.forget("uid-2");
  ledger.forget("uid-3");  // unknown: nothing happens
  CHECK(ledger.size() == 0);
  CHECK_FALSE(ledger.pending("uid-1", clock.now()));
  CHECK_FALSE(ledger.blocked("uid-2", clock.now()));
}

TEST_CASE("retain frees the pods no longer listed but keeps those in flight", "[ledger]") {
  ManualClock clock;
  EvictionLedger ledger;
  ledger.requested("in-flight-gone", clock.now());
  ledger.requested("evicted-gone", clock.now());
  ledger.evicted("evicted-gone", clock.now());
  ledger.refused("refused-gone", clock.now());
  ledger.refused("refused-live", clock.now());
  const std::set<std::string> live{"refused-live"};
  const size_t freed =
      ledger.retain([&](std::string_view uid) { return live.count(std::string(uid)) > 0; });
  CHECK(freed == 2);
  CHECK(ledger.size() == 2);
  CHECK(ledger.state("in-flight-gone", clock.now()) == State::kInFlight);
  CHECK(ledger.blocked("refused-live", clock.now()));
  CHECK(ledger.state("evicted-gone", clock.now()) == State::kNone);
  CHECK(ledger.state("refused-gone", clock.now()) == State::kNone);
  // Its answer still lands after the pod left the list; the next retain frees it.
  ledger.evicted("in-flight-gone", clock.now());
  CHECK(ledger.retain([&](std::string_view uid) { return live.count(std::string(uid)) > 0; }) == 1);
  CHECK(ledger.size() == 1);
}

}  // namespace test_kube_eviction_ledger
