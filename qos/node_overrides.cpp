#include "qos/node_overrides.h"

#include <utility>

namespace koord {
namespace {

// "Node rig-node: annotation node.koordinator.sh/reservation: <what>"
Error annotationError(std::string_view nodeName, std::string_view annotation, const Error& cause) {
  std::string prefix = nodeName.empty() ? "Node" : "Node " + std::string(nodeName);
  return makeError(prefix + ": annotation " + std::string(annotation) + ": " + cause.message);
}

// The flag when set, else the annotation when present, else `none` with the parser's
// value for "" (nothing). parse: std::string_view -> Result<T>.
template <typename T, typename Parse>
Result<Sourced<T>> choose(std::string_view flagJson, std::string_view flagSource,
                          const std::optional<std::string>& annotation,
                          std::string_view annotationName, std::string_view annotationSource,
                          std::string_view nodeName, Parse parse) {
  if (!flagJson.empty()) {
    auto v = parse(flagJson);
    if (!v) {
      // flagSource is "flag --x": name the flag as the user typed it.
      return makeError(std::string(flagSource.substr(5)) + ": " + v.error().message);
    }
    return Sourced<T>{std::move(*v), std::string(flagSource)};
  }
  if (annotation) {
    auto v = parse(*annotation);
    if (!v) return annotationError(nodeName, annotationName, v.error());
    return Sourced<T>{std::move(*v), std::string(annotationSource)};
  }
  auto nothing = parse("");
  if (!nothing) return nothing.error();  // cannot happen: "" parses to nothing
  return Sourced<T>{std::move(*nothing), std::string(kSourceNone)};
}

}  // namespace

Result<Sourced<NodeReservation>> chooseReservation(std::string_view flagJson,
                                                   const std::optional<std::string>& annotation,
                                                   std::string_view nodeName) {
  return choose<NodeReservation>(flagJson, kSourceReservationFlag, annotation,
                                 "node.koordinator.sh/reservation", kSourceReservationAnnotation,
                                 nodeName, parseNodeReservation);
}

Result<Sourced<std::vector<int>>> chooseSystemQosExclusiveCpus(
    std::string_view flagJson, const std::optional<std::string>& annotation,
    std::string_view nodeName) {
  return choose<std::vector<int>>(
      flagJson, kSourceSystemQosFlag, annotation, "node.koordinator.sh/system-qos-resource",
      kSourceSystemQosAnnotation, nodeName, parseSystemQosExclusiveCpus);
}

Result<NodeReservationChoice> effectiveNodeReservation(const NodeReservationInputs& in) {
  auto reservation = chooseReservation(in.flagReservation, in.reservationAnnotation, in.nodeName);
  if (!reservation) return reservation.error();
  auto exclusive = chooseSystemQosExclusiveCpus(in.flagSystemQosResource,
                                                in.systemQosResourceAnnotation, in.nodeName);
  if (!exclusive) return exclusive.error();
  NodeReservationChoice out;
  out.reservation = std::move(reservation->value);
  out.reservation.systemExclusiveCpus = std::move(exclusive->value);
  out.reservationSource = std::move(reservation->source);
  out.systemQosSource = std::move(exclusive->source);
  return out;
}

Sourced<int64_t> chooseAllocatableMemory(int64_t flagBytes, std::optional<int64_t> nodeAllocatable,
                                         int64_t memTotalBytes) {
  if (flagBytes > 0) return {flagBytes, std::string(kSourceAllocatableMemoryFlag)};
  if (nodeAllocatable && *nodeAllocatable > 0) {
    return {*nodeAllocatable, std::string(kSourceNodeAllocatable)};
  }
  return {memTotalBytes, std::string(kSourceMemTotal)};
}

}  // namespace koord
