// The owner reference of an object the agent creates for its node (the
// NodeResourceTopology, the Device): the Node as controller, with
// blockOwnerDeletion, so the object goes when the Node does.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace koord {

inline nlohmann::json nodeOwnerReferences(std::string_view nodeName, std::string_view nodeUid) {
  return nlohmann::json::array({nlohmann::json{{"apiVersion", "v1"},
                                               {"kind", "Node"},
                                               {"name", nodeName},
                                               {"uid", nodeUid},
                                               {"controller", true},
                                               {"blockOwnerDeletion", true}}});
}

}  // namespace koord
