// Load on /metrics (issue 19): the real koordlet binary with 110 synthetic pods in a
// private subtree of this machine's cgroup v1 hierarchies, scraped by wrk with 100
// keep-alive connections for 30 s. Meanwhile the kubelet's probes (/healthz,
// /readyz) are asked every 200 ms on fresh connections, and the agent's RSS is
// sampled. What must hold: wrk sees no error and no non-2xx reply, every probe is
// answered 200 within a second (the server keeps connection slots for probes that
// scrapers cannot take), memory stays bounded (every connection writes the same
// shared page), and the collection loop keeps its 1 s interval, as its own counter
// koordlet_collect_rounds_total shows.
//
// Real time on a 2-core machine shared with wrk's two threads: bounds are generous,
// and the figures are printed for bench/RESULTS.md.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "cgroupfs/layout.h"
#include "tests/support/agent_process.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/sanitizer.h"
#include "tests/support/skip.h"
#include "tests/support/synthetic_pods.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_metrics_load {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::test::AgentProcess;
using koord::test::httpGet;
using koord::test::Scrape;
using koord::test::waitFor;
using Steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr size_t kPods = 110;
constexpr int kLoadSeconds = 30;
constexpr int kConnections = 100;

std::string wrkPath() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin"}) {
    std::string path = std::string(dir) + "/wrk";
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// The whole output of a command (its stderr joined to stdout).
std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  ::pclose(pipe);
  return out;
}

long rssKiB(pid_t pid) {
  const std::string status = koord::test::readTextFile("/proc/" + std::to_string(pid) + "/status");
  const auto at = status.find("VmRSS:");
  return at == std::string::npos ? -1 : std::atol(status.c_str() + at + 6);
}

std::optional<double> podRounds(uint16_t port) {
  auto reply = httpGet(port, "/metrics");
  if (!reply || reply->status != 200) return std::nullopt;
  return Scrape(reply->body).value("koordlet_collect_rounds_total", {{"collector", "pod"}});
}

}  // namespace

TEST_CASE(
    "under 100 scrapers for 30 s probes are answered, memory is bounded and the loop "
    "keeps its interval",
    "[e2e][load]") {
  KOORDLET_SKIP_UNLESS_EMPTY(koord::test::CgroupV1Tree::unavailableReason());
  const std::string wrk = wrkPath();
  if (wrk.empty()) KOORDLET_SKIP("wrk not installed (Debian package wrk; make test installs it)");
  const char* bin = std::getenv("KOORDLET_BIN");
  REQUIRE(bin != nullptr);

  koord::test::TempTree dir;
  koord::test::CgroupV1Tree tree("load", dir.path("cgroup"));
  const koord::CgroupLayout layout(koord::CgroupVersion::kV1, koord::CgroupDriver::kCgroupfs);
  tree.mkdirs(layout.qosDir(koord::KubeQos::kBurstable));
  tree.mkdirs(layout.qosDir(koord::KubeQos::kBestEffort));
  std::vector<koord::test::SyntheticPod> pods;
  for (size_t i = 0; i < kPods; ++i) {
    pods.push_back(koord::test::syntheticPod(i));
    for (const auto& d : koord::test::syntheticPodDirs(layout, pods.back())) tree.mkdirs(d);
  }
  koord::test::TestKubelet kubelet;
  kubelet.setBody(koord::test::syntheticPodListJson(pods));

  AgentProcess agent(
      bin,
      {"--addr=127.0.0.1:0", "--cgroup-root-dir=" + tree.linkDir(), "--kubelet-insecure-tls=true",
       "--kubelet-addr=127.0.0.1", "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
       "--kubelet-sync-interval=1s", "--collect-res-used-interval=1s", "--dry-run"},
      dir.path("agent.log"), "load-node");
  const auto port = agent.waitForServingPort(20s);
  REQUIRE(port);
  const std::string want = ", " + std::to_string(kPods) + " pods";
  const std::string why = waitFor(30s, [&] {
    REQUIRE(agent.running());
    auto r = httpGet(*port, "/readyz");
    if (!r) return std::string("no /readyz reply");
    return r->body.find(want) != std::string::npos ? std::string() : "readyz: " + r->body;
  });
  INFO(agent.log());
  REQUIRE(why.empty());
  // A few rounds with every rate sampled, so RSS is past its warm-up.
  const auto warm = podRounds(*port);
  REQUIRE(warm);
  REQUIRE(waitFor(20s, [&] {
            auto r = podRounds(*port);
            return r && *r >= *warm + 3 ? "" : "warming up";
          }).empty());

  const long rssBefore = rssKiB(agent.pid());
  const auto rounds0 = podRounds(*port);
  REQUIRE(rounds0);
  const auto t0 = Steady::now();
  const std::string command =
      wrk + " -t2 -c" + std::to_string(kConnections) + " -d" + std::to_string(kLoadSeconds) +
      "s --timeout 10s http://127.0.0.1:" + std::to_string(*port) + "/metrics";
  auto load = std::async(std::launch::async, [&] { return run(command); });

  size_t probes = 0, probeFailures = 0;
  auto probeMax = Steady::duration::zero();
  long rssPeak = rssBefore;
  std::string lastFailure;
  while (load.wait_for(200ms) != std::future_status::ready) {
    for (const char* path : {"/healthz", "/readyz"}) {
      const auto start = Steady::now();
      auto r = httpGet(*port, path);
      const auto took = Steady::now() - start;
      ++probes;
      probeMax = std::max(probeMax, took);
      if (!r || r->status != 200 || took >= 1s) {
        ++probeFailures;
        lastFailure = std::string(path) + ": " + (r ? std::to_string(r->status) : "no reply");
      }
    }
    rssPeak = std::max(rssPeak, rssKiB(agent.pid()));
  }
  const std::string wrkOut = load.get();
  const auto rounds1 = podRounds(*port);
  const double elapsed = std::chrono::duration<double>(Steady::now() - t0).count();
  REQUIRE(rounds1);
  const double rounds = *rounds1 - *rounds0;

  std::smatch m;
  const std::regex rate("Requests/sec:\\s+([0-9.]+)");
  const double requestsPerSecond = std::regex_search(wrkOut, m, rate) ? std::stod(m[1].str()) : 0.0;
  const double probeMaxMs = std::chrono::duration<double, std::milli>(probeMax).count();
  std::cout << "metrics load: " << kConnections << " connections, " << kLoadSeconds << " s, "
            << requestsPerSecond << " requests/s; probes " << probes << " (" << probeFailures
            << " failed, slowest " << probeMaxMs << " ms); pod collect rounds " << rounds << " in "
            << elapsed << " s; RSS " << rssBefore / 1024.0 << " MiB before, " << rssPeak / 1024.0
            << " MiB peak\n"
            << wrkOut << std::flush;

  INFO(wrkOut);
  CHECK(requestsPerSecond > 0);
  CHECK(wrkOut.find("Non-2xx") == std::string::npos);
  CHECK(wrkOut.find("Socket errors") == std::string::npos);
  INFO(lastFailure);
  CHECK(probeFailures == 0);
  // The loop keeps time: one round a second, bar the rounds either end of the window.
  CHECK(rounds >= elapsed - 3);
  // Bounded: every connection writes the one shared page; 100 connections' buffers
  // are a few MiB, not 100 pages. (Not under ASan: its quarantine holds freed pages.)
  if (!koord::test::kUnderAddressSanitizer) CHECK(rssPeak - rssBefore < 24 * 1024);
  CHECK(agent.running());
  CHECK(agent.log().find("\nE") == std::string::npos);
}

}  // namespace test_e2e_metrics_load
