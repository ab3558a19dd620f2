// End-to-end test of the runtime proxy's hook server in the real koordlet binary:
// a gRPC client generated from the same proto (runtimeproxy/hook_api.proto) calls
// it over its unix socket as koord-runtime-proxy does, with the kubelet stand-in
// listing some of the pods (the proxy asks before the kubelet's next sync too).
// Checked: koordlet.json, every RPC, BE/LS/LSE pods, the skip label, bad input
// and hostile clients, /readyz, /config, /metrics, a clean exit, and a restart
// over the socket a killed agent left.
//
// The agent's cgroup root is a directory tree of its own (the hook server writes
// no cgroup), its sysfs a 128-CPU capture (the share pools); NRI is on with no
// runtime socket, so both paths run as in koordlet.
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "base/read_file.h"
#include "runtimeproxy/hook_api.grpc.pb.h"
#include "tests/support/agent_process.h"
#include "tests/support/fake_kubepods.h"
#include "tests/support/http_get.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"
#include "tests/support/unix_socket.h"

namespace test_e2e_agent_proxy {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::test::AgentProcess;
using koord::test::httpGet;
using koord::test::TempTree;
using koord::test::TestKubelet;
using koord::test::waitFor;
using json = nlohmann::json;
namespace api = ::runtime::v1alpha1;
using namespace std::chrono_literals;
using koord::test::connectUnix;

constexpr auto kLimit = 20s;
const std::string kBeUid = "6f1c2a9e-1b7d-4c55-9d0e-3a2b1c4d5e6f";
constexpr const char* kBatchSpec =
    R"({"containers":{"stress":{"requests":{"kubernetes.io/batch-cpu":"1000",)"
    R"("kubernetes.io/batch-memory":"1Gi"},"limits":{"kubernetes.io/batch-cpu":"2000",)"
    R"("kubernetes.io/batch-memory":"2Gi"}}}})";

const char* agentBinary() {
  const char* bin = std::getenv("KOORDLET_BIN");
  if (bin == nullptr || *bin == '\0') {
    FAIL("KOORDLET_BIN is not set (tests/e2e/meson.build sets it to the koordlet binary)");
  }
  return bin;
}

// The BE pod as the kubelet lists it: batch resources in the container spec.
std::string podList() {
  json be = {
      {"metadata",
       {{"name", "be-batch"},
        {"namespace", "default"},
        {"uid", kBeUid},
        {"labels", {{"koordinator.sh/qosClass", "BE"}}}}},
      {"spec",
       {{"containers",
         {{{"name", "stress"},
           {"resources",
            {{"requests",
              {{"kubernetes.io/batch-cpu", "1k"}, {"kubernetes.io/batch-memory", "1Gi"}}},
             {"limits",
              {{"kubernetes.io/batch-cpu", "2k"}, {"kubernetes.io/batch-memory", "2Gi"}}}}}}}}}},
      {"status", {{"phase", "Pending"}, {"qosClass", "BestEffort"}}}};
  return json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", json::array({be})}}.dump();
}

api::ContainerResourceHookRequest containerReq(const std::string& uid, const std::string& qos,
                                               const std::string& parent) {
  api::ContainerResourceHookRequest req;
  req.mutable_pod_meta()->set_uid(uid);
  req.mutable_pod_meta()->set_name("pod-" + uid.substr(0, 8));
  req.mutable_pod_meta()->set_namespace_("default");
  req.mutable_container_meta()->set_name("stress");
  if (!qos.empty()) (*req.mutable_pod_labels())["koordinator.sh/qosClass"] = qos;
  req.set_pod_cgroup_parent(parent);
  auto* r = req.mutable_container_resources();
  r->set_cpu_period(100000);
  r->set_cpu_shares(2);
  r->set_oom_score_adj(1000);
  r->set_cpuset_cpus("0-1");
  return req;
}

struct Client {
  std::unique_ptr<api::RuntimeHookService::Stub> stub;
  explicit Client(const std::string& socket)
      : stub(api::RuntimeHookService::NewStub(
            grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()))) {}
  grpc::Status create(const api::ContainerResourceHookRequest& req,
                      api::ContainerResourceHookResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    return stub->PreCreateContainerHook(&ctx, req, resp);
  }
};

}  // namespace

TEST_CASE(
    "the agent serves koord-runtime-proxy's hooks on its socket, registers them in "
    "koordlet.json, answers every RPC from the same policy as NRI, refuses bad input and "
    "survives hostile clients, and serves again after a restart over a stale socket",
    "[e2e][runtime-proxy]") {
  const char* bin = agentBinary();
  TempTree tmp;
  // The files the agent probes at start: the knobs the sandbox writes below.
  koord::test::makeFakeKubepodsV1(tmp);
  TestKubelet kubelet;
  kubelet.setBody(podList());
  const std::string socket = tmp.path("run/koordlet/koordlet.sock");
  const std::string configDir = tmp.path("hookserver.d");
  const std::vector<std::string> flags = {
      "--addr=127.0.0.1:0", "--cgroup-root-dir=" + tmp.path("cgroup"), "--proc-root-dir=/proc/",
      "--var-run-root-dir=" + tmp.path("run"), "--kubelet-insecure-tls=true",
      "--kubelet-addr=127.0.0.1", "--kubelet-read-only-port=" + std::to_string(kubelet.port()),
      "--kubelet-sync-interval=1s", "--collect-res-used-interval=300ms",
      "--cpu-suppress-interval-seconds=0", "--audit-log-dir=" + tmp.path("audit"),
      "--runtime-hooks-network=unix", "--runtime-hooks-addr=" + socket,
      "--runtime-hooks-host-endpoint=/var/run/koordlet//koordlet.sock",
      "--runtime-hooks-config-path=" + configDir, "--runtime-hooks-failure-policy=Fail",
      "--runtime-hooks-disable-stages=PreRemoveRunPodSandbox",
      // A 128-CPU, 4-NUMA-node capture: the share pools the CPUSetAllocator hook hands out.
      "--sys-root-dir=" + koord::test::fixturePath("sysfs/arm-128cpu-2socket-4numa"),
      "--sys-fs-root-dir=" + tmp.path("cgroup"), "--node-topology-sync-interval=1s"};
  auto agent = std::make_unique<AgentProcess>(bin, flags, tmp.path("agent.log"), "e2e-proxy-node");
  auto fail = [&](const std::string& what) {
    FAIL(what << "\n--- agent log ---\n" << agent->log());
  };
  auto port = agent->waitForServingPort(kLimit);
  if (!port) fail("the agent did not start serving");

  // 1. koordlet.json, byte for byte as koordlet writes it, and /readyz saying so.
  std::string why = waitFor(kLimit, [&]() -> std::string {
    auto r = httpGet(*port, "/readyz");
    if (!r || r->status != 200) return "readyz not 200";
    if (r->body.find("1 pod") == std::string::npos) return "readyz: " + r->body;
    if (r->body.find("runtime hook server: serving on unix://" + socket) == std::string::npos) {
      return "readyz: " + r->body;
    }
    return "";
  });
  if (!why.empty()) fail(why);
  auto registration = koord::readFile(configDir + "/koordlet.json");
  REQUIRE(registration.ok());
  CHECK(*registration ==
        "{\n\t\"remote-endpoint\": \"/var/run/koordlet//koordlet.sock\",\n"
        "\t\"failure-policy\": \"Fail\",\n\t\"runtime-hooks\": [\n"
        "\t\t\"PreRunPodSandbox\",\n\t\t\"PreCreateContainer\",\n"
        "\t\t\"PreUpdateContainerResources\"\n\t]\n}");

  Client client(socket);
  api::ContainerResourceHookResponse resp;

  // 2. The BE pod the kubelet lists: its spec's batch values (the request carries none).
  auto be = containerReq(kBeUid, "BE", "/kubepods/besteffort/pod" + kBeUid);
  REQUIRE(client.create(be, &resp).ok());
  CHECK(resp.container_resources().cpu_shares() == 1024);
  CHECK(resp.container_resources().cpu_quota() == 200000);
  CHECK(resp.container_resources().memory_limit_in_bytes() == int64_t{2} << 30);
  CHECK(resp.container_resources().cpuset_cpus() == "");  // kube BestEffort: cleared
  CHECK(resp.container_resources().oom_score_adj() == 1000);
  CHECK(resp.container_envs().empty());

  // A BE pod the kubelet has not listed yet: from the request's annotation.
  auto fresh = containerReq("fresh-uid", "BE", "/kubepods/besteffort/podfresh-uid");
  (*fresh.mutable_pod_annotations())["node.koordinator.sh/extended-resource-spec"] = kBatchSpec;
  REQUIRE(client.create(fresh, &resp).ok());
  CHECK(resp.container_resources().cpu_shares() == 1024);
  CHECK(resp.container_resources().memory_limit_in_bytes() == int64_t{2} << 30);

  // LSE with the scheduler's cpuset: that cpuset, quota unset.
  auto lse = containerReq("lse-uid", "LSE", "/kubepods/podlse-uid");
  (*lse.mutable_pod_annotations())["scheduling.koordinator.sh/resource-status"] =
      R"({"cpuset":"1"})";
  REQUIRE(client.create(lse, &resp).ok());
  CHECK(resp.container_resources().cpuset_cpus() == "1");
  CHECK(resp.container_resources().cpu_quota() == -1);
  CHECK(resp.container_resources().cpu_shares() == 0);

  // LS: every share pool once the node topology is computed (the capture's 128 CPUs;
  // no pod the kubelet lists holds any), and nothing else.
  auto ls = containerReq("ls-uid", "LS", "/kubepods/burstable/podls-uid");
  why = waitFor(kLimit, [&]() -> std::string {
    if (!client.create(ls, &resp).ok()) return "call failed";
    return resp.container_resources().cpuset_cpus() == "0-127"
               ? ""
               : "LS cpuset: \"" + resp.container_resources().cpuset_cpus() + "\"";
  });
  if (!why.empty()) fail(why);
  CHECK(resp.container_resources().cpu_shares() == 0);
  CHECK(resp.container_resources().cpu_quota() == 0);
  CHECK(resp.container_resources().oom_score_adj() == 1000);
  // A skip-labelled BE pod: nothing.
  auto skipped = fresh;
  skipped.mutable_pod_meta()->set_uid("skip-uid");
  (*skipped.mutable_pod_labels())["runtimeproxy.koordinator.sh/skip-hookserver"] = "true";
  REQUIRE(client.create(skipped, &resp).ok());
  CHECK(resp.ByteSizeLong() == 0);

  // Every other RPC answers.
  {
    api::PodSandboxHookRequest sandbox;
    sandbox.mutable_pod_meta()->set_uid(kBeUid);
    sandbox.set_cgroup_parent("/kubepods/besteffort/pod" + kBeUid);
    api::PodSandboxHookResponse sresp;
    grpc::ClientContext c1, c2;
    CHECK(client.stub->PreRunPodSandboxHook(&c1, sandbox, &sresp).ok());
    CHECK(client.stub->PostStopPodSandboxHook(&c2, sandbox, &sresp).ok());
    grpc::ClientContext c3, c4, c5, c6;
    CHECK(client.stub->PreStartContainerHook(&c3, be, &resp).ok());
    CHECK(client.stub->PostStartContainerHook(&c4, be, &resp).ok());
    CHECK(client.stub->PostStopContainerHook(&c5, be, &resp).ok());
    CHECK(client.stub->PreUpdateContainerResourcesHook(&c6, be, &resp).ok());
    CHECK(resp.container_resources().cpu_shares() == 1024);
  }

  // 2b. PreRunPodSandbox comes before the runtime makes the pod's cgroup: the agent
  // keeps the pod's values and writes them once the cgroup appears (as runc makes it,
  // with the kubelet's BestEffort values), not at the next reconcile round after a
  // kubelet poll (the kubelet stand-in never lists this pod).
  {
    const std::string uid = "sandbox-uid";
    api::PodSandboxHookRequest sandbox;
    sandbox.mutable_pod_meta()->set_uid(uid);
    sandbox.mutable_pod_meta()->set_name("be-sandbox");
    sandbox.mutable_pod_meta()->set_namespace_("default");
    (*sandbox.mutable_labels())["koordinator.sh/qosClass"] = "BE";
    (*sandbox.mutable_annotations())["node.koordinator.sh/extended-resource-spec"] = kBatchSpec;
    sandbox.set_cgroup_parent("/kubepods/besteffort/pod" + uid);
    api::PodSandboxHookResponse sresp;
    grpc::ClientContext c;
    REQUIRE(client.stub->PreRunPodSandboxHook(&c, sandbox, &sresp).ok());
    std::this_thread::sleep_for(300ms);  // the runtime's own work before the cgroup
    const std::string dir = "kubepods/besteffort/pod" + uid;
    const auto made = std::chrono::steady_clock::now();
    tmp.write("cgroup/cpu/" + dir + "/cpu.shares", "2\n");
    tmp.write("cgroup/cpu/" + dir + "/cpu.cfs_quota_us", "-1\n");
    tmp.write("cgroup/cpu/" + dir + "/cpu.cfs_period_us", "100000\n");
    tmp.write("cgroup/memory/" + dir + "/memory.limit_in_bytes", "9223372036854771712\n");
    auto values = [&] {
      auto read = [&](const std::string& f) {
        auto v = koord::readFile(tmp.path("cgroup/" + f));
        return v ? *v : std::string("?");
      };
      return read("cpu/" + dir + "/cpu.shares") + read("cpu/" + dir + "/cpu.cfs_quota_us") +
             read("memory/" + dir + "/memory.limit_in_bytes");
    };
    std::string got;
    why = waitFor(kLimit, [&]() -> std::string {
      got = values();
      return got == "1024\n200000\n2147483648\n" ? "" : got;
    });
    if (!why.empty()) fail("the sandbox's pod values never reached its cgroup: " + why);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - made).count();
    WARN("figure: the pod's values " << ms << " ms after its cgroup appeared (proxy path)");
    auto config = httpGet(*port, "/config");
    REQUIRE(config);
    CHECK(json::parse(config->body)["sandboxWrites"]["written"].get<int>() >= 1);
  }

  // 3. Bad input: a clear status each, and the server keeps serving.
  auto unknownQos = containerReq("odd-uid", "PLATINUM", "/kubepods/besteffort/pododd-uid");
  CHECK(client.create(unknownQos, &resp).ok());  // no class, as koordlet
  auto noMeta = be;
  noMeta.clear_pod_meta();
  grpc::Status s = client.create(noMeta, &resp);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message() == "PreCreateContainerHook: pod_meta is missing");
  auto negative = be;
  negative.mutable_container_resources()->set_memory_limit_in_bytes(-4096);
  s = client.create(negative, &resp);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message().find("memory_limit_in_bytes -4096 is negative") != std::string::npos);
  auto huge = be;
  huge.mutable_container_resources()->set_cpu_shares(INT64_MAX);
  s = client.create(huge, &resp);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  auto oversized = be;
  (*oversized.mutable_pod_annotations())["blob"] = std::string(5 << 20, 'x');
  CHECK(client.create(oversized, &resp).error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);

  // Hostile clients: garbage bytes; one that sends the HTTP/2 preface and a request
  // header, then stops reading and sending; one that says nothing.
  const int garbage = connectUnix(socket);
  const int stalled = connectUnix(socket);
  const int silent = connectUnix(socket);
  REQUIRE((garbage >= 0 && stalled >= 0 && silent >= 0));
  const std::string junk(64 << 10, '\x5a');
  (void)::write(garbage, junk.data(), junk.size());
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  const char settings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};  // an empty SETTINGS frame
  (void)::write(stalled, preface.data(), preface.size());
  (void)::write(stalled, settings, sizeof settings);
  for (int i = 0; i < 20; ++i) REQUIRE(client.create(be, &resp).ok());
  CHECK(resp.container_resources().cpu_shares() == 1024);
  ::close(garbage);
  ::close(stalled);
  ::close(silent);

  // 4. /config and /metrics count what was answered.
  auto config = httpGet(*port, "/config");
  REQUIRE(config);
  json hs = json::parse(config->body)["strategies"]["runtimeHookServer"];
  CHECK(hs["serving"] == true);
  CHECK(hs["registration"] == "written: " + configDir + "/koordlet.json");
  CHECK(hs["calls"]["PreCreateContainerHook"]["InvalidArgument"] == 3);
  CHECK(hs["calls"]["PreCreateContainerHook"]["OK"].get<int>() >= 26);
  CHECK(hs["callsOverDeadline"] == 0);
  auto metrics = httpGet(*port, "/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("koordlet_runtime_hook_server_serving{node=\"e2e-proxy-node\"} 1") !=
        std::string::npos);
  CHECK(metrics->body.find("koordlet_runtime_hook_server_requests_total{code=\"InvalidArgument\","
                           "method=\"PreCreateContainerHook\",node=\"e2e-proxy-node\"} 3") !=
        std::string::npos);

  // 5. SIGTERM: exit 0, the socket removed, koordlet.json kept (as koordlet).
  auto status = agent->terminate(10s);
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK_FALSE(std::filesystem::exists(socket));
  CHECK(std::filesystem::exists(configDir + "/koordlet.json"));

  // 6. A killed agent leaves its socket; the next one replaces it and serves.
  agent = std::make_unique<AgentProcess>(bin, flags, tmp.path("agent2.log"), "e2e-proxy-node");
  if (!agent->waitForServingPort(kLimit)) fail("the second agent did not start serving");
  why = waitFor(kLimit, [&]() -> std::string {
    return std::filesystem::is_socket(socket) ? "" : "no socket yet";
  });
  if (!why.empty()) fail(why);
  ::kill(agent->pid(), SIGKILL);
  (void)agent->terminate(5s);  // reaps it
  REQUIRE(std::filesystem::is_socket(socket));
  agent = std::make_unique<AgentProcess>(bin, flags, tmp.path("agent3.log"), "e2e-proxy-node");
  if (!agent->waitForServingPort(kLimit)) fail("the third agent did not start serving");
  why = waitFor(kLimit, [&]() -> std::string {
    Client again(socket);
    api::ContainerResourceHookResponse r;
    grpc::Status st = again.create(fresh, &r);
    if (!st.ok()) return "call failed: " + st.error_message();
    return r.container_resources().cpu_shares() == 1024 ? "" : "no batch shares";
  });
  if (!why.empty()) fail(why);
  CHECK(agent->log().find("registered with koord-runtime-proxy") != std::string::npos);

  // 7. A second agent on the same socket (a node where one is terminating): it does
  // not take over the serving one's socket, says so once, and serves once it is free.
  auto second =
      std::make_unique<AgentProcess>(bin, flags, tmp.path("agent4.log"), "e2e-proxy-node");
  auto secondPort = second->waitForServingPort(kLimit);
  if (!secondPort) FAIL("the fourth agent did not start serving\n" << second->log());
  why = waitFor(kLimit, [&]() -> std::string {
    auto r = httpGet(*secondPort, "/readyz");
    if (!r) return "no readyz";
    return r->body.find("runtime hook server: not serving (" + socket +
                        ": another process serves this socket") != std::string::npos
               ? ""
               : "readyz: " + r->body;
  });
  if (!why.empty()) FAIL(why << "\n--- agent log ---\n" << second->log());
  CHECK(client.create(fresh, &resp).ok());  // the first one still answers
  status = agent->terminate(10s);
  REQUIRE(status.has_value());
  why = waitFor(30s, [&]() -> std::string {
    auto r = httpGet(*secondPort, "/readyz");
    if (!r) return "no readyz";
    return r->body.find("runtime hook server: serving on unix://" + socket) != std::string::npos
               ? ""
               : "readyz: " + r->body;
  });
  if (!why.empty()) FAIL(why << "\n--- agent log ---\n" << second->log());
  const std::string log = second->log();
  size_t warned = 0;
  for (size_t at = log.find("runtime proxy hook server not serving"); at != std::string::npos;
       at = log.find("runtime proxy hook server not serving", at + 1)) {
    ++warned;
  }
  CHECK(warned == 1);
  CHECK(log.find("failed tries)") != std::string::npos);
  Client last(socket);
  REQUIRE(last.create(fresh, &resp).ok());
  CHECK(resp.container_resources().cpu_shares() == 1024);
}

}  // namespace test_e2e_agent_proxy
