// SloSources: the effective NodeSLO spec from its two sources, the cluster's
// NodeSLO object (slo.koordinator.sh/v1alpha1, named after the node; its informer
// calls applyClusterObject / clusterDeleted) and the --config file (ConfigWatcher,
// owned here), with one generation and one /config view (issue 16).
//
// Precedence (decision):
// - The cluster's NodeSLO wins whenever the agent has one: it is what koord-manager
//   renders for this node from slo-controller-config, and what koordlet applies.
// - --config is the source for nodes without a cluster (no API server), and until
//   the cluster's object is known (the start, a NodeSLO not created yet); with
//   neither, koordlet's defaults.
// - configOverridesNodeSlo (the --config-overrides-nodeslo flag, default false)
//   makes a configured file win over the cluster's object (a node being debugged,
//   or a cluster whose koord-manager renders something wrong). Without a file the
//   flag changes nothing.
// - The NodeSLO deleted in the cluster: its last config is kept (the reference does
//   not say what koordlet does; falling back to the file or the defaults would flip
//   the strategies twice while koord-manager re-creates the object) and /config says
//   so. A new object (ADDED) replaces it. A re-list that no longer holds the object
//   is a delete: the informer calls clusterDeleted().
//
// The cluster's object is validated exactly as the file is: its spec (with kind and
// name; metadata, managedFields and status are not the config) is serialised and read by
// parseNodeSlo, merged over koordlet's defaults, under the source name
// "NodeSLO <node>", so messages read
//   "NodeSLO rig-node: spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: ...".
// A bad object keeps the last good config (the cluster's, or the file's while none
// was good); it is counted and logged once per distinct bad object (resourceVersion
// and spec), and its error stays in /config until a good object comes.
//
// generation() is 0 before load(), 1 once load() applied the start config (as
// ConfigWatcher), then +1 whenever the effective spec's source or content changes: a
// new file content while the file is in force, the first good cluster object, a
// cluster object with a different spec. An object whose resourceVersion changes but
// not its spec (a label edit, a re-list) updates the resourceVersion shown and does
// not bump. The agent republishes hook state when it changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/result.h"
#include "qos/config_watcher.h"
#include "qos/slo_config.h"

namespace koord {

class SloSources {
 public:
  enum class Active { kDefaults, kFile, kCluster };

  // fileName "" = no --config. nodeName: the NodeSLO's expected name (the node's);
  // "" accepts any name (tests).
  SloSources(std::string fileName, std::string nodeName, bool configOverridesNodeSlo,
             const Clock& clock);

  // The file's start load (ConfigWatcher::load): its error is returned so the agent
  // can exit non-zero; generation 1 after it.
  Status load();

  // ConfigWatcher::poll on the file. True when the effective spec changed
  // (generation bumped): a new file content while the file is in force.
  bool pollFile();

  // A NodeSLO object from the cluster (a list item or a watch event's object, ADDED
  // or MODIFIED). Returns the error (already counted and logged) when rejected; Ok
  // when accepted or unchanged. generation() says whether the effective spec moved.
  Status applyClusterObject(const nlohmann::json& nodeSlo);

  // The NodeSLO was deleted in the cluster (a DELETED event, or a re-list without
  // it): its last config stays in force; /config says it was deleted.
  void clusterDeleted();

  const NodeSloSpec& current() const;
  uint64_t generation() const { return generation_; }
  Active active() const;
  // "cluster NodeSLO rig-node resourceVersion 1234" (+ " (deleted in the cluster,
  // last config kept)"), "file /etc/koordlet/slo.yaml" or "defaults".
  std::string source() const;

  const ConfigWatcher& file() const { return file_; }
  bool hasCluster() const { return cluster_.has_value(); }
  const std::string& clusterResourceVersion() const { return clusterRv_; }
  const std::string& clusterLastError() const { return clusterError_; }
  uint64_t clusterRejections() const { return clusterRejections_; }
  bool clusterIsDeleted() const { return clusterDeleted_; }
  // Rejected file contents plus rejected cluster objects (koordlet_config_reload_errors).
  uint64_t rejections() const { return file_.reloadErrors() + clusterRejections_; }
  // The cluster's last error when it has one, else the file's; "" when both are good.
  const std::string& lastError() const;

  // GET /config. ConfigWatcher's keys, for the effective config: "file" (the
  // --config name), "generation", "loadedAt" (when the effective spec last changed),
  // "lastError", "reloadErrors" (rejections()), "source" (source()), "notes", "spec";
  // plus "configOverridesNodeSlo", "cluster" (null until the informer reported
  // anything: {"node", "resourceVersion", "deleted", "lastError", "rejections",
  // "appliedAt", "notes"}) and "fileConfig" (ConfigWatcher::toJson(), null without a
  // file).
  nlohmann::json toJson() const;

 private:
  struct Key {
    Active active;
    uint64_t version;
    bool operator==(const Key&) const = default;
  };
  Key key() const;
  // Bumps generation_ and logs when key() moved since the last call. True if bumped.
  bool settle();

  ConfigWatcher file_;
  std::string nodeName_;
  bool configOverridesNodeSlo_;
  const Clock* clock_;

  bool clusterReported_ = false;        // any apply or delete seen
  std::optional<NodeSloSpec> cluster_;  // the last good cluster object's spec
  std::string clusterSpecText_;         // its spec, serialised: "changed?" test
  std::string clusterRv_;               // its resourceVersion
  uint64_t clusterVersion_ = 0;         // +1 per accepted spec change
  bool clusterDeleted_ = false;
  std::string clusterError_;  // the last rejection, "" after a good object
  std::string lastBadKey_;    // resourceVersion + spec of the last rejected
  uint64_t clusterRejections_ = 0;
  Clock::Wall clusterAppliedAt_{};

  uint64_t generation_ = 0;
  Key lastKey_{Active::kDefaults, 0};
  Clock::Wall loadedAt_{};
};

const char* toString(SloSources::Active a);  // "defaults", "file", "cluster"

}  // namespace koord
