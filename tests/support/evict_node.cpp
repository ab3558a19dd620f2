#include "tests/support/evict_node.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "base/read_file.h"
#include "base/time_format.h"
#include "cgroupfs/layout.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"

namespace koord::test {
namespace {

using json = nlohmann::json;

constexpr size_t kSmallHogBytes = size_t{16} << 20;
constexpr size_t kLsHogBytes = size_t{64} << 20;
// The step scene: with every hog the node uses kStepUsagePercent of its capacity,
// under the NodeSLO's first threshold, kStepHighPercent.
constexpr int kStepUsagePercent = 80;
constexpr int kStepHighPercent = 90;
const char* const kCapture = "kubelet/k8s-1.35/pods.json";

struct PodIds {
  const char* name;
  const char* uid;
  std::string containerId;  // 64 hex digits, as containerd's
  bool be;
  int64_t batchMilli;  // the CPU scene's kubernetes.io/batch-cpu request (BE pods)
};
const PodIds kPods[] = {
    {EvictNode::kBig, "7e1a0000-0000-4000-8000-0000000000b1", "b1" + std::string(62, 'a'), true,
     EvictNode::kBigBatchMilli},
    {EvictNode::kSmall, "7e1a0000-0000-4000-8000-0000000000b2", "b2" + std::string(62, 'a'), true,
     EvictNode::kSmallBatchMilli},
    {EvictNode::kLs, "7e1a0000-0000-4000-8000-0000000000c1", "c1" + std::string(62, 'a'), false, 0},
};

const PodIds& idsOf(const std::string& name) {
  for (const PodIds& p : kPods) {
    if (name == p.name) return p;
  }
  throw std::invalid_argument("no pod " + name);
}

json readJson(const std::string& rel) {
  auto text = readFile(fixturePath(rel));
  if (!text) throw std::runtime_error(text.error().message);
  return json::parse(*text);
}

// The capture's BestEffort (or Burstable) pod with our names: as the kubelet lists it
// and as the API server stores it.
json pod(const PodIds& ids, EvictScene scene) {
  json capture = readJson(kCapture);
  const std::string source =
      ids.be ? "e2e-kube-state-metrics-75b885dc9-97mtr" : "e2e-hpa-6cd8d99884-tggnr";
  for (json& item : capture.at("items")) {
    if (item.at("metadata").at("name") != source) continue;
    auto& meta = item.at("metadata");
    meta["name"] = ids.name;
    meta["namespace"] = EvictNode::kNamespace;
    meta["uid"] = ids.uid;
    meta.erase("generateName");
    meta.erase("ownerReferences");
    if (ids.be) meta["labels"]["koordinator.sh/qosClass"] = "BE";
    item["spec"]["priority"] = 0;
    auto& status = item.at("status").at("containerStatuses")[0];
    status["containerID"] = "containerd://" + ids.containerId;
    if (scene == EvictScene::kAllocatable && ids.be) {
      meta["labels"]["koordinator.sh/eviction-enabled"] = "true";
      const std::string memory = std::to_string(ids.batchMilli == EvictNode::kBigBatchMilli
                                                    ? EvictNode::kBigBatchMemory
                                                    : EvictNode::kSmallBatchMemory);
      const json batch = {{"kubernetes.io/batch-cpu", std::to_string(ids.batchMilli)},
                          {"kubernetes.io/batch-memory", memory}};
      item.at("spec").at("containers")[0]["resources"] = {{"requests", batch}, {"limits", batch}};
    }
    if (scene == EvictScene::kCpu) {
      // BE: a batch-cpu request (still kube BestEffort: only cpu and memory count).
      // LS: request 1 CPU, limit 2, so its burner's one core is not throttled.
      const json resources =
          ids.be ? json{{"requests", {{"kubernetes.io/batch-cpu", std::to_string(ids.batchMilli)}}},
                        {"limits", {{"kubernetes.io/batch-cpu", std::to_string(ids.batchMilli)}}}}
                 : json{{"requests", {{"cpu", "1"}}}, {"limits", {{"cpu", "2"}}}};
      item.at("spec").at("containers")[0]["resources"] = resources;
      if (!ids.be) {
        status["resources"] = resources;
        status["allocatedResources"] = {{"cpu", "1"}};
      }
    }
    return item;
  }
  throw std::runtime_error(std::string(kCapture) + " has no pod " + source);
}

int64_t hostUsedBytes() {
  auto text = readFile("/proc/meminfo");
  if (!text) throw std::runtime_error("/proc/meminfo: " + text.error().message);
  int64_t total = 0, available = 0;
  std::istringstream in(*text);
  std::string key, rest;
  int64_t kb = 0;
  while (in >> key >> kb) {
    std::getline(in, rest);
    if (key == "MemTotal:") total = kb * 1024;
    if (key == "MemAvailable:") available = kb * 1024;
  }
  return total - available;
}

}  // namespace

std::string EvictNode::unavailableReason() { return CgroupV1Tree::unavailableReason(); }

std::string EvictNode::cpuUnavailableReason() {
  if (std::string why = unavailableReason(); !why.empty()) return why;
  if (::sysconf(_SC_NPROCESSORS_ONLN) < 2) {
    return "fewer than 2 CPUs: the LS burner's core would leave BE nothing to suppress";
  }
  return "";
}

std::string EvictNode::containerDir(const std::string& name) const {
  const PodIds& ids = idsOf(name);
  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  auto dir = layout.containerDir(
      layout.podDir(ids.be ? KubeQos::kBestEffort : KubeQos::kBurstable, ids.uid), "containerd",
      ids.containerId);
  if (!dir) throw std::runtime_error(dir.error().message);
  return *dir;
}

std::string EvictNode::uid(const std::string& name) { return idsOf(name).uid; }

void EvictNode::listPods() {
  json list = readJson(kCapture);
  list["items"] = pods_;
  kubelet_->setBody(list.dump());
}

EvictNode::EvictNode(const std::string& agentBinary, const std::vector<std::string>& extraFlags,
                     EvictScene scene)
    : scene_(scene) {
  tree_ = std::make_unique<CgroupV1Tree>("evict", work_.path("cgroup"));
  kubelet_ = std::make_unique<TestKubelet>();
  api_ = std::make_unique<TestApiServer>();
  for (const PodIds& ids : kPods) {
    tree_->mkdirs(containerDir(ids.name));
    pods_.push_back(pod(ids, scene));
    api_->put("pods", pods_.back());
  }
  listPods();
  auto place = [this](const std::string& name) {
    return [this, dir = containerDir(name)](pid_t pid) { tree_->attach(pid, dir); };
  };
  if (scene == EvictScene::kCpu) {
    bigBurner_ = std::make_unique<Burner>(place(kBig), true);
    lsBurner_ = std::make_unique<Burner>(place(kLs), false);
  } else if (scene != EvictScene::kAllocatable) {
    smallHog_ = std::make_unique<MemoryHog>(place(kSmall), kSmallHogBytes);
    lsHog_ = std::make_unique<MemoryHog>(place(kLs), kLsHogBytes);
  }

  const int64_t hog = static_cast<int64_t>(kHogBytes);
  // Ramp: capacity × lower% = used now + hog/2, so with the hog the release is about
  // used + hog − capacity × lower% = hog/2, and without it the node is under the
  // threshold by about hog/2. Step (and CPU): with the hog the node uses
  // kStepUsagePercent of its capacity, under the first threshold and over the one
  // crossThreshold() sets; the release is then about (used + hog) / 8.
  const int64_t capacity = scene == EvictScene::kMemoryRamp
                               ? (hostUsedBytes() + hog / 2) * 100 / kLowerPercent
                               : (hostUsedBytes() + hog) * 100 / kStepUsagePercent;
  capacityBytes_ = capacity;
  json node = readJson("kube-api/node-get.body");
  node["metadata"] = {{"name", kNodeName}};
  node["status"]["capacity"]["memory"] = std::to_string(capacity);
  node["status"]["allocatable"]["memory"] = std::to_string(capacity);
  // The allocatable scene: room for every batch request until setBatchAllocatable().
  node["status"]["allocatable"]["kubernetes.io/batch-cpu"] = "4000";
  node["status"]["allocatable"]["kubernetes.io/batch-memory"] = std::to_string(int64_t{1} << 30);
  node_ = node;
  api_->put("nodes", node);
  const json threshold =
      scene == EvictScene::kAllocatable
          ? json{{"enable", true},
                 {"cpuAllocatableEvictThresholdPercent", kAllocatableThresholdPercent},
                 {"cpuAllocatableEvictLowerPercent", kAllocatableLowerPercent},
                 {"memoryAllocatableEvictThresholdPercent", kAllocatableThresholdPercent},
                 {"memoryAllocatableEvictLowerPercent", kAllocatableLowerPercent},
                 {"allocatableEvictPriorityThreshold", 5999}}
      : scene == EvictScene::kCpu
          ? json{{"enable", true},
                 {"cpuSuppressPolicy", "cfsQuota"},
                 {"cpuSuppressThresholdPercent", kCpuSuppressPercent},
                 {"cpuEvictBESatisfactionLowerPercent", kSatisfactionLowerPercent},
                 {"cpuEvictBESatisfactionUpperPercent", kSatisfactionUpperPercent},
                 {"cpuEvictTimeWindowSeconds", kCpuWindowSeconds}}
      : scene == EvictScene::kMemoryRamp ? json{{"enable", true},
                                                {"memoryEvictThresholdPercent", kLowerPercent + 1},
                                                {"memoryEvictLowerPercent", kLowerPercent}}
                                         : json{{"enable", true},
                                                {"memoryEvictThresholdPercent", kStepHighPercent},
                                                {"memoryEvictLowerPercent", kStepHighPercent - 2}};
  putNodeSlo(threshold);

  work_.write("kubeconfig",
              "apiVersion: v1\nkind: Config\ncurrent-context: e2e\n"
              "clusters:\n- name: c\n  cluster:\n    server: " +
                  api_->url() +
                  "\ncontexts:\n- name: e2e\n  context: {cluster: c, user: u}\n"
                  "users:\n- name: u\n  user:\n    token: t\n");
  std::vector<std::string> flags = {"--addr=127.0.0.1:0",
                                    "--cgroup-root-dir=" + tree_->linkDir(),
                                    "--proc-root-dir=/proc/",
                                    "--kubelet-addr=127.0.0.1",
                                    "--kubelet-read-only-port=" + std::to_string(kubelet_->port()),
                                    "--kubelet-insecure-tls=true",
                                    "--kubelet-sync-interval=1s",
                                    "--kubeconfig=" + work_.path("kubeconfig"),
                                    "--audit-log-dir=" + work_.path("audit"),
                                    "--reconcile-interval-seconds=0"};
  if (scene == EvictScene::kCpu) {
    // Suppress (on this host's CPU topology) makes the BE pods' starvation.
    flags.insert(flags.end(), {"--feature-gates=BECPUEvict=true", "--sys-root-dir=/sys/",
                               "--cpu-suppress-interval-seconds=1",
                               "--cpu-evict-cool-time-seconds=" + std::to_string(kCpuCoolSeconds)});
  } else if (scene == EvictScene::kAllocatable) {
    flags.insert(flags.end(),
                 {"--feature-gates=CPUAllocatableEvict=true,MemoryAllocatableEvict=true",
                  "--cpu-suppress-interval-seconds=0",
                  "--cpu-evict-cool-time-seconds=" + std::to_string(kCpuCoolSeconds)});
  } else {
    // Only the eviction acts on this tree: suppress and burst are not under test.
    flags.insert(flags.end(),
                 {"--feature-gates=BEMemoryEvict=true", "--cpu-suppress-interval-seconds=0"});
  }
  flags.insert(flags.end(), extraFlags.begin(), extraFlags.end());
  binary_ = agentBinary;
  flags_ = flags;
  agent_ = std::make_unique<AgentProcess>(agentBinary, flags, work_.path("agent.log"), kNodeName);
  auto served = agent_->waitForServingPort(std::chrono::seconds(20));
  if (!served) throw std::runtime_error("the agent did not serve\n" + agent_->log());
  port_ = *served;
}

EvictNode::~EvictNode() {
  agent_.reset();
  bigHog_.reset();
  smallHog_.reset();
  lsHog_.reset();
  bigBurner_.reset();
  lsBurner_.reset();
}

std::string EvictNode::waitReady(std::chrono::milliseconds limit) {
  return waitFor(limit, [&]() -> std::string {
    if (!agent_->running()) return "the agent exited";
    auto r = httpGet(port_, "/readyz");
    if (!r || r->status != 200) return "/readyz not 200";
    for (const char* want : {": ok, 3 pods", "eviction: on", "nodeslos watching"}) {
      if (r->body.find(want) == std::string::npos) {
        return std::string("no '") + want + "' in\n" + r->body;
      }
    }
    return "";
  });
}

std::chrono::steady_clock::time_point EvictNode::startBigHog() {
  auto dir = containerDir(kBig);
  bigHog_ =
      std::make_unique<MemoryHog>([this, dir](pid_t pid) { tree_->attach(pid, dir); }, kHogBytes);
  return std::chrono::steady_clock::now();
}

int64_t EvictNode::hostMemoryUsedBytes() { return hostUsedBytes(); }

bool EvictNode::overMemoryThreshold() const {
  // The agent's rule: whole percent of the Node's capacity, at or above the threshold.
  return hostUsedBytes() * 100 / capacityBytes_ >= thresholdPercent_;
}

void EvictNode::putNodeSlo(const json& threshold) {
  if (threshold.contains("memoryEvictThresholdPercent")) {
    thresholdPercent_ = threshold["memoryEvictThresholdPercent"].get<int>();
  }
  api_->put("nodeslos", {{"apiVersion", "slo.koordinator.sh/v1alpha1"},
                         {"kind", "NodeSLO"},
                         {"metadata", {{"name", kNodeName}}},
                         {"spec", {{"resourceUsedThresholdWithBE", threshold}}}});
}

std::chrono::steady_clock::time_point EvictNode::crossThreshold() {
  if (scene_ != EvictScene::kMemory) throw std::logic_error("crossThreshold: not the step scene");
  // lower% of the capacity = the node's use now less half the hog: a release of
  // about half the hog whatever the host's own use, which be-big alone covers.
  const int64_t lower =
      (hostUsedBytes() - static_cast<int64_t>(kHogBytes / 2)) * 100 / capacityBytes_;
  if (lower < 1 || lower + 1 >= kStepHighPercent) {
    throw std::runtime_error("crossThreshold: lower percent " + std::to_string(lower) +
                             " out of range (is be-big's hog running?)");
  }
  const auto at = std::chrono::steady_clock::now();
  putNodeSlo({{"enable", true},
              {"memoryEvictThresholdPercent", lower + 1},
              {"memoryEvictLowerPercent", lower}});
  return at;
}

void EvictNode::setBatchAllocatable(int64_t cpuMilli, int64_t memoryBytes) {
  node_["status"]["allocatable"]["kubernetes.io/batch-cpu"] = std::to_string(cpuMilli);
  node_["status"]["allocatable"]["kubernetes.io/batch-memory"] = std::to_string(memoryBytes);
  api_->put("nodes", node_);
}

std::chrono::steady_clock::time_point EvictNode::startCpuPressure() {
  if (!lsBurner_) throw std::logic_error("startCpuPressure: not the CPU scene");
  return lsBurner_->setBusy(true);
}

std::optional<int64_t> EvictNode::beQuota() const {
  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  auto text =
      readFile(tree_->kernelPath("cpu", layout.qosDir(KubeQos::kBestEffort), "cpu.cfs_quota_us"));
  if (!text || text->empty()) return std::nullopt;
  return std::strtoll(text->c_str(), nullptr, 10);
}

void EvictNode::writeBeQuota(int64_t quota) const {
  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  const std::string path =
      tree_->kernelPath("cpu", layout.qosDir(KubeQos::kBestEffort), "cpu.cfs_quota_us");
  std::ofstream out(path);
  out << quota << "\n";
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

void EvictNode::restartAgent(bool kill, const std::string& binary) {
  if (kill) {
    ::kill(agent_->pid(), SIGKILL);
    while (agent_->running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } else {
    // A rolling update's old agent must end cleanly on SIGTERM.
    const auto exit = agent_->terminate(std::chrono::seconds(10));
    if (!exit || *exit != 0) {
      throw std::runtime_error("the agent did not exit 0 on SIGTERM\n" + agent_->log());
    }
  }
  if (!binary.empty()) binary_ = binary;
  const std::string log = work_.path("agent-" + std::to_string(++starts_) + ".log");
  agent_ = std::make_unique<AgentProcess>(binary_, flags_, log, kNodeName);
  auto served = agent_->waitForServingPort(std::chrono::seconds(20));
  if (!served) throw std::runtime_error("the agent did not serve again\n" + agent_->log());
  port_ = *served;
}

void EvictNode::markBeingDeleted(const std::string& name) {
  for (json& p : pods_) {
    if (p["metadata"]["name"] != name) continue;
    p["metadata"]["deletionTimestamp"] = rfc3339(std::chrono::system_clock::now());
    p["metadata"]["deletionGracePeriodSeconds"] = 30;
  }
  listPods();
}

size_t EvictNode::topologyCreates() const {
  return api_->count("create", "noderesourcetopologies");
}

void EvictNode::killBig() {
  bigHog_.reset();
  bigBurner_.reset();
  std::erase_if(pods_, [](const json& p) { return p["metadata"]["name"] == kBig; });
  listPods();
}

const std::vector<EvictNode::Seen>& EvictNode::evictions() {
  const auto log = api_->requests();
  for (; seenRequests_ < log.size(); ++seenRequests_) {
    const auto& r = log[seenRequests_];
    if (r.resource != "pods/eviction") continue;
    std::string path = r.target.substr(0, r.target.find('?'));
    path = path.substr(0, path.rfind("/eviction"));
    evictions_.push_back(Seen{path.substr(path.rfind('/') + 1), r.status,
                              json::parse(r.body, nullptr, false),
                              std::chrono::steady_clock::now()});
  }
  return evictions_;
}

size_t EvictNode::count(const std::string& pod, unsigned status) {
  const auto& all = evictions();
  return static_cast<size_t>(std::count_if(all.begin(), all.end(), [&](const Seen& s) {
    return (pod.empty() || s.pod == pod) && (status == 0 || s.status == status);
  }));
}

std::optional<double> EvictNode::metric(const std::string& name, const Labels& labels) {
  auto r = httpGet(port_, "/metrics");
  if (!r || r->status != 200) return std::nullopt;
  return Scrape(r->body).value(name, labels);
}

std::vector<nlohmann::json> EvictNode::events(const std::string& pod) const {
  std::vector<json> out;
  for (const auto& r : api_->requests()) {
    if (r.resource != "events" || r.method != "POST") continue;
    json e = json::parse(r.body, nullptr, false);
    if (e.is_object() && e["involvedObject"]["uid"] == uid(pod)) out.push_back(std::move(e));
  }
  return out;
}

std::optional<nlohmann::json> EvictNode::config() {
  auto r = httpGet(port_, "/config");
  if (!r || r->status != 200) return std::nullopt;
  return json::parse(r->body, nullptr, false);
}

std::string EvictNode::auditLog() const {
  auto text = readFile(work_.path("audit/audit.log"));
  return text ? *text : std::string();
}

size_t EvictNode::logCount(const std::string& needle) const {
  const std::string log = agent_->log();
  size_t n = 0;
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

std::string EvictNode::fail(const std::string& what) const {
  return what + "\n--- agent log ---\n" + agent_->log();
}

}  // namespace koord::test
