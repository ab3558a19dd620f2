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
                                                           sharedDecisions(), clock_);
  proxyHooks_->setSandboxSink(sandboxSink());
  runtimeproxy::HookServerConfig c;
  c.network = opts_.runtimeHooksNetwork;
  c.address = opts_.runtimeHooksAddr;
  hookServer_ = std::make_unique<runtimeproxy::HookServer>(c, *proxyHooks_);
  if (c.network != "unix") {
    // The proxy dials remote-endpoint as a unix socket only.
    KLOG_WARNING << "runtime proxy hook server on " << c.network << " " << c.address
                 << ": koord-runtime-proxy dials only unix sockets (remote-endpoint "
                 << opts_.runtimeHooksHostEndpoint << " in koordlet.json)";
  }
  serveHooks();
}

void Agent::serveHooks() {
  if (stopped_ || !hookServer_) return;
  if (Status s = hookServer_->start(); !s) {
    // Nodes without the proxy lose nothing: NRI and the reconciler go on. Said once
    // per streak; retried (the path may be a socket another agent still serves
    // while it terminates).
    if (hookServerFailures_++ == 0) {
      KLOG_WARNING << "runtime proxy hook server not serving: " << s.error().message
                   << " (--runtime-hooks-network / --runtime-hooks-addr); retrying every "
                   << kHookServerRetry.count() << " s; NRI and the reconciler go on without it";
    }
    registration_ = "not written (server not serving)";
    recordHookServer();
    hookServerTimer_.expires_after(kHookServerRetry);
    hookServerTimer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) serveHooks();
    });
    return;
  }
  KLOG_INFO << "runtime proxy hook server serving on " << hookServer_->status().endpoint
            << ", plugin failure policy " << opts_.runtimeHooksPluginFailurePolicy
            << (hookServerFailures_ > 0
                    ? " (after " + std::to_string(hookServerFailures_) + " failed tries)"
                    : "");
  hookServerFailures_ = 0;
  registerHookServer();
  recordHookServer();
}

void Agent::registerHookServer() {
  const auto stages = runtimeproxy::registeredStages(
      enabledHooks(hookGates()), disabledStages(opts_.runtimeHooksDisableStages));
  const std::string content = runtimeproxy::registrationJson(
      opts_.runtimeHooksHostEndpoint, opts_.runtimeHooksFailurePolicy, stages);
  const std::string path = runtimeproxy::registrationPath(opts_.runtimeHooksConfigPath);
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
  for (HookStage stage : runtimeproxy::kRpcStages) {
    for (int o = 0; o < runtimeproxy::kOutcomeCount; ++o) {
      const auto outcome = static_cast<runtimeproxy::Outcome>(o);
      counts.push_back({runtimeproxy::rpcName(stage), runtimeproxy::toString(outcome),
                        st.count(stage, outcome)});
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
  j["callsOverDeadline"] = st.overDeadline;
  j["deadlineMs"] = runtimeproxy::HookServerConfig{}.deadline.count();
  j["sharesDecisionsWithNri"] = opts_.enableNriRuntimeHook;
  nlohmann::json calls = nlohmann::json::object();
  for (HookStage stage : runtimeproxy::kRpcStages) {
    for (int o = 0; o < runtimeproxy::kOutcomeCount; ++o) {
      const auto outcome = static_cast<runtimeproxy::Outcome>(o);
      if (const uint64_t n = st.count(stage, outcome); n > 0) {
        calls[runtimeproxy::rpcName(stage)][runtimeproxy::toString(outcome)] = n;
      }
    }
  }
  j["calls"] = std::move(calls);
  return j;
}

}  // namespace koord
