// Eviction latency benchmark (not a test): on this machine's real cgroup v1 kernel,
// how long the real agent takes from a node crossing its memory eviction threshold to
// the Eviction request, and how many Eviction requests each evicted pod costs. The
// scene is the memory eviction end-to-end test's (tests/support/evict_node.h): a BE
// pod whose 800 MiB hog takes the node over memoryEvictThresholdPercent, the agent at
// the default 1 s collection and memory-evict intervals, evicting through the API
// server stand-in.
//
// Each run builds a fresh node (a new agent, so the hog falls at a random phase of
// its timers), waits until the agent is ready and one more second, starts the hog,
// and takes two times: the hog's last page touched (the crossing, as the kernel
// accounts it) and the Eviction request's arrival at the stand-in. Then it keeps the
// pod listed and its memory held for 8 s (two memory cool-downs) and counts the
// Eviction requests for it: koordlet's target is one.
//
//   evict_latency AGENT_BINARY [RUNS]     (root, cgroup v1; RUNS default 5)
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/evict_node.h"
#include "tests/support/poll.h"

namespace {

using koord::test::EvictNode;
using namespace std::chrono_literals;

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
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
  std::printf("eviction latency: %d runs, kernel %s, %ld CPUs, BEMemoryEvict, 1 s intervals\n",
              runs, u.release, ::sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<double> latencies;
  std::vector<size_t> perPod;
  for (int run = 0; run < runs; ++run) {
    EvictNode node(argv[1], {});
    if (std::string why = node.waitReady(30s); !why.empty()) {
      std::fprintf(stderr, "%s\n", node.fail("not ready: " + why).c_str());
      return 1;
    }
    std::this_thread::sleep_for(1s + std::chrono::milliseconds(137 * run % 1000));
    const auto crossed = node.startBigHog();
    const std::string why = koord::test::waitFor(
        30s, [&] { return node.count(EvictNode::kBig) > 0 ? "" : "no eviction"; },
        std::chrono::milliseconds(5));
    if (!why.empty()) {
      std::fprintf(stderr, "%s\n", node.fail(why).c_str());
      return 1;
    }
    const double s = std::chrono::duration<double>(node.evictions().front().at - crossed).count();
    std::this_thread::sleep_for(8s);
    const size_t requests = node.count(EvictNode::kBig);
    latencies.push_back(s);
    perPod.push_back(requests);
    std::printf(
        "run %d: %.3f s crossing -> Eviction request, %zu request(s) for the pod, %zu "
        "other pod(s) asked for\n",
        run + 1, s, requests, node.count("") - requests);
  }
  std::printf("crossing -> Eviction request: p50 %.3f s, max %.3f s over %zu runs\n",
              percentile(latencies, 0.5), *std::max_element(latencies.begin(), latencies.end()),
              latencies.size());
  std::printf("Eviction requests per evicted pod: max %zu (target 1)\n",
              *std::max_element(perPod.begin(), perPod.end()));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "evict_latency: %s\n", e.what());
  return 1;
}
