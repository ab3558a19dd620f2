// Eviction victims and the shared walk (see the header). Facts from koordlet's
// qosmanager/plugins/util/evict.go and koordinator's apis/extension.
#include "qos/evict_victims.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace koord {
namespace {

// Go's strconv integer syntax: an optional sign, decimal digits, nothing else.
template <typename T>
std::optional<T> parseGoInt(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty() || s.front() == '+') return std::nullopt;
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

int32_t classDefault(PriorityClass c) {
  switch (c) {
    case PriorityClass::kProd:
      return 9500;
    case PriorityClass::kMid:
      return 7500;
    case PriorityClass::kBatch:
      return 5500;
    case PriorityClass::kFree:
      return 3500;
    case PriorityClass::kNone:
      return 0;
  }
  return 0;
}

// Saturating: amounts come from pod specs and samples.
void addSat(int64_t& sum, int64_t v) {
  if (v <= 0) return;
  if (__builtin_add_overflow(sum, v, &sum)) sum = std::numeric_limits<int64_t>::max();
}

}  // namespace

bool mayBeVictim(const Pod& pod) { return pod.active(); }

int64_t releaseAmount(const EvictVictim& v, ReleaseKind kind) {
  switch (kind) {
    case ReleaseKind::kUsed:
      return v.used;
    case ReleaseKind::kBatchCpuRequest:
      return v.request;
    case ReleaseKind::kBatchMemoryRequest:
      return v.batchMemoryRequest;
    case ReleaseKind::kMidCpuRequest:
      return v.midCpuRequest;
    case ReleaseKind::kMidMemoryRequest:
      return v.midMemoryRequest;
  }
  return 0;
}

void fillRequests(EvictVictim& v, const Pod& pod) {
  v.request = std::max<int64_t>(pod.batchCpuRequestMilli(), 0);
  switch (pod.priorityWithDefault()) {
    case PriorityClass::kBatch:
      v.batchMemoryRequest =
          std::max<int64_t>(pod.runningRequest(&ResourceList::batchMemoryBytes), 0);
      break;
    case PriorityClass::kMid:
      v.midCpuRequest = std::max<int64_t>(pod.runningRequest(&ResourceList::midCpuMilli), 0);
      v.midMemoryRequest = std::max<int64_t>(pod.runningRequest(&ResourceList::midMemoryBytes), 0);
      break;
    default:
      break;
  }
}

PolicyVerdict evictionPolicyAllows(const Pod& pod, std::string_view feature) {
  auto it = pod.annotations.find(kEvictionPolicyAnnotation);
  if (it == pod.annotations.end()) return {};
  auto policies = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  bool listOfStrings = policies.is_array();
  if (listOfStrings) {
    for (const auto& p : policies) listOfStrings = listOfStrings && p.is_string();
  }
  if (!listOfStrings) {
    return {false, "pod " + pod.ns + "/" + pod.name + ": annotation " + kEvictionPolicyAnnotation +
                       ": expected a JSON list of feature names, got " + it->second +
                       " (the pod is not evicted by any feature)"};
  }
  for (const auto& p : policies) {
    if (p.get<std::string>() == feature) return {};
  }
  return {false, ""};
}

int32_t priorityWithDefault(const Pod& pod) {
  if (pod.priority && *pod.priority != 0) return *pod.priority;
  return classDefault(pod.priorityWithDefault());
}

int32_t evictionPriority(const Pod& pod) {
  auto it = pod.annotations.find(kEvictionPriorityAnnotation);
  if (it == pod.annotations.end()) return 0;
  return parseGoInt<int32_t>(it->second).value_or(0);
}

int64_t labelPriority(const Pod& pod, int64_t fallback) {
  auto it = pod.labels.find(kPriorityLabel);
  if (it == pod.labels.end()) return fallback;
  return parseGoInt<int64_t>(it->second).value_or(fallback);
}

namespace {
// Both pods have a spec.priority and they differ: the lower goes first.
std::optional<bool> bySpecPriority(const EvictVictim& a, const EvictVictim& b) {
  if (a.pod->priority && b.pod->priority && *a.pod->priority != *b.pod->priority) {
    return *a.pod->priority < *b.pod->priority;
  }
  return std::nullopt;
}
}  // namespace

void sortBeByMemory(std::vector<EvictVictim>& victims) {
  std::stable_sort(victims.begin(), victims.end(), [](const EvictVictim& a, const EvictVictim& b) {
    if (auto p = bySpecPriority(a, b)) return *p;
    // koordlet tells "no usage" by a zero amount, so a sample of 0 counts as none.
    if (a.used != 0 && b.used != 0) return a.used > b.used;
    if (a.used == 0 && b.used == 0) return a.pod->name > b.pod->name;
    return b.used == 0;
  });
}

void sortBeByCpu(std::vector<EvictVictim>& victims) {
  auto ratio = [](const EvictVictim& v) {
    return v.request > 0 ? static_cast<double>(v.used) / static_cast<double>(v.request) : 0.0;
  };
  std::stable_sort(victims.begin(), victims.end(), [&](const EvictVictim& a, const EvictVictim& b) {
    if (auto p = bySpecPriority(a, b)) return *p;
    return ratio(a) > ratio(b);
  });
}

void sortByPriorityThenUsage(std::vector<EvictVictim>& victims) {
  std::stable_sort(victims.begin(), victims.end(), [](const EvictVictim& a, const EvictVictim& b) {
    if (a.evictionPriority != b.evictionPriority) return a.evictionPriority < b.evictionPriority;
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.labelPriority != b.labelPriority) return a.labelPriority < b.labelPriority;
    return a.used > b.used;
  });
}

std::vector<EvictVictim> priorityVictims(const QosSnapshot& snap, std::string_view feature,
                                         int64_t priorityThreshold,
                                         std::optional<Sample> PodView::*usage, double scale,
                                         std::chrono::nanoseconds maxAge,
                                         std::vector<std::string>& errors) {
  std::vector<EvictVictim> out;
  for (const PodView& view : snap.pods) {
    if (view.pod == nullptr || !mayBeVictim(*view.pod)) continue;
    const Pod& pod = *view.pod;
    PolicyVerdict verdict = evictionPolicyAllows(pod, feature);
    if (!verdict.error.empty() &&
        std::find(errors.begin(), errors.end(), verdict.error) == errors.end()) {
      errors.push_back(verdict.error);
    }
    if (!verdict.allowed) continue;
    int32_t priority = priorityWithDefault(pod);
    if (priority > priorityThreshold) continue;
    auto enabled = pod.labels.find(kEvictionEnabledLabel);
    if (enabled == pod.labels.end() || enabled->second != "true") continue;
    std::optional<double> used = freshValue(view.*usage, snap.at, maxAge);
    if (!used) continue;
    EvictVictim v;
    v.pod = &pod;
    fillRequests(v, pod);
    v.used = static_cast<int64_t>(*used * scale);
    v.hasSample = true;
    v.evictionPriority = evictionPriority(pod);
    v.priority = priority;
    v.labelPriority = labelPriority(pod, priority);
    out.push_back(v);
  }
  sortByPriorityThenUsage(out);
  return out;
}

EvictWalk walkEvictTasks(const std::vector<EvictTask>& tasks, const EvictionLedger* ledger,
                         Clock::Monotonic now) {
  EvictWalk walk;
  // The kinds some task of the round counts: evicting a pod releases each of them.
  std::set<ReleaseKind> kinds;
  for (const EvictTask& t : tasks) {
    if (t.toRelease > 0) kinds.insert(t.kind);
  }
  std::map<ReleaseKind, int64_t> released;
  std::set<std::string> taken;  // uids picked or counted this round
  auto count = [&](const EvictVictim& v) {
    for (ReleaseKind k : kinds) addSat(released[k], releaseAmount(v, k));
  };
  for (const EvictTask& task : tasks) {
    EvictTaskOutcome out;
    auto met = [&] { return released[task.kind] >= task.toRelease; };
    if (task.toRelease > 0 && !met()) {
      for (const EvictVictim& v : task.victims) {
        const Pod& pod = *v.pod;
        if (taken.count(pod.uid) != 0) continue;
        // Being deleted (after our eviction or another): it releases what it holds
        // once its grace period ends, and is never asked for.
        if (pod.terminating || (ledger != nullptr && ledger->pending(pod.uid, now))) {
          taken.insert(pod.uid);
          count(v);
          out.pending.push_back(pod.name);
          if (met()) break;
          continue;
        }
        if (ledger != nullptr && ledger->blocked(pod.uid, now)) {
          out.blocked.push_back(pod.name);
          continue;
        }
        taken.insert(pod.uid);
        walk.requests.push_back(EvictionRequest{pod.uid, pod.ns, pod.name, task.feature,
                                                evictMessage(task.feature, pod.name)});
        walk.newlyPicked = true;
        out.picked.push_back(pod.name);
        count(v);
        if (met()) break;
      }
    }
    out.released = released[task.kind];
    out.met = met();
    walk.tasks.push_back(std::move(out));
  }
  return walk;
}

bool walkIntoReport(const std::vector<EvictTask>& tasks, const std::vector<size_t>& taskReport,
                    const EvictionLedger* ledger, Clock::Monotonic now, EvictRoundReport& report,
                    std::vector<EvictionRequest>& requests) {
  if (tasks.empty()) return false;
  EvictWalk walk = walkEvictTasks(tasks, ledger, now);
  std::set<size_t> filled;
  for (size_t i = 0; i < walk.tasks.size(); ++i) {
    EvictTaskOutcome& into = report.features[taskReport[i]].outcome;
    EvictTaskOutcome& from = walk.tasks[i];
    if (filled.insert(taskReport[i]).second) {
      into = std::move(from);
      continue;
    }
    // A second task of the same feature (its mid resource after its batch one).
    into.released += from.released;
    into.met = into.met && from.met;
    using Names = std::vector<std::string> EvictTaskOutcome::*;
    for (Names list :
         {&EvictTaskOutcome::picked, &EvictTaskOutcome::pending, &EvictTaskOutcome::blocked}) {
      for (std::string& n : from.*list) (into.*list).push_back(std::move(n));
    }
  }
  report.newlyPicked = walk.newlyPicked;
  for (EvictionRequest& r : walk.requests) requests.push_back(std::move(r));
  return walk.newlyPicked;
}

const EvictFeatureReport* EvictRoundReport::feature(std::string_view name) const {
  for (const EvictFeatureReport& f : features) {
    if (f.feature == name) return &f;
  }
  return nullptr;
}

int64_t percentOfSat(int64_t amount, int64_t percent) {
  int64_t product = 0;
  if (__builtin_mul_overflow(amount, percent, &product)) {
    return (amount < 0) == (percent < 0) ? std::numeric_limits<int64_t>::max()
                                         : std::numeric_limits<int64_t>::min();
  }
  return product / 100;
}

std::string evictMessage(std::string_view feature, std::string_view podName) {
  std::string m = "trigger by koordlet feature ";
  m += feature;
  m += ", kill pod: ";
  m += podName;
  return m;
}

void addErrorOnce(std::vector<std::string>& errors, std::string line) {
  if (std::find(errors.begin(), errors.end(), line) == errors.end()) {
    errors.push_back(std::move(line));
  }
}

}  // namespace koord
