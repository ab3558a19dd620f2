// The runtime proxy's answers (runtimeproxy/proxy_hooks.h): the request's fields
// into the hooks' view, the decision back in exactly the fields the proxy merges,
// bad input refused with the field named; and the property both hook paths rest
// on: for the same pod, the proxy's answer and the NRI plugin's carry the same
// decision, and a container both paths see is decided once.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "nri/nri_hooks.h"
#include "runtimeproxy/proxy_hooks.h"

namespace test_runtimeproxy_proxy_hooks {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::runtimeproxy;

namespace {

constexpr int64_t kGi = 1024LL * 1024 * 1024;
constexpr const char* kBatchSpec =
    R"({"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"1000",)"
    R"("kubernetes.io/batch-memory":"1Gi"},"limits":{"kubernetes.io/batch-cpu":"2000",)"
    R"("kubernetes.io/batch-memory":"2Gi"}}}})";

std::shared_ptr<HookState> emptyState() {
  auto s = std::make_shared<HookState>();
  s->spec = defaultNodeSlo();
  return s;
}

// A container request as koord-runtime-proxy sends it for CreateContainer: the
// pod's checkpointed meta, labels and annotations, the kubelet's cgroup parent
// and the container's CRI resources.
api::ContainerResourceHookRequest containerReq(const std::string& uid, const std::string& parent,
                                               std::map<std::string, std::string> labels,
                                               std::map<std::string, std::string> annotations) {
  api::ContainerResourceHookRequest req;
  req.mutable_pod_meta()->set_uid(uid);
  req.mutable_pod_meta()->set_name("pod-" + uid);
  req.mutable_pod_meta()->set_namespace_("default");
  req.mutable_container_meta()->set_name("main");
  for (const auto& [k, v] : labels) (*req.mutable_pod_labels())[k] = v;
  for (const auto& [k, v] : annotations) (*req.mutable_pod_annotations())[k] = v;
  req.set_pod_cgroup_parent(parent);
  api::LinuxContainerResources* r = req.mutable_container_resources();
  r->set_cpu_period(100000);
  r->set_cpu_shares(2);
  r->set_oom_score_adj(1000);
  r->set_cpuset_cpus("0-1");
  r->set_cpuset_mems("0");
  (*req.mutable_container_envs())["PATH"] = "/bin";
  return req;
}

api::ContainerResourceHookRequest beBatchReq(const std::string& uid = "be1") {
  return containerReq(uid, "/kubepods/besteffort/pod" + uid, {{"koordinator.sh/qosClass", "BE"}},
                      {{"node.koordinator.sh/extended-resource-spec", kBatchSpec}});
}

}  // namespace

TEST_CASE(
    "a BE batch container gets batch shares, quota and memory limit, and keeps what the "
    "proxy would otherwise overwrite",
    "[proxy-hooks]") {
  HookStateStore store;
  store.publish(emptyState());
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  auto req = beBatchReq();
  req.mutable_container_resources()->set_cpuset_cpus("");  // kube-BestEffort: cleared
  auto resp = hooks.container(HookStage::kPreCreateContainer, req);
  REQUIRE(resp.ok());
  REQUIRE(resp.value->has_container_resources());
  const api::LinuxContainerResources& r = resp.value->container_resources();
  CHECK(r.cpu_shares() == 1024);
  CHECK(r.cpu_quota() == 200000);
  CHECK(r.cpu_period() == 0);  // not sent: the proxy keeps the kubelet's
  CHECK(r.memory_limit_in_bytes() == 2 * kGi);
  CHECK(r.cpuset_cpus() == "");      // the policy decided "" (kube BestEffort)
  CHECK(r.cpuset_mems() == "0");     // echoed: the proxy always overwrites it
  CHECK(r.oom_score_adj() == 1000);  // echoed: the proxy takes 0 as a value
  CHECK(r.unified().empty());
  CHECK(resp.value->container_envs().empty());  // a non-empty map would replace every env
  CHECK(resp.value->container_annotations().empty());
  CHECK(resp.value->pod_cgroup_parent().empty());
}

TEST_CASE("a container the policy leaves alone gets no container_resources at all",
          "[proxy-hooks]") {
  HookStateStore store;
  store.publish(emptyState());
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  // An LS pod without share pools known, a plain burstable pod, and a BE pod with
  // the skip label: nothing decided, nothing sent (the kubelet's cpuset stays).
  auto ls =
      containerReq("ls", "/kubepods/burstable/podls", {{"koordinator.sh/qosClass", "LS"}}, {});
  auto plain = containerReq("plain", "/kubepods/burstable/podplain", {}, {});
  auto skipped = beBatchReq("skip");
  (*skipped.mutable_pod_labels())["runtimeproxy.koordinator.sh/skip-hookserver"] = "true";
  for (const auto* req : {&ls, &plain, &skipped}) {
    auto resp = hooks.container(HookStage::kPreCreateContainer, *req);
    REQUIRE(resp.ok());
    CHECK_FALSE(resp.value->has_container_resources());
    CHECK(resp.value->ByteSizeLong() == 0);
  }
}

TEST_CASE("an LSR container with a scheduler cpuset gets it and an unlimited quota",
          "[proxy-hooks]") {
  HookStateStore store;
  store.publish(emptyState());
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  auto req = containerReq("lsr", "/kubepods/podlsr", {{"koordinator.sh/qosClass", "LSR"}},
                          {{"scheduling.koordinator.sh/resource-status", R"({"cpuset":"2-3"})"}});
  req.mutable_container_resources()->set_cpu_quota(200000);
  auto resp = hooks.container(HookStage::kPreCreateContainer, req);
  REQUIRE(resp.ok());
  const api::LinuxContainerResources& r = resp.value->container_resources();
  CHECK(r.cpuset_cpus() == "2-3");
  CHECK(r.cpu_quota() == -1);
  CHECK(r.cpu_shares() == 0);  // not decided: not sent
  CHECK(r.oom_score_adj() == 1000);
}

TEST_CASE("an LS container gets every share pool once the node topology is known",
          "[proxy-hooks]") {
  auto state = emptyState();
  auto rule = std::make_shared<CpuSetRule>();
  rule->sharePools = {CpuSharePool{0, 0, {0, 1, 2, 3}}, CpuSharePool{1, 1, {8, 9, 10, 11}}};
  state->context.cpusetRule = rule;
  HookStateStore store;
  store.publish(state);
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  auto req =
      containerReq("ls", "/kubepods/burstable/podls", {{"koordinator.sh/qosClass", "LS"}}, {});
  auto resp = hooks.container(HookStage::kPreCreateContainer, req);
  REQUIRE(resp.ok());
  CHECK(resp.value->container_resources().cpuset_cpus() == "0-3,8-11");
  CHECK(resp.value->container_resources().cpu_shares() == 0);
}

TEST_CASE("an unknown QoS class is treated as no class, as koordlet does", "[proxy-hooks]") {
  HookStateStore store;
  store.publish(emptyState());
  ProxyHooks hooks(store, nullptr, FailurePolicy::kFail);
  auto odd =
      containerReq("odd", "/kubepods/besteffort/pododd", {{"koordinator.sh/qosClass", "GOLD"}},
                   {{"node.koordinator.sh/extended-resource-spec", kBatchSpec}});
  auto none = containerReq("none", "/kubepods/besteffort/podnone", {},
                           {{"node.koordinator.sh/extended-resource-spec", kBatchSpec}});
  auto a = hooks.container(HookStage::kPreCreateContainer, odd);
  auto b = hooks.container(HookStage::kPreCreateContainer, none);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a.value->SerializeAsString() == b.value->SerializeAsString());
  // Not BE by label: no batch values.
  CHECK(a.value->container_resources().cpu_shares() == 0);
}

TEST_CASE("malformed requests are refused with InvalidArgument naming the RPC and field",
          "[proxy-hooks]") {
  HookStateStore store;
  store.publish(emptyState());
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  auto expectInvalid = [&](const api::ContainerResourceHookRequest& req, const std::string& what) {
    auto resp = hooks.container(HookStage::kPreCreateContainer, req);
    REQUIRE_FALSE(resp.ok());
    CHECK(resp.error->code == CallCode::kInvalidArgument);
    INFO(resp.error->message);
    CHECK(resp.error->message.rfind("PreCreateContainerHook: ", 0) == 0);
    CHECK(resp.error->message.find(what) != std::string::npos);
  };
  auto req = beBatchReq();
  req.clear_pod_meta();
  expectInvalid(req, "pod_meta is missing");
  req = beBatchReq();
  req.mutable_pod_meta()->clear_uid();
  expectInvalid(req, "pod_meta.uid is empty");
  req = beBatchReq();
  req.clear_container_meta();
  expectInvalid(req, "container_meta is missing");
  req = beBatchReq();
  req.mutable_container_resources()->set_cpu_shares(-5);
  expectInvalid(req, "container_resources.cpu_shares -5 is negative");
  req = beBatchReq();
  req.mutable_container_resources()->set_cpu_quota(-2);
  expectInvalid(req, "container_resources.cpu_quota -2 is below -1");
  req = beBatchReq();
  req.mutable_container_resources()->set_memory_limit_in_bytes(-1);
  expectInvalid(req, "memory_limit_in_bytes -1 is negative");
  req = beBatchReq();
  req.mutable_container_resources()->set_oom_score_adj(1001);
  expectInvalid(req, "oom_score_adj 1001 is outside [-1000, 1000]");
  req = beBatchReq();
  req.mutable_container_resources()->set_cpu_shares(INT64_MAX);
  expectInvalid(req, "cpu_shares 9223372036854775807 overflows milli-cores");

  api::PodSandboxHookRequest sandbox;
  auto s = hooks.podSandbox(HookStage::kPreRunPodSandbox, sandbox);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error->message == "PreRunPodSandboxHook: pod_meta is missing");
}

TEST_CASE("a failing hook fails the call only under the Fail plugin policy", "[proxy-hooks]") {
  HookStateStore store;
  store.publish(emptyState());
  auto bad = containerReq("bad", "/kubepods/besteffort/podbad", {{"koordinator.sh/qosClass", "BE"}},
                          {{"node.koordinator.sh/extended-resource-spec", "{not json"}});
  ProxyHooks ignore(store, nullptr, FailurePolicy::kIgnore);
  auto a = ignore.container(HookStage::kPreCreateContainer, bad);
  REQUIRE(a.ok());
  CHECK(ignore.hookErrors() == 1);
  ProxyHooks fail(store, nullptr, FailurePolicy::kFail);
  auto b = fail.container(HookStage::kPreCreateContainer, bad);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error->code == CallCode::kFailedPrecondition);
  CHECK(b.error->message.find("extended-resource-spec") != std::string::npos);
}

TEST_CASE("stages without hooks and a state not yet published answer empty", "[proxy-hooks]") {
  HookStateStore store;
  ProxyHooks hooks(store, nullptr, FailurePolicy::kFail);
  auto early = hooks.container(HookStage::kPreCreateContainer, beBatchReq());
  REQUIRE(early.ok());
  CHECK(early.value->ByteSizeLong() == 0);
  store.publish(emptyState());
  for (HookStage s : {HookStage::kPreStartContainer, HookStage::kPostStartContainer,
                      HookStage::kPostStopContainer}) {
    auto resp = hooks.container(s, beBatchReq());
    REQUIRE(resp.ok());
    CHECK(resp.value->ByteSizeLong() == 0);
  }
  api::PodSandboxHookRequest sandbox;
  sandbox.mutable_pod_meta()->set_uid("be1");
  (*sandbox.mutable_labels())["koordinator.sh/qosClass"] = "BE";
  sandbox.set_cgroup_parent("/kubepods/besteffort/podbe1");
  for (HookStage s : {HookStage::kPreRunPodSandbox, HookStage::kPostStopPodSandbox}) {
    auto resp = hooks.podSandbox(s, sandbox);
    REQUIRE(resp.ok());
    CHECK(resp.value->ByteSizeLong() == 0);  // pod values are the reconciler's to write
  }
}

TEST_CASE("an update keeps the batch values over what CRI asks for", "[proxy-hooks]") {
  HookStateStore store;
  store.publish(emptyState());
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  auto req = beBatchReq();
  req.mutable_container_resources()->set_cpu_quota(-1);
  auto resp = hooks.container(HookStage::kPreUpdateContainerResources, req);
  REQUIRE(resp.ok());
  CHECK(resp.value->container_resources().cpu_shares() == 1024);
  CHECK(resp.value->container_resources().cpu_quota() == 200000);
  CHECK(resp.value->container_resources().memory_limit_in_bytes() == 2 * kGi);
}

TEST_CASE("the proxy and NRI decide the same for the same container", "[proxy-hooks]") {
  auto state = emptyState();
  auto rule = std::make_shared<CpuSetRule>();
  rule->sharePools = {CpuSharePool{0, 0, {0, 1, 2, 3}}};
  state->context.cpusetRule = rule;
  HookStateStore store;
  store.publish(state);
  ProxyHooks proxy(store, nullptr, FailurePolicy::kIgnore);
  koord::nri::NriHooks nriHooks(store, nullptr, FailurePolicy::kIgnore);
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> pods = {
      {"BE", {{"node.koordinator.sh/extended-resource-spec", kBatchSpec}}},
      {"LS", {}},
      {"LSR", {{"scheduling.koordinator.sh/resource-status", R"({"cpuset":"2"})"}}},
      {"LSE", {{"scheduling.koordinator.sh/resource-status", R"({"cpuset":"3"})"}}}};
  for (const auto& [qos, annotations] : pods) {
    INFO(qos);
    const std::string uid = "uid-" + qos;
    const std::string parent =
        qos == "BE" ? "/kubepods/besteffort/pod" + uid : "/kubepods/burstable/pod" + uid;
    auto req = containerReq(uid, parent, {{"koordinator.sh/qosClass", qos}}, annotations);
    auto viaProxy = proxy.container(HookStage::kPreCreateContainer, req);
    REQUIRE(viaProxy.ok());

    koord::nri::api::CreateContainerRequest nreq;
    nreq.mutable_pod()->set_uid(uid);
    nreq.mutable_pod()->set_name("pod-" + uid);
    nreq.mutable_pod()->set_namespace_("default");
    (*nreq.mutable_pod()->mutable_labels())["koordinator.sh/qosClass"] = qos;
    for (const auto& [k, v] : annotations) (*nreq.mutable_pod()->mutable_annotations())[k] = v;
    nreq.mutable_pod()->mutable_linux()->set_cgroup_parent(parent);
    nreq.mutable_container()->set_name("main");
    nreq.mutable_container()->set_id("cid");
    nreq.mutable_container()
        ->mutable_linux()
        ->mutable_resources()
        ->mutable_cpu()
        ->mutable_shares()
        ->set_value(2);
    auto viaNri = nriHooks.createContainer(nreq);
    REQUIRE(viaNri.ok());
    const auto& n = viaNri->adjust().linux().resources();
    const auto& p = viaProxy.value->container_resources();
    CHECK(p.cpu_shares() ==
          (n.cpu().has_shares() ? static_cast<int64_t>(n.cpu().shares().value()) : 0));
    CHECK(p.cpu_quota() == (n.cpu().has_quota() ? n.cpu().quota().value() : 0));
    CHECK(p.memory_limit_in_bytes() == (n.memory().has_limit() && n.memory().limit().value() > 0
                                            ? n.memory().limit().value()
                                            : 0));
    // A cpuset NRI leaves alone is the request's own on the proxy path.
    CHECK(p.cpuset_cpus() == (n.cpu().cpus().empty() && qos != "BE" ? "0-1" : n.cpu().cpus()));
  }
}

TEST_CASE("a container both paths see is decided once: NRI takes the proxy's decision",
          "[proxy-hooks]") {
  auto state = emptyState();
  HookStateStore store;
  store.publish(state);
  HookDecisions decisions;
  ProxyHooks proxy(store, nullptr, FailurePolicy::kIgnore, &decisions);
  koord::nri::NriHooks nriHooks(store, nullptr, FailurePolicy::kIgnore, &decisions);
  auto viaProxy = proxy.container(HookStage::kPreCreateContainer, beBatchReq());
  REQUIRE(viaProxy.ok());
  CHECK(decisions.size() == 1);
  // Between the two calls the NodeSLO changes (batch values would differ if
  // decided again): the container still gets the proxy's decision.
  auto changed = emptyState();
  changed->context.batchResource = false;
  store.publish(changed);
  koord::nri::api::CreateContainerRequest nreq;
  nreq.mutable_pod()->set_uid("be1");
  nreq.mutable_container()->set_name("main");
  auto viaNri = nriHooks.createContainer(nreq);
  REQUIRE(viaNri.ok());
  CHECK(viaNri->adjust().linux().resources().cpu().shares().value() == 1024);
  CHECK(decisions.size() == 0);
  CHECK(nriHooks.hookErrors() == 0);
  // Asked again later, it is decided afresh from the state in force.
  auto again = proxy.container(HookStage::kPreCreateContainer, beBatchReq());
  REQUIRE(again.ok());
  CHECK(again.value->container_resources().cpu_shares() == 0);
}

TEST_CASE(
    "through the proxy a normalization ratio divides the BE batch quota and, under the "
    "gate, an LS one",
    "[proxy-hooks]") {
  auto state = emptyState();
  state->context.cpuNormalizationRatio = 1.25;
  state->context.cpuNormalization = true;
  HookStateStore store;
  store.publish(state);
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  auto resp = hooks.container(HookStage::kPreCreateContainer, beBatchReq());
  REQUIRE(resp.ok());
  CHECK(resp.value->container_resources().cpu_quota() == 160000);
  auto ls =
      containerReq("ls1", "/kubepods/burstable/podls1", {{"koordinator.sh/qosClass", "LS"}}, {});
  ls.mutable_container_resources()->set_cpu_quota(300000);  // a 3-core limit
  resp = hooks.container(HookStage::kPreCreateContainer, ls);
  REQUIRE(resp.ok());
  REQUIRE(resp.value->has_container_resources());
  CHECK(resp.value->container_resources().cpu_quota() == 240000);
}

TEST_CASE("GPUEnvInject answers the request's envs with NVIDIA_VISIBLE_DEVICES added",
          "[proxy-hooks]") {
  HookStateStore store;
  auto state = emptyState();
  state->context.gpuEnvInject = true;
  store.publish(state);
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  auto req = containerReq(
      "gpu", "/kubepods/burstable/podgpu", {},
      {{"scheduling.koordinator.sh/device-allocated", R"({"gpu":[{"minor":0},{"minor":3}]})"}});
  (*req.mutable_container_envs())["NVIDIA_VISIBLE_DEVICES"] = "all";  // the image's default
  auto resp = hooks.container(HookStage::kPreCreateContainer, req);
  REQUIRE(resp.ok());
  // The proxy replaces every env with this map: the request's, ours winning.
  const auto& envs = resp.value->container_envs();
  CHECK(std::map<std::string, std::string>(envs.begin(), envs.end()) ==
        std::map<std::string, std::string>{{"PATH", "/bin"}, {"NVIDIA_VISIBLE_DEVICES", "0,3"}});
  CHECK_FALSE(resp.value->has_container_resources());  // nothing else decided
  // An update never sets env.
  auto update = hooks.container(HookStage::kPreUpdateContainerResources, req);
  REQUIRE(update.ok());
  CHECK(update.value->container_envs().empty());
}

TEST_CASE(
    "OOMScoreAdj answers PreCreateContainer with the annotation's oom_score_adj and the "
    "request's other values",
    "[proxy-hooks]") {
  HookStateStore store;
  auto state = emptyState();
  state->context.oomScoreAdj = true;
  store.publish(state);
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  auto req = containerReq("o1", "/kubepods/burstable/podo1", {},
                          {{"koordinator.sh/oom-score-adj", "250"}});
  req.mutable_container_resources()->set_oom_score_adj(968);  // the kubelet's, Burstable
  req.mutable_container_resources()->set_cpuset_mems("0");
  auto resp = hooks.container(HookStage::kPreCreateContainer, req);
  REQUIRE(resp.ok());
  REQUIRE(resp.value->has_container_resources());
  CHECK(resp.value->container_resources().oom_score_adj() == 250);
  CHECK(resp.value->container_resources().cpuset_mems() == "0");
  CHECK(resp.value->container_resources().cpu_shares() ==
        0);  // not decided: the proxy keeps its own

  // Without the annotation the request's value goes back, as before.
  auto plain = containerReq("o2", "/kubepods/burstable/podo2", {}, {});
  plain.mutable_container_resources()->set_oom_score_adj(968);
  resp = hooks.container(HookStage::kPreCreateContainer, plain);
  REQUIRE(resp.ok());
  CHECK_FALSE(resp.value->has_container_resources());
}

}  // namespace test_runtimeproxy_proxy_hooks
