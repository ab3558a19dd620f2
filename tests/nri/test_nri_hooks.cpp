// The NRI handler (nri/nri_hooks.h): NRI requests in, exact adjustments and
// updates out, from a published HookState; and the property the design rests on:
// for the same pods, what NRI answers for a container equals what the reconciler
// writes to that container's cgroup.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "nri/nri_hooks.h"
#include "qos/hook_reconcile.h"
#include "tests/support/temp_tree.h"

namespace test_nri_nri_hooks {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::nri;

namespace {

constexpr int64_t kGi = 1024LL * 1024 * 1024;
constexpr const char* kBatchSpec =
    R"({"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"1000",)"
    R"("kubernetes.io/batch-memory":"1Gi"},"limits":{"kubernetes.io/batch-cpu":"2000",)"
    R"("kubernetes.io/batch-memory":"2Gi"}}}})";

struct Recorded {
  std::string hook;
  std::string stage;
  bool ok;
  double millis;
};

class VectorRecorder final : public HookRecorder {
 public:
  void record(std::string_view hook, std::string_view stage, bool ok, double millis) override {
    entries.push_back(Recorded{std::string(hook), std::string(stage), ok, millis});
  }
  std::vector<Recorded> entries;
};

std::string systemdParent(KubeQos q, const std::string& uid) {
  std::string u = uid;
  std::replace(u.begin(), u.end(), '-', '_');
  switch (q) {
    case KubeQos::kBestEffort:
      return "kubepods-besteffort-pod" + u + ".slice";
    case KubeQos::kBurstable:
      return "kubepods-burstable-pod" + u + ".slice";
    case KubeQos::kGuaranteed:
      break;
  }
  return "kubepods-pod" + u + ".slice";
}

std::string cgroupfsParent(KubeQos q, const std::string& uid) {
  switch (q) {
    case KubeQos::kBestEffort:
      return "/kubepods/besteffort/pod" + uid;
    case KubeQos::kBurstable:
      return "/kubepods/burstable/pod" + uid;
    case KubeQos::kGuaranteed:
      break;
  }
  return "/kubepods/pod" + uid;
}

api::PodSandbox nriPod(const std::string& uid, const std::string& name, const std::string& parent,
                       const std::map<std::string, std::string>& labels = {},
                       const std::map<std::string, std::string>& annotations = {}) {
  api::PodSandbox p;
  p.set_id("sandbox-" + uid);
  p.set_uid(uid);
  p.set_name(name);
  p.set_namespace_("default");
  for (const auto& [k, v] : labels) (*p.mutable_labels())[k] = v;
  for (const auto& [k, v] : annotations) (*p.mutable_annotations())[k] = v;
  p.mutable_linux()->set_cgroup_parent(parent);
  return p;
}

// What the kubelet asks the runtime for: shares from the request, quota from the
// limit, the memory limit.
api::Container nriContainer(const std::string& id, const std::string& name,
                            std::optional<int64_t> reqMilli, std::optional<int64_t> limMilli,
                            std::optional<int64_t> memLimit) {
  api::Container c;
  c.set_id(id);
  c.set_name(name);
  api::LinuxResources* r = c.mutable_linux()->mutable_resources();
  r->mutable_cpu()->mutable_shares()->set_value(
      static_cast<uint64_t>(std::max<int64_t>(reqMilli.value_or(0) * 1024 / 1000, 2)));
  r->mutable_cpu()->mutable_period()->set_value(100000);
  if (limMilli) r->mutable_cpu()->mutable_quota()->set_value(*limMilli * 100);
  if (memLimit) r->mutable_memory()->mutable_limit()->set_value(*memLimit);
  return c;
}

api::Container nriContainerFor(const Container& c) {
  return nriContainer(c.id, c.name, c.requests.cpuMilli, c.limits.cpuMilli, c.limits.memoryBytes);
}

std::shared_ptr<HookState> stateWith(std::vector<Pod> pods) {
  auto s = std::make_shared<HookState>();
  s->spec = defaultNodeSlo();
  for (Pod& p : pods) s->podsByUid.emplace(p.uid, std::move(p));
  return s;
}

Pod kubeletPod(const std::string& uid, KubeQos kube, KoordQos koord) {
  Pod p;
  p.uid = uid;
  p.ns = "default";
  p.name = "pod-" + uid;
  p.phase = "Pending";
  p.kubeQos = kube;
  p.koordQos = koord;
  Container c;
  c.name = "main";
  c.requests.cpuMilli = 1000;
  c.limits.cpuMilli = 2000;
  c.requests.memoryBytes = kGi;
  c.limits.memoryBytes = kGi;
  p.containers.push_back(c);
  return p;
}

api::CreateContainerRequest createReq(const api::PodSandbox& pod, const api::Container& c) {
  api::CreateContainerRequest req;
  *req.mutable_pod() = pod;
  *req.mutable_container() = c;
  return req;
}

const api::LinuxResources& adjusted(const api::CreateContainerResponse& r) {
  return r.adjust().linux().resources();
}

}  // namespace

TEST_CASE("the failure policy is Ignore or Fail", "[nri-hooks]") {
  CHECK(parseFailurePolicy("Ignore").value() == FailurePolicy::kIgnore);
  CHECK(parseFailurePolicy("Fail").value() == FailurePolicy::kFail);
  auto bad = parseFailurePolicy("ignore");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "failure policy \"ignore\": expected Ignore or Fail");
}

TEST_CASE("the handler subscribes koordlet's events and answers sync and stop with nothing",
          "[nri-hooks]") {
  HookStateStore store;
  NriHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  CHECK(hooks.configure(api::ConfigureRequest{}).value() == 0x8D);
  CHECK(kKoordletEvents == (eventBit(api::RUN_POD_SANDBOX) | eventBit(api::REMOVE_POD_SANDBOX) |
                            eventBit(api::CREATE_CONTAINER) | eventBit(api::UPDATE_CONTAINER)));
  api::SynchronizeRequest sync;
  *sync.add_pods() = nriPod("u1", "p", "/kubepods/besteffort/podu1");
  CHECK(hooks.synchronize(sync).value().update_size() == 0);
  CHECK(hooks.stopContainer(api::StopContainerRequest{}).value().update_size() == 0);
  // Nothing published yet: empty answers, no error.
  auto created = hooks.createContainer(createReq(nriPod("u1", "p", "/kubepods/besteffort/podu1"),
                                                 nriContainer("c", "main", {}, {}, {})));
  REQUIRE(created.ok());
  CHECK_FALSE(created->has_adjust());
}

TEST_CASE("the store hands out what was published last, with the spec pointer re-aimed",
          "[nri-hooks]") {
  HookStateStore store;
  CHECK(store.current() == nullptr);
  auto s = stateWith({});
  s->spec.cpuBurst.cpuBurstPercent = 123;
  store.publish(s);
  auto cur = store.current();
  REQUIRE(cur != nullptr);
  CHECK(cur->context.spec == &cur->spec);
  CHECK(cur->context.spec->cpuBurst.cpuBurstPercent == 123);
  store.publish(stateWith({}));
  CHECK(cur->spec.cpuBurst.cpuBurstPercent == 123);  // a reader keeps its snapshot
  CHECK(store.current()->spec.cpuBurst.cpuBurstPercent == 1000);
}

TEST_CASE("kube QoS comes from the cgroup parent in both driver forms", "[nri-hooks]") {
  const std::string uid = "0c6f8a3e-1d2b-4c5d-8e9f-0a1b2c3d4e5f";
  for (KubeQos q : {KubeQos::kBestEffort, KubeQos::kBurstable, KubeQos::kGuaranteed}) {
    CHECK(kubeQosFromCgroupParent(systemdParent(q, uid)) == q);
    CHECK(kubeQosFromCgroupParent(cgroupfsParent(q, uid)) == q);
  }
  CHECK(kubeQosFromCgroupParent(
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podx.slice") ==
        KubeQos::kBestEffort);
  CHECK(kubeQosFromCgroupParent("") == KubeQos::kGuaranteed);
}

TEST_CASE("a pod the kubelet has not listed is read from the NRI request", "[nri-hooks]") {
  const api::PodSandbox pod = nriPod("u1", "batch", systemdParent(KubeQos::kBestEffort, "u1"),
                                     {{"koordinator.sh/qosClass", "BE"}},
                                     {{"node.koordinator.sh/extended-resource-spec", kBatchSpec}});
  const api::Container c = nriContainer("cid", "main", 500, 1500, 3 * kGi);
  auto hp = hookPodFromNri(pod, &c, nullptr);
  REQUIRE(hp.ok());
  CHECK(hp->uid == "u1");
  CHECK(hp->ns == "default");
  CHECK(hp->rawQos == KoordQos::kBE);
  CHECK(hp->kubeQos == KubeQos::kBestEffort);
  CHECK(hp->kubelet == nullptr);
  REQUIRE(hp->containers.size() == 1);
  const HookContainer& hc = hp->containers[0];
  CHECK(hc.id == "cid");
  CHECK(hc.requests.cpuMilli == 500);  // 512 shares × 1000 / 1024
  CHECK(hc.limits.cpuMilli == 1500);
  CHECK(hc.limits.memoryBytes == 3 * kGi);
  CHECK(hc.requests.batchCpuMilli == 1000);
  CHECK(hc.limits.batchCpuMilli == 2000);
  CHECK(hc.limits.batchMemoryBytes == 2 * kGi);

  // Known to the kubelet: its spec wins, the NRI id is kept.
  Pod known = kubeletPod("u1", KubeQos::kBurstable, KoordQos::kLS);
  auto fromKubelet = hookPodFromNri(pod, &c, &known);
  REQUIRE(fromKubelet.ok());
  CHECK(fromKubelet->rawQos == KoordQos::kLS);
  CHECK(fromKubelet->kubeQos == KubeQos::kBurstable);
  CHECK(fromKubelet->kubelet == &known);
  CHECK(fromKubelet->containers.at(0).id == "cid");
  CHECK(fromKubelet->containers.at(0).limits.cpuMilli == 2000);
}

TEST_CASE("a BE batch container is created with batch shares, quota and memory limit",
          "[nri-hooks]") {
  HookStateStore store;
  store.publish(stateWith({}));
  NriHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  const api::PodSandbox pod = nriPod("u1", "batch", cgroupfsParent(KubeQos::kBestEffort, "u1"),
                                     {{"koordinator.sh/qosClass", "BE"}},
                                     {{"node.koordinator.sh/extended-resource-spec", kBatchSpec}});
  auto resp = hooks.createContainer(createReq(pod, nriContainer("cid", "main", {}, {}, {})));
  REQUIRE(resp.ok());
  CHECK(resp->update_size() == 0);
  const api::LinuxResources& r = adjusted(*resp);
  REQUIRE(r.cpu().has_shares());
  CHECK(r.cpu().shares().value() == 1024);
  REQUIRE(r.cpu().has_quota());
  CHECK(r.cpu().quota().value() == 200000);
  CHECK_FALSE(r.cpu().has_period());
  CHECK(r.cpu().cpus() == "");  // BestEffort: cleared (containerd ignores "")
  REQUIRE(r.memory().has_limit());
  CHECK(r.memory().limit().value() == 2 * kGi);
  CHECK_FALSE(r.has_rdt_class());
  CHECK(r.unified().empty());
}

TEST_CASE("an LSR container with a scheduler cpuset gets it, with quota unset", "[nri-hooks]") {
  Pod lsr = kubeletPod("u2", KubeQos::kGuaranteed, KoordQos::kLSR);
  lsr.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"2-3"})";
  HookStateStore store;
  store.publish(stateWith({lsr}));
  NriHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  const api::PodSandbox pod = nriPod("u2", "lsr", systemdParent(KubeQos::kGuaranteed, "u2"),
                                     {{"koordinator.sh/qosClass", "LSR"}});
  auto resp = hooks.createContainer(createReq(pod, nriContainer("cid", "main", 2000, 2000, kGi)));
  REQUIRE(resp.ok());
  const api::LinuxResources& r = adjusted(*resp);
  CHECK(r.cpu().cpus() == "2-3");
  REQUIRE(r.cpu().has_quota());
  CHECK(r.cpu().quota().value() == -1);
  CHECK_FALSE(r.cpu().has_shares());
  CHECK_FALSE(r.has_memory());
}

TEST_CASE("LS, skip-labelled and unknown plain pods get no adjustment", "[nri-hooks]") {
  Pod ls = kubeletPod("ls", KubeQos::kBurstable, KoordQos::kLS);
  Pod skipped = kubeletPod("skip", KubeQos::kBestEffort, KoordQos::kBE);
  skipped.labels["runtimeproxy.koordinator.sh/skip-hookserver"] = "true";
  skipped.containers[0].requests.batchCpuMilli = 1000;
  HookStateStore store;
  store.publish(stateWith({ls, skipped}));
  VectorRecorder rec;
  NriHooks hooks(store, &rec, FailurePolicy::kFail);
  for (const auto& [uid, parent] : std::vector<std::pair<std::string, std::string>>{
           {"ls", cgroupfsParent(KubeQos::kBurstable, "ls")},
           {"skip", systemdParent(KubeQos::kBestEffort, "skip")},
           {"nobody", systemdParent(KubeQos::kBurstable, "nobody")}}) {
    auto resp = hooks.createContainer(
        createReq(nriPod(uid, uid, parent), nriContainer("c", "main", 100, 200, kGi)));
    REQUIRE(resp.ok());
    CHECK_FALSE(resp->has_adjust());
    api::UpdateContainerRequest up;
    *up.mutable_pod() = nriPod(uid, uid, parent);
    *up.mutable_container() = nriContainer("c", "main", 100, 200, kGi);
    auto u = hooks.updateContainer(up);
    REQUIRE(u.ok());
    CHECK(u->update_size() == 0);
  }
  // The skipped pod ran no hook at all.
  CHECK(rec.entries.size() == 8 + 3 + 8 + 3);  // ls and nobody: create 8, update 3 each
}

TEST_CASE("an update answers one ContainerUpdate for the container with the same fields",
          "[nri-hooks]") {
  HookStateStore store;
  store.publish(stateWith({}));
  VectorRecorder rec;
  NriHooks hooks(store, &rec, FailurePolicy::kIgnore);
  api::UpdateContainerRequest req;
  *req.mutable_pod() = nriPod("u1", "batch", cgroupfsParent(KubeQos::kBestEffort, "u1"),
                              {{"koordinator.sh/qosClass", "BE"}},
                              {{"node.koordinator.sh/extended-resource-spec", kBatchSpec}});
  *req.mutable_container() = nriContainer("cid-7", "main", {}, {}, {});
  *req.mutable_linux_resources() = req.container().linux().resources();
  auto resp = hooks.updateContainer(req);
  REQUIRE(resp.ok());
  REQUIRE(resp->update_size() == 1);
  const api::ContainerUpdate& u = resp->update(0);
  CHECK(u.container_id() == "cid-7");
  CHECK_FALSE(u.ignore_failure());
  const api::LinuxResources& r = u.linux().resources();
  CHECK(r.cpu().shares().value() == 1024);
  CHECK(r.cpu().quota().value() == 200000);
  CHECK(r.memory().limit().value() == 2 * kGi);
  REQUIRE(rec.entries.size() == 3);
  CHECK(rec.entries[0].hook == "BatchResource");
  CHECK(rec.entries[1].hook == "CPUSetAllocator");
  CHECK(rec.entries[0].stage == "PreUpdateContainerResources");
}

TEST_CASE("with policy Ignore a bad annotation drops only BatchResource; with Fail it fails",
          "[nri-hooks]") {
  HookStateStore store;
  store.publish(stateWith({}));
  const api::PodSandbox pod = nriPod(
      "u3", "bad", cgroupfsParent(KubeQos::kBestEffort, "u3"), {{"koordinator.sh/qosClass", "BE"}},
      {{"node.koordinator.sh/extended-resource-spec", R"({"containers":{"main":7}})"},
       {"scheduling.koordinator.sh/resource-status", R"({"cpuset":"1"})"}});
  const api::Container c = nriContainer("cid", "main", {}, {}, {});

  VectorRecorder rec;
  NriHooks ignore(store, &rec, FailurePolicy::kIgnore);
  auto resp = ignore.createContainer(createReq(pod, c));
  REQUIRE(resp.ok());
  const api::LinuxResources& r = adjusted(*resp);
  CHECK(r.cpu().cpus() == "1");
  CHECK(r.cpu().quota().value() == -1);
  CHECK_FALSE(r.cpu().has_shares());
  CHECK_FALSE(r.has_memory());
  CHECK(ignore.hookErrors() == 1);
  REQUIRE(rec.entries.size() == 8);
  CHECK(rec.entries[0].hook == "BatchResource");
  CHECK_FALSE(rec.entries[0].ok);
  CHECK(rec.entries[1].ok);

  NriHooks fail(store, nullptr, FailurePolicy::kFail);
  auto failed = fail.createContainer(createReq(pod, c));
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message ==
        "pod default/bad: hook BatchResource: annotation "
        "node.koordinator.sh/extended-resource-spec: containers.main: expected an object, got a "
        "number");
  api::UpdateContainerRequest up;
  *up.mutable_pod() = pod;
  *up.mutable_container() = c;
  CHECK_FALSE(fail.updateContainer(up).ok());
  // Sandbox events never fail, whatever the policy.
  api::StateChangeEvent ev;
  ev.set_event(api::RUN_POD_SANDBOX);
  *ev.mutable_pod() = pod;
  CHECK(fail.stateChange(ev).ok());
}

TEST_CASE("every hook run is timed under its name and stage", "[nri-hooks]") {
  HookStateStore store;
  store.publish(stateWith({kubeletPod("u4", KubeQos::kBurstable, KoordQos::kLS)}));
  VectorRecorder rec;
  NriHooks hooks(store, &rec, FailurePolicy::kIgnore);
  const api::PodSandbox pod = nriPod("u4", "ls", cgroupfsParent(KubeQos::kBurstable, "u4"));
  REQUIRE(hooks.createContainer(createReq(pod, nriContainer("c", "main", 1000, 2000, kGi))).ok());
  api::StateChangeEvent run;
  run.set_event(api::RUN_POD_SANDBOX);
  *run.mutable_pod() = pod;
  REQUIRE(hooks.stateChange(run).ok());
  api::StateChangeEvent rm = run;
  rm.set_event(api::REMOVE_POD_SANDBOX);
  REQUIRE(hooks.stateChange(rm).ok());

  std::vector<std::string> seen;
  for (const Recorded& r : rec.entries) {
    seen.push_back(r.stage + "/" + r.hook);
    CHECK(r.ok);
    CHECK(r.millis >= 0);
    CHECK(r.millis < 1000);
  }
  CHECK(seen == std::vector<std::string>{
                    "PreCreateContainer/BatchResource", "PreCreateContainer/CPUSetAllocator",
                    "PreCreateContainer/Resctrl", "PreCreateContainer/CPUBurst",
                    "PreCreateContainer/MemoryQoS", "PreCreateContainer/CPUNormalization",
                    "PreCreateContainer/GPUEnvInject", "PreCreateContainer/OOMScoreAdj",
                    "PreRunPodSandbox/BatchResource", "PreRunPodSandbox/CPUSetAllocator",
                    "PreRunPodSandbox/Resctrl", "PreRunPodSandbox/CPUBurst",
                    "PreRunPodSandbox/MemoryQoS", "PreRunPodSandbox/CPUNormalization",
                    "PreRemoveRunPodSandbox/Resctrl"});
}

TEST_CASE("on cgroup v2 the adjustment carries the RDT class and the unified burst and memory",
          "[nri-hooks]") {
  Pod ls = kubeletPod("u5", KubeQos::kBurstable, KoordQos::kLS);
  auto state = stateWith({ls});
  state->spec.cpuBurst.policy = CpuBurstPolicy::kCpuBurstOnly;
  state->spec.qos.ls.resctrl.enable = true;
  state->spec.qos.ls.memory.enable = true;
  state->spec.qos.ls.memory.minLimitPercent = 50;
  state->context.version = CgroupVersion::kV2;
  state->context.resctrl = true;
  state->context.memoryQos = true;
  state->context.nodeAllocatableMemory = 8 * kGi;
  HookStateStore store;
  store.publish(state);
  NriHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  auto resp =
      hooks.createContainer(createReq(nriPod("u5", "ls", systemdParent(KubeQos::kBurstable, "u5")),
                                      nriContainer("c", "main", 1000, 2000, kGi)));
  REQUIRE(resp.ok());
  const api::LinuxResources& r = adjusted(*resp);
  REQUIRE(r.has_rdt_class());
  CHECK(r.rdt_class().value() == "LS");
  std::map<std::string, std::string> unified(r.unified().begin(), r.unified().end());
  CHECK(unified == std::map<std::string, std::string>{{"cpu.max.burst", "200000"},  // = quota
                                                      {"memory.high", "max"},
                                                      {"memory.low", "0"},
                                                      {"memory.min", "536870912"}});
  CHECK_FALSE(r.has_cpu());
  CHECK_FALSE(r.has_memory());
}

TEST_CASE("toLinuxResources sets only the intent's fields", "[nri-hooks]") {
  CHECK(toLinuxResources(HookIntent{}).ByteSizeLong() == 0);
  HookIntent i;
  i.memoryLimit = -1;
  api::LinuxResources r = toLinuxResources(i);
  CHECK_FALSE(r.has_cpu());
  CHECK(r.memory().limit().value() == -1);
  CHECK_FALSE(r.memory().has_swap());
}

namespace {

// The snapshot QosManager::snapshot builds, without files or samples.
QosSnapshot snapshotOf(const std::vector<Pod>& pods, const CgroupLayout& layout) {
  QosSnapshot snap;
  for (const Pod& p : pods) {
    PodView v;
    v.pod = &p;
    v.qos = p.qosWithDefault();
    v.dir = layout.podDir(p.kubeQos, p.uid);
    if (auto it = p.annotations.find("scheduling.koordinator.sh/resource-status");
        it != p.annotations.end()) {
      if (auto cpus = parseResourceStatusCpuset(it->second)) v.pinnedCpus = *cpus;
    }
    for (const Container& c : p.containers) {
      ContainerView cv;
      cv.container = &c;
      if (!c.id.empty()) cv.dir = *layout.containerDir(v.dir, c.runtime, c.id);
      v.containers.push_back(cv);
    }
    snap.pods.push_back(v);
  }
  return snap;
}

using Values = std::map<std::string, std::string>;

Values fromAdjustment(const api::LinuxResources& r) {
  Values v;
  if (r.cpu().has_shares()) v["cpu.shares"] = std::to_string(r.cpu().shares().value());
  if (r.cpu().has_quota()) v["cpu.cfs_quota_us"] = std::to_string(r.cpu().quota().value());
  if (!r.cpu().cpus().empty()) v["cpuset.cpus"] = r.cpu().cpus();
  if (r.memory().has_limit()) {
    v["memory.limit_in_bytes"] = std::to_string(r.memory().limit().value());
  }
  return v;
}

// The kubelet capture the parity tests colocate on.
std::vector<Pod> capturedPods() {
  auto text = readFile(test::fixturePath("kubelet/k8s-1.28/pods.json"));
  REQUIRE(text.ok());
  auto parsed = parsePodList(*text);
  REQUIRE(parsed.ok());
  return std::move(*parsed);
}

// What the reconciler writes for these pods, by cgroup dir, as file -> text.
std::map<std::string, Values> reconcilerWrites(const std::vector<Pod>& pods,
                                               const CgroupLayout& layout, const HookContext& ctx) {
  const HookReconcileResult rec = reconcileHooks(snapshotOf(pods, layout), ctx);
  CHECK(rec.errors.empty());
  std::map<std::string, Values> written;
  for (const CgroupWrite& w : rec.writes) {
    written[w.dir][knobSpec(w.knob).name] = renderKnob(w.knob, CgroupVersion::kV1, w.value);
  }
  return written;
}

// What NRI answers for the container's CreateContainer under that cgroup parent.
Values nriValues(NriHooks& hooks, const Pod& p, const Container& c, const std::string& parent) {
  api::PodSandbox sandbox = nriPod(p.uid, p.name, parent, p.labels, p.annotations);
  sandbox.set_namespace_(p.ns);
  auto resp = hooks.createContainer(createReq(sandbox, nriContainerFor(c)));
  REQUIRE(resp.ok());
  return fromAdjustment(adjusted(*resp));
}

}  // namespace

TEST_CASE("for the kubelet's pods NRI answers each container what the reconciler writes to it",
          "[nri-hooks]") {
  std::vector<Pod> pods = capturedPods();
  // Colocation on top of a real node's pods: a BE batch pod, an LSR pod bound to
  // CPUs, a BE pod whose batch values come from the annotation only.
  int marked = 0;
  for (Pod& p : pods) {
    if (p.name.rfind("e2e-kube-state-metrics", 0) == 0 ||
        p.name == "e2e-scraper-5f59f96497-8cs7p") {
      p.labels["koordinator.sh/qosClass"] = "BE";
      p.koordQos = KoordQos::kBE;
      ++marked;
    }
    if (p.name.rfind("e2e-kube-state-metrics", 0) == 0) {
      p.containers[0].requests.batchCpuMilli = 500;
      p.containers[0].limits.batchCpuMilli = 1000;
      p.containers[0].limits.batchMemoryBytes = kGi;
    }
    if (p.name == "e2e-scraper-5f59f96497-8cs7p") {
      p.annotations["node.koordinator.sh/extended-resource-spec"] =
          R"({"containers":{"e2e-scraper":{"requests":{"kubernetes.io/batch-cpu":"250"},)"
          R"("limits":{"kubernetes.io/batch-cpu":"750","kubernetes.io/batch-memory":"256Mi"}}}})";
    }
    if (p.name == "kindnet-znx27") {
      p.labels["koordinator.sh/qosClass"] = "LSR";
      p.koordQos = KoordQos::kLSR;
      p.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"0-1"})";
      ++marked;
    }
  }
  REQUIRE(marked == 3);

  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  auto state = stateWith(pods);
  state->context.suppressCfsQuota = false;
  HookStateStore store;
  store.publish(state);
  NriHooks hooks(store, nullptr, FailurePolicy::kFail);
  const auto written = reconcilerWrites(pods, layout, state->context);

  size_t compared = 0, nonEmpty = 0;
  bool systemd = false;
  for (const Pod& p : pods) {
    if (!p.active()) continue;
    for (const Container& c : p.containers) {
      if (c.id.empty()) continue;
      systemd = !systemd;  // both parent forms
      const std::string parent =
          systemd ? systemdParent(p.kubeQos, p.uid) : cgroupfsParent(p.kubeQos, p.uid);
      const Values nri = nriValues(hooks, p, c, parent);
      const std::string dir =
          *layout.containerDir(layout.podDir(p.kubeQos, p.uid), c.runtime, c.id);
      const Values cgroup = written.count(dir) ? written.at(dir) : Values{};
      INFO(p.name << "/" << c.name);
      CHECK(nri == cgroup);
      ++compared;
      if (!nri.empty()) ++nonEmpty;
    }
  }
  CHECK(compared > 20);
  CHECK(nonEmpty == 3);
  const std::string ksm =
      "kubepods/besteffort/pod846f61ad-6443-479c-98c4-5117e8c12fb9/"
      "ccf22f9689a58aad39ae54bb845cd54f48c9d7bc95c90afa5d3abedb2406b8e4";
  CHECK(written.at(ksm) == Values{{"cpu.shares", "512"},
                                  {"cpu.cfs_quota_us", "100000"},
                                  {"memory.limit_in_bytes", "1073741824"}});
}

TEST_CASE("hostile batch values are left out of the adjustment, counted, and named",
          "[nri-hooks]") {
  HookStateStore store;
  store.publish(stateWith({}));
  constexpr const char* kHostile =
      R"({"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"1000"},)"
      R"("limits":{"kubernetes.io/batch-cpu":"9223372036854775807",)"
      R"("kubernetes.io/batch-memory":"-1"}}}})";
  const api::PodSandbox pod = nriPod("u9", "hostile", cgroupfsParent(KubeQos::kBestEffort, "u9"),
                                     {{"koordinator.sh/qosClass", "BE"}},
                                     {{"node.koordinator.sh/extended-resource-spec", kHostile}});
  const api::Container c = nriContainer("cid", "main", {}, {}, {});

  NriHooks ignore(store, nullptr, FailurePolicy::kIgnore);
  auto resp = ignore.createContainer(createReq(pod, c));
  REQUIRE(resp.ok());
  const api::LinuxResources& r = adjusted(*resp);
  CHECK(r.cpu().shares().value() == 1024);  // the field that was right
  CHECK_FALSE(r.cpu().has_quota());
  CHECK_FALSE(r.has_memory());  // never a memory.max of 0
  CHECK(ignore.hookErrors() == 1);

  NriHooks fail(store, nullptr, FailurePolicy::kFail);
  auto failed = fail.createContainer(createReq(pod, c));
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(failed.error().message, Catch::Contains("pod default/hostile: hook BatchResource: "));
  CHECK_THAT(failed.error().message,
             Catch::Contains("container main: kubernetes.io/batch-cpu limit 9223372036854775807"));
  CHECK_THAT(failed.error().message,
             Catch::Contains("container main: kubernetes.io/batch-memory limit -1 is negative"));
}

TEST_CASE("runtime cpu values that overflow milli-cores are refused and counted, never a failure",
          "[nri-hooks]") {
  api::Container c = nriContainer("cid", "main", 1000, 2000, kGi);
  api::LinuxResources* res = c.mutable_linux()->mutable_resources();
  res->mutable_cpu()->mutable_shares()->set_value(UINT64_MAX);
  res->mutable_cpu()->mutable_quota()->set_value(INT64_MAX);
  const api::PodSandbox pod = nriPod("u10", "odd", systemdParent(KubeQos::kBurstable, "u10"),
                                     {{"koordinator.sh/qosClass", "LS"}});
  std::vector<std::string> refused;
  auto hp = hookPodFromNri(pod, &c, nullptr, &refused);
  REQUIRE(hp.ok());
  const HookContainer* hc = hp->container("main");
  REQUIRE(hc != nullptr);
  CHECK_FALSE(hc->requests.cpuMilli);
  CHECK_FALSE(hc->limits.cpuMilli);
  CHECK(hc->limits.memoryBytes == kGi);
  REQUIRE(refused.size() == 2);
  CHECK(refused[0] ==
        "pod default/odd: container main: linux.resources.cpu.shares 18446744073709551615 "
        "overflows milli-cores (cpu request not read)");
  CHECK_THAT(refused[1], Catch::Contains("container main: linux.resources.cpu.quota "
                                         "9223372036854775807 / cpu.period 100000"));

  // A period past int64 is refused as well (it would divide as a negative number).
  api::Container p = nriContainer("cid", "main", 1000, 2000, kGi);
  p.mutable_linux()->mutable_resources()->mutable_cpu()->mutable_period()->set_value(UINT64_MAX);
  refused.clear();
  auto hp2 = hookPodFromNri(pod, &p, nullptr, &refused);
  REQUIRE(hp2.ok());
  CHECK_FALSE(hp2->container("main")->limits.cpuMilli);
  CHECK(refused.size() == 1);

  // Through the handler, on v2 with burst on: no cpu.max.burst, the errors
  // counted, the call answered even under policy Fail.
  auto state = stateWith({});
  state->spec.cpuBurst.policy = CpuBurstPolicy::kCpuBurstOnly;
  state->context.version = CgroupVersion::kV2;
  HookStateStore store;
  store.publish(state);
  NriHooks hooks(store, nullptr, FailurePolicy::kFail);
  auto resp = hooks.createContainer(createReq(pod, c));
  REQUIRE(resp.ok());
  CHECK(adjusted(*resp).unified().empty());
  CHECK(hooks.hookErrors() == 2);
}

TEST_CASE("with share pools NRI and the reconciler give an LS pod the same cpuset", "[nri-hooks]") {
  std::vector<Pod> pods = capturedPods();
  std::string lsName;
  for (Pod& p : pods) {
    if (p.active() && p.kubeQos == KubeQos::kBurstable && lsName.empty()) {
      p.labels["koordinator.sh/qosClass"] = "LS";
      p.koordQos = KoordQos::kLS;
      lsName = p.name;
    }
  }
  REQUIRE_FALSE(lsName.empty());
  CpuSetRule rule;
  rule.sharePools = {CpuSharePool{0, 0, {0, 2, 3}}, CpuSharePool{1, 1, {5, 6, 7}}};
  rule.kubeletPolicy = "none";

  const CgroupLayout layout(CgroupVersion::kV1, CgroupDriver::kSystemd);
  auto state = stateWith(pods);
  state->context.cpusetRule = std::make_shared<const CpuSetRule>(rule);
  HookStateStore store;
  store.publish(state);
  NriHooks hooks(store, nullptr, FailurePolicy::kFail);
  const auto written = reconcilerWrites(pods, layout, state->context);
  size_t pooled = 0, lsContainers = 0;
  for (const Pod& p : pods) {
    if (!p.active()) continue;
    for (const Container& c : p.containers) {
      if (c.id.empty()) continue;
      const Values nri = nriValues(hooks, p, c, systemdParent(p.kubeQos, p.uid));
      const std::string dir =
          *layout.containerDir(layout.podDir(p.kubeQos, p.uid), c.runtime, c.id);
      const Values cgroup = written.count(dir) ? written.at(dir) : Values{};
      INFO(p.name << "/" << c.name);
      CHECK(nri == cgroup);
      if (nri.count("cpuset.cpus") != 0) {
        CHECK(nri.at("cpuset.cpus") == "0,2-3,5-7");
        ++pooled;
      }
      if (p.name == lsName) ++lsContainers;
    }
  }
  CHECK(lsContainers > 0);
  // The LS pod and every other non-BestEffort pod (policy none) get the pools.
  CHECK(pooled >= lsContainers);
}

TEST_CASE("a normalization ratio divides the BE batch quota, and the LS quota under the gate",
          "[nri-hooks]") {
  auto state = stateWith({kubeletPod("ls1", KubeQos::kBurstable, KoordQos::kLS)});
  state->context.cpuNormalizationRatio = 1.25;
  HookStateStore store;
  store.publish(state);
  NriHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  const api::PodSandbox be = nriPod("u1", "batch", cgroupfsParent(KubeQos::kBestEffort, "u1"),
                                    {{"koordinator.sh/qosClass", "BE"}},
                                    {{"node.koordinator.sh/extended-resource-spec", kBatchSpec}});
  auto resp = hooks.createContainer(createReq(be, nriContainer("cid", "main", {}, {}, {})));
  REQUIRE(resp.ok());
  CHECK(adjusted(*resp).cpu().quota().value() == 160000);  // 200000 / 1.25
  const api::PodSandbox ls = nriPod("ls1", "pod-ls1", cgroupfsParent(KubeQos::kBurstable, "ls1"),
                                    {{"koordinator.sh/qosClass", "LS"}});
  resp = hooks.createContainer(createReq(ls, nriContainer("c2", "main", 1000, 2000, kGi)));
  REQUIRE(resp.ok());
  CHECK_FALSE(adjusted(*resp).cpu().has_quota());  // gate off: the kubelet's 200000 stays

  auto gated = stateWith({kubeletPod("ls1", KubeQos::kBurstable, KoordQos::kLS)});
  gated->context.cpuNormalizationRatio = 1.25;
  gated->context.cpuNormalization = true;
  store.publish(gated);
  resp = hooks.createContainer(createReq(ls, nriContainer("c3", "main", 1000, 2000, kGi)));
  REQUIRE(resp.ok());
  REQUIRE(adjusted(*resp).cpu().has_quota());
  CHECK(adjusted(*resp).cpu().quota().value() == 160000);
}

TEST_CASE("GPUEnvInject gives a container the allocated GPUs' minors, and only that",
          "[nri-hooks]") {
  HookStateStore store;
  auto state = stateWith({});
  state->context.batchResource = state->context.cpusetAllocator = false;
  state->context.cpuBurst = state->context.memoryQos = state->context.resctrl = false;
  state->context.gpuEnvInject = true;
  store.publish(state);
  NriHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  const std::string allocated =
      R"({"gpu":[{"minor":1,"resources":{"koordinator.sh/gpu-core":"100"},"id":"GPU-b"},)"
      R"({"minor":0,"resources":{"koordinator.sh/gpu-core":"100"}}],)"
      R"("rdma":[{"minor":3,"id":"0000:09:00.0"}]})";
  const api::PodSandbox pod = nriPod("u1", "train", cgroupfsParent(KubeQos::kBurstable, "u1"), {},
                                     {{"scheduling.koordinator.sh/device-allocated", allocated}});
  auto resp = hooks.createContainer(createReq(pod, nriContainer("cid", "main", 1000, 2000, kGi)));
  REQUIRE(resp.ok());
  REQUIRE(resp->adjust().env_size() == 1);
  CHECK(resp->adjust().env(0).key() == "NVIDIA_VISIBLE_DEVICES");
  CHECK(resp->adjust().env(0).value() == "1,0");  // the annotation's order
  CHECK_FALSE(resp->adjust().has_linux());        // nothing else was decided

  // The gate off: nothing.
  state->context.gpuEnvInject = false;
  store.publish(state);
  resp = hooks.createContainer(createReq(pod, nriContainer("cid", "main", 1000, 2000, kGi)));
  REQUIRE(resp.ok());
  CHECK(resp->adjust().env_size() == 0);

  // A bad annotation under Fail: the call fails naming the field; under Ignore the
  // container is created without the variable.
  state->context.gpuEnvInject = true;
  store.publish(state);
  const api::PodSandbox bad =
      nriPod("u2", "bad", cgroupfsParent(KubeQos::kBurstable, "u2"), {},
             {{"scheduling.koordinator.sh/device-allocated", R"({"gpu":[{"minor":"0"}]})"}});
  NriHooks strict(store, nullptr, FailurePolicy::kFail);
  auto failed = strict.createContainer(createReq(bad, nriContainer("c2", "main", 1000, 2000, kGi)));
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message.find("annotation scheduling.koordinator.sh/device-allocated: "
                                    "gpu[0].minor: not an integer") != std::string::npos);
  auto ignored = hooks.createContainer(createReq(bad, nriContainer("c2", "main", 1000, 2000, kGi)));
  REQUIRE(ignored.ok());
  CHECK(ignored->adjust().env_size() == 0);
}

TEST_CASE(
    "OOMScoreAdj starts a container with its annotation's oom_score_adj through the "
    "adjustment, per container from the spec annotation, and refuses a value the kernel would",
    "[nri-hooks]") {
  HookStateStore store;
  auto state = stateWith({});
  state->context.batchResource = state->context.cpusetAllocator = false;
  state->context.cpuBurst = state->context.memoryQos = state->context.resctrl = false;
  state->context.oomScoreAdj = true;
  store.publish(state);
  NriHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  const api::PodSandbox pod = nriPod("u1", "web", cgroupfsParent(KubeQos::kBurstable, "u1"), {},
                                     {{"koordinator.sh/oom-score-adj", "-500"},
                                      {"koordinator.sh/oom-score-adj-spec", R"({"log":900})"}});
  auto resp = hooks.createContainer(createReq(pod, nriContainer("c1", "main", 1000, 2000, kGi)));
  REQUIRE(resp.ok());
  REQUIRE(resp->adjust().linux().has_oom_score_adj());
  CHECK(resp->adjust().linux().oom_score_adj().value() == -500);
  CHECK_FALSE(resp->adjust().linux().has_resources());  // nothing else was decided
  resp = hooks.createContainer(createReq(pod, nriContainer("c2", "log", 1000, 2000, kGi)));
  REQUIRE(resp.ok());
  CHECK(resp->adjust().linux().oom_score_adj().value() == 900);

  // Out of range: refused (Fail: the call fails naming the annotation; Ignore: nothing set).
  const api::PodSandbox bad = nriPod("u2", "bad", cgroupfsParent(KubeQos::kBurstable, "u2"), {},
                                     {{"koordinator.sh/oom-score-adj", "-1001"}});
  NriHooks strict(store, nullptr, FailurePolicy::kFail);
  auto failed = strict.createContainer(createReq(bad, nriContainer("c3", "main", 1000, 2000, kGi)));
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().message.find(
            "annotation koordinator.sh/oom-score-adj: -1001 is outside [-1000, 1000]") !=
        std::string::npos);
  auto ignored = hooks.createContainer(createReq(bad, nriContainer("c3", "main", 1000, 2000, kGi)));
  REQUIRE(ignored.ok());
  CHECK_FALSE(ignored->adjust().linux().has_oom_score_adj());

  // The gate off: nothing.
  state->context.oomScoreAdj = false;
  store.publish(state);
  resp = hooks.createContainer(createReq(pod, nriContainer("c1", "main", 1000, 2000, kGi)));
  REQUIRE(resp.ok());
  CHECK_FALSE(resp->adjust().has_linux());
}

}  // namespace test_nri_nri_hooks
