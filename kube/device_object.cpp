#include "kube/device_object.h"

#include <algorithm>

#include "kube/json_quantity.h"
#include "kube/json_type.h"
#include "kube/node_owner.h"
#include "kube/pod.h"

namespace koord {
namespace {

using nlohmann::json;

constexpr const char* kManagedLabels[] = {kGpuVendorLabel, kGpuModelLabel, kGpuDriverVersionLabel,
                                          kGpuPartitionPolicyLabel};
constexpr const char* kManagedAnnotations[] = {kGpuPartitionsAnnotation};

bool isGpuEntry(const json& d) {
  const json* type = jsonMember(d, "type");
  return type != nullptr && type->is_string() && type->get<std::string>() == "gpu";
}

std::optional<int64_t> quantityOf(const json* v) {
  if (v == nullptr) return std::nullopt;
  auto text = jsonQuantityText(*v);
  if (!text) return std::nullopt;
  auto milli = parseQuantityMilli(*text);
  if (!milli) return std::nullopt;
  return *milli;
}

json conditionJson(const DeviceCondition& c, std::string_view time) {
  return json{{"type", "Healthy"},
              {"status", c.healthy ? "True" : "False"},
              {"reason", c.reason},
              {"message", c.message},
              {"lastTransitionTime", time}};
}

// The server's Healthy condition of an entry; nullptr when it has none.
const json* serverCondition(const json& entry) {
  const json* list = jsonMember(entry, "conditions");
  if (list == nullptr || !list->is_array()) return nullptr;
  for (const json& c : *list) {
    const json* type = jsonMember(c, "type");
    if (type != nullptr && type->is_string() && type->get<std::string>() == "Healthy") return &c;
  }
  return nullptr;
}

bool sameCondition(const json* have, const json& want) {
  if (have == nullptr) return false;
  for (const char* key : {"status", "reason", "message"}) {
    const json* v = jsonMember(*have, key);
    if (v == nullptr || *v != want[key]) return false;
  }
  return true;
}

// Why the server's gpu entry differs from ours, "" when it says the same.
std::string entryDiffers(const json& have, const DeviceGpu& want) {
  const json wantJson = deviceGpuJson(want, "");
  if (jsonMember(have, "id") == nullptr || *jsonMember(have, "id") != wantJson["id"]) return "id";
  if (jsonMember(have, "health") == nullptr || *jsonMember(have, "health") != wantJson["health"]) {
    return "health";
  }
  const json* res = jsonMember(have, "resources");
  if (res == nullptr || !res->is_object() || res->size() != wantJson["resources"].size()) {
    return "resources";
  }
  for (const auto& [name, q] : wantJson["resources"].items()) {
    if (quantityOf(jsonMember(*res, name.c_str())) != quantityOf(&q)) return "resources " + name;
  }
  const json* topo = jsonMember(have, "topology");
  const json* wantTopo = jsonMember(wantJson, "topology");
  if ((topo == nullptr) != (wantTopo == nullptr) || (topo != nullptr && *topo != *wantTopo)) {
    return "topology";
  }
  const json* cond = serverCondition(have);
  if (want.condition.has_value() != (cond != nullptr) ||
      (cond != nullptr && !sameCondition(cond, wantJson["conditions"][0]))) {
    return "condition";
  }
  return "";
}

// The server's gpu entries by id: where an entry's condition time comes from.
std::map<std::string, const json*> serverGpusById(const json& current) {
  std::map<std::string, const json*> out;
  const json* spec = jsonMember(current, "spec");
  const json* list = spec != nullptr ? jsonMember(*spec, "devices") : nullptr;
  if (list == nullptr || !list->is_array()) return out;
  for (const json& d : *list) {
    const json* id = jsonMember(d, "id");
    if (isGpuEntry(d) && id != nullptr && id->is_string()) out[id->get<std::string>()] = &d;
  }
  return out;
}

// The managed keys of one metadata map set as the content says, the rest kept.
void applyManaged(json& meta, const char* field, const auto& keys,
                  const std::map<std::string, std::string>& want) {
  json& m = meta[field];
  if (!m.is_object()) m = json::object();
  for (const char* key : keys) {
    if (auto it = want.find(key); it != want.end()) {
      m[key] = it->second;
    } else {
      m.erase(key);
    }
  }
  if (m.empty()) meta.erase(field);
}

std::optional<std::string> managedDiffers(const json* meta, const char* field, const auto& keys,
                                          const std::map<std::string, std::string>& want,
                                          const char* what) {
  const json* m = meta != nullptr ? jsonMember(*meta, field) : nullptr;
  for (const char* key : keys) {
    const json* have = m != nullptr ? jsonMember(*m, key) : nullptr;
    auto it = want.find(key);
    if ((have == nullptr) != (it == want.end()) ||
        (have != nullptr && (!have->is_string() || have->get<std::string>() != it->second))) {
      return std::string(what) + " " + key;
    }
  }
  return std::nullopt;
}

}  // namespace

DeviceGpu gpuFromNvml(std::string uuid, int minor, bool health, std::string memory, int numaNode,
                      int socket, std::string pcieId, std::string busId) {
  DeviceGpu g;
  g.uuid = std::move(uuid);
  g.minor = minor;
  g.health = health;
  g.resources = {{kGpuCoreResource, "100"},
                 {kGpuMemoryResource, std::move(memory)},
                 {kGpuMemoryRatioResource, "100"}};
  if (!pcieId.empty() && !busId.empty()) {
    g.topology = DeviceTopology{socket, std::max(numaNode, 0), std::move(pcieId), std::move(busId)};
  }
  return g;
}

std::string gpuModelLabel(std::string_view model) {
  constexpr std::string_view kVendor = "NVIDIA ";
  if (model.starts_with(kVendor)) model.remove_prefix(kVendor.size());
  std::string out(model);
  std::replace(out.begin(), out.end(), ' ', '-');
  return out;
}

std::map<std::string, std::string> gpuLabels(const std::vector<std::string>& models,
                                             const std::string& driverVersion) {
  std::map<std::string, std::string> labels{{kGpuVendorLabel, "nvidia"}};
  if (models.empty()) return labels;
  const bool same = std::all_of(models.begin(), models.end(),
                                [&](const std::string& m) { return m == models.front(); });
  if (same && !models.front().empty() && !driverVersion.empty()) {
    labels[kGpuModelLabel] = gpuModelLabel(models.front());
    labels[kGpuDriverVersionLabel] = driverVersion;
  }
  return labels;
}

json deviceGpuJson(const DeviceGpu& gpu, std::string_view conditionTime) {
  json entry{{"type", "gpu"},
             {"id", gpu.uuid},
             {"minor", gpu.minor},
             {"health", gpu.health},
             {"resources", gpu.resources}};
  if (gpu.topology) {
    const DeviceTopology& t = *gpu.topology;
    entry["topology"] = {{"socketID", t.socket}, {"nodeID", t.numaNode}, {"pcieID", t.pcieId}};
    if (!t.busId.empty()) entry["topology"]["busID"] = t.busId;
  }
  if (gpu.condition) {
    entry["conditions"] = json::array({conditionJson(*gpu.condition, conditionTime)});
  }
  return entry;
}

json newDeviceObject(std::string_view nodeName, std::string_view nodeUid,
                     const DeviceContent& content) {
  json meta{{"name", nodeName}};
  if (!content.labels.empty()) meta["labels"] = content.labels;
  if (!content.annotations.empty()) meta["annotations"] = content.annotations;
  if (!nodeUid.empty()) {
    meta["ownerReferences"] = nodeOwnerReferences(nodeName, nodeUid);
  }
  json devices = json::array();
  for (const DeviceGpu& g : content.gpus) {
    devices.push_back(deviceGpuJson(g, content.conditionTime));
  }
  return json{{"apiVersion", "scheduling.koordinator.sh/v1alpha1"},
              {"kind", "Device"},
              {"metadata", std::move(meta)},
              {"spec", {{"devices", std::move(devices)}}}};
}

json applyDeviceContent(const json& current, const DeviceContent& content) {
  json out = current;
  if (out.contains("metadata") && out["metadata"].is_object()) {
    out["metadata"].erase("managedFields");
  }
  applyManaged(out["metadata"], "labels", kManagedLabels, content.labels);
  applyManaged(out["metadata"], "annotations", kManagedAnnotations, content.annotations);
  // Ours first, in minor order, then the other writers' entries as they were.
  const auto have = serverGpusById(current);
  json devices = json::array();
  for (const DeviceGpu& g : content.gpus) {
    json entry = deviceGpuJson(g, content.conditionTime);
    if (auto it = have.find(g.uuid); it != have.end() && entry.contains("conditions")) {
      const json* old = serverCondition(*it->second);
      const json* oldTime = old != nullptr ? jsonMember(*old, "lastTransitionTime") : nullptr;
      if (oldTime != nullptr && sameCondition(old, entry["conditions"][0])) {
        entry["conditions"][0]["lastTransitionTime"] = *oldTime;
      }
    }
    devices.push_back(std::move(entry));
  }
  if (const json* spec = jsonMember(current, "spec")) {
    if (const json* list = jsonMember(*spec, "devices"); list != nullptr && list->is_array()) {
      for (const json& d : *list) {
        if (!isGpuEntry(d)) devices.push_back(d);
      }
    }
  }
  if (!out["spec"].is_object()) out["spec"] = json::object();
  out["spec"]["devices"] = std::move(devices);
  return out;
}

std::optional<std::string> deviceDiffers(const json& current, const DeviceContent& content) {
  const json* meta = jsonMember(current, "metadata");
  if (auto why = managedDiffers(meta, "labels", kManagedLabels, content.labels, "label")) {
    return why;
  }
  if (auto why = managedDiffers(meta, "annotations", kManagedAnnotations, content.annotations,
                                "annotation")) {
    return why;
  }
  std::map<int, const json*> haveByMinor;
  size_t gpuEntries = 0;
  if (const json* spec = jsonMember(current, "spec")) {
    if (const json* list = jsonMember(*spec, "devices"); list != nullptr && list->is_array()) {
      for (const json& d : *list) {
        if (!isGpuEntry(d)) continue;
        ++gpuEntries;
        const json* minor = jsonMember(d, "minor");
        if (minor != nullptr && minor->is_number_integer()) haveByMinor[minor->get<int>()] = &d;
      }
    }
  }
  if (gpuEntries != content.gpus.size() || haveByMinor.size() != content.gpus.size()) {
    return "gpu devices: " + std::to_string(gpuEntries) + " on the server, " +
           std::to_string(content.gpus.size()) + " here";
  }
  for (const DeviceGpu& g : content.gpus) {
    auto it = haveByMinor.find(g.minor);
    if (it == haveByMinor.end()) return "gpu " + std::to_string(g.minor) + " absent";
    if (auto why = entryDiffers(*it->second, g); !why.empty()) {
      return "gpu " + std::to_string(g.minor) + " " + why;
    }
  }
  return std::nullopt;
}

}  // namespace koord
