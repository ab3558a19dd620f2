// GET /explain (agent/explain.h): the executor's knob records for a pod, a cgroup
// dir or a knob, with what the kernel holds now.
#include "agent/agent.h"
#include "agent/explain.h"
#include "cgroupfs/cgroup_files.h"

namespace koord {

namespace {

HttpResponse jsonError(unsigned status, const std::string& message) {
  // The message may echo the query's bytes: invalid UTF-8 is replaced, not thrown.
  return HttpResponse{status, "application/json",
                      nlohmann::json{{"error", message}}.dump(
                          -1, ' ', false, nlohmann::json::error_handler_t::replace) +
                          "\n"};
}

}  // namespace

HttpResponse Agent::serveExplain(std::string_view queryText) const {
  auto query = parseExplainQuery(queryText);
  if (!query) return jsonError(400, query.error().message);
  if (!executor_ || !layout_) {
    return jsonError(503, "explain: the cgroup layout is not known yet (no kubepods tree found)");
  }
  const ExplainQuery& q = *query;
  // (dir, below, scope) to look at.
  struct Look {
    std::string dir;
    bool below;
    std::string scope;
  };
  std::vector<Look> looks;
  const Pod* pod = nullptr;
  if (!q.pod.empty() || !q.uid.empty()) {
    for (const Pod& p : informer_.pods()) {
      if (q.uid.empty() ? q.pod == p.ns + "/" + p.name : q.uid == p.uid) {
        pod = &p;
        break;
      }
    }
    if (pod == nullptr) {
      return jsonError(404, "explain: no pod " + (q.uid.empty() ? q.pod : "with uid " + q.uid) +
                                " in the kubelet's list");
    }
    looks.push_back({layout_->qosDir(pod->kubeQos), false, "kube-QoS dir"});
    looks.push_back({layout_->podDir(pod->kubeQos, pod->uid), true, "pod"});
  } else {
    looks.push_back({q.path, q.below, "cgroup"});
    // A dir of a listed pod (its own or a container's): the pod's facts come along.
    for (const Pod& p : informer_.pods()) {
      const std::string podDir = layout_->podDir(p.kubeQos, p.uid);
      if (q.path == podDir || q.path.starts_with(podDir + "/")) {
        pod = &p;
        break;
      }
    }
  }
  std::vector<ExplainEntry> entries;
  for (const Look& look : looks) {
    for (KnobRecord& r : executor_->explain(look.dir, look.below, q.knob)) {
      ExplainEntry e;
      e.scope = look.scope;
      if (pod != nullptr && r.dir != look.dir) {
        e.scope = "container";
        for (const Container& c : pod->containers) {
          auto dir = layout_->containerDir(look.dir, c.runtime, c.id);
          if (dir && *dir == r.dir) e.scope = "container " + c.name;
        }
      }
      e.kernel = executor_->readNow(r.dir, r.knob);
      if (e.kernel && r.asked) e.matches = executor_->holds(r.knob, *r.asked, *e.kernel);
      e.file = cgroupFilePath(*layout_, opts_.paths.cgroupRoot, r.dir, knobSpec(r.knob).file);
      e.record = std::move(r);
      entries.push_back(std::move(e));
    }
  }
  const Executor& ex = *executor_;
  nlohmann::json answer =
      explainJson(q, pod, entries, [&ex](Knob k, const KnobValue& v) { return ex.render(k, v); });
  return HttpResponse{200, "application/json",
                      answer.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"};
}

}  // namespace koord
