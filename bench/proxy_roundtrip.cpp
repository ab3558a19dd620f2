// The runtime proxy's hook server in the real agent: hook call latency over its
// unix socket at 110 pods' worth of calls (each pod: PreRunPodSandbox, then
// PreCreateContainer for its 3 containers, as koord-runtime-proxy sends them when
// the pods start), every pod known to the agent from the kubelet stand-in; and the
// RSS and threads the gRPC server adds (the same agent with
// --enable-runtime-hook-server=false, 5 s after start, against the agent with it 5 s
// after start and again after the calls).
//
//   build/bench/proxy_roundtrip [pods=110] [rounds=5]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "runtimeproxy/hook_api.grpc.pb.h"
#include "tests/support/agent_process.h"
#include "tests/support/synthetic_pods.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace api = ::runtime::v1alpha1;
using namespace std::chrono_literals;

namespace {

struct ProcStatus {
  long rssKb = 0;
  long threads = 0;
};

ProcStatus procStatus(pid_t pid) {
  ProcStatus st;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") in >> st.rssKb;
    if (key == "Threads:") in >> st.threads;
    std::string rest;
    std::getline(in, rest);
  }
  return st;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

std::unique_ptr<koord::test::AgentProcess> startAgent(const std::string& bin,
                                                      koord::test::TempTree& tmp,
                                                      const koord::test::TestKubelet& kubelet,
                                                      bool server, const std::string& log) {
  std::vector<std::string> flags = {
      "--addr=127.0.0.1:0",
      "--cgroup-root-dir=" + tmp.path("cgroup"),
      "--proc-root-dir=/proc/",
      "--var-run-root-dir=" + tmp.path("run"),
      "--kubelet-insecure-tls=true",
      "--kubelet-addr=127.0.0.1",
      "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
      "--kubelet-sync-interval=1s",
      "--cpu-suppress-interval-seconds=0",
      "--dry-run",
      "--enable-runtime-hook-server=" + std::string(server ? "true" : "false"),
      "--runtime-hooks-addr=" + tmp.path("run/koordlet.sock"),
      "--runtime-hooks-config-path=" + tmp.path("hookserver.d")};
  auto agent = std::make_unique<koord::test::AgentProcess>(bin, flags, log, "bench-node");
  if (!agent->waitForServingPort(20s)) {
    std::fprintf(stderr, "agent did not start\n%s\n", agent->log().c_str());
    std::exit(1);
  }
  return agent;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t pods = argc > 1 ? std::stoul(argv[1]) : 110;
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 5;
  const char* bin = std::getenv("KOORDLET_BIN");
  if (bin == nullptr) bin = "build/agent/koordlet";
  koord::test::TempTree tmp;
  for (const char* d :
       {"cgroup/cpu/kubepods/besteffort", "cgroup/cpu/kubepods/burstable", "cgroup/cpuset/kubepods",
        "cgroup/cpuacct/kubepods", "cgroup/memory/kubepods"}) {
    std::filesystem::create_directories(tmp.path(d));
  }
  std::vector<koord::test::SyntheticPod> list;
  for (size_t i = 0; i < pods; ++i) list.push_back(koord::test::syntheticPod(i));
  koord::test::TestKubelet kubelet;
  kubelet.setBody(koord::test::syntheticPodListJson(list));

  // Memory and threads: each agent settles 5 s, then 1 round of calls for the server.
  auto off = startAgent(bin, tmp, kubelet, false, tmp.path("off.log"));
  std::this_thread::sleep_for(5s);
  const ProcStatus without = procStatus(off->pid());
  (void)off->terminate(10s);

  auto agent = startAgent(bin, tmp, kubelet, true, tmp.path("on.log"));
  std::this_thread::sleep_for(5s);                   // the pod list is in the hooks' state
  const ProcStatus idle = procStatus(agent->pid());  // like for like with `without`
  auto stub = api::RuntimeHookService::NewStub(grpc::CreateChannel(
      "unix:" + tmp.path("run/koordlet.sock"), grpc::InsecureChannelCredentials()));
  std::vector<double> sandboxUs, createUs;
  for (int r = 0; r < rounds; ++r) {
    for (const auto& p : list) {
      const std::string parent = std::string("/kubepods/") +
                                 (p.qos == koord::KubeQos::kBestEffort  ? "besteffort/"
                                  : p.qos == koord::KubeQos::kBurstable ? "burstable/"
                                                                        : "") +
                                 "pod" + p.uid;
      api::PodSandboxHookRequest sreq;
      sreq.mutable_pod_meta()->set_uid(p.uid);
      sreq.mutable_pod_meta()->set_name(p.name);
      sreq.mutable_pod_meta()->set_namespace_("synthetic");
      sreq.set_cgroup_parent(parent);
      api::PodSandboxHookResponse sresp;
      grpc::ClientContext sctx;
      auto t0 = std::chrono::steady_clock::now();
      if (!stub->PreRunPodSandboxHook(&sctx, sreq, &sresp).ok()) return 1;
      sandboxUs.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      for (size_t c = 0; c < p.containerIds.size(); ++c) {
        api::ContainerResourceHookRequest req;
        *req.mutable_pod_meta() = sreq.pod_meta();
        std::string name = "c";  // not "c" + to_string: g++ 12's false -Wrestrict
        name += std::to_string(c);
        req.mutable_container_meta()->set_name(name);
        req.set_pod_cgroup_parent(parent);
        req.mutable_container_resources()->set_cpu_shares(2);
        req.mutable_container_resources()->set_oom_score_adj(1000);
        api::ContainerResourceHookResponse resp;
        grpc::ClientContext ctx;
        t0 = std::chrono::steady_clock::now();
        if (!stub->PreCreateContainerHook(&ctx, req, &resp).ok()) return 1;
        createUs.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
      }
    }
  }
  const ProcStatus with = procStatus(agent->pid());
  std::printf("pods %zu, rounds %d: %zu PreRunPodSandboxHook, %zu PreCreateContainerHook calls\n",
              pods, rounds, sandboxUs.size(), createUs.size());
  std::printf("PreRunPodSandboxHook  p50 %.0f us  p99 %.0f us  max %.0f us\n",
              percentile(sandboxUs, 0.5), percentile(sandboxUs, 0.99), percentile(sandboxUs, 1.0));
  std::printf("PreCreateContainerHook p50 %.0f us  p99 %.0f us  max %.0f us\n",
              percentile(createUs, 0.5), percentile(createUs, 0.99), percentile(createUs, 1.0));
  std::printf("agent without the hook server: RSS %ld KiB, %ld threads\n", without.rssKb,
              without.threads);
  std::printf("agent with the hook server, idle 5 s after start: RSS %ld KiB, %ld threads\n",
              idle.rssKb, idle.threads);
  std::printf("agent with the hook server, after the calls: RSS %ld KiB, %ld threads\n", with.rssKb,
              with.threads);
  std::printf(
      "added by the server, idle: RSS %+ld KiB, %+ld threads; after the calls: RSS %+ld "
      "KiB, %+ld threads\n",
      idle.rssKb - without.rssKb, idle.threads - without.threads, with.rssKb - without.rssKb,
      with.threads - without.threads);
  (void)agent->terminate(10s);
  return 0;
}
