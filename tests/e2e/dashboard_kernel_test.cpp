// The Grafana dashboard's queries against a real Prometheus (Debian's) scraping the
// real agent (issue 33): the suppress scene on this machine's real cgroup v1 kernel
// (tests/support/suppress_node.h; CPU burst on, so the burst series exist), the API
// server stand-in (NodeMetric reports, API health), a value written behind the
// agent's back (drift). Every target of every panel in
// packaging/dashboards/koordlet-dashboard.json is run through Prometheus's query API
// with the dashboard's variables filled in; each must answer with series, and every
// label its legend names must be on each series. The targets this scene cannot feed
// are listed below with the reason; each panel must still show something.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/read_file.h"
#include "tests/support/agent_process.h"
#include "tests/support/e2e_cluster.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"
#include "tests/support/suppress_node.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver.h"

namespace test_e2e_dashboard_kernel {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::test::AgentProcess;
using koord::test::httpGet;
using koord::test::SuppressNode;
using koord::test::TempTree;
using koord::test::TestApiServer;
using koord::test::waitFor;
using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kToken = "dashboard-token";

// Targets (panel title, refId) this scene cannot feed, and why.
const std::map<std::pair<std::string, std::string>, std::string> kNotInScene = {
    {{"Evictions", "A"}, "no pod is evicted here (the eviction gates are off by default)"},
    {{"CPU burst: scaled quota and burst per container", "A"},
     "no LS container is throttled here (its limit is the whole machine), so no quota is scaled"},
    {{"Runtime hooks: NRI and koord-runtime-proxy", "A"},
     "no container is created here, so no hook runs"},
    {{"Runtime hooks: NRI and koord-runtime-proxy", "B"},
     "no koord-runtime-proxy calls the hook server here"},
};

uint16_t freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string urlEncode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// The dashboard's variables as Grafana fills them for one node.
std::string fill(std::string expr) {
  expr = std::regex_replace(expr, std::regex(R"(\$node)"), SuppressNode::kNodeName);
  return std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "30s");
}

std::set<std::string> legendLabels(const std::string& legend) {
  std::set<std::string> out;
  static const std::regex label(R"(\{\{\s*(\w+)\s*\}\})");
  for (auto it = std::sregex_iterator(legend.begin(), legend.end(), label);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

}  // namespace

TEST_CASE(
    "every dashboard panel's query returns series with its legend's labels from a real "
    "Prometheus scraping the agent",
    "[kernel][dashboard]") {
  KOORDLET_SKIP_UNLESS_EMPTY(SuppressNode::unavailableReason());
  if (::access("/usr/bin/prometheus", X_OK) != 0) {
    KOORDLET_SKIP("prometheus not installed (Debian package prometheus; make test installs it)");
  }
  const char* bin = std::getenv("KOORDLET_BIN");
  if (bin == nullptr || *bin == '\0') FAIL("KOORDLET_BIN is not set");

  TempTree work;
  TestApiServer api(TestApiServer::Options{kToken, 1000ms, true});
  json node = json::parse(koord::test::readFixture("kube-api/node-get.body"));
  node["metadata"]["name"] = SuppressNode::kNodeName;
  api.put("nodes", node);
  json nodeMetric = json::parse(koord::test::readFixture("kube-api/nodemetric-get.body"));
  nodeMetric["metadata"] = {{"name", SuppressNode::kNodeName}};
  nodeMetric["spec"] = {
      {"metricCollectPolicy", {{"aggregateDurationSeconds", 5}, {"reportIntervalSeconds", 2}}}};
  api.put("nodemetrics", nodeMetric);
  work.write("kubeconfig", koord::test::kubeconfigFor(api.url(), api.caFile(), kToken));

  SuppressNode scene(
      {bin,
       "1s",
       1,
       65,
       {"--kubeconfig=" + work.path("kubeconfig"), "--prediction-checkpoint-filepath="},
       "cpuBurstStrategy:\n  policy: auto\n"});
  auto fail = [&](const std::string& phase, const std::string& why) {
    FAIL(phase << ": " << why << "\n--- agent log ---\n" << scene.agent().log());
  };
  if (auto why = scene.waitReady(30s); !why.empty()) fail("start", why);
  const std::string be = scene.besteffortDir();
  if (auto why = waitFor(30s,
                         [&]() -> std::string {
                           return scene.kernelFile("cpu", be, "cpu.cfs_quota_us") != "-1"
                                      ? ""
                                      : "not suppressed";
                         });
      !why.empty()) {
    fail("suppress", why);
  }
  // Drift, once the agent has settled: its next write reads the file first.
  scene.writeKernelFile("cpu", be, "cpu.cfs_quota_us", "-1");

  const uint16_t promPort = freePort();
  work.write("prometheus.yml",
             "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
             "scrape_configs:\n  - job_name: koordlet\n    static_configs:\n"
             "      - targets: ['127.0.0.1:" +
                 std::to_string(scene.port()) + "']\n");
  AgentProcess prometheus(
      "/usr/bin/prometheus",
      {"--config.file=" + work.path("prometheus.yml"), "--storage.tsdb.path=" + work.path("tsdb"),
       "--web.listen-address=127.0.0.1:" + std::to_string(promPort), "--log.level=warn"},
      work.path("prometheus.log"), SuppressNode::kNodeName);

  auto query = [&](const std::string& expr) -> json {
    auto r = httpGet(promPort, "/api/v1/query?query=" + urlEncode(expr), 5s);
    if (!r || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  };
  // 20 s of scrapes: every rate() has samples, the drift has been seen and the
  // NodeMetric reported.
  if (auto why = waitFor(60s,
                         [&]() -> std::string {
                           json r =
                               query("count_over_time(koordlet_node_used_cpu_cores[1m]) >= 20");
                           if (!r.is_object() || r["data"]["result"].empty())
                             return "fewer than 20 scrapes yet";
                           json d = query("koordlet_resource_drift_total");
                           if (!d.is_object() || d["data"]["result"].empty())
                             return "no drift seen yet";
                           json m = query("koordlet_node_metric_last_report_timestamp_seconds");
                           if (!m.is_object() || m["data"]["result"].empty())
                             return "no NodeMetric report yet";
                           return "";
                         });
      !why.empty()) {
    FAIL("prometheus: " << why << "\n--- prometheus log ---\n"
                        << prometheus.log() << "\n--- agent log ---\n"
                        << scene.agent().log());
  }

  auto dashboard = koord::readFile(
      koord::test::fixturePath("../../packaging/dashboards/koordlet-dashboard.json"));
  REQUIRE(dashboard.ok());
  const json dash = json::parse(*dashboard);
  REQUIRE(dash["panels"].size() >= 10);
  size_t checked = 0;
  for (const json& panel : dash["panels"]) {
    const std::string title = panel["title"];
    size_t withSeries = 0;
    for (const json& target : panel["targets"]) {
      const std::string ref = target["refId"];
      const std::string expr = fill(target["expr"]);
      INFO(title << " / " << ref << ": " << expr);
      json r = query(expr);
      REQUIRE(r.is_object());
      REQUIRE(r["status"] == "success");
      const json& result = r["data"]["result"];
      if (kNotInScene.contains({title, ref})) {
        CHECK(result.empty());  // when this scene starts to feed it, move it off the list
        continue;
      }
      CHECK_FALSE(result.empty());
      for (const json& series : result) {
        for (const std::string& label : legendLabels(target["legendFormat"])) {
          INFO("series " << series["metric"].dump() << " lacks legend label " << label);
          CHECK(series["metric"].contains(label));
        }
      }
      if (!result.empty()) ++withSeries;
      ++checked;
    }
    INFO(title);
    CHECK(withSeries > 0);
  }
  CHECK(checked >= 25);
}

}  // namespace test_e2e_dashboard_kernel
