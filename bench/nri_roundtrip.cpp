// NRI round-trip benchmark (not a test): 10,000 CreateContainer calls from the test
// runtime peer (tests/support/nri_runtime_peer.h: containerd's side, its own
// framing, Go's per-request deadline) to the real plugin stack, NriClient (own
// thread, Asio) + PluginSession + NriHooks, on a node of 500 pods: 150 BE pods with
// batch resources, 100 LSR pods bound to a cpuset by the scheduler, 250 LS pods,
// each known to the hooks from the kubelet's list (the HookState the agent
// publishes). The calls cycle over every pod's container.
//
// It reports p50 / p99 / p99.9 / max of
//   handler     NriHooks::createContainer alone (a timing wrapper around it), and
//   round trip  the peer's send of the request to its receipt of the reply (mux +
//               ttrpc + protobuf both ways, two threads, one unix socket).
// Usage: nri_roundtrip [calls=10000] [pods=500]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "nri/nri_client.h"
#include "nri/nri_hooks.h"
#include "tests/support/nri_runtime_peer.h"

using namespace koord;
using namespace std::chrono_literals;
namespace api = koord::nri::api;
namespace kn = koord::nri;  // ::nri is the protobuf package
using SteadyClock = std::chrono::steady_clock;

namespace {

// Times the hooks' CreateContainer; everything else passes through.
class TimedHandler final : public kn::NriHandler {
 public:
  explicit TimedHandler(kn::NriHandler& inner) : inner_(&inner) {}
  Result<int32_t> configure(const api::ConfigureRequest& r) override {
    return inner_->configure(r);
  }
  Result<api::SynchronizeResponse> synchronize(const api::SynchronizeRequest& r) override {
    return inner_->synchronize(r);
  }
  Result<api::CreateContainerResponse> createContainer(
      const api::CreateContainerRequest& r) override {
    const auto begin = SteadyClock::now();
    auto out = inner_->createContainer(r);
    const auto micros = std::chrono::duration<double, std::micro>(SteadyClock::now() - begin);
    std::lock_guard<std::mutex> lock(mu_);
    handler_.push_back(micros.count());
    return out;
  }
  Result<api::UpdateContainerResponse> updateContainer(
      const api::UpdateContainerRequest& r) override {
    return inner_->updateContainer(r);
  }
  Result<api::StopContainerResponse> stopContainer(const api::StopContainerRequest& r) override {
    return inner_->stopContainer(r);
  }
  Status stateChange(const api::StateChangeEvent& e) override { return inner_->stateChange(e); }

  std::vector<double> take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(handler_);
  }

 private:
  kn::NriHandler* inner_;
  std::mutex mu_;
  std::vector<double> handler_;
};

class NullRecorder final : public koord::HookRecorder {
 public:
  void record(std::string_view, std::string_view, bool, double) override {}
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct BenchPod {
  api::PodSandbox nri;
  api::Container container;
};

}  // namespace

int main(int argc, char** argv) {
  const size_t calls = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 10000;
  const size_t podCount = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 500;

  // The kubelet's view and the runtime's view of the same pods.
  auto state = std::make_shared<koord::HookState>();
  std::vector<BenchPod> pods;
  pods.reserve(podCount);
  for (size_t i = 0; i < podCount; ++i) {
    test::PodSpec ps;
    ps.name = "app-" + std::to_string(i);
    ps.ns = "bench";
    ps.uid = test::uuidFrom(ps.name);
    test::ContainerSpec cs;
    cs.name = "main";
    Pod kube;
    kube.uid = ps.uid;
    kube.ns = ps.ns;
    kube.name = ps.name;
    kube.phase = "Running";
    Container kc;
    kc.name = cs.name;
    kc.runtime = "containerd";
    if (i % 10 < 3) {  // 30 % BE with batch resources
      ps.qos = test::PodQos::kBestEffort;
      ps.koordQos = "BE";
      kube.kubeQos = KubeQos::kBestEffort;
      kube.koordQos = KoordQos::kBE;
      kube.labels["koordinator.sh/qosClass"] = "BE";
      kc.requests.batchCpuMilli = 1000;
      kc.limits.batchCpuMilli = 2000;
      kc.requests.batchMemoryBytes = int64_t{1} << 30;
      kc.limits.batchMemoryBytes = int64_t{2} << 30;
    } else if (i % 10 < 5) {  // 20 % LSR bound to a cpuset
      ps.qos = test::PodQos::kGuaranteed;
      ps.koordQos = "LSR";
      ps.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"2-3"})";
      kube.kubeQos = KubeQos::kGuaranteed;
      kube.koordQos = KoordQos::kLSR;
      kube.labels["koordinator.sh/qosClass"] = "LSR";
      kube.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"2-3"})";
      kc.requests.cpuMilli = kc.limits.cpuMilli = 2000;
      kc.requests.memoryBytes = kc.limits.memoryBytes = int64_t{4} << 30;
      cs.cpuRequestMilli = cs.cpuLimitMilli = 2000;
      cs.memoryLimitBytes = int64_t{4} << 30;
    } else {  // 50 % LS burstable
      ps.qos = test::PodQos::kBurstable;
      ps.koordQos = "LS";
      kube.kubeQos = KubeQos::kBurstable;
      kube.koordQos = KoordQos::kLS;
      kube.labels["koordinator.sh/qosClass"] = "LS";
      kc.requests.cpuMilli = 500;
      kc.limits.cpuMilli = 1000;
      kc.requests.memoryBytes = int64_t{512} << 20;
      kc.limits.memoryBytes = int64_t{1} << 30;
      cs.cpuRequestMilli = 500;
      cs.cpuLimitMilli = 1000;
      cs.memoryLimitBytes = int64_t{1} << 30;
    }
    kube.containers.push_back(kc);
    BenchPod bp;
    bp.nri = test::makePod(ps);
    bp.container = test::makeContainer(bp.nri, cs);
    kube.containers.back().id = bp.container.id();
    state->podsByUid.emplace(kube.uid, std::move(kube));
    pods.push_back(std::move(bp));
  }
  state->context.version = CgroupVersion::kV2;  // unified values too: the costlier path
  state->context.nodeAllocatableMemory = int64_t{64} << 30;
  state->context.resctrl = true;
  state->context.memoryQos = true;
  koord::HookStateStore store;
  store.publish(state);

  NullRecorder recorder;
  kn::NriHooks hooks(store, &recorder, koord::FailurePolicy::kIgnore);
  TimedHandler timed(hooks);

  const std::string dir = "/tmp/koordlet-nri-bench-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string sock = dir + "/nri.sock";
  test::NriRuntimePeer peer;
  std::vector<api::PodSandbox> syncPods;
  std::vector<api::Container> syncContainers;
  for (const BenchPod& p : pods) {
    syncPods.push_back(p.nri);
    syncContainers.push_back(p.container);
  }
  peer.setSyncState(syncPods, syncContainers);
  peer.listen(sock);

  kn::NriClientConfig cc;
  cc.socketPath = sock;
  cc.backoff.initial = 10ms;
  cc.backoff.cap = 100ms;
  kn::NriClient client(cc, timed);
  client.start();
  if (!peer.waitReady(10s)) {
    std::fprintf(stderr, "plugin did not connect: %s\n", peer.violationsText().c_str());
    return 1;
  }

  // Warm-up: one pass over every pod (first-touch allocations, page faults).
  for (const BenchPod& p : pods) (void)peer.createContainer(p.nri, p.container);
  (void)timed.take();

  std::vector<double> roundTrip;
  roundTrip.reserve(calls);
  size_t failed = 0;
  size_t adjusted = 0;
  const double cpuBefore = cpuSeconds();
  const auto begin = SteadyClock::now();
  for (size_t i = 0; i < calls; ++i) {
    const BenchPod& p = pods[i % pods.size()];
    auto reply = peer.createContainer(p.nri, p.container);
    if (!reply.ok()) {
      ++failed;
      continue;
    }
    if (reply.response.has_adjust()) ++adjusted;
    roundTrip.push_back(std::chrono::duration<double, std::micro>(reply.latency).count());
  }
  const double wall = std::chrono::duration<double>(SteadyClock::now() - begin).count();
  const double cpu = cpuSeconds() - cpuBefore;
  std::vector<double> handler = timed.take();
  client.stop();
  peer.stop();
  std::filesystem::remove_all(dir);

  std::printf("NRI CreateContainer round trips: %zu calls, %zu pods, %zu failed, %zu adjusted\n",
              calls, podCount, failed, adjusted);
  std::printf("%-11s %9s %9s %9s %9s  (microseconds)\n", "", "p50", "p99", "p99.9", "max");
  auto row = [](const char* name, const std::vector<double>& v) {
    std::printf("%-11s %9.1f %9.1f %9.1f %9.1f\n", name, percentile(v, 50), percentile(v, 99),
                percentile(v, 99.9), v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
  };
  row("handler", handler);
  row("round trip", roundTrip);
  std::printf("wall %.2f s (%.0f calls/s), process CPU %.2f s (%.1f us per call, both sides)\n",
              wall, static_cast<double>(calls) / wall, cpu, cpu * 1e6 / static_cast<double>(calls));
  std::printf("violations seen by the peer: %zu\n", peer.violations().size());
  return failed == 0 && peer.violations().empty() ? 0 : 1;
}
