#include "nri/nri_hooks.h"

#include <bit>
#include <chrono>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/checked_int.h"
#include "base/log.h"

namespace koord::nri {
namespace {

constexpr const char* kQosLabel = "koordinator.sh/qosClass";

KoordQos koordQosOf(const std::map<std::string, std::string>& labels) {
  auto it = labels.find(kQosLabel);
  if (it == labels.end()) return KoordQos::kNone;
  return koordQosFromLabel(it->second);
}

std::map<std::string, std::string> toMap(const google::protobuf::Map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

// What the runtime tells of a container's resources, as requests and limits. A
// value whose conversion cannot be right (it overflows int64 in milli-cores, or a
// period past int64) is left unset and named in `refused`: the hooks then see no
// such request or limit, and nothing is derived from it.
HookContainer containerFromNri(const api::Container& c, std::vector<std::string>& refused) {
  HookContainer out;
  out.name = c.name();
  out.id = c.id();
  if (!c.has_linux() || !c.linux().has_resources()) return out;
  const api::LinuxResources& r = c.linux().resources();
  const std::string where = "container " + c.name() + ": linux.resources.";
  if (r.has_cpu()) {
    const api::LinuxCPU& cpu = r.cpu();
    if (cpu.has_shares()) {
      const uint64_t shares = cpu.shares().value();
      auto milli = shares <= static_cast<uint64_t>(INT64_MAX)
                       ? checkedMul(static_cast<int64_t>(shares), 1000)
                       : std::nullopt;
      if (milli) {
        out.requests.cpuMilli = *milli / 1024;
      } else {
        refused.push_back(where + "cpu.shares " + std::to_string(shares) +
                          " overflows milli-cores (cpu request not read)");
      }
    }
    if (cpu.has_quota() && cpu.has_period() && cpu.quota().value() > 0 &&
        cpu.period().value() > 0) {
      const int64_t quota = cpu.quota().value();
      const uint64_t period = cpu.period().value();
      auto scaled = checkedMul(quota, 1000);
      if (scaled && period <= static_cast<uint64_t>(INT64_MAX)) {
        out.limits.cpuMilli = *scaled / static_cast<int64_t>(period);
      } else {
        refused.push_back(where + "cpu.quota " + std::to_string(quota) + " / cpu.period " +
                          std::to_string(period) + " overflows milli-cores (cpu limit not read)");
      }
    }
  }
  if (r.has_memory() && r.memory().has_limit() && r.memory().limit().value() > 0) {
    out.limits.memoryBytes = r.memory().limit().value();
  }
  return out;
}

double millisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

void HookStateStore::publish(std::shared_ptr<HookState> state) {
  if (state) state->context.spec = &state->spec;
  std::shared_ptr<const HookState> frozen = std::move(state);
  std::lock_guard lock(mu_);
  state_.swap(frozen);
  // The old state is released outside the lock (when `frozen` goes out of scope
  // after the guard): a reader never waits for a pod map to be freed.
}

std::shared_ptr<const HookState> HookStateStore::current() const {
  std::lock_guard lock(mu_);
  return state_;
}

Result<FailurePolicy> parseFailurePolicy(std::string_view text) {
  if (text == "Ignore") return FailurePolicy::kIgnore;
  if (text == "Fail") return FailurePolicy::kFail;
  return makeError("failure policy \"" + std::string(text) + "\": expected Ignore or Fail");
}

KubeQos kubeQosFromCgroupParent(std::string_view parent) {
  if (parent.find("besteffort") != std::string_view::npos) return KubeQos::kBestEffort;
  if (parent.find("burstable") != std::string_view::npos) return KubeQos::kBurstable;
  return KubeQos::kGuaranteed;
}

Result<HookPod> hookPodFromNri(const api::PodSandbox& pod, const api::Container* container,
                               const Pod* known, std::vector<std::string>* refused) {
  HookPod out;
  if (known != nullptr) {
    auto fromKubelet = hookPodFromKubelet(*known);
    if (!fromKubelet) return fromKubelet.error();
    out = std::move(*fromKubelet);
  } else {
    out.uid = pod.uid();
    out.ns = pod.namespace_();
    out.name = pod.name();
    out.labels = toMap(pod.labels());
    out.annotations = toMap(pod.annotations());
    out.rawQos = koordQosOf(out.labels);
    out.kubeQos = kubeQosFromCgroupParent(pod.has_linux() ? pod.linux().cgroup_parent() : "");
  }
  if (container != nullptr) {
    bool found = false;
    for (HookContainer& c : out.containers) {
      if (c.name == container->name()) {
        c.id = container->id();  // the kubelet may not have seen the id yet
        found = true;
      }
    }
    if (!found) {
      std::vector<std::string> bad;
      out.containers.push_back(containerFromNri(*container, bad));
      for (std::string& b : bad) {
        if (refused != nullptr) refused->push_back("pod " + out.ns + "/" + out.name + ": " + b);
      }
    }
  }
  mergeExtendedResourceSpec(out);  // fills only what is missing: idempotent
  return out;
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

NriHooks::NriHooks(const HookStateStore& store, HookRecorder* recorder, FailurePolicy policy)
    : store_(&store), recorder_(recorder), policy_(policy) {}

void NriHooks::logError(const std::string& message) {
  const uint64_t n = hookErrors_.fetch_add(1, std::memory_order_relaxed) + 1;
  // Rate-limited without a clock: the 1st, 2nd, 4th, 8th, ... error is logged.
  if (std::has_single_bit(n)) {
    KLOG_WARNING << "runtime hook failed (" << n << " so far): " << message;
  }
}

Result<HookIntent> NriHooks::run(const HookState& state, const api::PodSandbox& nriPod,
                                 const api::Container* nriContainer,
                                 std::span<const HookName> hooks, const char* stage,
                                 bool failFast) {
  HookIntent intent;
  auto known = state.podsByUid.find(nriPod.uid());
  std::vector<std::string> refused;
  auto pod = hookPodFromNri(nriPod, nriContainer,
                            known == state.podsByUid.end() ? nullptr : &known->second, &refused);
  // The runtime's own values, refused: counted and logged, never a failed call
  // (the hooks go on without them, whatever the failure policy).
  for (const std::string& r : refused) logError(r);
  if (!pod) {
    logError(pod.error().message);
    if (failFast && policy_ == FailurePolicy::kFail) return pod.error();
    return intent;
  }
  if (skipHooks(*pod)) return intent;
  const HookContainer* container = nullptr;
  if (nriContainer != nullptr) {
    container = pod->container(nriContainer->name());
    if (container == nullptr) return intent;  // cannot happen: hookPodFromNri adds it
  }
  HookContext ctx = state.context;
  ctx.spec = &state.spec;
  for (HookName hook : hooks) {
    const auto start = std::chrono::steady_clock::now();
    Status s = runHook(hook, *pod, container, ctx, intent);
    if (recorder_ != nullptr) recorder_->record(toString(hook), stage, s.ok(), millisSince(start));
    if (s) continue;
    logError(s.error().message);
    if (failFast && policy_ == FailurePolicy::kFail) return s.error();
  }
  return intent;
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
  auto intent = run(*state, req.pod(), &req.container(), kAllHooks, "PreCreateContainer", true);
  if (!intent) return intent.error();
  if (!intent->empty()) {
    *resp.mutable_adjust()->mutable_linux()->mutable_resources() = toLinuxResources(*intent);
  }
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
  auto intent =
      run(*state, req.pod(), &container, kUpdateHooks, "PreUpdateContainerResources", true);
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
  // Pod-level values are computed (timed, errors logged) but written by the
  // reconciler: this handler never touches a file. Errors never fail these events.
  if (event.event() == api::RUN_POD_SANDBOX) {
    (void)run(*state, event.pod(), nullptr, kAllHooks, "PreRunPodSandbox", false);
  } else if (event.event() == api::REMOVE_POD_SANDBOX) {
    static constexpr HookName kRemove[] = {HookName::kResctrl};
    (void)run(*state, event.pod(), nullptr, kRemove, "PreRemoveRunPodSandbox", false);
  }
  return Ok{};
}

}  // namespace koord::nri
