// The node's NodeResourceTopology (topology.node.k8s.io/v1alpha1, cluster-scoped,
// named after the node) as koordlet writes it (reference koordlet.md §5.3;
// statesinformer's node topology): what the agent manages in it (NrtContent), the
// object it creates, the update it sends, and whether the server's copy already
// says what the agent would write.
//
// What the agent manages, and nothing else (other writers keep their parts):
//  * metadata.annotations: the keys of kNrtManagedAnnotations; a managed key the
//    content does not carry is left alone, as koordlet does;
//  * topologyPolicies: exactly [content.topologyPolicy];
//  * zones: one per NUMA node ("node-<id>", type "Node"); on update, the server's
//    zones whose names the content does not have are dropped, and in the others the
//    content's resources replace same-named ones (capacity = allocatable =
//    available, as koordlet's merge leaves them) and other resources are kept.
// Changed (koordlet's isChanged): the topologyPolicies differ, a managed annotation
// is present on one side only or differs as JSON (not as text: key order and
// spacing do not count), or the zones differ in count, a name, a type, or the value
// of a resource the content carries, compared as quantities ("1Gi" equals "1024Mi").
// Resources only the server's zones have (a device plugin's GPUs) are kept and not
// compared: koordlet compares them too and so updates for ever once another writer
// adds one; here they change nothing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace koord {

inline constexpr std::string_view kNrtResource = "noderesourcetopologies";
inline constexpr std::string_view kNrtCollectionPath =
    "/apis/topology.node.k8s.io/v1alpha1/noderesourcetopologies";

inline constexpr const char* kAnnoCpuBasicInfo = "node.koordinator.sh/cpu-basic-info";
inline constexpr const char* kAnnoCpuTopology = "node.koordinator.sh/cpu-topology";
inline constexpr const char* kAnnoCpuSharedPools = "node.koordinator.sh/cpu-shared-pools";
inline constexpr const char* kAnnoBeCpuSharedPools = "node.koordinator.sh/be-cpu-shared-pools";
inline constexpr const char* kAnnoCpuManagerPolicy = "kubelet.koordinator.sh/cpu-manager-policy";
inline constexpr const char* kAnnoPodCpuAllocs = "node.koordinator.sh/pod-cpu-allocs";
inline constexpr const char* kAnnoNodeReservation = "node.koordinator.sh/reservation";
inline constexpr const char* kAnnoSystemQosResource = "node.koordinator.sh/system-qos-resource";
inline constexpr const char* kNrtManagedAnnotations[] = {
    kAnnoCpuBasicInfo, kAnnoCpuManagerPolicy, kAnnoCpuSharedPools,  kAnnoBeCpuSharedPools,
    kAnnoCpuTopology,  kAnnoPodCpuAllocs,     kAnnoNodeReservation, kAnnoSystemQosResource};

struct NrtZoneResource {
  std::string name;      // "cpu", "memory", "hugepages-2Mi", ...
  std::string quantity;  // capacity = allocatable = available, "48", "128Gi"
  bool operator==(const NrtZoneResource&) const = default;
};

struct NrtZone {
  std::string name;  // "node-0"
  std::string type = "Node";
  std::vector<NrtZoneResource> resources;  // sorted by name
  bool operator==(const NrtZone&) const = default;
};

struct NrtContent {
  std::map<std::string, std::string> annotations;
  std::string topologyPolicy = "None";
  std::vector<NrtZone> zones;  // sorted by name
  bool operator==(const NrtContent&) const = default;
};

// The object to create: name, label app.kubernetes.io/managed-by=Koordinator, an
// owner reference to the Node (controller, blockOwnerDeletion) when its uid is
// known, so the object goes with the Node; and the content.
nlohmann::json newNrtObject(std::string_view nodeName, std::string_view nodeUid,
                            const NrtContent& content);

// The server's object with the content applied (the body of an update: it keeps
// metadata.resourceVersion, so a concurrent change is a 409). managedFields left out.
nlohmann::json applyNrtContent(const nlohmann::json& current, const NrtContent& content);

// Why the server's object differs from the content ("annotation
// node.koordinator.sh/cpu-shared-pools", "topologyPolicies", "zones: node-1 cpu"),
// nullopt when it says the same.
std::optional<std::string> nrtDiffers(const nlohmann::json& current, const NrtContent& content);

// The content as the object would carry it, for /config.
nlohmann::json nrtContentJson(const NrtContent& content);

}  // namespace koord
