#include "prediction/peak_models.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_set>

namespace koord::prediction {

std::string classModelId(PriorityClass priority) {
  return std::string("__node-") + toString(priority) + "__";
}

namespace {

bool isNodeModel(std::string_view uid) { return uid.substr(0, 6) == "__node"; }

// int64(x * 1000): Go truncates toward zero; a value past int64 (a corrupt
// checkpoint cannot make one: the largest bucket is ~1e3 cores) saturates.
int64_t truncated(double x) {
  if (!(x < 9.2e18)) return INT64_MAX;
  if (!(x > -9.2e18)) return INT64_MIN;
  return static_cast<int64_t>(x);
}

}  // namespace

void PeakModels::update(const std::string& uid, double cpu, double memory, Clock::Wall now) {
  auto it = models_.find(uid);
  if (it == models_.end()) {
    if (models_.size() >= kMaxModels) {
      ++refused_;
      return;
    }
    it = models_.emplace(uid, Model(config_)).first;
  }
  Model& m = it->second;
  m.lastUpdated = now;
  m.cpu.addSample(cpu, 1, now);
  m.memory.addSample(memory, 1, now);
}

void PeakModels::train(const TrainingInput& in, const std::vector<std::string>& livePods,
                       Clock::Wall now, std::vector<std::string>& freed) {
  const std::unordered_set<std::string_view> live(livePods.begin(), livePods.end());
  for (auto it = models_.begin(); it != models_.end();) {
    if (!isNodeModel(it->first) && !live.count(it->first)) {
      freed.push_back(it->first);
      it = models_.erase(it);
    } else {
      ++it;
    }
  }

  struct Sum {
    double cpu = 0;
    double memory = 0;
    bool any = false;
  };
  std::map<PriorityClass, Sum> byClass;
  Sum all;
  for (const auto& p : in.pods) {
    Sum& s = byClass[p.priority];
    s.cpu += p.cpuCores;
    s.memory += p.memoryBytes;
    s.any = true;
    all.cpu += p.cpuCores;
    all.memory += p.memoryBytes;
    all.any = true;
  }
  // The node's models first: past kMaxModels it is a pod that goes without one, never
  // the system or class models every prediction needs.
  const bool nodeKnown = in.nodeCpuCores && in.nodeMemoryBytes;
  if (nodeKnown) update(std::string(kNodeModel), *in.nodeCpuCores, *in.nodeMemoryBytes, now);
  for (const PriorityClass c : kKnownClasses) {
    const Sum& s = byClass[c];
    update(classModelId(c), s.cpu, s.memory, now);
  }
  // koordlet's quirk kept: a failed node query makes the system sample 0.
  double sysCpu = nodeKnown ? *in.nodeCpuCores : 0;
  double sysMemory = nodeKnown ? *in.nodeMemoryBytes : 0;
  if (all.any) {
    sysCpu = std::max(sysCpu - all.cpu, 0.0);
    sysMemory = std::max(sysMemory - all.memory, 0.0);
  }
  update(std::string(kSystemModel), sysCpu, sysMemory, now);
  for (const auto& p : in.pods) update(p.uid, p.cpuCores, p.memoryBytes, now);
  synced_ = true;
}

std::optional<Prediction> PeakModels::predict(std::string_view uid) const {
  const auto it = models_.find(std::string(uid));
  if (it == models_.end()) return std::nullopt;
  const Model& m = it->second;
  auto point = [&](double p) {
    return Prediction::Point{truncated(m.cpu.percentile(p) * 1000.0),
                             truncated(m.memory.percentile(p))};
  };
  return Prediction{point(0.6), point(0.9), point(0.95), point(0.98), point(1.0)};
}

std::vector<std::string> PeakModels::expire(Clock::Wall now) {
  std::vector<std::string> gone;
  if (!synced_) return gone;
  for (auto it = models_.begin(); it != models_.end();) {
    if (now - it->second.lastUpdated > config_.modelExpiration) {
      gone.push_back(it->first);
      it = models_.erase(it);
    } else {
      ++it;
    }
  }
  return gone;
}

std::vector<ModelCheckpoint> PeakModels::checkpointsDue(Clock::Wall now) {
  std::vector<ModelCheckpoint> out;
  if (!synced_) return out;
  std::vector<std::pair<const std::string*, Model*>> order;
  order.reserve(models_.size());
  for (auto& [uid, m] : models_) order.emplace_back(&uid, &m);
  // Never saved first, then oldest save; ties by id so the order is stable.
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    const auto& ta = a.second->lastCheckpointed;
    const auto& tb = b.second->lastCheckpointed;
    if (ta != tb) return !ta || (tb && *ta < *tb);
    return *a.first < *b.first;
  });
  for (auto& [uid, m] : order) {
    if (static_cast<int>(out.size()) >= config_.checkpointMaxPerStep) break;
    if (m->lastCheckpointed && now - *m->lastCheckpointed < config_.checkpointInterval) break;
    out.push_back(ModelCheckpoint{*uid, m->cpu.save(), m->memory.save(), now});
    m->lastCheckpointed = now;
  }
  return out;
}

Status PeakModels::restore(const ModelCheckpoint& c) {
  if (models_.size() >= kMaxModels && !models_.count(c.uid)) {
    return makeError("over " + std::to_string(kMaxModels) + " models");
  }
  Model m(config_);
  if (auto st = m.cpu.load(c.cpu); !st) return makeError("CPU: " + st.error().message);
  if (auto st = m.memory.load(c.memory); !st) return makeError("Memory: " + st.error().message);
  m.lastUpdated = c.lastUpdated;
  models_.insert_or_assign(c.uid, std::move(m));
  return Ok{};
}

size_t PeakModels::bytesUsed() const {
  // Per model: two weight vectors, the map node (key string, the Model, next
  // pointer and hash) and allocator headers (16 bytes a block, 3 blocks), bounded by
  // 192 bytes: bench/node_metric_bench measures malloc's own count under this.
  size_t bytes = models_.bucket_count() * sizeof(void*);
  for (const auto& [uid, m] : models_) {
    bytes += m.cpu.heapBytes() + m.memory.heapBytes() + sizeof(Model) + uid.capacity() + 192;
  }
  return bytes;
}

}  // namespace koord::prediction
