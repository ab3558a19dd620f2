#include "qos/slo_sources.h"

#include <utility>

#include "base/log.h"
#include "base/time_format.h"
#include "kube/json_type.h"

namespace koord {
namespace {

using Json = nlohmann::json;

std::string stringMember(const Json* obj, const char* key) {
  if (obj == nullptr) return "";
  const Json* v = jsonMember(*obj, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

const char* toString(SloSources::Active a) {
  switch (a) {
    case SloSources::Active::kDefaults:
      return "defaults";
    case SloSources::Active::kFile:
      return "file";
    case SloSources::Active::kCluster:
      return "cluster";
  }
  return "?";
}

SloSources::SloSources(std::string fileName, std::string nodeName, bool configOverridesNodeSlo,
                       const Clock& clock)
    : file_(std::move(fileName), clock),
      nodeName_(std::move(nodeName)),
      configOverridesNodeSlo_(configOverridesNodeSlo),
      clock_(&clock),
      loadedAt_(clock.wallNow()) {}

Status SloSources::load() {
  Status st = file_.load();
  settle();
  return st;
}

bool SloSources::pollFile() {
  file_.poll();
  return settle();
}

Status SloSources::applyClusterObject(const Json& nodeSlo) {
  clusterReported_ = true;
  // The object exists again (a bad one too: its config is not the deleted one's).
  const bool wasDeleted = std::exchange(clusterDeleted_, false);
  // The name first: every message of this object carries it.
  const Json* meta = jsonMember(nodeSlo, "metadata");
  std::string name = stringMember(meta, "name");
  const std::string rv = stringMember(meta, "resourceVersion");
  const std::string label = "NodeSLO " + (name.empty() ? nodeName_ : name);

  // What is validated: the kind, the name and the spec (metadata's other fields and
  // status are the API server's, not config). A missing spec is an empty one: the
  // defaults, as koordlet merges an empty spec.
  Json doc = Json::object();
  std::string problem;
  if (!nodeSlo.is_object()) {
    problem = label + ": expected an object, got " + std::string(nodeSlo.type_name());
  } else if (const Json* kind = jsonMember(nodeSlo, "kind");
             kind != nullptr && (!kind->is_string() || *kind != "NodeSLO")) {
    problem = label + ": kind: expected \"NodeSLO\", got " + kind->dump();
  } else if (name.empty()) {
    problem = label + ": metadata.name: missing";
  } else if (!nodeName_.empty() && name != nodeName_) {
    problem = label + ": metadata.name: expected \"" + nodeName_ + "\" (this node)";
  } else {
    doc["kind"] = "NodeSLO";
    doc["metadata"] = {{"name", name}};
    if (const Json* spec = jsonMember(nodeSlo, "spec")) doc["spec"] = *spec;
  }
  const std::string text = problem.empty() ? doc.dump() : nodeSlo.dump();

  Result<NodeSloSpec> spec = problem.empty() ? parseNodeSlo(text, label) : makeError(problem);
  if (!spec.ok()) {
    // Once per distinct bad object: a re-list or a resync hands the same one again.
    const std::string badKey = rv + "\n" + text;
    if (badKey != lastBadKey_) {
      lastBadKey_ = badKey;
      ++clusterRejections_;
      clusterError_ = spec.error().message;
      logEachLine(Severity::kWarning,
                  label + " resourceVersion " + rv + " rejected, keeping " + source() + ": ",
                  clusterError_);
    }
    return spec.error();
  }

  const bool recovered = !clusterError_.empty();
  clusterError_.clear();
  lastBadKey_.clear();
  if (cluster_ && text == clusterSpecText_) {
    // Same spec, new resourceVersion (or the same object again): nothing to apply.
    if (rv != clusterRv_ || wasDeleted || recovered) {
      KLOG_INFO << label << " resourceVersion " << rv << ": spec unchanged";
    }
    clusterRv_ = rv;
    cluster_->origin = label + " resourceVersion " + rv;
    return Ok{};
  }
  cluster_ = std::move(spec).value();
  cluster_->origin = label + " resourceVersion " + rv;
  clusterSpecText_ = text;
  clusterRv_ = rv;
  ++clusterVersion_;
  clusterAppliedAt_ = clock_->wallNow();
  std::string notes;
  for (const auto& note : cluster_->notes) notes += "; " + note;
  KLOG_INFO << label << " resourceVersion " << rv << (recovered ? " fixed and applied" : " applied")
            << (active() == Active::kCluster
                    ? ""
                    : " but not in force: --config-overrides-nodeslo keeps " + file_.fileName())
            << notes;
  settle();
  return Ok{};
}

void SloSources::clusterDeleted() {
  clusterReported_ = true;
  if (clusterDeleted_) return;
  clusterDeleted_ = true;
  if (cluster_) {
    KLOG_INFO << "NodeSLO " << nodeName_
              << " deleted in the cluster; its last config (resourceVersion " << clusterRv_
              << ") stays in force";
  }
}

SloSources::Active SloSources::active() const {
  const bool haveFile = !file_.fileName().empty();
  if (cluster_ && !(configOverridesNodeSlo_ && haveFile)) return Active::kCluster;
  return haveFile ? Active::kFile : Active::kDefaults;
}

const NodeSloSpec& SloSources::current() const {
  return active() == Active::kCluster ? *cluster_ : file_.current();
}

std::string SloSources::source() const {
  switch (active()) {
    case Active::kCluster: {
      std::string s = "cluster " + cluster_->source + " resourceVersion " + clusterRv_;
      if (clusterDeleted_) s += " (deleted in the cluster, last config kept)";
      return s;
    }
    case Active::kFile:
      return "file " + file_.fileName();
    case Active::kDefaults:
      break;
  }
  return "defaults";
}

const std::string& SloSources::lastError() const {
  return clusterError_.empty() ? file_.lastError() : clusterError_;
}

SloSources::Key SloSources::key() const {
  const Active a = active();
  return Key{a, a == Active::kCluster ? clusterVersion_ : file_.generation()};
}

bool SloSources::settle() {
  const Key k = key();
  if (k == lastKey_) return false;
  const bool sourceChanged = k.active != lastKey_.active && generation_ > 0;
  lastKey_ = k;
  ++generation_;
  loadedAt_ = clock_->wallNow();
  if (sourceChanged) {
    KLOG_INFO << "NodeSLO config now from " << source() << " (generation " << generation_ << ")";
  }
  return true;
}

Json SloSources::toJson() const {
  const NodeSloSpec& spec = current();
  Json j;
  j["file"] = file_.fileName();
  j["generation"] = generation_;
  j["loadedAt"] = rfc3339(loadedAt_);
  j["lastError"] = lastError();
  j["reloadErrors"] = rejections();
  j["source"] = source();
  j["notes"] = spec.notes;
  j["spec"] = spec.effective;
  j["configOverridesNodeSlo"] = configOverridesNodeSlo_;
  if (clusterReported_) {
    Json c;
    c["node"] = nodeName_;
    c["resourceVersion"] = clusterRv_;  // of the last good object; "" when none
    c["deleted"] = clusterDeleted_;
    c["lastError"] = clusterError_;
    c["rejections"] = clusterRejections_;
    c["appliedAt"] = cluster_ ? Json(rfc3339(clusterAppliedAt_)) : Json();
    c["notes"] = cluster_ ? Json(cluster_->notes) : Json::array();
    j["cluster"] = std::move(c);
  } else {
    j["cluster"] = nullptr;
  }
  j["fileConfig"] = file_.fileName().empty() ? Json() : file_.toJson();
  return j;
}

}  // namespace koord
