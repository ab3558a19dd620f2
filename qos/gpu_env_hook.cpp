#include "qos/gpu_env_hook.h"

#include <nlohmann/json.hpp>

namespace koord {

Result<std::vector<int>> gpuMinorsAllocated(std::string_view annotation) {
  const std::string where = std::string("annotation ") + kDeviceAllocatedAnnotation + ": ";
  const auto doc = nlohmann::json::parse(annotation, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return makeError(where + "not valid JSON");
  if (!doc.is_object()) return makeError(where + "not a JSON object");
  std::vector<int> minors;
  const auto gpu = doc.find("gpu");
  if (gpu == doc.end() || gpu->is_null()) return minors;
  if (!gpu->is_array()) return makeError(where + "gpu: not an array");
  for (size_t i = 0; i < gpu->size(); ++i) {
    const auto& entry = (*gpu)[i];
    const std::string field = "gpu[" + std::to_string(i) + "].minor";
    if (!entry.is_object() || !entry.contains("minor") || !entry["minor"].is_number_integer()) {
      return makeError(where + field + ": not an integer");
    }
    const auto minor = entry["minor"].get<int64_t>();
    if (minor < 0 || minor > 1'000'000) {
      return makeError(where + field + ": " + std::to_string(minor) + " is not a device minor");
    }
    minors.push_back(static_cast<int>(minor));
  }
  return minors;
}

Result<std::map<std::string, std::string>> gpuEnv(
    const std::map<std::string, std::string>& podAnnotations) {
  std::map<std::string, std::string> env;
  const auto it = podAnnotations.find(kDeviceAllocatedAnnotation);
  if (it == podAnnotations.end()) return env;
  auto minors = gpuMinorsAllocated(it->second);
  if (!minors) return minors.error();
  if (minors->empty()) return env;
  std::string list;
  for (int m : *minors) {
    if (!list.empty()) list.push_back(',');
    list += std::to_string(m);
  }
  env[kNvidiaVisibleDevicesEnv] = std::move(list);
  return env;
}

}  // namespace koord
