// Eviction latency benchmark (not a test): on this machine's real cgroup v1 kernel,
// how long the real agent takes from a node crossing its memory eviction threshold to
// the Eviction request, how many Eviction requests each evicted pod costs, and how
// many other pods were asked for. The scenes are tests/support/evict_node.h's, the
// agent at the default 1 s collection and memory-evict intervals, evicting through
// the API server stand-in, in two ways of crossing:
//
//   step  be-big's 800 MiB hog is held under the threshold; then the NodeSLO's
//         threshold is lowered under the node's use. Crossing: the NodeSLO update.
//   ramp  be-big's hog faults in (about 0.4 s) and takes the node over the threshold
//         half-way. Crossing: the first moment /proc/meminfo, polled every 2 ms, puts
//         the node at the threshold as the agent reckons it.
//
// Each run builds a fresh node (a new agent, so the crossing falls at a random phase
// of its timers), takes the crossing and the Eviction request's arrival at the
// stand-in (its request log, polled every 5 ms), then keeps the pod listed and its
// memory held for 8 s (two memory cool-downs) and counts the Eviction requests for
// it (koordlet's target: one) and for any other pod.
//
//   evict_latency AGENT_BINARY [RUNS]     (root, cgroup v1; RUNS per scene, default 5)
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/evict_node.h"
#include "tests/support/poll.h"

namespace {

using koord::test::EvictNode;
using koord::test::EvictScene;
using namespace std::chrono_literals;
using Time = std::chrono::steady_clock::time_point;

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct Run {
  double seconds = 0;    // crossing -> the Eviction request for be-big
  size_t requests = 0;   // for be-big
  size_t otherPods = 0;  // requests for any other pod
  std::string detail;
};

// One run of `scene`; nullopt (after printing why) when it could not be measured.
std::optional<Run> runOnce(const char* agent, EvictScene scene, int run) {
  EvictNode node(agent, {}, scene);
  if (std::string why = node.waitReady(30s); !why.empty()) {
    std::fprintf(stderr, "%s\n", node.fail("not ready: " + why).c_str());
    return std::nullopt;
  }
  std::this_thread::sleep_for(1s + std::chrono::milliseconds(137 * run % 1000));
  std::optional<Time> crossing;
  std::atomic<bool> polling{true};
  std::thread poller;
  if (scene == EvictScene::kMemory) {
    node.startBigHog();
    std::this_thread::sleep_for(3s);  // a few rounds with the hog held (evict_node.h)
    if (node.count("") != 0) {
      std::fprintf(stderr, "%s\n", node.fail("evicted before the crossing").c_str());
      return std::nullopt;
    }
    crossing = node.crossThreshold();
  } else {
    if (node.overMemoryThreshold()) {
      std::fprintf(stderr, "run %d: the node is over the threshold before the hog\n", run + 1);
      return std::nullopt;
    }
    poller = std::thread([&] {
      while (polling.load() && !crossing) {
        if (node.overMemoryThreshold()) crossing = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(2ms);
      }
    });
    node.startBigHog();
  }
  const std::string why = koord::test::waitFor(
      30s, [&] { return node.count(EvictNode::kBig) > 0 ? "" : "no eviction"; }, 5ms);
  polling = false;
  if (poller.joinable()) poller.join();
  if (!why.empty() || !crossing) {
    std::fprintf(stderr, "%s\n", node.fail(why.empty() ? "no crossing seen" : why).c_str());
    return std::nullopt;
  }
  Time request{};
  for (const EvictNode::Seen& e : node.evictions()) {
    if (e.pod == EvictNode::kBig) {
      request = e.at;
      break;
    }
  }
  std::this_thread::sleep_for(8s);
  Run r;
  r.seconds = std::chrono::duration<double>(request - *crossing).count();
  r.requests = node.count(EvictNode::kBig);
  r.otherPods = node.count("") - r.requests;
  for (const EvictNode::Seen& e : node.evictions()) {
    if (e.pod == EvictNode::kBig) continue;
    r.detail += ", also " + e.pod + " (HTTP " + std::to_string(e.status) + ")";
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s AGENT_BINARY [RUNS]\n", argv[0]);
    return 2;
  }
  ::setenv("KOORDLET_FIXTURES", KOORDLET_FIXTURES_DIR, 0);
  if (std::string why = EvictNode::unavailableReason(); !why.empty()) {
    std::fprintf(stderr, "evict_latency: cannot run here: %s\n", why.c_str());
    return 1;
  }
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  utsname u{};
  ::uname(&u);
  std::printf(
      "eviction latency: %d runs a scene, kernel %s, %ld CPUs, BEMemoryEvict, 1 s "
      "intervals\n",
      runs, u.release, ::sysconf(_SC_NPROCESSORS_ONLN));
  for (const auto& [scene, name] :
       {std::pair{EvictScene::kMemory, "step"}, std::pair{EvictScene::kMemoryRamp, "ramp"}}) {
    std::vector<double> latencies;
    size_t maxRequests = 0, others = 0;
    for (int run = 0; run < runs; ++run) {
      auto r = runOnce(argv[1], scene, run);
      if (!r) return 1;
      latencies.push_back(r->seconds);
      maxRequests = std::max(maxRequests, r->requests);
      others += r->otherPods;
      std::printf(
          "%s run %d: %.3f s crossing -> Eviction request, %zu request(s) for the "
          "pod%s\n",
          name, run + 1, r->seconds, r->requests, r->detail.c_str());
    }
    std::printf(
        "%s: crossing -> Eviction request p50 %.3f s, max %.3f s over %zu runs; "
        "Eviction requests per evicted pod: max %zu (target 1); other pods asked for: "
        "%zu\n",
        name, percentile(latencies, 0.5), *std::max_element(latencies.begin(), latencies.end()),
        latencies.size(), maxRequests, others);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "evict_latency: %s\n", e.what());
  return 1;
}
