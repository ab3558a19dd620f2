// The agent's NRI side (--enable-nri-runtime-hook): the plugin client on its own
// thread, the hooks it answers with, and the HookState this loop publishes for them.
#include "agent/agent.h"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <unordered_set>

#include <boost/asio/post.hpp>

#include "base/read_file.h"
#include "cgroupfs/cgroup_mounts.h"
#include "metrics/proc_parsers.h"
#include "qos/cpu_burst.h"
#include "qos/cpu_suppress.h"
#include "qos/memory_qos.h"
#include "version.h"

namespace koord {

namespace {

// The exporter's histogram behind the hooks' timing interface.
class ExporterHookRecorder final : public HookRecorder {
 public:
  explicit ExporterHookRecorder(Exporter& e) : exporter_(&e) {}
  void record(std::string_view hook, std::string_view stage, bool ok, double millis) override {
    exporter_->recordRuntimeHook(hook, stage, ok, millis);
  }

 private:
  Exporter* exporter_;
};

}  // namespace

void Agent::startNri() {
  // The hooks' timing, for this path and the runtime proxy's hook server.
  hookRecorder_ = std::make_unique<ExporterHookRecorder>(exporter_);
  if (!opts_.enableNriRuntimeHook) {
    KLOG_INFO << "NRI plugin disabled (--enable-nri-runtime-hook=false)";
    return;
  }
  publishHookState();
  FailurePolicy policy = FailurePolicy::kIgnore;
  if (auto p = parseFailurePolicy(opts_.runtimeHooksPluginFailurePolicy)) policy = *p;
  nriHooks_ =
      std::make_unique<nri::NriHooks>(hookState_, hookRecorder_.get(), policy, sharedDecisions());
  nriHooks_->setSandboxSink(sandboxSink());

  nri::NriClientConfig c;
  // Joined to --var-run-root-dir whatever its form, as koordlet does (the host's
  // /var/run is mounted at the var-run root in the DaemonSet).
  c.socketPath = opts_.paths.varRun(opts_.runtimeHooksNriSocketPath);
  c.launchedFd = opts_.nriLaunchedFd;
  c.session.pluginName = opts_.runtimeHooksNriPluginName;
  c.session.pluginIndex = opts_.runtimeHooksNriPluginIndex;
  c.backoff.initial = opts_.runtimeHooksNriBackoffDuration;
  c.backoff.factor = opts_.runtimeHooksNriBackoffFactor;
  c.backoff.cap = opts_.runtimeHooksNriBackoffCap;
  c.healthyAfter = opts_.runtimeHooksNriConnectTimeout;
  nri_ = std::make_unique<nri::NriClient>(c, *nriHooks_);
  if (opts_.nriLaunchedFd) {
    // Launched by the runtime: when it closes our socket there is nothing to
    // reconnect to (it will start a new copy), so the agent exits as the Go stub does.
    nri_->onLaunchedEof([this] {
      boost::asio::post(io_, [this] {
        KLOG_INFO << "NRI: the runtime closed the plugin socket (launched mode), shutting down";
        stop();
      });
    });
  }
  nri_->start();
  KLOG_INFO << "NRI plugin " << opts_.runtimeHooksNriPluginIndex << "-"
            << opts_.runtimeHooksNriPluginName << " "
            << (opts_.nriLaunchedFd
                    ? "on fd " + std::to_string(*opts_.nriLaunchedFd) + " (launched by the runtime)"
                    : "connecting to " + c.socketPath)
            << ", failure policy " << opts_.runtimeHooksPluginFailurePolicy;
  recordNri();
}

HookContext Agent::hookContext() const {
  if (paused_) {
    // `koordlet restore` paused us: containers start as the kubelet asked.
    HookContext ctx = baseHookContext(HookGates{}, config_.current(), sys_.pageSize, 0);
    ctx.batchResource = ctx.cpusetAllocator = ctx.cpuBurst = ctx.memoryQos = ctx.resctrl = false;
    ctx.disableUnsetCpuQuota = ctx.suppressCfsQuota = ctx.cpuNormalization = false;
    ctx.oomScoreAdj = false;
    // Which GPUs a container sees is not a QoS setting restore undoes: kept.
    ctx.gpuEnvInject = opts_.featureGates.enabled("GPUEnvInject");
    return ctx;
  }
  if (qos_) return koord::hookContext(hookGates(), config_.current(), qos_->node());
  // Before the cgroup layout is known the QoS manager does not exist; the hooks
  // still answer, from the same config (no unified v2 values, no resctrl class:
  // neither the cgroup version nor resctrl is known yet).
  HookContext ctx =
      baseHookContext(hookGates(), config_.current(), sys_.pageSize, opts_.nodeAllocatableMemory);
  ctx.cpusetRule = cpusetRule_;
  ctx.cpuNormalizationRatio = cpuNormalizationRatio_;
  ctx.cpuNormalization = opts_.featureGates.enabled("CPUNormalization");
  return ctx;
}

void Agent::publishHookState() {
  if (!hooksServed()) return;
  HookInputs in;
  in.podsVersion = podsVersion_;
  in.configGeneration = config_.generation();
  in.layoutKnown = layout_.has_value();
  in.resctrlReady = resctrl_ && resctrl_->status() == resctrl::ResctrlStatus::kReady;
  in.nodeAllocatableMemory = qos_ ? qos_->node().nodeAllocatableMemory : 0;
  in.cpusetRuleVersion = cpusetRuleVersion_;
  in.cpuNormalizationVersion = cpuNormalizationVersion_;
  in.paused = paused_;
  if (hookInputs_ && *hookInputs_ == in) return;  // nothing a hook reads changed
  hookInputs_ = in;
  if (qos_) qos_->setResctrlReady(in.resctrlReady);
  auto state = std::make_shared<HookState>();
  state->spec = config_.current();
  state->context = hookContext();
  for (const Pod& p : informer_.pods()) state->podsByUid.emplace(p.uid, p);
  hookState_.publish(std::move(state));
}

void Agent::recordNri() {
  if (!nri_) {
    exporter_.recordNri(false, "stopped", 0, 0, 0);
    exporter_.recordNriLimitCloses(0, 0, 0);
    return;
  }
  nri::NriStatus st = nri_->status();
  exporter_.recordNri(true, nri::toString(st.state), st.attempts, st.connects, st.disconnects);
  exporter_.recordNriLimitCloses(st.writeQueueOverflows, st.syncRefusals, st.protocolCloses);
  // OOMScoreAdj's adjustment needs NRI v0.7+ (containerd 1.7.26+, 2.x); an older runtime
  // drops the field without a word. Said once per such connection.
  if (st.state == nri::NriState::kConnected && opts_.featureGates.enabled("OOMScoreAdj")) {
    const bool ignores = st.requestTimeoutMs == 0;
    if (ignores && nriOomSaidFor_ != st.connects) {
      KLOG_WARNING << "OOMScoreAdj: " << st.runtimeName << " " << st.runtimeVersion
                   << " speaks NRI before v0.7, which ignores oom_score_adj in an adjustment: "
                      "a container starts with the kubelet's value and the reconciler sets "
                      "its processes after the kubelet lists it";
      nriOomSaidFor_ = st.connects;
    }
  }
}

std::string Agent::nriSummary() const {
  if (!opts_.enableNriRuntimeHook) return "disabled";
  if (!nri_) return "not started";
  nri::NriStatus st = nri_->status();
  std::ostringstream out;
  switch (st.state) {
    case nri::NriState::kConnected: {
      char events[16];
      std::snprintf(events, sizeof events, "0x%x", static_cast<unsigned>(st.events));
      out << "connected to " << (st.runtimeName.empty() ? "runtime" : st.runtimeName) << " "
          << st.runtimeVersion << " (NRI "
          << (st.runtimeNriVersion.empty() ? "before v0.12" : st.runtimeNriVersion) << "), events "
          << events;
      break;
    }
    case nri::NriState::kWaiting:
      out << "not connected (" << (st.lastError.empty() ? "no attempt yet" : st.lastError)
          << "), retrying in "
          << std::chrono::duration_cast<std::chrono::milliseconds>(st.nextRetryIn).count() << "ms";
      break;
    default:
      out << nri::toString(st.state)
          << (st.lastError.empty() ? "" : " (last error: " + st.lastError + ")");
  }
  out << "; " << st.perEventCalls << " per-event calls, " << st.stateChangeCalls << " StateChange; "
      << st.connects << " connects, " << st.disconnects << " disconnects";
  return out.str();
}

}  // namespace koord
