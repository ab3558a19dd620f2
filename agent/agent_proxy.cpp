// The agent's side of koord-runtime-proxy (--enable-runtime-hook-server, on by
// default as koordlet always serves it): the gRPC hook server on gRPC's own
// threads, answering from the HookState this loop publishes, and koordlet.json in
// --runtime-hooks-config-path for the proxy to find it.
#include <sstream>
#include <vector>

#include "agent/agent.h"
#include "runtimeproxy/registration.h"

namespace koord {

namespace {

std::vector<HookName> enabledHooks(const HookGates& g) {
  std::vector<HookName> out;
  if (g.batchResource) out.push_back(HookName::kBatchResource);
  if (g.cpusetAllocator) out.push_back(HookName::kCpusetAllocator);
  if (g.resctrl) out.push_back(HookName::kResctrl);
  if (g.cpuBurst) out.push_back(HookName::kCpuBurst);
  if (g.memoryQos) out.push_back(HookName::kMemoryQos);
  return out;
}

std::vector<HookStage> disabledStages(const std::vector<std::string>& names) {
  std::vector<HookStage> out;
  for (const std::string& n : names) {
    if (auto s = parseHookStage(n)) out.push_back(*s);  // validated by the flag
  }
  return out;
}

}  // namespace

void Agent::startHookServer() {
  if (!opts_.enableRuntimeHookServer) {
    KLOG_INFO << "runtime proxy hook server disabled (--enable-runtime-hook-server=false)";
    registration_ = "not written (server disabled)";
    return;
  }
  publishHookState();
  FailurePolicy policy = FailurePolicy::kIgnore;
  if (auto p = parseFailurePolicy(opts_.runtimeHooksPluginFailurePolicy)) policy = *p;
  proxyHooks_ = std::make_unique<runtimeproxy::ProxyHooks>(hookState_, hookRecorder_.get(), policy,
                                                           &hookDecisions_);
  runtimeproxy::HookServerConfig c;
  c.network = opts_.runtimeHooksNetwork;
  c.address = opts_.runtimeHooksAddr;
  hookServer_ = std::make_unique<runtimeproxy::HookServer>(c, *proxyHooks_);
  if (Status s = hookServer_->start(); !s) {
    // Nodes without the proxy lose nothing: NRI and the reconciler go on.
    KLOG_WARNING << "runtime proxy hook server not serving: " << s.error().message
                 << " (--runtime-hooks-network / --runtime-hooks-addr); NRI and the reconciler "
                    "go on without it";
    registration_ = "not written (server not serving)";
    recordHookServer();
    return;
  }
  KLOG_INFO << "runtime proxy hook server serving on " << hookServer_->status().endpoint
            << ", plugin failure policy " << opts_.runtimeHooksPluginFailurePolicy;
  registerHookServer();
  recordHookServer();
}

void Agent::registerHookServer() {
  const auto stages = runtimeproxy::registeredStages(
      enabledHooks(hookGates()), disabledStages(opts_.runtimeHooksDisableStages));
  const std::string content = runtimeproxy::registrationJson(
      opts_.runtimeHooksHostEndpoint, opts_.runtimeHooksFailurePolicy, stages);
  const std::string path = opts_.runtimeHooksConfigPath + "/" + runtimeproxy::kRegistrationFile;
  if (opts_.dryRun) {
    // A dry run changes nothing the node's runtime does: the proxy is not told.
    registration_ = "not written (dry run): " + path;
    KLOG_INFO << "dry-run: not registering with koord-runtime-proxy (" << path << " would hold "
              << content.size() << " bytes)";
    return;
  }
  auto wrote = runtimeproxy::writeRegistration(opts_.runtimeHooksConfigPath, content);
  if (!wrote) {
    registration_ = "failed: " + wrote.error().message;
    KLOG_WARNING << "runtime proxy registration not written: " << wrote.error().message
                 << " (--runtime-hooks-config-path); the proxy will not call this agent";
    return;
  }
  registration_ = std::string(*wrote ? "written: " : "kept (unchanged): ") + path;
  std::string list;
  for (HookStage s : stages) list += std::string(list.empty() ? "" : ",") + toString(s);
  KLOG_INFO << "registered with koord-runtime-proxy in " << path << " (remote-endpoint "
            << opts_.runtimeHooksHostEndpoint << ", failure-policy "
            << opts_.runtimeHooksFailurePolicy << ", stages " << (list.empty() ? "none" : list)
            << ")";
}

void Agent::recordHookServer() {
  std::vector<Exporter::HookServerCount> counts;
  runtimeproxy::HookServerStatus st;
  if (hookServer_) st = hookServer_->status();
  for (int r = 0; r < runtimeproxy::kRpcCount; ++r) {
    for (int o = 0; o < runtimeproxy::kOutcomeCount; ++o) {
      counts.push_back({runtimeproxy::rpcName(static_cast<runtimeproxy::Rpc>(r)),
                        runtimeproxy::toString(static_cast<runtimeproxy::Outcome>(o)),
                        st.calls[static_cast<size_t>(r)][static_cast<size_t>(o)]});
    }
  }
  exporter_.recordHookServer(opts_.enableRuntimeHookServer, st.serving, counts);
}

std::string Agent::hookServerSummary() const {
  if (!opts_.enableRuntimeHookServer) return "disabled";
  if (!hookServer_) return "not started";
  const runtimeproxy::HookServerStatus st = hookServer_->status();
  std::ostringstream out;
  if (st.serving) {
    out << "serving on " << st.endpoint << ", " << st.total() << " calls answered (" << st.failed()
        << " not OK)";
  } else {
    out << "not serving (" << st.lastError << ")";
  }
  out << "; registration " << registration_;
  return out.str();
}

nlohmann::json Agent::hookServerJson() const {
  nlohmann::json j = {{"enabled", opts_.enableRuntimeHookServer},
                      {"network", opts_.runtimeHooksNetwork},
                      {"address", opts_.runtimeHooksAddr},
                      {"hostEndpoint", opts_.runtimeHooksHostEndpoint},
                      {"failurePolicy", opts_.runtimeHooksFailurePolicy},
                      {"pluginFailurePolicy", opts_.runtimeHooksPluginFailurePolicy},
                      {"configPath", opts_.runtimeHooksConfigPath},
                      {"registration", registration_},
                      {"sharedDecisions", proxyHooks_ ? proxyHooks_->sharedDecisions() : 0},
                      {"hookErrors", proxyHooks_ ? proxyHooks_->hookErrors() : 0}};
  std::vector<std::string> stages;
  for (HookStage s : runtimeproxy::registeredStages(
           enabledHooks(hookGates()), disabledStages(opts_.runtimeHooksDisableStages))) {
    stages.emplace_back(toString(s));
  }
  j["stages"] = stages;
  runtimeproxy::HookServerStatus st;
  if (hookServer_) st = hookServer_->status();
  j["serving"] = st.serving;
  j["endpoint"] = st.endpoint;
  j["lastError"] = st.lastError;
  j["callsAnswered"] = st.total();
  j["callsNotOk"] = st.failed();
  nlohmann::json calls = nlohmann::json::object();
  for (int r = 0; r < runtimeproxy::kRpcCount; ++r) {
    for (int o = 0; o < runtimeproxy::kOutcomeCount; ++o) {
      const uint64_t n = st.calls[static_cast<size_t>(r)][static_cast<size_t>(o)];
      if (n == 0) continue;
      calls[runtimeproxy::rpcName(static_cast<runtimeproxy::Rpc>(r))]
           [runtimeproxy::toString(static_cast<runtimeproxy::Outcome>(o))] = n;
    }
  }
  j["calls"] = std::move(calls);
  return j;
}

}  // namespace koord
