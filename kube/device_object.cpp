#include "kube/device_object.h"

#include <algorithm>

#include "kube/json_quantity.h"
#include "kube/json_type.h"
#include "kube/node_owner.h"
#include "kube/pod.h"

namespace koord {
namespace {

using nlohmann::json;

constexpr const char* kManagedLabels[] = {kGpuVendorLabel, kGpuModelLabel, kGpuDriverVersionLabel};

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

// Why the server's gpu entry differs from ours, "" when it says the same.
std::string entryDiffers(const json& have, const DeviceGpu& want) {
  const json wantJson = deviceGpuJson(want);
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
  return "";
}

}  // namespace

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

json deviceGpuJson(const DeviceGpu& gpu) {
  json entry{{"type", "gpu"},
             {"id", gpu.uuid},
             {"minor", gpu.minor},
             {"health", gpu.health},
             {"resources",
              {{kGpuCoreResource, "100"},
               {kGpuMemoryResource, gpu.memory},
               {kGpuMemoryRatioResource, "100"}}}};
  if (!gpu.pcieId.empty() && !gpu.busId.empty()) {
    entry["topology"] = {{"socketID", gpu.socket},
                         {"nodeID", std::max(gpu.numaNode, 0)},
                         {"pcieID", gpu.pcieId},
                         {"busID", gpu.busId}};
  }
  return entry;
}

json newDeviceObject(std::string_view nodeName, std::string_view nodeUid,
                     const DeviceContent& content) {
  json meta{{"name", nodeName}};
  if (!content.labels.empty()) meta["labels"] = content.labels;
  if (!nodeUid.empty()) {
    meta["ownerReferences"] = nodeOwnerReferences(nodeName, nodeUid);
  }
  json devices = json::array();
  for (const DeviceGpu& g : content.gpus) devices.push_back(deviceGpuJson(g));
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
  json& labels = out["metadata"]["labels"];
  if (!labels.is_object()) labels = json::object();
  for (const char* key : kManagedLabels) {
    if (auto it = content.labels.find(key); it != content.labels.end()) {
      labels[key] = it->second;
    } else {
      labels.erase(key);
    }
  }
  if (labels.empty()) out["metadata"].erase("labels");
  // Ours first, in minor order, then the other writers' entries as they were.
  json devices = json::array();
  for (const DeviceGpu& g : content.gpus) devices.push_back(deviceGpuJson(g));
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
  const json* labels = meta != nullptr ? jsonMember(*meta, "labels") : nullptr;
  for (const char* key : kManagedLabels) {
    const json* have = labels != nullptr ? jsonMember(*labels, key) : nullptr;
    auto want = content.labels.find(key);
    if ((have == nullptr) != (want == content.labels.end()) ||
        (have != nullptr && (!have->is_string() || have->get<std::string>() != want->second))) {
      return std::string("label ") + key;
    }
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
