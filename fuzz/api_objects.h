// One API server object (a GET body, a list item, a watch event's object) through
// every parser the agent applies to the kinds it watches and writes: Node (and its
// annotations), NodeMetric, NodeSLO, NodeResourceTopology. A list's items each go
// through the same. Shared by the api_object and watch targets.
#pragma once

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "kube/node_info.h"
#include "kube/nrt_object.h"
#include "metrics/node_metric.h"
#include "qos/slo_sources.h"
#include "qos/snapshot.h"

namespace koord::fuzz {

inline void applyApiObject(const nlohmann::json& object, int depth = 0) {
  if (auto node = parseNode(object); node.ok()) {
    if (node->reservationAnnotation) (void)parseNodeReservation(*node->reservationAnnotation);
    if (node->systemQosResourceAnnotation) {
      (void)parseSystemQosExclusiveCpus(*node->systemQosResourceAnnotation);
    }
    (void)kubeletAddress(*node, "InternalIP");
  }
  (void)parseNodeMetricSpec(object);
  static const ManualClock clock;
  SloSources slo("", "", false, clock);
  (void)slo.applyClusterObject(object);
  NrtContent content;
  content.annotations[kAnnoCpuTopology] = R"({"detail":[]})";
  content.zones.push_back(NrtZone{"node-0", "Node", {{"cpu", "4"}, {"memory", "8Gi"}}});
  (void)nrtDiffers(object, content);
  if (object.is_object()) (void)applyNrtContent(object, content);
  if (depth == 0 && object.is_object()) {
    const auto items = object.find("items");
    if (items != object.end() && items->is_array()) {
      for (const auto& item : *items) applyApiObject(item, 1);
    }
  }
}

}  // namespace koord::fuzz
