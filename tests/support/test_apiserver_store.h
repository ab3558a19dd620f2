// The API server stand-in's model, apart from its sockets: which resources it knows,
// how a request target maps to one, the objects with their global resourceVersion and
// the history of changes a watch replays, the Status bodies a real kube-apiserver 1.32
// sends (shapes from tests/fixtures/kube-api/*.body), and the answer to every
// non-watch request as a pure function of the request and the store. TestApiServer
// (test_apiserver.h) serialises calls with its own mutex; nothing here locks.
//
// Decisions:
//  * One global resourceVersion for every resource, as etcd has: each change bumps
//    it, an object's metadata.resourceVersion is the version of its last change and
//    a list's is the current one.
//  * The history keeps every change (tests make a few hundred at most); compact(rv)
//    only moves the point below which a watch gets 410 "Expired".
//  * Updates through /status change only .status, updates of the object keep the
//    stored .status, as for resources with a status subresource. A PUT whose
//    metadata.resourceVersion is set and not the stored one is a 409 Conflict.
//  * Merge patches (RFC 7386) only; a strategic merge patch is applied as one too,
//    which is what it means for the plain maps koordlet patches. JSON patch: 415.
//  * An Eviction is answered as a real server does (fixtures pod-eviction-*): 400 for a
//    body that is not a policy/v1 (or v1beta1) Eviction of the pod named in the path,
//    404 for a missing pod, 409 when deleteOptions.preconditions.uid is not the pod's
//    uid, 429 with cause DisruptionBudget for a Running pod a budget protects (a
//    Pending pod is not protected; the budget is checked before the UID, as the real
//    server does), else 201 Success. The stand-in then deletes the pod at once; a real
//    server with a grace period only sets deletionTimestamp and the kubelet deletes
//    the pod when its containers stopped. Replies are compact JSON with a final
//    newline, as a real server answers any client but curl, wget and browsers. Not
//    modelled: a real server's 409 on a pod that is not Running comes after ~10 s.
//  * A PodDisruptionBudget is reduced to what an Eviction checks: a budget name per
//    protected pod, which allows no disruption while it is set (protect()), and
//    whether the disruption controller has processed it yet (if not: the real 429
//    "still being processed" with Retry-After: 10).
//  * An Event is stored under a name made from its generateName. Both are recorded in
//    the request log by the server.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace koord::test::apiserver {

struct ResourceType {
  std::string_view plural;
  std::string_view kind;
  std::string_view group;  // "" for the core group
  std::string_view version;
  bool namespaced = false;

  std::string apiVersion() const;  // "v1", "slo.koordinator.sh/v1alpha1"
  // "nodeslos.slo.koordinator.sh", "nodes": how messages name the resource.
  std::string qualified() const;
};

// nodes, pods, events (core v1), nodeslos, nodemetrics (slo.koordinator.sh/v1alpha1),
// noderesourcetopologies (topology.node.k8s.io/v1alpha1). nullptr when unknown.
const ResourceType* findResource(std::string_view plural);

// A request target taken apart: /api/v1/nodes/rig-node, /apis/G/V/nodemetrics/x/status,
// /api/v1/namespaces/colo/pods/be-1/eviction?..., with the query decoded.
struct Route {
  const ResourceType* type = nullptr;
  std::string ns;           // "" for cluster-scoped or all namespaces
  std::string name;         // "" for the collection
  std::string subresource;  // "", "status", "eviction"
  std::map<std::string, std::string> query;

  bool watch() const;
  // The name a fieldSelector=metadata.name=<x> picks, "" when none.
  std::string nameSelector() const;
  // RBAC-style resource: "nodemetrics", "nodemetrics/status", "pods/eviction".
  std::string resourceName() const;
};
std::optional<Route> parseTarget(std::string_view target);
std::string percentDecode(std::string_view s);

// Status bodies, field order as a real server writes them.
nlohmann::ordered_json statusBody(int code, std::string_view reason, const std::string& message,
                                  nlohmann::ordered_json details = nullptr);
nlohmann::ordered_json notFound(const ResourceType& t, const std::string& name);
nlohmann::ordered_json conflict(const ResourceType& t, const std::string& name);
nlohmann::ordered_json alreadyExists(const ResourceType& t, const std::string& name);
nlohmann::ordered_json unauthorized();
nlohmann::ordered_json forbidden(const Route& route, const std::string& verb);
nlohmann::ordered_json tooManyRequests(int retryAfterSeconds);
nlohmann::ordered_json internalError();
nlohmann::ordered_json expired(int64_t requested, int64_t oldest);

enum class EventType { kAdded, kModified, kDeleted };
const char* toString(EventType t);

struct Change {
  int64_t rv = 0;
  EventType type = EventType::kAdded;
  const ResourceType* resource = nullptr;
  std::string ns, name;
  nlohmann::json object;  // as stored after the change (before it, for kDeleted)
};

class ObjectStore {
 public:
  // Stamps apiVersion, kind, uid, creationTimestamp when absent, and the new
  // resourceVersion; ADDED or MODIFIED. Returns the stored object.
  nlohmann::json put(const ResourceType& t, nlohmann::json object);
  // DELETED (the event carries the object with a new resourceVersion); false if absent.
  bool remove(const ResourceType& t, const std::string& ns, const std::string& name);
  const nlohmann::json* find(const ResourceType& t, const std::string& ns,
                             const std::string& name) const;
  // Objects of t in ns ("" = all), optionally only the one named; by name.
  std::vector<nlohmann::json> list(const ResourceType& t, const std::string& ns,
                                   const std::string& name) const;
  // Changes after rv matching the filter, oldest first.
  std::vector<Change> changesAfter(int64_t rv, const ResourceType& t, const std::string& ns,
                                   const std::string& name) const;

  // The PodDisruptionBudget `budget` protects the pod ns/name (allows no disruption);
  // processed: whether its status is computed yet.
  struct Budget {
    std::string name;
    bool processed = true;
  };
  void protect(const std::string& ns, const std::string& name, const std::string& budget,
               bool processed = true);
  void unprotect(const std::string& ns, const std::string& name);
  // The budget protecting ns/name; nullptr when none.
  const Budget* budgetOf(const std::string& ns, const std::string& name) const;

  int64_t resourceVersion() const { return rv_; }
  int64_t oldestValid() const { return oldestValid_; }
  void compact(int64_t oldestValid) { oldestValid_ = oldestValid; }

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // plural, ns, name
  std::map<Key, nlohmann::json> objects_;
  std::vector<Change> history_;
  int64_t rv_ = 100;  // not 0: "0" in a watch or list means "any version"
  int64_t oldestValid_ = 0;
  uint64_t uids_ = 0;
  std::map<std::pair<std::string, std::string>, Budget> budgets_;  // (ns, name) -> PDB
};

// A reply before framing.
struct Reply {
  unsigned status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // besides the standard ones
};
Reply jsonReply(unsigned status, const nlohmann::ordered_json& body);
Reply jsonReply(unsigned status, const nlohmann::json& body);

// Every request but a watch: get, list, create, update, patch, delete, eviction.
Reply handleRequest(std::string_view method, const Route& route, std::string_view contentType,
                    const std::string& body, ObjectStore& store);

// "get", "list", "watch", "create", "update", "patch", "delete" for a method and route.
std::string verbOf(std::string_view method, const Route& route);

}  // namespace koord::test::apiserver
