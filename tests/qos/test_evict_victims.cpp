// Tests for qos/evict_victims: the pod attributes the eviction features read
// (policy annotation, priority with default, eviction priority, priority label),
// the victim orders and the shared walk with a ledger. Pods built by hand.
#include <catch2/catch.hpp>

#include <limits>

#include <deque>
#include <string>
#include <vector>

#include "qos/evict_victims.h"

namespace test_qos_evict_victims {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

const Clock::Monotonic kNow{std::chrono::seconds(1000)};

Pod named(const std::string& name) {
  Pod p;
  p.uid = "uid-" + name;
  p.ns = "ns";
  p.name = name;
  p.phase = "Running";
  return p;
}

std::vector<std::string> order(const std::vector<EvictVictim>& v) {
  std::vector<std::string> out;
  for (const EvictVictim& e : v) out.push_back(e.pod->name);
  return out;
}

std::vector<std::string> requested(const EvictWalk& w) {
  std::vector<std::string> out;
  for (const EvictionRequest& r : w.requests) out.push_back(r.feature + ":" + r.name);
  return out;
}

}  // namespace

TEST_CASE("the eviction-policy annotation lists the features allowed to evict a pod",
          "[evict_victims]") {
  Pod p = named("p");
  CHECK(evictionPolicyAllows(p, "BEMemoryEvict").allowed);  // absent: any
  p.annotations[kEvictionPolicyAnnotation] = R"(["BECPUEvict", "BEMemoryEvict"])";
  CHECK(evictionPolicyAllows(p, "BEMemoryEvict").allowed);
  CHECK_FALSE(evictionPolicyAllows(p, "MemoryEvict").allowed);
  CHECK(evictionPolicyAllows(p, "MemoryEvict").error.empty());
  p.annotations[kEvictionPolicyAnnotation] = "[]";
  CHECK_FALSE(evictionPolicyAllows(p, "BEMemoryEvict").allowed);
  for (const char* bad : {"BEMemoryEvict", "[1]", R"({"a":1})", "[\"BEMemoryEvict\""}) {
    p.annotations[kEvictionPolicyAnnotation] = bad;
    PolicyVerdict v = evictionPolicyAllows(p, "BEMemoryEvict");
    INFO(bad);
    CHECK_FALSE(v.allowed);
    CHECK(v.error.find("ns/p") != std::string::npos);
    CHECK(v.error.find("koordinator.sh/eviction-policy") != std::string::npos);
  }
}

TEST_CASE("priority with default: spec.priority unless 0, else the class default, else from QoS",
          "[evict_victims]") {
  Pod p = named("p");
  p.kubeQos = KubeQos::kBurstable;
  CHECK(priorityWithDefault(p) == 9500);  // LS by default: prod
  p.priority = 1234;
  CHECK(priorityWithDefault(p) == 1234);
  p.priority = 0;  // 0 is "not set"
  p.priorityClass = PriorityClass::kMid;
  CHECK(priorityWithDefault(p) == 7500);
  p.priorityClass = PriorityClass::kFree;
  CHECK(priorityWithDefault(p) == 3500);
  p.priorityClass = PriorityClass::kBatch;
  CHECK(priorityWithDefault(p) == 5500);
  p.priorityClass = PriorityClass::kNone;
  p.koordQos = KoordQos::kBE;
  CHECK(priorityWithDefault(p) == 5500);
  p.koordQos = KoordQos::kLSR;
  CHECK(priorityWithDefault(p) == 9500);
  p.koordQos = KoordQos::kNone;
  p.kubeQos = KubeQos::kBestEffort;  // BE by default: batch
  CHECK(priorityWithDefault(p) == 5500);
}

TEST_CASE("eviction priority and the priority label parse as Go integers, falling back when bad",
          "[evict_victims]") {
  Pod p = named("p");
  CHECK(evictionPriority(p) == 0);
  p.annotations[kEvictionPriorityAnnotation] = "-7";
  CHECK(evictionPriority(p) == -7);
  p.annotations[kEvictionPriorityAnnotation] = "+7";
  CHECK(evictionPriority(p) == 7);
  for (const char* bad : {"x", "1.5", " 3", "2147483648", "", "++1"}) {
    p.annotations[kEvictionPriorityAnnotation] = bad;
    INFO(bad);
    CHECK(evictionPriority(p) == 0);
  }
  CHECK(labelPriority(p, 42) == 42);
  p.labels[kPriorityLabel] = "2147483648";  // int64 here
  CHECK(labelPriority(p, 42) == 2147483648);
  p.labels[kPriorityLabel] = "high";
  CHECK(labelPriority(p, 42) == 42);
}

TEST_CASE("priority-based victims sort by eviction priority, priority, label priority, usage",
          "[evict_victims]") {
  std::deque<Pod> pods;
  auto victim = [&](const std::string& name, int32_t ep, int32_t prio, int64_t label,
                    int64_t used) {
    pods.push_back(named(name));
    EvictVictim v;
    v.pod = &pods.back();
    v.evictionPriority = ep;
    v.priority = prio;
    v.labelPriority = label;
    v.used = used;
    return v;
  };
  std::vector<EvictVictim> v = {
      victim("used-small", 0, 100, 100, 1),     victim("used-big", 0, 100, 100, 9),
      victim("label-low", 0, 100, 5, 0),        victim("prio-low", 0, 50, 999, 0),
      victim("evict-first", -1, 9000, 9000, 0),
  };
  sortByPriorityThenUsage(v);
  CHECK(order(v) ==
        std::vector<std::string>{"evict-first", "prio-low", "label-low", "used-big", "used-small"});
}

TEST_CASE(
    "priorityVictims keeps only active, allowed, enabled pods at or under the threshold "
    "with a fresh sample",
    "[evict_victims]") {
  std::deque<Pod> pods;
  QosSnapshot snap;
  snap.at = kNow;
  auto add = [&](const std::string& name, int32_t prio, std::optional<Sample> mem) -> Pod& {
    Pod& p = pods.emplace_back(named(name));
    p.priority = prio;
    p.labels[kEvictionEnabledLabel] = "true";
    PodView v;
    v.pod = &p;
    v.memoryBytes = mem;
    snap.pods.push_back(v);
    return p;
  };
  add("ok", 6000, Sample{100, kNow - 1s});
  add("above", 6001, Sample{100, kNow - 1s});
  add("stale", 10, Sample{100, kNow - 3s});
  add("nosample", 10, std::nullopt);
  add("pending-phase", 10, Sample{100, kNow - 1s}).phase = "Pending";
  add("failed", 10, Sample{100, kNow - 1s}).phase = "Failed";
  add("label-false", 10, Sample{100, kNow - 1s}).labels[kEvictionEnabledLabel] = "True";
  add("policy", 10, Sample{100, kNow - 1s}).annotations[kEvictionPolicyAnnotation] =
      R"(["CPUEvict"])";
  std::vector<std::string> errors;
  auto v = priorityVictims(snap, "MemoryEvict", 6000, &PodView::memoryBytes, 1.0, 2s, errors);
  CHECK(order(v) == std::vector<std::string>{"pending-phase", "ok"});
  CHECK(errors.empty());
}

TEST_CASE("the walk shares releases of one kind across tasks and skips pods already taken",
          "[evict_victims]") {
  std::deque<Pod> pods;
  auto v = [&](const std::string& name, int64_t used, int64_t request) {
    pods.push_back(named(name));
    EvictVictim e;
    e.pod = &pods.back();
    e.used = used;
    e.request = request;
    return e;
  };
  EvictVictim a = v("a", 100, 1000), b = v("b", 50, 500), c = v("c", 30, 0), d = v("d", 10, 0);
  SECTION("a later task of the same kind starts with what the first released") {
    std::vector<EvictTask> tasks = {{"T1", ReleaseKind::kUsed, 120, {a, b}},
                                    {"T2", ReleaseKind::kUsed, 170, {b, a, c, d}}};
    EvictWalk w = walkEvictTasks(tasks, nullptr, kNow);
    // T1: a (100) + b (150) >= 120. T2 at 150: a, b taken; c makes 180 >= 170.
    CHECK(requested(w) == std::vector<std::string>{"T1:a", "T1:b", "T2:c"});
    CHECK(w.tasks[0].released == 150);
    CHECK(w.tasks[1].released == 180);
    CHECK(w.tasks[1].met);
    CHECK(w.newlyPicked);
  }
  SECTION("a task already met by earlier ones picks nothing") {
    std::vector<EvictTask> tasks = {{"T1", ReleaseKind::kUsed, 120, {a, b}},
                                    {"T2", ReleaseKind::kUsed, 150, {c, d}}};
    EvictWalk w = walkEvictTasks(tasks, nullptr, kNow);
    CHECK(requested(w) == std::vector<std::string>{"T1:a", "T1:b"});
    CHECK(w.tasks[1].picked.empty());
    CHECK(w.tasks[1].met);
  }
  SECTION("a pick counts toward every kind the round's tasks count") {
    std::vector<EvictTask> tasks = {{"BE", ReleaseKind::kBatchCpuRequest, 900, {a}},
                                    {"USED", ReleaseKind::kUsed, 120, {c, d, b}}};
    EvictWalk w = walkEvictTasks(tasks, nullptr, kNow);
    // a released 1000 of request and 100 of usage; USED needs 20 more: c.
    CHECK(requested(w) == std::vector<std::string>{"BE:a", "USED:c"});
    CHECK(w.tasks[1].released == 130);
  }
  SECTION("pending counts as released without a request; blocked is skipped") {
    EvictionLedger ledger;
    ledger.requested("uid-a", kNow - 5s);
    ledger.refused("uid-b", kNow - 1s);
    std::vector<EvictTask> tasks = {{"T", ReleaseKind::kUsed, 130, {a, b, c, d}}};
    EvictWalk w = walkEvictTasks(tasks, &ledger, kNow);
    CHECK(requested(w) == std::vector<std::string>{"T:c"});
    CHECK(w.tasks[0].pending == std::vector<std::string>{"a"});
    CHECK(w.tasks[0].blocked == std::vector<std::string>{"b"});
    CHECK(w.tasks[0].released == 130);
  }
  SECTION("a failed pod (API down) stays counted; a gone one (404/409) is skipped") {
    EvictionLedger ledger;
    ledger.failed("uid-a", kNow - 1s);
    ledger.gone("uid-b", kNow - 1s);
    std::vector<EvictTask> tasks = {{"T", ReleaseKind::kUsed, 130, {a, b, c, d}}};
    EvictWalk w = walkEvictTasks(tasks, &ledger, kNow);
    // An outage costs one request per back-off for a, not one for every victim.
    CHECK(requested(w) == std::vector<std::string>{"T:c"});
    CHECK(w.tasks[0].pending == std::vector<std::string>{"a"});
    CHECK(w.tasks[0].blocked == std::vector<std::string>{"b"});
  }
  SECTION("a pod being deleted is counted and never asked for") {
    Pod leaving = *a.pod;
    leaving.terminating = true;
    EvictVictim t = a;
    t.pod = &leaving;
    std::vector<EvictTask> tasks = {{"T", ReleaseKind::kUsed, 130, {t, b, c}}};
    EvictWalk w = walkEvictTasks(tasks, nullptr, kNow);
    CHECK(requested(w) == std::vector<std::string>{"T:b"});
    CHECK(w.tasks[0].pending == std::vector<std::string>{"a"});
  }
  SECTION("only pending pods: nothing new, so no cool-down") {
    EvictionLedger ledger;
    ledger.evicted("uid-a", kNow - 1min);
    std::vector<EvictTask> tasks = {{"T", ReleaseKind::kUsed, 100, {a, b}}};
    EvictWalk w = walkEvictTasks(tasks, &ledger, kNow);
    CHECK(w.requests.empty());
    CHECK_FALSE(w.newlyPicked);
    CHECK(w.tasks[0].met);
  }
  SECTION("not enough victims: all picked, target not met") {
    std::vector<EvictTask> tasks = {{"T", ReleaseKind::kUsed, 1000, {a, b}}};
    EvictWalk w = walkEvictTasks(tasks, nullptr, kNow);
    CHECK(w.requests.size() == 2);
    CHECK_FALSE(w.tasks[0].met);
    CHECK(w.requests[0].message == "trigger by koordlet feature T, kill pod: a");
  }
}

TEST_CASE("a percent of an amount saturates instead of overflowing", "[evict_victims]") {
  CHECK(percentOfSat(200'000, 11) == 22'000);
  CHECK(percentOfSat(std::numeric_limits<int64_t>::max(), 30) ==
        std::numeric_limits<int64_t>::max());
  CHECK(percentOfSat(std::numeric_limits<int64_t>::max(), -2) ==
        std::numeric_limits<int64_t>::min());
  CHECK(percentOfSat(0, 100) == 0);
}

}  // namespace test_qos_evict_victims
