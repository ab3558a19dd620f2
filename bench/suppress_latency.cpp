// Suppress latency benchmark (not a test): how long the real agent takes, on this
// machine's real cgroup v1 kernel, from an LS load step to the besteffort quota
// write that answers it. The scene is the suppress end-to-end test's
// (tests/support/suppress_node.h): a BE pod whose burner is always busy, an LS pod
// whose burner the benchmark switches, the agent at the default 1 s collection and
// suppress intervals with cpuSuppressPolicy cfsQuota at 65%.
//
// Each step up: after a random pause (so steps fall at every phase of the agent's
// timers), the LS burner starts spinning; the step's time is the moment the
// burner itself saw the command (CLOCK_MONOTONIC). The benchmark polls the
// kernel's besteffort cpu.cfs_quota_us every 5 ms and records two moments:
//   first write     the first change of the file in the step's direction (down
//                   for a step up, up for a step down);
//   answering write the first change that moved it by at least kUpReaction down
//                   (a quarter of the LS core: more than the noise of system
//                   usage, less than any real answer) or kDownReaction up (three
//                   quarters of the +10%-of-capacity growth cap).
// They differ when the first round after the step saw only a sliver of it (its
// rate window ended just after the step). Between steps the benchmark waits for
// the quota to stay within kQuietBand for two seconds.
//
//   suppress_latency AGENT_BINARY [STEPS]     (root, cgroup v1; STEPS default 10)
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <iostream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/suppress_node.h"

namespace {

using koord::test::SuppressNode;
using SteadyClock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kPoll = 5ms;
constexpr auto kInterval = 1s;  // --collect-res-used-interval and --cpu-suppress-interval-seconds
constexpr int64_t kUpReaction = 25000;    // µs of quota: 0.25 cores
constexpr int64_t kDownReaction = 15000;  // µs: three quarters of the +20000 growth cap
constexpr int64_t kQuietBand = 5000;      // µs: 0.05 cores
constexpr auto kQuietFor = 2s;
constexpr auto kReactionLimit = 10s;

struct Write {
  int64_t value = 0;
  double ms = 0;  // from the step
};

struct Step {
  bool up = false;
  int64_t before = 0;
  std::optional<Write> first;
  std::optional<Write> answer;
};

int64_t quotaNow(SuppressNode& node) {
  auto q = node.beQuota();
  if (!q) throw std::runtime_error("besteffort cpu.cfs_quota_us unreadable");
  return *q;
}

// Polls until the quota has stayed within kQuietBand of one value for `quiet`,
// or `limit` passes; returns that value.
int64_t waitQuiet(SuppressNode& node, std::chrono::milliseconds quiet,
                  std::chrono::milliseconds limit) {
  const auto deadline = SteadyClock::now() + limit;
  int64_t anchor = quotaNow(node);
  auto since = SteadyClock::now();
  while (SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(kPoll);
    const int64_t q = quotaNow(node);
    if (std::llabs(q - anchor) > kQuietBand) {
      anchor = q;
      since = SteadyClock::now();
    } else if (SteadyClock::now() - since >= quiet) {
      return q;
    }
  }
  return quotaNow(node);
}

Step measure(SuppressNode& node, bool up) {
  Step s;
  s.up = up;
  s.before = quotaNow(node);
  const auto t0 = node.setLsBusy(up);
  const auto deadline = t0 + kReactionLimit;
  while (SteadyClock::now() < deadline) {
    const int64_t q = quotaNow(node);
    const Write w{q, std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count()};
    if (!s.first && (up ? q < s.before : q > s.before)) s.first = w;
    if (up ? q <= s.before - kUpReaction : q >= s.before + kDownReaction) {
      s.answer = w;
      break;
    }
    std::this_thread::sleep_for(kPoll);
  }
  return s;
}

// Nearest rank: the smallest value with at least p of the sample at or below it.
double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::max<size_t>(rank, 1) - 1];
}

void summary(const char* what, const std::vector<Step>& steps, bool up, bool both,
             std::optional<Write> Step::*which) {
  std::vector<double> ms;
  size_t missed = 0;
  for (const Step& s : steps) {
    if (!both && s.up != up) continue;
    if (s.*which) {
      ms.push_back((s.*which)->ms);
    } else {
      ++missed;
    }
  }
  if (ms.empty()) {
    std::printf("| %s | 0 | - | - | - | %zu |\n", what, missed);
    return;
  }
  const double interval = std::chrono::duration<double, std::milli>(kInterval).count();
  const double p50 = percentile(ms, 0.5), p90 = percentile(ms, 0.9), max = percentile(ms, 1.0);
  std::printf("| %s | %zu | %.0f (%.2f) | %.0f (%.2f) | %.0f (%.2f) | %zu |\n", what, ms.size(),
              p50, p50 / interval, p90, p90 / interval, max, max / interval, missed);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: suppress_latency AGENT_BINARY [STEPS]\n";
    return 2;
  }
  const int steps = argc == 3 ? std::atoi(argv[2]) : 10;
  if (const std::string why = SuppressNode::unavailableReason(); !why.empty()) {
    std::cerr << "suppress_latency: " << why << "\n";
    return 1;
  }
  // The PodList fixture: from the environment (as under meson test), else the
  // source tree this binary was built from.
  ::setenv("KOORDLET_FIXTURES", KOORDLET_FIXTURES_DIR, 0);

  try {
    SuppressNode node({argv[1], "1s", 1, 65, {}});
    if (const std::string why = node.waitReady(30s); !why.empty()) {
      std::cerr << "agent not ready: " << why << "\n" << node.agent().log();
      return 1;
    }
    utsname uts{};
    ::uname(&uts);
    double load[3] = {0, 0, 0};
    ::getloadavg(load, 3);
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::gmtime(&now));
    std::printf("%s UTC, %d CPUs, kernel %s, load average %.2f at start, %d steps each way\n", date,
                node.cpus(), uts.release, load[0], steps);
    std::printf(
        "agent: --collect-res-used-interval=1s --cpu-suppress-interval-seconds=1, "
        "cfsQuota 65%%; quota polled every 5 ms\n\n");

    // Start from the idle level: the first round writes the floor (no pod rates
    // yet), then the quota grows by the capped step to capacity x 65% - system.
    waitQuiet(node, 3s, 60s);

    std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int> pauseMs(0, 999);
    std::vector<Step> results;
    std::printf("| step | direction | quota before | first write | ms | answering write | ms |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (int i = 1; i <= steps; ++i) {
      for (bool up : {true, false}) {
        std::this_thread::sleep_for(std::chrono::milliseconds(pauseMs(rng)));
        Step s = measure(node, up);
        results.push_back(s);
        auto value = [](const std::optional<Write>& w) {
          return w ? std::to_string(w->value) : std::string("none");
        };
        auto ms = [](const std::optional<Write>& w) {
          return w ? std::to_string(std::lround(w->ms)) : std::string("-");
        };
        std::printf("| %d | %s | %lld | %s | %s | %s | %s |\n", i, up ? "LS up" : "LS down",
                    static_cast<long long>(s.before), value(s.first).c_str(), ms(s.first).c_str(),
                    value(s.answer).c_str(), ms(s.answer).c_str());
        std::fflush(stdout);
        // Let shrinking finish (one round) or recovery climb (several) before the
        // next step.
        waitQuiet(node, kQuietFor, up ? 10s : 30s);
      }
    }

    std::printf(
        "\n| steps | n | p50 ms (intervals) | p90 ms (intervals) | max ms (intervals) | "
        "no reaction in 10 s |\n");
    std::printf("|---|---|---|---|---|---|\n");
    summary("LS up: first write", results, true, false, &Step::first);
    summary("LS up: answering write (>= 25000 down)", results, true, false, &Step::answer);
    summary("LS down: first write", results, false, false, &Step::first);
    summary("LS down: answering write (>= 15000 up)", results, false, false, &Step::answer);
    summary("all: answering write", results, true, true, &Step::answer);
    node.agent().terminate(5s);
  } catch (const std::exception& e) {
    std::cerr << "suppress_latency: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
