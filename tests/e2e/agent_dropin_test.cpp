// The drop-in, end to end: the agent binary with Koordinator's own DaemonSet arguments
// (tests/fixtures/koordinator/koordlet-daemonset.yaml, unchanged), NODE_NAME only (no
// NODE_IP), against a kubelet stand-in serving a real pod list over HTTPS with a
// self-signed certificate that no CA the agent knows signs, as kubeadm kubelets do.
// Added to the manifest's arguments only what the pod's environment would provide:
// the kubelet's port (the stand-in's is picked by the kernel), the service-account
// token's path, and private roots for cgroups and sysfs; --dry-run writes nothing.
//
// koordlet does not verify the kubelet's certificate, so neither does the agent by
// default: pods sync, the unverified connection is said once in the log and exported
// as koordlet_kubelet_tls_verified 0. --kubelet-skip-tls-verify=false turns
// verification on: refused against the wrong CA (the log names the flag), accepted
// against the kubelet's own. The empty --sys-root-dir (no sysfs, as /host-sys/ on a host
// run) turns off suppress's cpuset policy only, said once.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "tests/support/agent_process.h"
#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/manifest_args.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_agent_dropin {  // this file's own names: one e2e binary, unity chunks

using koord::test::AgentProcess;
using koord::test::httpGet;
using koord::test::Scrape;
using koord::test::TempTree;
using koord::test::TestKubelet;
using koord::test::waitFor;
using namespace std::chrono_literals;

namespace {

constexpr const char* kToken = "dropin-service-account-token";

std::string fixture(const std::string& rel) {
  auto text = koord::readFile(koord::test::fixturePath(rel));
  if (!text) FAIL("fixture: " << text.error().message);
  return std::move(text).value();
}

const char* agentBinary() {
  const char* bin = std::getenv("KOORDLET_BIN");
  if (bin == nullptr || *bin == '\0') FAIL("KOORDLET_BIN is not set (tests/e2e/meson.build)");
  return bin;
}

// The manifest's arguments, then what the pod's environment provides, then `extra`.
std::vector<std::string> daemonSetArgs(const TempTree& work, const TestKubelet& kubelet,
                                       std::vector<std::string> extra) {
  std::vector<std::string> args =
      koord::test::manifestArgs(fixture("koordinator/koordlet-daemonset.yaml"));
  REQUIRE(args.size() == 7);
  const std::vector<std::string> environment = {
      "--addr=127.0.0.1:0", "--cgroup-root-dir=" + work.path("cgroup"),
      "--sys-root-dir=" + work.path("sys"), "--var-run-root-dir=" + work.path("run"),
      "--kubelet-secure-port=" + std::to_string(kubelet.port()),
      "--kubelet-token-file=" + work.path("token"),
      // The pod's /host-var-run-koordlet and /host-etc-hookserver mounts.
      "--runtime-hooks-addr=" + work.path("run/koordlet/koordlet.sock"),
      "--runtime-hooks-config-path=" + work.path("hookserver.d"), "--dry-run"};
  args.insert(args.end(), environment.begin(), environment.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// koordlet_kubelet_pods and koordlet_kubelet_tls_verified from /metrics.
struct Seen {
  std::optional<double> pods;
  std::optional<double> verified;
};

Seen scrape(uint16_t port) {
  auto r = httpGet(port, "/metrics");
  if (!r || r->status != 200) return {};
  Scrape s(r->body);
  return {s.value("koordlet_kubelet_pods"), s.value("koordlet_kubelet_tls_verified")};
}

// Waits until the agent's /metrics shows the 24 pods of the capture; a reason if not.
std::string waitForPods(AgentProcess& agent, uint16_t port, Seen& seen) {
  return waitFor(20s, [&]() -> std::string {
    if (!agent.running()) return "the agent exited";
    seen = scrape(port);
    return seen.pods == 24.0 ? "" : "koordlet_kubelet_pods is not 24 yet";
  });
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE(
    "Koordinator's DaemonSet arguments sync pods from a kubelet with a self-signed "
    "certificate, and one flag turns verification on") {
  const std::string podList = fixture("kubelet/k8s-1.35/pods.json");
  TempTree work({{"token", std::string(kToken) + "\n"},
                 {"cgroup/.keep", ""},
                 {"sys/.keep", ""},
                 {"run/.keep", ""}});
  TestKubelet kubelet({.tls = true});
  kubelet.setBody(podList);
  kubelet.setExpectedToken(kToken);
  REQUIRE(!kubelet.caFile().empty());

  SECTION("unverified by default, as koordlet: pods sync, said once, exported") {
    AgentProcess agent(agentBinary(), daemonSetArgs(work, kubelet, {}), work.path("a.log"),
                       "dropin-node");
    const auto port = agent.waitForServingPort(10s);
    REQUIRE(port);
    Seen seen;
    const std::string why = waitForPods(agent, *port, seen);
    INFO(agent.log());
    REQUIRE(why.empty());
    CHECK(seen.verified == 0.0);
    CHECK(kubelet.lastToken() == kToken);
    CHECK(occurrences(agent.log(), "serving certificate is not verified") == 1);
    // --sys-root-dir holds no sysfs (as /host-sys/ on a host run): only suppress's
    // cpuset policy is off, said once; burst and cfsQuota suppress run on /proc/stat.
    CHECK(occurrences(agent.log(), "CPU topology unreadable") == 1);
    CHECK(agent.log().find("CPU suppress with policy cpuset is off; CPU burst and cfsQuota "
                           "suppress run") != std::string::npos);
    CHECK(agent.log().find("CPU QoS strategies are off") == std::string::npos);
    // AllAlpha turns BECPUEvict and BEMemoryEvict on; there is no API server to evict
    // through: said once, in /readyz and as a gauge, and nothing is decided.
    CHECK(occurrences(agent.log(), "eviction is off") == 1);
    auto ready = httpGet(*port, "/readyz");
    REQUIRE(ready);
    CHECK(ready->body.find("eviction: off (no API server") != std::string::npos);
    auto metrics = httpGet(*port, "/metrics");
    REQUIRE(metrics);
    CHECK(Scrape(metrics->body).value("koordlet_eviction_enabled") == 0.0);
  }

  SECTION("--kubelet-skip-tls-verify=false refuses a certificate the CA does not sign") {
    AgentProcess agent(agentBinary(),
                       daemonSetArgs(work, kubelet,
                                     {"--kubelet-skip-tls-verify=false",
                                      "--kubelet-ca-file=" + kubelet.otherCaFile()}),
                       work.path("b.log"), "dropin-node");
    const auto port = agent.waitForServingPort(10s);
    REQUIRE(port);
    const std::string why = waitFor(20s, [&]() -> std::string {
      return agent.log().find("certificate verify failed") != std::string::npos
                 ? ""
                 : "no verification failure logged yet";
    });
    INFO(agent.log());
    REQUIRE(why.empty());
    CHECK(agent.log().find("--kubelet-skip-tls-verify") != std::string::npos);
    const Seen seen = scrape(*port);
    CHECK(seen.verified == 1.0);
    CHECK(seen.pods.value_or(0) == 0);
    CHECK(kubelet.requestCount() == 0);  // nothing was sent to an unverified peer
  }

  SECTION("--kubelet-skip-tls-verify=false with the kubelet's CA syncs pods, verified") {
    AgentProcess agent(
        agentBinary(),
        daemonSetArgs(work, kubelet,
                      {"--kubelet-skip-tls-verify=false", "--kubelet-ca-file=" + kubelet.caFile()}),
        work.path("c.log"), "dropin-node");
    const auto port = agent.waitForServingPort(10s);
    REQUIRE(port);
    Seen seen;
    const std::string why = waitForPods(agent, *port, seen);
    INFO(agent.log());
    REQUIRE(why.empty());
    CHECK(seen.verified == 1.0);
    CHECK(agent.log().find("serving certificate is not verified") == std::string::npos);
  }
}

}  // namespace test_e2e_agent_dropin
