#include "runtimeproxy/registration.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/read_file.h"

namespace koord::runtimeproxy {

std::vector<HookStage> registeredStages(std::span<const HookName> enabled,
                                        std::span<const HookStage> disabled) {
  std::vector<HookStage> out;
  for (HookStage stage : kAllStages) {
    if (std::find(disabled.begin(), disabled.end(), stage) != disabled.end()) continue;
    const auto hooks = hooksAt(stage);
    const bool used = std::any_of(hooks.begin(), hooks.end(), [&](HookName h) {
      return std::find(enabled.begin(), enabled.end(), h) != enabled.end();
    });
    if (used) out.push_back(stage);
  }
  return out;
}

std::string registrationJson(std::string_view remoteEndpoint, std::string_view failurePolicy,
                             std::span<const HookStage> stages) {
  // Built by hand for Go's key order and layout; the strings are escaped by nlohmann.
  std::vector<std::string> lines;
  if (!remoteEndpoint.empty()) {
    lines.push_back("\t\"remote-endpoint\": " + nlohmann::json(remoteEndpoint).dump());
  }
  if (!failurePolicy.empty()) {
    lines.push_back("\t\"failure-policy\": " + nlohmann::json(failurePolicy).dump());
  }
  if (!stages.empty()) {
    std::string hooks = "\t\"runtime-hooks\": [\n";
    for (size_t i = 0; i < stages.size(); ++i) {
      hooks += "\t\t\"" + std::string(toString(stages[i])) + "\"";
      hooks += i + 1 < stages.size() ? ",\n" : "\n";
    }
    hooks += "\t]";
    lines.push_back(std::move(hooks));
  }
  if (lines.empty()) return "{}";
  std::string out = "{\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    out += lines[i];
    out += i + 1 < lines.size() ? ",\n" : "\n";
  }
  out += "}";
  return out;
}

std::string registrationPath(const std::string& dir) {
  return (std::filesystem::path(dir) / kRegistrationFile).lexically_normal().string();
}

Result<bool> writeRegistration(const std::string& dir, std::string_view content) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return makeError(dir + ": " + ec.message(), ec.value());
  const std::string path = registrationPath(dir);
  if (auto existing = readFile(path); existing && *existing == content) return false;
  if (Status s = replaceFile(path, content, 0644); !s) return s.error();
  return true;
}

}  // namespace koord::runtimeproxy
