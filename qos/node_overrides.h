// Node overrides: what the agent's own Node object gives the QoS strategies, set
// against the flags that stood in for it before the agent read the Node (issue 16):
// the node.koordinator.sh/reservation and node.koordinator.sh/system-qos-resource
// annotations (CPU suppress never gives those CPUs to BE) and status.allocatable's
// memory (memory QoS throttles containers without a limit against it).
//
// Precedence (decision): a flag that is set wins (--node-reservation,
// --node-system-qos-resource, --node-allocatable-memory stay overrides, e.g. for a
// node whose annotation is wrong and cannot be fixed quickly); otherwise the Node's
// value; otherwise nothing reserved / the node's MemTotal. Each choice carries its
// source, a phrase for logs and /config.
//
// A malformed annotation is an error naming the node, the annotation and the field
// ("Node rig-node: annotation node.koordinator.sh/reservation: resources.cpu: ..."):
// the caller keeps the last good choice (and logs once per bad content). A
// malformed flag is an error naming the flag (the agent refuses it at start).
// Pure functions: the Node informer and the agent call them on each Node change.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "qos/snapshot.h"

namespace koord {

inline constexpr std::string_view kSourceReservationFlag = "flag --node-reservation";
inline constexpr std::string_view kSourceSystemQosFlag = "flag --node-system-qos-resource";
inline constexpr std::string_view kSourceAllocatableMemoryFlag = "flag --node-allocatable-memory";
inline constexpr std::string_view kSourceReservationAnnotation =
    "Node annotation node.koordinator.sh/reservation";
inline constexpr std::string_view kSourceSystemQosAnnotation =
    "Node annotation node.koordinator.sh/system-qos-resource";
inline constexpr std::string_view kSourceNodeAllocatable = "Node status.allocatable.memory";
inline constexpr std::string_view kSourceMemTotal = "MemTotal";
inline constexpr std::string_view kSourceNone = "none";

template <typename T>
struct Sourced {
  T value{};
  std::string source;  // one of the kSource* phrases
};

// The reservation (cpu and reservedCPUs; systemExclusiveCpus left empty) from
// --node-reservation's JSON ("" = not set) or the annotation (nullopt = the Node has
// none, or there is no Node yet). Neither: nothing reserved, source "none".
Result<Sourced<NodeReservation>> chooseReservation(std::string_view flagJson,
                                                   const std::optional<std::string>& annotation,
                                                   std::string_view nodeName);

// The exclusive CPUs of SYSTEM-QoS pods, from --node-system-qos-resource or the
// annotation, the same way.
Result<Sourced<std::vector<int>>> chooseSystemQosExclusiveCpus(
    std::string_view flagJson, const std::optional<std::string>& annotation,
    std::string_view nodeName);

// Both of the above, in one NodeReservation (QosSnapshot::reservation). Fails when
// either does: the caller keeps its last good reservation whole.
struct NodeReservationChoice {
  NodeReservation reservation;
  std::string reservationSource;  // chooseReservation's source
  std::string systemQosSource;    // chooseSystemQosExclusiveCpus's source
};
struct NodeReservationInputs {
  std::string flagReservation;                       // --node-reservation ("" = not set)
  std::string flagSystemQosResource;                 // --node-system-qos-resource ("" = not set)
  std::optional<std::string> reservationAnnotation;  // NodeInfo::reservationAnnotation
  std::optional<std::string> systemQosResourceAnnotation;
  std::string nodeName;  // for messages; "" before the Node is known
};
Result<NodeReservationChoice> effectiveNodeReservation(const NodeReservationInputs& in);

// Memory QoS's node allocatable: --node-allocatable-memory when > 0, else the Node's
// status.allocatable.memory when known and > 0, else memTotalBytes (source
// "MemTotal"; 0 when that is not read yet either).
Sourced<int64_t> chooseAllocatableMemory(int64_t flagBytes, std::optional<int64_t> nodeAllocatable,
                                         int64_t memTotalBytes);

}  // namespace koord
