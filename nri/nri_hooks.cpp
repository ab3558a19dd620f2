#include "nri/nri_hooks.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/log.h"

namespace koord::nri {
namespace {

std::map<std::string, std::string> toMap(const google::protobuf::Map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

// The container's linux.resources as the runtime describes them.
RuntimeResources resourcesFromNri(const api::Container& c) {
  RuntimeResources out;
  if (!c.has_linux() || !c.linux().has_resources()) return out;
  const api::LinuxResources& r = c.linux().resources();
  if (r.has_cpu()) {
    const api::LinuxCPU& cpu = r.cpu();
    if (cpu.has_shares()) out.cpuShares = cpu.shares().value();
    if (cpu.has_quota()) out.cpuQuota = cpu.quota().value();
    if (cpu.has_period()) out.cpuPeriod = cpu.period().value();
  }
  if (r.has_memory() && r.memory().has_limit()) out.memoryLimit = r.memory().limit().value();
  return out;
}

constexpr RuntimeFieldNames kNriFields{"linux.resources.cpu.shares", "linux.resources.cpu.quota",
                                       "cpu.period"};

}  // namespace

Result<HookPod> hookPodFromNri(const api::PodSandbox& pod, const api::Container* container,
                               const Pod* known, std::vector<std::string>* refused) {
  RuntimePod rp;
  rp.uid = pod.uid();
  rp.ns = pod.namespace_();
  rp.name = pod.name();
  rp.labels = toMap(pod.labels());
  rp.annotations = toMap(pod.annotations());
  rp.cgroupParent = pod.has_linux() ? pod.linux().cgroup_parent() : "";
  if (container == nullptr) return hookPodFromRuntime(rp, nullptr, known);
  // A container the kubelet lists is seen through its spec: the runtime's
  // resources are not read, so nothing of them is refused.
  const bool listed = known != nullptr &&
                      std::any_of(known->containers.begin(), known->containers.end(),
                                  [&](const Container& k) { return k.name == container->name(); });
  std::vector<std::string> bad;
  HookContainer c = containerFromRuntime(container->name(), container->id(),
                                         listed ? RuntimeResources{} : resourcesFromNri(*container),
                                         kNriFields, bad);
  if (refused != nullptr) {
    for (std::string& b : bad) refused->push_back("pod " + rp.ns + "/" + rp.name + ": " + b);
  }
  return hookPodFromRuntime(rp, &c, known);
}

api::LinuxResources toLinuxResources(const HookIntent& intent) {
  api::LinuxResources r;
  if (intent.cpuShares) {
    r.mutable_cpu()->mutable_shares()->set_value(static_cast<uint64_t>(*intent.cpuShares));
  }
  if (intent.cfsQuota) r.mutable_cpu()->mutable_quota()->set_value(*intent.cfsQuota);
  if (intent.cpuset) r.mutable_cpu()->set_cpus(*intent.cpuset);
  if (intent.memoryLimit) r.mutable_memory()->mutable_limit()->set_value(*intent.memoryLimit);
  if (intent.rdtClass) r.mutable_rdt_class()->set_value(*intent.rdtClass);
  for (const auto& [file, value] : intent.unified) (*r.mutable_unified())[file] = value;
  return r;
}

NriHooks::NriHooks(const HookStateStore& store, HookRecorder* recorder, FailurePolicy policy,
                   HookDecisions* decisions, const Clock* clock)
    : store_(&store), runner_(recorder, policy, HookPath::kNri, decisions, clock) {}

Result<HookIntent> NriHooks::run(const HookState& state, const api::PodSandbox& nriPod,
                                 const api::Container* nriContainer, HookStage stage,
                                 bool failFast) {
  std::vector<std::string> refused;
  auto pod = hookPodFromNri(nriPod, nriContainer, state.known(nriPod.uid()), &refused);
  // The runtime's own values, refused: counted and logged, never a failed call
  // (the hooks go on without them, whatever the failure policy).
  for (const std::string& r : refused) runner_.logError(r);
  std::optional<std::string_view> container;
  if (nriContainer != nullptr) container = nriContainer->name();
  return runner_.decide(state, pod, container, stage, failFast);
}

Result<int32_t> NriHooks::configure(const api::ConfigureRequest& /*req*/) {
  return kKoordletEvents;
}

Result<api::SynchronizeResponse> NriHooks::synchronize(const api::SynchronizeRequest& /*req*/) {
  // Running containers are the reconciler's: it repairs them within one interval.
  return api::SynchronizeResponse{};
}

Result<api::CreateContainerResponse> NriHooks::createContainer(
    const api::CreateContainerRequest& req) {
  api::CreateContainerResponse resp;
  auto state = store_->current();
  if (!state) return resp;  // nothing published yet: the reconciler catches up
  auto intent = run(*state, req.pod(), &req.container(), HookStage::kPreCreateContainer, true);
  if (!intent) return intent.error();
  HookIntent resources = *intent;
  resources.env.clear();
  resources.oomScoreAdj.reset();
  if (!resources.empty()) {
    *resp.mutable_adjust()->mutable_linux()->mutable_resources() = toLinuxResources(resources);
  }
  // OOMScoreAdj: the runtime starts the container's process with it.
  if (intent->oomScoreAdj) {
    resp.mutable_adjust()->mutable_linux()->mutable_oom_score_adj()->set_value(
        *intent->oomScoreAdj);
  }
  // NRI adds or replaces each variable named (GPUEnvInject); the others stay.
  for (const auto& [key, value] : intent->env) {
    api::KeyValue* kv = resp.mutable_adjust()->add_env();
    kv->set_key(key);
    kv->set_value(value);
  }
  KLOG_V(4) << "NRI CreateContainer " << req.pod().namespace_() << "/" << req.pod().name() << " "
            << req.container().name() << ": adjust {" << resp.adjust().ShortDebugString() << "}";
  return resp;
}

Result<api::UpdateContainerResponse> NriHooks::updateContainer(
    const api::UpdateContainerRequest& req) {
  api::UpdateContainerResponse resp;
  auto state = store_->current();
  if (!state) return resp;
  // The resources CRI asks for now, not the ones the container was created with.
  api::Container container = req.container();
  if (req.has_linux_resources()) {
    *container.mutable_linux()->mutable_resources() = req.linux_resources();
  }
  auto intent = run(*state, req.pod(), &container, HookStage::kPreUpdateContainerResources, true);
  if (!intent) return intent.error();
  if (!intent->empty()) {
    api::ContainerUpdate* update = resp.add_update();
    update->set_container_id(req.container().id());
    *update->mutable_linux()->mutable_resources() = toLinuxResources(*intent);
  }
  return resp;
}

Result<api::StopContainerResponse> NriHooks::stopContainer(
    const api::StopContainerRequest& /*req*/) {
  return api::StopContainerResponse{};
}

Status NriHooks::stateChange(const api::StateChangeEvent& event) {
  auto state = store_->current();
  if (!state) return Ok{};
  // Pod-level values are computed (timed, errors logged) and handed to the agent's
  // loop, which writes them (the runner's sandbox sink): this handler never touches
  // a file. Errors never fail these events.
  if (event.event() == api::RUN_POD_SANDBOX) {
    (void)run(*state, event.pod(), nullptr, HookStage::kPreRunPodSandbox, false);
  } else if (event.event() == api::REMOVE_POD_SANDBOX) {
    (void)run(*state, event.pod(), nullptr, HookStage::kPreRemoveRunPodSandbox, false);
  }
  return Ok{};
}

}  // namespace koord::nri
