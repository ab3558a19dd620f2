// The agent's evictions: the eviction strategies (qos/memory_evict.h,
// qos/cpu_evict.h) decide on the QoS manager's schedule; their requests go to the
// PodEvictor (kube/pod_evictor.h), which evicts through the API server's Eviction
// API, never by stopping containers. Without an API server eviction is off (said
// once, in /readyz and koordlet_eviction_enabled); with --dry-run the decisions are
// logged and counted (result dry_run), and nothing is sent.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "base/time_format.h"
#include "qos/cpu_evict.h"
#include "qos/memory_evict.h"

namespace koord {

namespace {

double unixNow(const Clock& clock) {
  return std::chrono::duration<double>(clock.wallNow().time_since_epoch()).count();
}

}  // namespace

bool Agent::evictionGates() const {
  const auto& g = opts_.featureGates;
  const bool memory = (g.enabled("BEMemoryEvict") || g.enabled("MemoryEvict") ||
                       g.enabled("MemoryAllocatableEvict")) &&
                      opts_.memoryEvictIntervalSeconds > 0;
  const bool cpu =
      (g.enabled("BECPUEvict") || g.enabled("CPUEvict") || g.enabled("CPUAllocatableEvict")) &&
      opts_.cpuEvictIntervalSeconds > 0;
  return memory || cpu;
}

// At start, before the cgroup layout is known: whether eviction can run at all, said
// once (and in /readyz, /config and koordlet_eviction_enabled from then on).
void Agent::decideEviction() {
  if (!evictionGates()) {
    evictionOff_ =
        "no eviction gate on (BEMemoryEvict, MemoryAllocatableEvict, MemoryEvict, BECPUEvict, "
        "CPUAllocatableEvict, CPUEvict)";
  } else if (!cluster_) {
    // koordlet would stop containers through CRI; this agent evicts only through the
    // API, so with no API server there is no way to evict at all.
    evictionOff_ = "no API server: eviction needs the Eviction API";
    KLOG_WARNING << "eviction gates are on but there is no API server (standalone): eviction is "
                    "off; the eviction strategies do not run";
  } else {
    evictionOff_.clear();
    if (!opts_.onlyEvictByApi) {
      KLOG_INFO << "evicting through the Eviction API (koordlet with --only-evict-by-api=false "
                   "would stop the containers through CRI instead; the kubelet restarts them)";
    }
  }
  exporter_.setEvictionEnabled(evictionOff_.empty());
}

// With the QoS manager: the eviction strategies and the evictor, when eviction is on.
void Agent::startEviction() {
  if (!evictionOff_.empty() || !cluster_) return;
  const auto& g = opts_.featureGates;
  PodEvictorConfig pc;
  pc.nodeName = opts_.nodeName;
  if (opts_.evictionGracePeriodSeconds >= 0)
    pc.gracePeriodSeconds = opts_.evictionGracePeriodSeconds;
  evictor_ = std::make_unique<PodEvictor>(cluster_->client(), evictionLedger_, *clock_, pc);
  evictor_->onResult([this](const EvictionResult& r) { onEvictionResult(r); });

  qos_->add(std::make_unique<MemoryEvictStrategy>(
      std::chrono::seconds(opts_.memoryEvictIntervalSeconds),
      MemoryEvictGates{g.enabled("BEMemoryEvict"), g.enabled("MemoryEvict"),
                       g.enabled("MemoryAllocatableEvict")},
      std::chrono::seconds(opts_.memoryEvictCoolTimeSeconds)));
  qos_->add(std::make_unique<CpuEvictStrategy>(
      std::chrono::seconds(opts_.cpuEvictIntervalSeconds),
      CpuEvictGates{g.enabled("BECPUEvict"), g.enabled("CPUEvict"),
                    g.enabled("CPUAllocatableEvict")},
      std::chrono::seconds(opts_.cpuEvictCoolTimeSeconds), clock_->now()));
  KLOG_INFO << "eviction: memory every " << opts_.memoryEvictIntervalSeconds << "s (cool-down "
            << opts_.memoryEvictCoolTimeSeconds << "s), CPU every " << opts_.cpuEvictIntervalSeconds
            << "s (cool-down " << opts_.cpuEvictCoolTimeSeconds << "s), grace period "
            << (pc.gracePeriodSeconds ? std::to_string(*pc.gracePeriodSeconds) + "s"
                                      : std::string("the pod's own"))
            << (opts_.dryRun ? ", dry-run: decisions logged, nothing evicted" : "");
}

// What the QoS manager needs of the Node for the evictions, before each round.
void Agent::updateEvictionFacts() {
  if (!qos_) return;
  NodeFacts& facts = qos_->mutableNode();
  facts.collectInterval = opts_.collectResUsedInterval;
  if (nodeInfo_) {
    facts.capacityMemoryBytes = nodeInfo_->capacity.memoryBytes;
    facts.capacityCpuMilli = nodeInfo_->capacity.cpuMilli;
    facts.batchCpuAllocatableMilli = nodeInfo_->allocatable.batchCpuMilli;
    facts.batchMemoryAllocatableBytes = nodeInfo_->allocatable.batchMemoryBytes;
    facts.midCpuAllocatableMilli = nodeInfo_->allocatable.midCpuMilli;
    facts.midMemoryAllocatableBytes = nodeInfo_->allocatable.midMemoryBytes;
  }
  // Per-pod state goes with the pod (an eviction still in flight waits for its answer).
  const auto& pods = informer_.pods();
  evictionLedger_.retain([&](std::string_view uid) {
    for (const Pod& p : pods) {
      if (p.uid == uid) return true;
    }
    return false;
  });
  exporter_.expireEvictionDetails(unixNow(*clock_));
}

// Each feature's last decision, for /config; a decision that needs the Node's data
// it lacks is said once per streak (the features do nothing meanwhile).
void Agent::recordEvictionDecisions(const EvictRoundReport& report) {
  for (const EvictFeatureReport& f : report.features) {
    evictionDecisions_[f.feature] = f.decision;
    const std::string key = "eviction input " + f.feature;
    if (f.decision.rfind("no Node capacity", 0) == 0 ||
        f.decision.rfind("no batch-cpu allocatable", 0) == 0) {
      failures_.failure(
          key, Severity::kWarning,
          f.feature + " does nothing: " + f.decision + " (Node " + opts_.nodeName + ")");
    } else {
      failures_.success(key);
    }
  }
}

void Agent::handleEvictions(const QosRound& round) {
  if (const auto* r = round.result<MemoryEvictResult>(MemoryEvictStrategy::kName)) {
    recordEvictionDecisions(*r);
  }
  if (const auto* r = round.result<CpuEvictResult>(CpuEvictStrategy::kName)) {
    recordEvictionDecisions(*r);
  }
  for (const EvictionRequest& r : round.evictions) {
    if (opts_.dryRun) {
      if (evictionLedger_.pending(r.uid, clock_->now())) continue;
      // Marked as evicted so the decision is logged once, not every round.
      evictionLedger_.evicted(r.uid, clock_->now());
      KLOG_INFO << "dry-run: would evict pod " << r.ns << "/" << r.name << " (" << r.uid
                << "): " << r.message;
      exporter_.recordEviction(r.ns, r.name, r.feature, "dry_run", unixNow(*clock_));
      auditEviction(r, "dry_run", "decided, not sent (--dry-run)");
      continue;
    }
    if (!evictor_) continue;
    switch (evictor_->submit(r)) {
      case SubmitResult::kQueueFull:
        exporter_.recordEviction(r.ns, r.name, r.feature, "dropped", unixNow(*clock_));
        auditEviction(r, "dropped", "the eviction queue is full");
        failures_.failure("eviction queue", Severity::kWarning,
                          "eviction of " + r.ns + "/" + r.name +
                              " dropped: the eviction queue is full (the API server is slow)");
        break;
      case SubmitResult::kInvalid:
        // A name the API would refuse in a path: the pod list is at fault, not the API.
        // Refused for the longest back-off, so the walk takes the next victim instead
        // of counting this one as released every round.
        evictionLedger_.refused(r.uid, clock_->now(),
                                std::chrono::seconds(EvictionLedger::kRefusedMax));
        exporter_.recordEviction(r.ns, r.name, r.feature, "invalid", unixNow(*clock_));
        failures_.failure("eviction invalid", Severity::kWarning,
                          PodEvictor::check(r).error().message);
        break;
      default:  // accepted; or pending / blocked / stopped, which need nothing
        break;
    }
  }
}

void Agent::onEvictionResult(const EvictionResult& r) {
  const EvictionRequest& q = r.request;
  const std::string pod = q.ns + "/" + q.name;
  const std::string outcome = toString(r.outcome);
  exporter_.recordEviction(q.ns, q.name, q.feature, outcome, unixNow(*clock_));
  auditEviction(
      q, outcome,
      (r.httpStatus ? "HTTP " + std::to_string(r.httpStatus) + ": " : std::string()) + r.message);
  // Each pod's refusals and failures are a streak of their own: logged once, then
  // counted, and closed when that pod is evicted or found gone (the FailureLog bounds
  // and expires the keys of pods that went away).
  const std::string refusedKey = "eviction refused " + pod;
  const std::string failingKey = "eviction failing " + pod;
  switch (r.outcome) {
    case EvictionOutcome::kEvicted:
      KLOG_INFO << "evicted pod " << pod << " (" << q.uid << "): " << q.message << "; answered in "
                << std::chrono::duration<double, std::milli>(r.latency).count() << " ms";
      failures_.success(refusedKey);
      failures_.success(failingKey);
      break;
    case EvictionOutcome::kNotFound:
    case EvictionOutcome::kConflict:
      // The pod (this UID) is gone already: nothing to evict, nothing to retry.
      failures_.success(refusedKey);
      failures_.success(failingKey);
      failures_.failure("eviction gone " + pod, Severity::kInfo,
                        "eviction of " + pod + " not needed: " + r.message);
      break;
    case EvictionOutcome::kBudget:
      failures_.failure(refusedKey, Severity::kWarning,
                        "eviction of " + pod + " refused (" + outcome + "): " + r.message +
                            "; the pod is skipped for a back-off, the next victim is tried");
      break;
    case EvictionOutcome::kThrottled:
      // The ledger's "failed" (kube/eviction_ledger.h): asking another pod would be
      // throttled the same way.
      failures_.failure(failingKey, Severity::kWarning,
                        "eviction of " + pod + " throttled by the API server (" + outcome +
                            "): " + r.message +
                            "; the pod stays counted as releasing (no other victim is asked "
                            "for its share) and is asked again after a back-off");
      break;
    default:
      failures_.failure(failingKey, Severity::kWarning,
                        "eviction of " + pod + " failed (" + outcome + "): " + r.message);
      break;
  }
}

// One audit line per eviction decided or answered, beside the executor's cgroup
// writes: what koordlet's audit log records of an eviction, in our JSON lines.
void Agent::auditEviction(const EvictionRequest& r, const std::string& result,
                          const std::string& detail) {
  if (!audit_) return;
  const nlohmann::json line = {{"ts", rfc3339Millis(clock_->wallNow())},
                               {"evict", r.ns + "/" + r.name},
                               {"uid", r.uid},
                               {"feature", r.feature},
                               {"reason", r.message},
                               {"result", result},
                               {"detail", detail},
                               {"dryRun", opts_.dryRun}};
  const Status written =
      audit_->append(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  const std::string key = "eviction audit";
  if (written) {
    failures_.success(key);
  } else {
    failures_.failure(key, Severity::kWarning, written.error().message);
  }
}

std::string Agent::evictionSummary() const {
  if (!evictionOff_.empty()) return "off (" + evictionOff_ + ")";
  if (!qos_) return "waiting for the cgroup layout";
  std::string out = opts_.dryRun ? "on, dry-run" : "on";
  if (!config_.current().threshold.enable) {
    out += ", idle (NodeSLO resourceUsedThresholdWithBE.enable is false)";
  }
  if (evictor_) {
    uint64_t evicted = 0, refused = 0;
    for (const auto& [outcome, n] : evictor_->counts()) {
      if (outcome == EvictionOutcome::kEvicted) {
        evicted += n;
      } else if (outcome != EvictionOutcome::kNotFound && outcome != EvictionOutcome::kConflict) {
        refused += n;
      }
    }
    out += ", " + std::to_string(evicted) + " evicted, " + std::to_string(refused) +
           " refused or failed, " + std::to_string(evictor_->inFlight()) + " in flight";
  }
  return out;
}

}  // namespace koord
