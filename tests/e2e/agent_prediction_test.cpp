// End-to-end test of the peak predictor in the real koordlet binary, in a Koordinator
// loop: the API server stand-in holds the Node (allocatable 8 cores, 16 GiB) and the
// NodeMetric; the kubelet stand-in serves a real PodList capture whose running pods
// get captured cgroup files (so every pod uses 0 cores and the capture's memory).
//
// What is checked, as koord-manager and an operator would see it:
//  * NodeMetric carries prodReclaimableMetric from its first report on;
//  * once it has, the pod predictor's result is what koordlet's formula gives on
//    these pods by hand, the status carries the min of the two predictors, and the
//    gauges agree with the status;
//  * checkpoints are written (one per model), and a restarted agent restores them
//    (a corrupt file named like a model is deleted, the operator's file is not, the
//    checkpoint of a pod no longer on the node is deleted).
// Real time: training every 2 s, the NodeMetric reported every 30 s (its minimum).
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/layout.h"
#include "kube/pod.h"
#include "tests/support/agent_process.h"
#include "tests/support/e2e_cluster.h"
#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_agent_prediction {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::CgroupFile;
using koord::test::AgentProcess;
using koord::test::configJson;
using koord::test::httpGet;
using koord::test::readFixture;
using koord::test::Scrape;
using koord::test::TempTree;
using koord::test::TestApiServer;
using koord::test::TestKubelet;
using koord::test::waitFor;
using json = nlohmann::json;
using namespace std::chrono_literals;

const std::string kNode = "e2e-node";
const std::string kToken = "e2e-token";
const std::string kEksRoot = "cgroup/v1/elastic-amzn2-eks-node/sys/fs/cgroup";
const std::string kEksContainer =
    "kubepods.slice/kubepods-burstable.slice/"
    "kubepods-burstable-pod7a96c459_d529_44ae_9f99_90d3798d6426.slice/"
    "cri-containerd-1d3d308a7d48a27814a68bf33a44acf4441c9c02463ca0bc1cdfdc8c0b4a8496.scope";
constexpr int64_t kPodMemory = 1119498240;  // that capture's anon + unevictable

int64_t quantity(const json& q) {
  if (!q.is_string()) FAIL("quantity " << q.dump() << " is not a string");
  auto v = koord::parseQuantityMilli(q.get<std::string>());
  if (!v) FAIL("quantity " << q.dump() << ": " << v.error().message);
  return *v;
}

// Upper bound of the histogram bucket a constant `value` falls in: every percentile
// of a model fed only that value (koordlet's bucket formula, by hand).
double upper(double first, double value) {
  const int b = static_cast<int>(std::log(value * 0.05 / first + 1) / std::log(1.05));
  return first * (std::pow(1.05, b + 1) - 1) / 0.05;
}

}  // namespace

TEST_CASE(
    "the agent reports koordlet's prod reclaimable in NodeMetric, empty until trained, and a "
    "restarted agent restores its models from checkpoints") {
  const char* agentBinary = std::getenv("KOORDLET_BIN");
  if (agentBinary == nullptr || *agentBinary == '\0') FAIL("KOORDLET_BIN is not set");

  const std::string podListBody = readFixture("kubelet/k8s-1.35/pods.json");
  auto pods = koord::parsePodList(podListBody);
  if (!pods) FAIL("parsePodList: " << pods.error().message);
  TempTree work;
  const std::string cgroupRoot = work.path("cgroup");
  const koord::CgroupLayout layout(koord::CgroupVersion::kV1, koord::CgroupDriver::kCgroupfs);
  auto eks = [&](CgroupFile file) {
    const std::string mount = file == CgroupFile::kMemoryStat ? "memory" : "cpu,cpuacct";
    return readFixture(kEksRoot + "/" + mount + "/" + kEksContainer + "/" +
                       koord::cgroupFileSpec(file).v1File);
  };
  // koordlet's pod predictor on these pods, by hand: every running pod uses 0 cores
  // (a 0 sample reads as 25m, x 1.1 = 27m) and kPodMemory bytes.
  const int64_t peakCpu = static_cast<int64_t>(25 * 1.1);
  const int64_t peakMemory = static_cast<int64_t>(
      static_cast<double>(static_cast<int64_t>(upper(5.0 * (1 << 20), kPodMemory))) * 1.1);
  int64_t unreclaimableCpu = 0, reclaimableCpu = 0, unreclaimableMemory = 0, reclaimableMemory = 0;
  for (const auto& pod : *pods) {
    if (pod.phase != "Running") continue;
    const std::string dir = layout.podDir(pod.kubeQos, pod.uid);
    for (CgroupFile f : {CgroupFile::kCpuUsage, CgroupFile::kMemoryStat, CgroupFile::kCpuStat}) {
      work.write(
          std::filesystem::relative(koord::cgroupFilePath(layout, cgroupRoot, dir, f), work.path())
              .string(),
          eks(f));
    }
    const auto pc = pod.priorityWithDefault();
    if (pc != koord::PriorityClass::kProd && pc != koord::PriorityClass::kNone) continue;
    if (!pod.created) continue;  // an unknown age counts as a cold start
    unreclaimableCpu += peakCpu;
    unreclaimableMemory += peakMemory;
    reclaimableCpu += std::max<int64_t>(pod.requestCpuMilli() - peakCpu, 0);
    reclaimableMemory += std::max<int64_t>(pod.requestMemoryBytes() - peakMemory, 0);
  }
  const int64_t podCpu = std::min(std::max<int64_t>(8000 - unreclaimableCpu, 0), reclaimableCpu);
  const int64_t podMemory =
      std::min(std::max<int64_t>((int64_t{16} << 30) - unreclaimableMemory, 0), reclaimableMemory);
  REQUIRE(podCpu > 0);
  std::filesystem::create_directories(work.path("sys-fs"));
  std::filesystem::create_directories(work.path("checkpoints"));

  TestKubelet kubelet;
  kubelet.setBody(podListBody);
  TestApiServer api(TestApiServer::Options{kToken, 1000ms, true});
  json node = json::parse(readFixture("kube-api/node-get.body"));
  node["metadata"]["name"] = kNode;
  node["status"]["addresses"] = {{{"type", "InternalIP"}, {"address", "127.0.0.1"}}};
  api.put("nodes", node);
  json nodeMetric = json::parse(readFixture("kube-api/nodemetric-get.body"));
  nodeMetric["metadata"] = {{"name", kNode}};
  api.put("nodemetrics", nodeMetric);  // reportIntervalSeconds 30
  work.write("kubeconfig", koord::test::kubeconfigFor(api.url(), api.caFile(), kToken));
  const std::vector<std::string> flags = {
      "--addr=127.0.0.1:0",
      "--cgroup-root-dir=" + cgroupRoot,
      "--proc-root-dir=/proc/",
      "--kubelet-insecure-tls=true",
      "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
      "--kubelet-sync-interval=1s",
      "--collect-res-used-interval=500ms",
      "--dry-run",
      "--sys-fs-root-dir=" + work.path("sys-fs"),
      "--kubeconfig=" + work.path("kubeconfig"),
      "--prediction-training-interval=2s",
      "--prediction-cold-start-duration=1h",
      "--prediction-checkpoint-filepath=" + work.path("checkpoints"),
      "--prediction-model-checkpoint-interval=0s"};

  std::optional<AgentProcess> agent;
  agent.emplace(agentBinary, flags, work.path("agent.log"), kNode);
  auto failWith = [&](const std::string& what, const std::string& why) {
    FAIL(what << ": " << why << "\n--- agent log ---\n" << agent->log());
  };
  auto port = agent->waitForServingPort(10s);
  if (!port) failWith("start", "no serving line");

  // 0. The Node's CPU normalization ratio is taken; a bad one is named and the last
  // good kept.
  node["metadata"]["annotations"]["node.koordinator.sh/cpu-normalization-ratio"] = "1.25";
  api.put("nodes", node);
  auto ratioIs = [&](double want) -> std::string {
    json c = configJson(*port);
    if (!c.is_object()) return "no /config";
    const double got = c["node"]["cpuNormalizationRatio"].get<double>();
    return std::abs(got - want) < 1e-9 ? "" : "ratio " + std::to_string(got);
  };
  std::string why = waitFor(20s, [&] { return ratioIs(1.25); });
  if (!why.empty()) failWith("normalization ratio", why);
  node["metadata"]["annotations"]["node.koordinator.sh/cpu-normalization-ratio"] = "fast";
  api.put("nodes", node);
  why = waitFor(20s, [&]() -> std::string {
    return agent->log().find(
               "metadata.annotations[\"node.koordinator.sh/"
               "cpu-normalization-ratio\"]: not a number: \"fast\"") != std::string::npos
               ? ""
               : "no line naming the bad ratio";
  });
  if (!why.empty()) failWith("bad normalization ratio", why);
  CHECK(ratioIs(1.25).empty());

  // 1. The first report comes at first sight of the NodeMetric: nothing trained yet.
  json status;
  why = waitFor(
      30s,
      [&]() -> std::string {
        if (!agent->running()) failWith("NodeMetric", "the agent exited");
        auto nm = api.get("nodemetrics", kNode);
        if (!nm || !nm->contains("status")) return "no status yet";
        status = (*nm)["status"];
        return "";
      },
      200ms);
  if (!why.empty()) failWith("first NodeMetric report", why);
  INFO(status.dump());
  // Present from the first report on (its empty form before training is unit-tested:
  // this report may come before or after the first training round).
  REQUIRE(status.contains("prodReclaimableMetric"));
  REQUIRE(status["prodReclaimableMetric"].contains("resource"));

  // 2. The next report (30 s on), after training: the predictors' answer.
  why = waitFor(
      60s,
      [&]() -> std::string {
        if (!agent->running()) failWith("NodeMetric", "the agent exited");
        auto nm = api.get("nodemetrics", kNode);
        if (!nm || !nm->contains("status")) return "no status";
        status = (*nm)["status"];
        if (!status["prodReclaimableMetric"]["resource"].contains("resources"))
          return "prodReclaimableMetric " + status["prodReclaimableMetric"].dump();
        return "";
      },
      500ms);
  if (!why.empty()) failWith("trained NodeMetric report", why);
  const json& resources = status["prodReclaimableMetric"]["resource"]["resources"];
  INFO(status["prodReclaimableMetric"].dump());
  const int64_t cpuMilli = quantity(resources["cpu"]);
  const int64_t memoryMilli = quantity(resources["memory"]);

  auto m = httpGet(*port, "/metrics");
  REQUIRE(m);
  REQUIRE(m->status == 200);
  const Scrape scrape(m->body);
  auto gauge = [&](const char* predictor, const char* resource) {
    return scrape.value("koordlet_node_predicted_resource_reclaimable",
                        {{"predictor", predictor}, {"resource", resource}});
  };
  // The pod predictor, exactly as by hand (cores and bytes in the gauge).
  REQUIRE(gauge("podReclaimablePredictor", "cpu"));
  CHECK(std::llround(*gauge("podReclaimablePredictor", "cpu") * 1000) == podCpu);
  CHECK(static_cast<int64_t>(*gauge("podReclaimablePredictor", "memory")) == podMemory);
  // The status is the min of the two, and the final gauges say the same.
  REQUIRE(gauge("priorityReclaimablePredictor", "cpu"));
  const double minCpu = std::min(*gauge("podReclaimablePredictor", "cpu"),
                                 *gauge("priorityReclaimablePredictor", "cpu"));
  CHECK(std::abs(static_cast<double>(cpuMilli) / 1000 - minCpu) < 0.0015);
  CHECK(std::llround(*gauge("minPredictor", "cpu") * 1000) == cpuMilli);
  CHECK(scrape.value("koordlet_node_priority_resource_reclaimable",
                     {{"priority", "koord-prod"}, {"resource", "memory"}}) ==
        static_cast<double>(memoryMilli / 1000));
  CHECK(scrape.value("koordlet_node_resource_priority_reclaimable_status",
                     {{"priority", "koord-prod"}}) == 0);
  CHECK(scrape.value("koordlet_prediction_models", {{"node", kNode}}).value_or(0) >= 8);

  // 3. Checkpoints: every model saved within a maintenance round (2 s here).
  size_t running = 0;
  for (const auto& pod : *pods) running += pod.phase == "Running";
  why = waitFor(30s, [&]() -> std::string {
    size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(work.path("checkpoints"))) {
      files += e.path().extension() != ".tmp";
    }
    // node, system, 5 classes, and each running pod
    return files >= 7 + running ? "" : std::to_string(files) + " checkpoint files";
  });
  if (!why.empty()) failWith("checkpoints", why);
  CHECK(std::filesystem::exists(work.path("checkpoints/__node-sys__")));

  // 4. Restart: the models come back; ours and the operator's files are told apart.
  auto exit = agent->terminate(10s);
  REQUIRE(exit);
  CHECK(WEXITSTATUS(*exit) == 0);
  const size_t saved = static_cast<size_t>(
      std::distance(std::filesystem::directory_iterator(work.path("checkpoints")), {}));
  work.write("checkpoints/__node-koord-mid__", "{\"UID\": truncated");
  work.write("checkpoints/a9b8c7d6-0000-4000-8000-123456789abc",
             readFixture("prediction/koordlet-model-checkpoint.json"));  // not on the node
  work.write("checkpoints/NOTES", "the operator's");
  agent.emplace(agentBinary, flags, work.path("agent2.log"), kNode);
  port = agent->waitForServingPort(10s);
  if (!port) failWith("restart", "no serving line");
  json checkpoints;
  why = waitFor(30s, [&]() -> std::string {
    json c = configJson(*port);
    if (!c.is_object()) return "no /config";
    checkpoints = c["prediction"]["checkpoints"];
    return checkpoints["status"].get<std::string>().rfind("restored", 0) == 0 ? ""
                                                                              : checkpoints.dump();
  });
  if (!why.empty()) failWith("restore", why);
  INFO(checkpoints.dump());
  CHECK(checkpoints["restored"].get<size_t>() == saved - 1);  // all but the corrupt one
  CHECK(checkpoints["skipped"].get<size_t>() == 2);           // the corrupt one and NOTES
  CHECK(std::filesystem::exists(work.path("checkpoints/NOTES")));
  CHECK_FALSE(
      std::filesystem::exists(work.path("checkpoints/a9b8c7d6-0000-4000-8000-123456789abc")));
  // The corrupt one is deleted, then saved again from the retrained model.
  const std::string log = agent->log();
  CHECK(log.find("__node-koord-mid__: not JSON: deleted") != std::string::npos);
  CHECK(log.find("\"NOTES\": not a model id, left alone") != std::string::npos);

  exit = agent->terminate(10s);
  REQUIRE(exit);
  CHECK(WEXITSTATUS(*exit) == 0);
}

}  // namespace test_e2e_agent_prediction
