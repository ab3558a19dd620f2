// What koord-runtime-proxy sends the hook server: the first byte picks the RPC, the
// rest is its protobuf request (ContainerResourceHookRequest, or PodSandboxHookRequest
// for the sandbox RPCs), answered by the agent's own ProxyHooks over a published state
// with every hook on. An answer must change nothing the proxy would otherwise keep:
// the request's cpuset_mems and oom_score_adj, no envs, annotations or cgroup parent;
// an error must be InvalidArgument (with Ignore, no hook error fails a call).
#include <memory>

#include "fuzz/fuzz_hook_state.h"
#include "fuzz/fuzz_support.h"
#include "runtimeproxy/hook_server.h"
#include "runtimeproxy/proxy_hooks.h"

namespace kp = koord::runtimeproxy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  if (size == 0) return 0;
  const koord::HookStage stage = kp::kRpcStages[data[0] % std::size(kp::kRpcStages)];
  const std::string_view body = koord::fuzz::text(data + 1, size - 1);
  kp::ProxyHooks hooks(koord::fuzz::hookStore(), nullptr, koord::FailurePolicy::kIgnore);
  if (stage == koord::HookStage::kPreRunPodSandbox ||
      stage == koord::HookStage::kPostStopPodSandbox) {
    kp::api::PodSandboxHookRequest req;
    if (!req.ParseFromArray(body.data(), static_cast<int>(body.size()))) return 0;
    auto r = hooks.podSandbox(stage, req);
    if (!r.ok() && r.error->code != kp::CallCode::kInvalidArgument) __builtin_trap();
    if (r.ok() && r.value->ByteSizeLong() != 0) __builtin_trap();  // pod values are not sent
    return 0;
  }
  kp::api::ContainerResourceHookRequest req;
  if (!req.ParseFromArray(body.data(), static_cast<int>(body.size()))) return 0;
  auto r = hooks.container(stage, req);
  if (!r.ok()) {
    if (r.error->code != kp::CallCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  const kp::api::ContainerResourceHookResponse& resp = *r.value;
  if (!resp.container_envs().empty() || !resp.container_annotations().empty() ||
      !resp.pod_cgroup_parent().empty()) {
    __builtin_trap();
  }
  if (resp.has_container_resources()) {
    const auto& out = resp.container_resources();
    const auto& in = req.container_resources();
    if (out.cpuset_mems() != in.cpuset_mems() || out.oom_score_adj() != in.oom_score_adj()) {
      __builtin_trap();
    }
    if (out.memory_limit_in_bytes() < 0 || out.cpu_shares() < 0 || out.cpu_quota() < -1) {
      __builtin_trap();
    }
  }
  // The answer must encode: the proxy decodes it.
  std::string wire;
  if (!resp.SerializeToString(&wire)) __builtin_trap();
  return 0;
}
