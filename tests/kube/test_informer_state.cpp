#include <catch2/catch.hpp>

#include "kube/informer_state.h"

namespace test_kube_informer_state {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using Step = InformerState::Step;

namespace {

WatchEvent ev(WatchEventType type, const std::string& rv, nlohmann::json object = {}) {
  WatchEvent e;
  e.type = type;
  e.resourceVersion = rv;
  e.object = std::move(object);
  return e;
}

WatchEvent gone() {
  WatchEvent e;
  e.type = WatchEventType::kError;
  e.statusCode = 410;
  e.message = "too old resource version: 1 (240)";
  return e;
}

nlohmann::json slo(int percent) {
  return {{"metadata", {{"name", "rig-node"}}},
          {"spec", {{"resourceUsedThresholdWithBE", {{"cpuSuppressThresholdPercent", percent}}}}}};
}

}  // namespace

TEST_CASE("An informer lists first, then watches from the list's resourceVersion") {
  InformerState s([] { return 0.0; });
  CHECK(s.next().step == Step::kList);
  CHECK_FALSE(s.synced());
  s.listed("240", slo(60));
  CHECK(s.synced());
  auto a = s.next();
  CHECK(a.step == Step::kWatch);
  CHECK(a.resourceVersion == "240");
  REQUIRE(s.object());
  CHECK((*s.object())["spec"]["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"] == 60);
}

TEST_CASE("Watch events replace, clear and only move the resourceVersion for bookmarks") {
  InformerState s([] { return 0.0; });
  s.next();
  s.listed("240", std::nullopt);
  CHECK_FALSE(s.object());
  CHECK(s.event(ev(WatchEventType::kAdded, "241", slo(50))));
  CHECK(s.object());
  CHECK(s.event(ev(WatchEventType::kModified, "242", slo(55))));
  CHECK((*s.object())["spec"]["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"] == 55);
  CHECK_FALSE(s.event(ev(WatchEventType::kBookmark, "300")));
  CHECK(s.object());
  CHECK(s.resourceVersion() == "300");
  CHECK(s.event(ev(WatchEventType::kDeleted, "301", slo(55))));
  CHECK_FALSE(s.object());
  s.watchEnded();
  auto a = s.next();
  CHECK(a.step == Step::kWatch);
  CHECK(a.resourceVersion == "301");
}

TEST_CASE("A 410 re-lists at once the first time and backs off if it repeats") {
  InformerState s([] { return 0.0; });
  s.next();
  s.listed("240", slo(60));
  s.next();
  CHECK_FALSE(s.event(gone()));
  CHECK(s.next().step == Step::kList);
  CHECK(s.relists() == 1);
  // The re-list's answer is again too old (a 410 to the list itself).
  s.failed(410);
  auto a = s.next();
  CHECK(a.step == Step::kWait);
  CHECK(a.wait == 800ms);
  CHECK(s.next().step == Step::kList);
  CHECK(s.relists() == 2);
  // The object is kept through the re-lists: the last good one stays in force.
  CHECK(s.object());
}

TEST_CASE(
    "A 410 storm, every watch from a fresh list answered 410, backs off growing instead of "
    "looping list-watch, and progress on a watch ends it") {
  InformerState s([] { return 0.0; });
  s.next();
  s.listed("240", slo(60));
  CHECK(s.next().step == Step::kWatch);
  s.event(gone());
  CHECK(s.next().step == Step::kList);  // the first 410: at once
  std::vector<std::chrono::nanoseconds> waits;
  for (int i = 0; i < 4; ++i) {
    s.listed("300", slo(60));  // the list succeeds...
    REQUIRE(s.next().step == Step::kWatch);
    s.event(gone());  // ...and its watch is 410 again
    auto a = s.next();
    REQUIRE(a.step == Step::kWait);
    waits.push_back(a.wait);
    REQUIRE(s.next().step == Step::kList);
  }
  CHECK(waits == std::vector<std::chrono::nanoseconds>{800ms, 1600ms, 3200ms, 6400ms});
  CHECK(s.object());
  // The storm ends: the watch delivers a bookmark; the next 410 re-lists at once.
  s.listed("400", slo(60));
  REQUIRE(s.next().step == Step::kWatch);
  s.event(ev(WatchEventType::kBookmark, "401"));
  s.event(gone());
  CHECK(s.next().step == Step::kList);
  // And so does a watch that ended cleanly.
  s.listed("500", slo(60));
  s.event(gone());
  CHECK(s.next().step == Step::kWait);
  s.next();
  s.listed("501", slo(60));
  s.next();
  s.watchEnded();
  s.next();
  s.event(gone());
  CHECK(s.next().step == Step::kList);
}

TEST_CASE(
    "Failures back off from 800 ms doubling to a 30 s cap with jitter, and resume the watch") {
  double r = 0.5;
  InformerState s([&r] { return r; });
  s.next();
  s.listed("240", slo(60));
  std::vector<std::chrono::nanoseconds> waits;
  for (int i = 0; i < 8; ++i) {
    s.next();  // the watch
    s.failed(0);
    auto a = s.next();
    REQUIRE(a.step == Step::kWait);
    waits.push_back(a.wait);
    auto resume = s.next();
    CHECK(resume.step == Step::kWatch);
    CHECK(resume.resourceVersion == "240");
  }
  CHECK(waits[0] == 1200ms);  // 800 ms x 1.5
  CHECK(waits[1] == 2400ms);
  CHECK(waits[2] == 4800ms);
  CHECK(waits[5] == 38400ms);  // 25.6 s x 1.5: jitter after the cap
  CHECK(waits[6] == 45s);      // 30 s (the cap) x 1.5
  CHECK(waits[7] == 45s);
  // One event resets the back-off.
  s.event(ev(WatchEventType::kModified, "250", slo(61)));
  s.failed(0);
  CHECK(s.next().wait == 1200ms);
}

TEST_CASE("A 429's or 503's Retry-After is waited instead of the back-off, at most 5 minutes") {
  InformerState s([] { return 0.0; });
  s.next();
  s.failed(429, 7s);
  CHECK(s.next().wait == 7s);
  CHECK(s.next().step == Step::kList);  // never listed: list again
  s.failed(429, std::chrono::seconds(86400));
  CHECK(s.next().wait == 5min);
  s.next();
  // A short Retry-After is taken as said, even with a longer back-off built up.
  for (int i = 0; i < 5; ++i) {
    s.failed(500);
    s.next();
    s.next();
  }
  s.failed(503, 1s);
  CHECK(s.next().wait == 1s);
  s.next();
  s.failed(429, 0s);  // "Retry-After: 0" is not a loop
  CHECK(s.next().wait == 1s);
  // Without Retry-After a 429 backs off like any failure.
  s.next();
  s.failed(429);
  CHECK(s.next().wait > 1s);
}

TEST_CASE("The first reply after an outage starts the back-off again from 800 ms") {
  InformerState s([] { return 0.0; });
  s.next();
  s.listed("10", std::nullopt);
  s.next();
  // The server is down: transport failures grow the back-off to its cap.
  for (int i = 0; i < 8; ++i) {
    s.failed(0);
    s.next();
    s.next();
  }
  s.failed(0);
  CHECK(s.next().wait == 30s);  // the cap (jitter 0 here)
  s.next();
  // Back, but not ready: a 403 before its RBAC cache is loaded.
  s.failed(403);
  CHECK(s.next().wait == 800ms);
  s.next();
  s.failed(403);
  CHECK(s.next().wait == 1600ms);  // a 403 that stays backs off as usual
}

TEST_CASE("A list failure before the first success keeps the informer unsynced and re-lists") {
  InformerState s([] { return 0.0; });
  CHECK(s.next().step == Step::kList);
  s.failed(0);
  CHECK(s.next().step == Step::kWait);
  CHECK(s.next().step == Step::kList);
  CHECK_FALSE(s.synced());
  s.failed(403);
  s.next();
  CHECK(s.next().step == Step::kList);
  s.listed("10", std::nullopt);
  CHECK(s.synced());
  CHECK(s.next().step == Step::kWatch);
}

}  // namespace test_kube_informer_state
