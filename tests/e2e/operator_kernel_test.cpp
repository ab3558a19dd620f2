// The operator's view on this machine's real cgroup v1 kernel (issue 33), with the
// real koordlet binary, the two-pod suppress scene (tests/support/suppress_node.h:
// a busy BE burner, CPU suppress policy cfsQuota, the NodeSLO from --config):
//   (a) GET /explain and `koordlet explain` name the besteffort quota's owner, the
//       kernel's value, the NodeSLO threshold with its source (the --config file)
//       and the usage that decided it;
//   (b) a value written behind the agent's back shows as drift, is repaired, and
//       the drift stays shown (and counted in koordlet_resource_drift_total);
//   (c) a restart (stop, start: a rolling update) never lifts the BE quota: the
//       file, sampled every 10 ms across it, never reads -1;
//   (d) `koordlet restore` with the agent's flags, no agent running, puts every file
//       back to the kubelet's value (besteffort quota -1, the LS pod's quota from its
//       limit) and a second run changes nothing;
//   (e) restore beside a live agent pauses it first: the quota stays -1 for rounds.
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"
#include "tests/support/suppress_node.h"
#include "tests/support/temp_tree.h"

namespace test_e2e_operator_kernel {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::test::httpGet;
using koord::test::SuppressNode;
using koord::test::waitFor;
using namespace std::chrono_literals;

struct Command {
  int status = -1;
  std::string output;
};

// Runs binary with args (none has a blank or a quote), stdout and stderr together.
Command run(const std::string& binary, const std::vector<std::string>& args) {
  std::string line = binary;
  for (const std::string& a : args) line += " '" + a + "'";
  line += " 2>&1";
  Command c;
  if (FILE* p = ::popen(line.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) c.output.append(buf, n);
    const int st = ::pclose(p);
    c.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  return c;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The answer's knob `file` in `dir`, or null.
nlohmann::json knob(const nlohmann::json& answer, const std::string& dir, const std::string& file) {
  for (const auto& k : answer["knobs"]) {
    if (k["dir"] == dir && k["knob"] == file) return k;
  }
  return nullptr;
}

std::string input(const nlohmann::json& k, const std::string& name, const char* field = "value") {
  for (const auto& i : k["inputs"]) {
    if (i["name"] == name) return i.value(field, "");
  }
  return "<none>";
}

}  // namespace

TEST_CASE("explain, drift, restart and restore on the real kernel", "[kernel]") {
  KOORDLET_SKIP_UNLESS_EMPTY(SuppressNode::unavailableReason());
  const char* bin = std::getenv("KOORDLET_BIN");
  if (bin == nullptr || *bin == '\0') FAIL("KOORDLET_BIN is not set");
  SuppressNode node({bin, "1s", 1, 65, {"--v=2"}});
  const std::string be = node.besteffortDir();
  auto fail = [&](const std::string& phase, const std::string& why) {
    FAIL(phase << ": " << why << "\n--- audit log ---\n"
               << node.auditLog() << "\n--- agent log ---\n"
               << node.agent().log());
  };
  if (auto why = node.waitReady(30s); !why.empty()) fail("start", why);

  // Suppressed: the quota is a number, not -1.
  if (auto why = waitFor(30s,
                         [&]() -> std::string {
                           const std::string q = node.kernelFile("cpu", be, "cpu.cfs_quota_us");
                           return q != "-1" && !q.empty() ? "" : "besteffort quota still " + q;
                         });
      !why.empty()) {
    fail("suppress", why);
  }

  // (a) explain by path and by the BE pod.
  nlohmann::json answer;
  nlohmann::json quota;
  if (auto why = waitFor(10s,
                         [&]() -> std::string {
                           auto r = httpGet(node.port(), "/explain?path=" + be);
                           if (!r || r->status != 200)
                             return "GET /explain: " + (r ? r->body : "no reply");
                           answer = nlohmann::json::parse(r->body);
                           quota = knob(answer, be, "cpu.cfs_quota_us");
                           if (quota.is_null()) return "no besteffort quota in " + r->body;
                           if (input(quota, "nodeUsedCores") == "<none>")
                             return "no node usage yet: " + r->body;
                           return "";
                         });
      !why.empty()) {
    fail("explain", why);
  }
  INFO(answer.dump(2));
  CHECK(quota["owner"] == "cpu-suppress");
  CHECK(quota["kernel"] == node.kernelFile("cpu", be, "cpu.cfs_quota_us"));
  CHECK(quota["path"].get<std::string>().ends_with(be + "/cpu.cfs_quota_us"));
  CHECK(input(quota, "resourceUsedThresholdWithBE.cpuSuppressThresholdPercent") == "65");
  CHECK(input(quota, "resourceUsedThresholdWithBE.cpuSuppressThresholdPercent", "source") ==
        "file " + node.configPath());
  CHECK(input(quota, "resourceUsedThresholdWithBE.cpuSuppressPolicy") == "cfsQuota");
  CHECK(std::stod(input(quota, "nodeUsedCores")) > 0);
  CHECK(std::stod(input(quota, "beUsedCores")) > 0);
  CHECK(quota["written"].is_object());
  CHECK(quota["drift"].is_null());

  const std::string addr = "--addr=127.0.0.1:" + std::to_string(node.port());
  Command table = run(bin, {"explain", addr, "--uid=" + SuppressNode::bePodUid()});
  INFO(table.output);
  CHECK(table.status == 0);
  CHECK(table.output.find(be + "/cpu.cfs_quota_us  [kube-QoS dir]") != std::string::npos);
  CHECK(table.output.find("owner    cpu-suppress") != std::string::npos);
  CHECK(table.output.find("resourceUsedThresholdWithBE.cpuSuppressThresholdPercent = 65  (file " +
                          node.configPath() + ")") != std::string::npos);
  Command json = run(bin, {"explain", addr, "--path=" + be, "--knob=cpu.cfs_quota_us", "--json"});
  CHECK(json.status == 0);
  CHECK(nlohmann::json::parse(json.output)["knobs"].size() == 1);
  Command missing = run(bin, {"explain", addr, "--pod=default/no-such-pod"});
  CHECK(missing.status == 1);
  CHECK(missing.output.find("no pod default/no-such-pod") != std::string::npos);

  // (b) drift: -1 behind the agent's back; repaired within the verify period.
  node.writeKernelFile("cpu", be, "cpu.cfs_quota_us", "-1");
  INFO("after the write behind its back: " << node.kernelFile("cpu", be, "cpu.cfs_quota_us"));
  std::string seen;
  if (auto why = waitFor(30s,
                         [&]() -> std::string {
                           seen += node.kernelFile("cpu", be, "cpu.cfs_quota_us") + " ";
                           auto r = httpGet(node.port(),
                                            "/explain?path=" + be + "&knob=cpu.cfs_quota_us");
                           if (!r || r->status != 200) return "GET /explain failed";
                           quota = knob(nlohmann::json::parse(r->body), be, "cpu.cfs_quota_us");
                           if (quota.is_null() || quota["drift"].is_null())
                             return "no drift yet: " + seen + r->body;
                           if (node.kernelFile("cpu", be, "cpu.cfs_quota_us") == "-1")
                             return "not repaired yet";
                           return "";
                         });
      !why.empty()) {
    fail("drift", why);
  }
  CHECK(quota["drift"]["value"] == "-1");
  CHECK(quota["drift"]["times"].get<int>() >= 1);
  auto scrape = node.scrape();
  REQUIRE(scrape);
  CHECK(scrape->value("koordlet_resource_drift_total", {{"resource", "cpu.cfs_quota_us"}})
            .value_or(0) >= 1);

  // (c) a rolling restart: the quota never reads -1 meanwhile.
  std::atomic<bool> sampling{true};
  std::atomic<int> lifted{0}, samples{0};
  std::thread sampler([&] {
    while (sampling) {
      if (node.kernelFile("cpu", be, "cpu.cfs_quota_us") == "-1") ++lifted;
      ++samples;
      std::this_thread::sleep_for(10ms);
    }
  });
  node.stopAgent();
  node.startAgent();
  const std::string ready = node.waitReady(30s);
  std::this_thread::sleep_for(5s);  // a few rounds of the new agent
  sampling = false;
  sampler.join();
  if (!ready.empty()) fail("restart", ready);
  CHECK(samples > 100);
  CHECK(lifted == 0);

  // (d) restore with no agent running. A resctrl group we recorded as ours (on a
  // stand-in sysfs: this machine has no resctrl) goes; a knob no gate owns (the LS
  // container's cpu.shares, set here by hand) stays as it is.
  node.stopAgent();
  koord::test::TempTree sysfs;
  sysfs.write("resctrl/LS/schemata", "");
  std::filesystem::remove(sysfs.path("resctrl/LS/schemata"));
  sysfs.write("resctrl/theirs/.keep", "");
  sysfs.write("resctrl-groups", "LS\n");
  node.writeKernelFile("cpu", node.lsContainerDir(), "cpu.shares", "777");
  const std::vector<std::string> restoreArgs = with(
      with({"restore"}, node.flags()), {"--sys-fs-root-dir=" + sysfs.path(""),
                                        "--resctrl-state-file=" + sysfs.path("resctrl-groups")});
  Command first = run(bin, restoreArgs);
  INFO(first.output);
  CHECK(first.status == 0);
  CHECK(node.kernelFile("cpu", be, "cpu.cfs_quota_us") == "-1");
  CHECK(first.output.find(be + "/cpu.cfs_quota_us: ") != std::string::npos);
  // The LS pod's limit is 2 CPUs: the kubelet's quota.
  CHECK(node.kernelFile("cpu", node.lsPodDir(), "cpu.cfs_quota_us") == "200000");
  CHECK(node.kernelFile("cpu", node.lsContainerDir(), "cpu.cfs_quota_us") == "200000");
  CHECK(node.kernelFile("cpu", node.bePodDir(), "cpu.cfs_quota_us") == "-1");
  CHECK(node.kernelFile("cpuset", node.beContainerDir(), "cpuset.cpus") ==
        node.kernelFile("cpuset", "kubepods", "cpuset.cpus"));
  CHECK_FALSE(std::filesystem::exists(sysfs.path("resctrl/LS")));
  CHECK(std::filesystem::exists(sysfs.path("resctrl/theirs")));
  CHECK(first.output.find("removed resctrl group " + sysfs.path("resctrl/LS")) !=
        std::string::npos);
  CHECK(node.kernelFile("cpu", node.lsContainerDir(), "cpu.shares") == "777");
  Command second = run(bin, restoreArgs);
  INFO(second.output);
  CHECK(second.status == 0);
  CHECK(second.output.find("restore: 0 changed") != std::string::npos);

  // (e) restore beside a live agent: it is paused, and stays so.
  node.startAgent();
  if (auto why = node.waitReady(30s); !why.empty()) fail("second start", why);
  if (auto why = waitFor(30s,
                         [&]() -> std::string {
                           return node.kernelFile("cpu", be, "cpu.cfs_quota_us") != "-1"
                                      ? ""
                                      : "not suppressed yet";
                         });
      !why.empty()) {
    fail("suppress again", why);
  }
  Command live = run(bin, with(with({"restore"}, node.flags()),
                               {"--addr=127.0.0.1:" + std::to_string(node.port())}));
  INFO(live.output);
  CHECK(live.status == 0);
  CHECK(live.output.find("paused the running agent") != std::string::npos);
  CHECK(node.kernelFile("cpu", be, "cpu.cfs_quota_us") == "-1");
  std::this_thread::sleep_for(4s);  // four suppress rounds
  CHECK(node.kernelFile("cpu", be, "cpu.cfs_quota_us") == "-1");
  auto config = httpGet(node.port(), "/config");
  REQUIRE(config);
  CHECK(nlohmann::json::parse(config->body)["paused"] == true);
  auto paused = node.scrape();
  REQUIRE(paused);
  CHECK(paused->value("koordlet_agent_paused").value_or(0) == 1);
}

}  // namespace test_e2e_operator_kernel
