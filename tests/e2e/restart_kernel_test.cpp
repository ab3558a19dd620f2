// Restart and upgrade safety (issue 34) on this machine's real cgroup v1 kernel: the
// CPU eviction scene (tests/support/evict_node.h: suppress holds the besteffort quota
// at its floor under the LS pod's load, BECPUEvict evicts be-big through the API
// server stand-in, the node's topology is reported). The agent is killed with SIGKILL
// and started
// again at once (four times, at different moments of its 1 s round), then rolled
// (SIGTERM, a new binary, start). A thread reads the
// besteffort cpu.cfs_quota_us from the kernel every 2 ms throughout. What must hold:
//   - the quota never holds a value neither run wrote (no transient -1, no value
//     looser or harsher than the runs' own), and no run's first round changes it:
//     each start reads what the kernel holds and finds it right (writes between the
//     two runs that change a value: none);
//   - be-big, evicted before the restarts and listed by the kubelet as terminating,
//     is never asked for again, nor any other pod;
//   - the NodeResourceTopology is created once, never again after a restart.
// Skips (77) without root or cgroup v1 with cpu, cpuacct, cpuset, memory and 2 CPUs;
// KOORDLET_REQUIRE_ALL=1 makes that a failure.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/evict_node.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"

namespace test_e2e_restart_kernel {  // this file's own names: one e2e binary, unity chunks

using koord::test::EvictNode;
using koord::test::EvictScene;
using koord::test::waitFor;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr const char* kBig = EvictNode::kBig;

// The audit log's besteffort quota writes: (old, new), oldest first.
std::vector<std::pair<int64_t, int64_t>> quotaWrites(const std::string& audit) {
  std::vector<std::pair<int64_t, int64_t>> out;
  std::istringstream lines(audit);
  for (std::string line; std::getline(lines, line);) {
    auto e = json::parse(line, nullptr, false);
    if (!e.is_object()) continue;
    const std::string path = e.value("path", "");
    if (!path.ends_with("/kubepods/besteffort/cpu.cfs_quota_us")) continue;
    out.emplace_back(std::strtoll(e.value("old", "").c_str(), nullptr, 10),
                     std::strtoll(e.value("new", "").c_str(), nullptr, 10));
  }
  return out;
}

}  // namespace

TEST_CASE(
    "SIGKILLs at any moment of a round and a rolling update move no knob, ask for no pod twice and "
    "create no second NodeResourceTopology",
    "[e2e][restart]") {
  KOORDLET_SKIP_UNLESS_EMPTY(EvictNode::cpuUnavailableReason());
  const char* bin = std::getenv("KOORDLET_BIN");
  if (bin == nullptr || *bin == '\0') FAIL("KOORDLET_BIN is not set");
  EvictNode s(bin, {}, EvictScene::kCpu);
  std::string why = s.waitReady(30s);
  if (!why.empty()) FAIL(s.fail("ready: " + why));

  // The LS load: BE to the floor, be-big evicted; the kubelet shows it terminating.
  s.startCpuPressure();
  why = waitFor(60s, [&]() -> std::string {
    return s.count(kBig, 201) > 0 ? "" : "no eviction of be-big yet";
  });
  if (!why.empty()) FAIL(s.fail(why));
  s.markBeingDeleted(kBig);
  why = waitFor(30s, [&]() -> std::string {
    return s.beQuota() == EvictNode::kQuotaFloor && s.topologyCreates() == 1
               ? ""
               : "quota not at the floor, or no topology yet";
  });
  if (!why.empty()) FAIL(s.fail(why));
  std::this_thread::sleep_for(3s);  // a few rounds of the steady state

  // The kernel's value, every 2 ms, from here to the end.
  std::mutex mu;
  std::set<int64_t> seen;
  size_t samples = 0, unreadable = 0;
  std::atomic<bool> stop{false};
  std::thread sampler;
  struct Join {  // a FAIL below must not leave the thread running
    std::atomic<bool>& stop;
    std::thread& t;
    ~Join() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join{stop, sampler};
  sampler = std::thread([&] {
    while (!stop) {
      const auto v = s.beQuota();
      {
        std::lock_guard lock(mu);
        ++samples;
        if (v) {
          seen.insert(*v);
        } else {
          ++unreadable;
        }
      }
      std::this_thread::sleep_for(2ms);
    }
  });
  const size_t writesBefore = quotaWrites(s.auditLog()).size();

  // 1. SIGKILL three times, each at another moment of the 1 s round (the first rounds
  // after a start, where a start's mistakes would write), then once in steady state.
  for (auto after : {300ms, 650ms, 1000ms}) {
    s.restartAgent(true);
    std::this_thread::sleep_for(after);
  }
  s.restartAgent(true);
  why = s.waitReady(30s);
  if (!why.empty()) FAIL(s.fail("ready after SIGKILL: " + why));
  std::this_thread::sleep_for(EvictNode::kCpuCoolSeconds * 1s + 4s);  // past its cool-down

  // 2. A rolling update: SIGTERM, a new binary, start.
  const std::string newBinary =
      std::filesystem::temp_directory_path() / ("koordlet-rolled-" + std::to_string(::getpid()));
  std::filesystem::copy_file(bin, newBinary, std::filesystem::copy_options::overwrite_existing);
  struct Remove {
    std::string path;
    ~Remove() { std::filesystem::remove(path); }
  } removeNew{newBinary};
  s.restartAgent(false, newBinary);
  why = s.waitReady(30s);
  if (!why.empty()) FAIL(s.fail("ready after the roll: " + why));
  std::this_thread::sleep_for(EvictNode::kCpuCoolSeconds * 1s + 4s);
  stop = true;
  sampler.join();

  const auto writes = quotaWrites(s.auditLog());
  std::set<int64_t> written;
  for (const auto& [oldValue, newValue] : writes) written.insert(newValue);
  size_t changedAfter = 0;
  for (size_t i = writesBefore; i < writes.size(); ++i) {
    if (writes[i].first != writes[i].second) ++changedAfter;
  }
  std::printf("FIGURE restart: %zu kernel samples across a SIGKILL and a roll, values seen {",
              samples);
  for (int64_t v : seen) std::printf(" %lld", static_cast<long long>(v));
  std::printf(" }; besteffort quota writes after the first kill: %zu, changing a value: %zu\n",
              writes.size() - writesBefore, changedAfter);
  {
    std::lock_guard lock(mu);
    INFO("values the runs wrote: " << json(std::vector<int64_t>(written.begin(), written.end())));
    CHECK(unreadable == 0);
    CHECK_FALSE(seen.contains(-1));
    // Under a steady LS load both runs hold the floor: nothing else may show.
    CHECK(seen == std::set<int64_t>{EvictNode::kQuotaFloor});
    for (int64_t v : seen) CHECK(written.contains(v));
  }
  // Each start read the kernel's floor and found it right: no write at all (a start
  // that wrote from an assumed value would show here, even an equal one).
  CHECK(changedAfter == 0);
  CHECK(writes.size() == writesBefore);
  // The rolled agent does run suppress (no write above is not a run that does nothing):
  // a quota put behind its back is taken back to the floor.
  s.writeBeQuota(100000);
  why = waitFor(10s, [&]() -> std::string {
    return s.beQuota() == EvictNode::kQuotaFloor ? "" : "the quota written behind its back stays";
  });
  CHECK(why == "");
  // No pod asked twice, be-big not asked again while terminating; one topology.
  CHECK(s.count(kBig) == 1);
  CHECK(s.count(EvictNode::kSmall) <= 1);
  CHECK(s.count(EvictNode::kLs) == 0);
  CHECK(s.topologyCreates() == 1);
  CHECK(s.agent().terminate(10s) == 0);
}

}  // namespace test_e2e_restart_kernel
