#include "tests/support/suppress_node.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "base/read_file.h"
#include "cgroupfs/layout.h"
#include "tests/support/burner.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace koord::test {
namespace {

// The capture's pods the scene is derived from: a Burstable pod with a cpu
// request and limit, and a BestEffort one (priority 0, one container each).
const char* const kSuppressCapture = "kubelet/k8s-1.35/pods.json";
const char* const kLsSource = "e2e-hpa-6cd8d99884-tggnr";
const char* const kBeSource = "e2e-kube-state-metrics-75b885dc9-97mtr";

struct SuppressPodIds {
  std::string name;
  std::string uid;
  std::string containerId;  // 64 hex digits, as containerd's
};
const SuppressPodIds kLs{"suppress-ls-7d9f8c6b5-x2k4q", "5c0a1b2c-0e2e-4d15-8a11-000000000001",
                         "15a1c0ffee" + std::string(54, '1')};
const SuppressPodIds kBe{"suppress-be-6f7c9d8e4-p9m3z", "5c0a1b2c-0e2e-4d15-8a11-0000000000be",
                         "be5eff0a7d" + std::string(54, 'b')};

nlohmann::json& itemNamed(nlohmann::json& list, const std::string& name) {
  for (auto& item : list.at("items")) {
    if (item.at("metadata").at("name") == name) return item;
  }
  throw std::runtime_error(std::string(kSuppressCapture) + " has no pod " + name);
}

// The capture's pod with our name, uid and container id (the cgroup directories
// the kubelet would have made for it are named after those).
nlohmann::json renamed(nlohmann::json pod, const SuppressPodIds& ids) {
  auto& meta = pod.at("metadata");
  meta["name"] = ids.name;
  meta["generateName"] = ids.name.substr(0, ids.name.rfind('-') + 1);
  meta["uid"] = ids.uid;
  auto& statuses = pod.at("status").at("containerStatuses");
  if (statuses.size() != 1) throw std::runtime_error(ids.name + ": want one container");
  statuses[0]["containerID"] = "containerd://" + ids.containerId;
  return pod;
}

std::string podList() {
  auto text = readFile(fixturePath(kSuppressCapture));
  if (!text) throw std::runtime_error("fixture: " + text.error().message);
  nlohmann::json capture = nlohmann::json::parse(*text);

  // LS: request 1 CPU, limit 2, so its burner's one core is neither throttled by
  // the limit (CPU burst sets the container quota to the limit) nor above it.
  nlohmann::json ls = renamed(itemNamed(capture, kLsSource), kLs);
  const nlohmann::json resources = {{"requests", {{"cpu", "1"}}}, {"limits", {{"cpu", "2"}}}};
  ls.at("spec").at("containers")[0]["resources"] = resources;
  auto& lsStatus = ls.at("status").at("containerStatuses")[0];
  lsStatus["resources"] = resources;
  lsStatus["allocatedResources"] = {{"cpu", "1"}};

  nlohmann::json be = renamed(itemNamed(capture, kBeSource), kBe);
  be.at("metadata")["labels"]["koordinator.sh/qosClass"] = "BE";

  capture["items"] = nlohmann::json::array({ls, be});
  return capture.dump();
}

std::string nodeSloSpec(bool enable, int thresholdPercent) {
  return std::string(
             "# NodeSLO spec (koordlet.md 5.1) written by tests/support/suppress_node.cpp\n") +
         "resourceUsedThresholdWithBE:\n"
         "  enable: " +
         (enable ? "true" : "false") +
         "\n"
         "  cpuSuppressPolicy: cfsQuota\n"
         "  cpuSuppressThresholdPercent: " +
         std::to_string(thresholdPercent) + "\n";
}

void replaceFile(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

struct SuppressNode::Parts {
  // Declared in construction order; destroyed in reverse: the agent stops first,
  // then the burners, so the cgroups are empty when the tree removes them.
  SuppressNodeConfig config;
  TempTree work;
  CgroupLayout layout{CgroupVersion::kV1, CgroupDriver::kCgroupfs};
  std::string lsDir, beDir, bestEffortDir;
  std::string lsContainerId, beContainerId;
  std::unique_ptr<CgroupV1Tree> tree;
  TestKubelet kubelet;
  std::unique_ptr<Burner> beBurner, lsBurner;
  std::unique_ptr<AgentProcess> agent;
  std::vector<std::string> flags;
  std::string configPath;
  int starts = 0;
};

std::string SuppressNode::unavailableReason() {
  if (std::string why = CgroupV1Tree::unavailableReason(); !why.empty()) return why;
  if (::sysconf(_SC_NPROCESSORS_ONLN) < 2) {
    return "fewer than 2 CPUs: an LS burner's core would leave BE nothing to suppress";
  }
  return "";
}

SuppressNode::SuppressNode(SuppressNodeConfig config) : parts_(std::make_unique<Parts>()) {
  Parts& p = *parts_;
  p.config = std::move(config);
  cpus_ = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  p.tree = std::make_unique<CgroupV1Tree>("e2e", p.work.path("cgroup"));

  const std::string lsPod = p.layout.podDir(KubeQos::kBurstable, kLs.uid);
  const std::string bePod = p.layout.podDir(KubeQos::kBestEffort, kBe.uid);
  auto containerDir = [&](const std::string& podDir, const std::string& id) {
    auto dir = p.layout.containerDir(podDir, "containerd", id);
    if (!dir) throw std::runtime_error("containerDir: " + dir.error().message);
    return *dir;
  };
  p.lsDir = containerDir(lsPod, kLs.containerId);
  p.beDir = containerDir(bePod, kBe.containerId);
  p.bestEffortDir = p.layout.qosDir(KubeQos::kBestEffort);
  p.lsContainerId = "containerd://" + kLs.containerId;
  p.beContainerId = "containerd://" + kBe.containerId;
  p.tree->mkdirs(p.lsDir);
  p.tree->mkdirs(p.beDir);
  // The Guaranteed root is kubepods itself; the two QoS dirs now exist too.

  p.beBurner = std::make_unique<Burner>([&](pid_t pid) { p.tree->attach(pid, p.beDir); }, true);
  p.lsBurner = std::make_unique<Burner>([&](pid_t pid) { p.tree->attach(pid, p.lsDir); }, false);

  p.kubelet.setBody(podList());
  p.work.write("nodeslo.yaml", nodeSloSpec(true, p.config.thresholdPercent) + p.config.extraSpec);

  std::vector<std::string> flags = {
      "--addr=127.0.0.1:0",
      "--cgroup-root-dir=" + p.tree->linkDir(),
      "--proc-root-dir=/proc/",
      "--sys-root-dir=/sys/",  // the CPU topology suppress computes capacity from
      "--kubelet-insecure-tls=true",
      "--kubelet-addr=127.0.0.1",
      "--kubelet-read-only-port=" + std::to_string(p.kubelet.port()),
      "--kubelet-sync-interval=1s",
      "--collect-res-used-interval=" + p.config.collectInterval,
      "--cpu-suppress-interval-seconds=" + std::to_string(p.config.suppressIntervalSeconds),
      "--config=" + p.work.path("nodeslo.yaml"),
      "--audit-log-dir=" + p.work.path("audit"),
  };
  flags.insert(flags.end(), p.config.extraFlags.begin(), p.config.extraFlags.end());
  p.flags = flags;
  p.configPath = p.work.path("nodeslo.yaml");
  p.agent = std::make_unique<AgentProcess>(p.config.agentBinary, flags, p.work.path("agent.log"),
                                           kNodeName);
}

const std::vector<std::string>& SuppressNode::flags() const { return parts_->flags; }
const std::string& SuppressNode::configPath() const { return parts_->configPath; }
const std::string& SuppressNode::besteffortDir() const { return parts_->bestEffortDir; }
std::string SuppressNode::bePodDir() const {
  return parts_->layout.podDir(KubeQos::kBestEffort, kBe.uid);
}
std::string SuppressNode::lsPodDir() const {
  return parts_->layout.podDir(KubeQos::kBurstable, kLs.uid);
}
const std::string& SuppressNode::beContainerDir() const { return parts_->beDir; }
const std::string& SuppressNode::lsContainerDir() const { return parts_->lsDir; }
std::string SuppressNode::bePodUid() { return kBe.uid; }

void SuppressNode::stopAgent() {
  if (parts_->agent) parts_->agent->terminate(std::chrono::seconds(10));
  parts_->agent.reset();
  port_ = 0;
}

void SuppressNode::startAgent() {
  Parts& p = *parts_;
  p.agent = std::make_unique<AgentProcess>(
      p.config.agentBinary, p.flags, p.work.path("agent-" + std::to_string(++p.starts) + ".log"),
      kNodeName);
}

std::string SuppressNode::kernelFile(const std::string& controller, const std::string& dir,
                                     const std::string& file) const {
  std::string text = readTextFile(parts_->tree->kernelPath(controller, dir, file));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

void SuppressNode::writeKernelFile(const std::string& controller, const std::string& dir,
                                   const std::string& file, const std::string& value) const {
  std::ofstream out(parts_->tree->kernelPath(controller, dir, file));
  out << value << "\n";
  out.close();
  if (!out) throw std::runtime_error("write " + value + " to " + dir + "/" + file + " failed");
}

SuppressNode::~SuppressNode() = default;

std::string SuppressNode::waitReady(std::chrono::milliseconds limit) {
  const auto start = std::chrono::steady_clock::now();
  auto port = parts_->agent->waitForServingPort(limit);
  if (!port) {
    return parts_->agent->running() ? "no 'serving on ... (port N)' line" : "the agent exited";
  }
  port_ = *port;
  const auto left = limit - std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - start);
  return waitFor(left, [&]() -> std::string {
    if (!parts_->agent->running()) return "the agent exited";
    auto r = httpGet(port_, "/readyz");
    if (!r) return "/readyz: no reply";
    if (r->status != 200 || r->body.find("ok, 2 pods") == std::string::npos) {
      return "/readyz: status " + std::to_string(r->status) + ", want 200 with 'ok, 2 pods':\n" +
             r->body;
    }
    return "";
  });
}

std::chrono::steady_clock::time_point SuppressNode::setLsBusy(bool busy) {
  return parts_->lsBurner->setBusy(busy);
}

std::optional<int64_t> SuppressNode::beQuota() const {
  const std::string text =
      readTextFile(parts_->tree->kernelPath("cpu", parts_->bestEffortDir, "cpu.cfs_quota_us"));
  if (text.empty()) return std::nullopt;
  return std::strtoll(text.c_str(), nullptr, 10);
}

std::optional<Scrape> SuppressNode::scrape() {
  if (port_ == 0) return std::nullopt;
  auto r = httpGet(port_, "/metrics");
  if (!r || r->status != 200) return std::nullopt;
  return Scrape(std::move(r->body));
}

std::string SuppressNode::auditLog() const {
  return readTextFile(parts_->work.path("audit/audit.log"));
}

std::vector<QuotaWrite> SuppressNode::quotaWrites() const {
  std::vector<QuotaWrite> out;
  const std::string suffix = "/" + parts_->bestEffortDir + "/cpu.cfs_quota_us";
  std::istringstream lines(auditLog());
  for (std::string line; std::getline(lines, line);) {
    // The last line may be half-written while we read: skip what does not parse.
    auto event = nlohmann::json::parse(line, nullptr, false);
    if (event.is_discarded() || !event.is_object()) continue;
    const std::string path = event.value("path", "");
    if (!path.ends_with(suffix)) continue;
    QuotaWrite w;
    w.ts = event.value("ts", "");
    w.oldValue = std::strtoll(event.value("old", "").c_str(), nullptr, 10);
    w.newValue = std::strtoll(event.value("new", "").c_str(), nullptr, 10);
    out.push_back(std::move(w));
  }
  return out;
}

void SuppressNode::setSuppressEnabled(bool enable) {
  replaceFile(parts_->work.path("nodeslo.yaml"),
              nodeSloSpec(enable, parts_->config.thresholdPercent) + parts_->config.extraSpec);
}

AgentProcess& SuppressNode::agent() { return *parts_->agent; }
const std::string& SuppressNode::lsContainerId() const { return parts_->lsContainerId; }
const std::string& SuppressNode::beContainerId() const { return parts_->beContainerId; }

}  // namespace koord::test
