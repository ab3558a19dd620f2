#include "kube/nrt_object.h"

#include "kube/json_quantity.h"
#include "kube/json_type.h"
#include "kube/node_owner.h"
#include "kube/pod.h"

namespace koord {
namespace {

using nlohmann::json;

json resourceJson(const NrtZoneResource& r) {
  return json{{"name", r.name},
              {"capacity", r.quantity},
              {"allocatable", r.quantity},
              {"available", r.quantity}};
}

json zonesJson(const std::vector<NrtZone>& zones) {
  json out = json::array();
  for (const NrtZone& z : zones) {
    json res = json::array();
    for (const NrtZoneResource& r : z.resources) res.push_back(resourceJson(r));
    out.push_back(json{{"name", z.name}, {"type", z.type}, {"resources", std::move(res)}});
  }
  return out;
}

std::string stringOr(const json* v, std::string fallback = "") {
  return v != nullptr && v->is_string() ? v->get<std::string>() : fallback;
}

// A resource's value as the server holds it: koordlet's merge reads allocatable.
std::optional<int64_t> quantityValue(const json& res) {
  const json* q = jsonMember(res, "allocatable");
  if (q == nullptr) return std::nullopt;
  auto text = jsonQuantityText(*q);
  if (!text) return std::nullopt;
  auto v = parseQuantityMilli(*text);
  if (!v) return std::nullopt;
  return *v;
}

// name -> resource, of one zone of the server's object.
std::map<std::string, const json*> resourcesOf(const json& zone) {
  std::map<std::string, const json*> out;
  if (const json* list = jsonMember(zone, "resources"); list != nullptr && list->is_array()) {
    for (const json& r : *list) {
      std::string name = stringOr(jsonMember(r, "name"));
      if (!name.empty()) out[name] = &r;
    }
  }
  return out;
}

bool sameJsonText(const std::string& a, const std::string& b) {
  if (a == b) return true;
  json ja = json::parse(a, nullptr, false);
  json jb = json::parse(b, nullptr, false);
  if (ja.is_discarded() || jb.is_discarded()) return false;
  return ja == jb;
}

}  // namespace

json nrtContentJson(const NrtContent& content) {
  return json{{"annotations", content.annotations},
              {"topologyPolicies", json::array({content.topologyPolicy})},
              {"zones", zonesJson(content.zones)}};
}

json newNrtObject(std::string_view nodeName, std::string_view nodeUid, const NrtContent& content) {
  json meta{{"name", nodeName},
            {"labels", {{"app.kubernetes.io/managed-by", "Koordinator"}}},
            {"annotations", content.annotations}};
  if (!nodeUid.empty()) {
    meta["ownerReferences"] = nodeOwnerReferences(nodeName, nodeUid);
  }
  return json{{"apiVersion", "topology.node.k8s.io/v1alpha1"},
              {"kind", "NodeResourceTopology"},
              {"metadata", std::move(meta)},
              {"topologyPolicies", json::array({content.topologyPolicy})},
              {"zones", zonesJson(content.zones)}};
}

json applyNrtContent(const json& current, const NrtContent& content) {
  json out = current.is_object() ? current : json::object();
  json& meta = out["metadata"];
  if (!meta.is_object()) meta = json::object();
  meta.erase("managedFields");
  json& annotations = meta["annotations"];
  if (!annotations.is_object()) annotations = json::object();
  for (const auto& [k, v] : content.annotations) annotations[k] = v;
  out["topologyPolicies"] = json::array({content.topologyPolicy});

  // Zones: the server's, trimmed to ours, with our resources over theirs.
  std::map<std::string, const json*> theirs;
  if (const json* zones = jsonMember(current, "zones"); zones != nullptr && zones->is_array()) {
    for (const json& z : *zones) {
      std::string name = stringOr(jsonMember(z, "name"));
      if (!name.empty()) theirs[name] = &z;
    }
  }
  json zones = json::array();
  for (const NrtZone& z : content.zones) {
    std::map<std::string, json> merged;
    if (auto it = theirs.find(z.name); it != theirs.end()) {
      for (const auto& [name, r] : resourcesOf(*it->second)) {
        // koordlet's merge keeps their allocatable as all three values.
        json v = jsonMember(*r, "allocatable") != nullptr ? (*r)["allocatable"] : json("0");
        merged[name] = json{{"name", name}, {"capacity", v}, {"allocatable", v}, {"available", v}};
      }
    }
    for (const NrtZoneResource& r : z.resources) merged[r.name] = resourceJson(r);
    json res = json::array();
    for (auto& [name, r] : merged) res.push_back(std::move(r));
    zones.push_back(json{{"name", z.name}, {"type", z.type}, {"resources", std::move(res)}});
  }
  out["zones"] = std::move(zones);
  return out;
}

std::optional<std::string> nrtDiffers(const json& current, const NrtContent& content) {
  const json* meta = jsonMember(current, "metadata");
  const json* annotations = meta != nullptr ? jsonMember(*meta, "annotations") : nullptr;
  if (annotations == nullptr || !annotations->is_object()) return "metadata.annotations";

  const json* policies = jsonMember(current, "topologyPolicies");
  if (policies == nullptr || *policies != json::array({content.topologyPolicy})) {
    return "topologyPolicies";
  }

  for (const char* key : kNrtManagedAnnotations) {
    auto mine = content.annotations.find(key);
    const json* theirs = jsonMember(*annotations, key);
    const bool haveMine = mine != content.annotations.end();
    if (!haveMine && theirs == nullptr) continue;
    if (haveMine != (theirs != nullptr)) return std::string("annotation ") + key;
    if (!theirs->is_string() || !sameJsonText(theirs->get<std::string>(), mine->second)) {
      return std::string("annotation ") + key;
    }
  }

  const json* zones = jsonMember(current, "zones");
  const size_t count = zones != nullptr && zones->is_array() ? zones->size() : 0;
  if (count != content.zones.size()) return "zones: count";
  for (size_t i = 0; i < count; ++i) {
    const json& z = (*zones)[i];
    const NrtZone& mine = content.zones[i];
    if (stringOr(jsonMember(z, "name")) != mine.name) return "zones: " + mine.name + " name";
    if (stringOr(jsonMember(z, "type")) != mine.type) return "zones: " + mine.name + " type";
    auto theirs = resourcesOf(z);
    for (const NrtZoneResource& r : mine.resources) {
      auto t = theirs.find(r.name);
      if (t == theirs.end()) return "zones: " + mine.name + " " + r.name;
      auto mv = parseQuantityMilli(r.quantity);
      auto tv = quantityValue(*t->second);
      if (!mv || !tv || *mv != *tv) return "zones: " + mine.name + " " + r.name;
    }
  }
  return std::nullopt;
}

}  // namespace koord
