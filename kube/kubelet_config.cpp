#include "kube/kubelet_config.h"

#include <cerrno>

#include <nlohmann/json.hpp>

#include "kube/json_quantity.h"
#include "kube/json_type.h"
#include "kube/pod.h"

namespace koord {
namespace {

using nlohmann::json;

Result<std::string> optString(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return makeError(where + "." + key + ": got " + jsonTypeName(*it) + ", want a string");
  }
  return it->get<std::string>();
}

// The cpu of a ResourceList-like map (kubeReserved, systemReserved), milli-cores.
Result<int64_t> reservedCpu(const json& cfg, const char* key, const std::string& where) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return int64_t{0};
  if (!it->is_object()) {
    return makeError(where + "." + key + ": got " + jsonTypeName(*it) + ", want an object");
  }
  auto cpu = it->find("cpu");
  if (cpu == it->end() || cpu->is_null()) return int64_t{0};
  auto text = jsonQuantityText(*cpu);
  if (!text) return makeError(where + "." + key + ".cpu: got " + jsonTypeName(*cpu));
  auto milli = parseQuantityMilli(*text);
  if (!milli) return makeError(where + "." + key + ".cpu: " + milli.error().message);
  if (*milli < 0) return makeError(where + "." + key + ".cpu: negative");
  return *milli;
}

}  // namespace

Result<KubeletCpuConfig> parseKubeletConfigz(std::string_view body) {
  const std::string src = "kubelet /configz";
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded()) return makeError(src + ": not JSON");
  if (!doc.is_object()) return makeError(src + ": got " + std::string(jsonTypeName(doc)));
  auto cfgIt = doc.find("kubeletconfig");
  if (cfgIt == doc.end() || !cfgIt->is_object()) {
    return makeError(src + ": kubeletconfig: missing or not an object");
  }
  const json& cfg = *cfgIt;
  const std::string where = src + ": kubeletconfig";
  KubeletCpuConfig out;
  for (auto [key, field] : {std::pair{"cpuManagerPolicy", &out.cpuManagerPolicy},
                            std::pair{"reservedSystemCPUs", &out.reservedSystemCpus},
                            std::pair{"topologyManagerPolicy", &out.topologyManagerPolicy},
                            std::pair{"topologyManagerScope", &out.topologyManagerScope}}) {
    auto v = optString(cfg, key, where);
    if (!v) return v.error();
    *field = std::move(*v);
  }
  if (auto it = cfg.find("cpuManagerPolicyOptions"); it != cfg.end() && !it->is_null()) {
    if (!it->is_object()) {
      return makeError(where + ".cpuManagerPolicyOptions: got " + jsonTypeName(*it) +
                       ", want an object");
    }
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) {
        return makeError(where + ".cpuManagerPolicyOptions." + k + ": got " + jsonTypeName(v) +
                         ", want a string");
      }
      out.cpuManagerPolicyOptions[k] = v.get<std::string>();
    }
  }
  auto kube = reservedCpu(cfg, "kubeReserved", where);
  if (!kube) return kube.error();
  auto sys = reservedCpu(cfg, "systemReserved", where);
  if (!sys) return sys.error();
  if (__builtin_add_overflow(*kube, *sys, &out.reservedCpuMilli)) {
    return makeError(where + ": kubeReserved.cpu + systemReserved.cpu overflows");
  }
  return out;
}

Result<CpuManagerCheckpoint> parseCpuManagerCheckpoint(std::string_view text,
                                                       std::string_view source) {
  const std::string src(source);
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return makeError(src + ": not JSON");
  if (!doc.is_object()) return makeError(src + ": got " + std::string(jsonTypeName(doc)));
  CpuManagerCheckpoint out;
  auto policy = optString(doc, "policyName", src);
  if (!policy) return policy.error();
  out.policyName = std::move(*policy);
  auto def = optString(doc, "defaultCpuSet", src);
  if (!def) return def.error();
  out.defaultCpuSet = std::move(*def);
  auto it = doc.find("entries");
  if (it == doc.end() || it->is_null()) return out;
  if (!it->is_object()) return makeError(src + ": entries: got " + jsonTypeName(*it));
  for (const auto& [uid, containers] : it->items()) {
    if (!containers.is_object()) {
      return makeError(src + ": entries." + uid + ": got " + jsonTypeName(containers) +
                       ", want an object of container names (the pre-1.18 format is not read)");
    }
    auto& pod = out.entries[uid];
    for (const auto& [name, cpus] : containers.items()) {
      if (!cpus.is_string()) {
        return makeError(src + ": entries." + uid + "." + name + ": got " + jsonTypeName(cpus) +
                         ", want a string");
      }
      pod[name] = cpus.get<std::string>();
    }
  }
  return out;
}

Result<std::optional<CpuManagerCheckpoint>> readCpuManagerCheckpoint(
    const Result<std::string>& read, std::string_view path) {
  if (!read) {
    if (read.error().sysErrno == ENOENT) return std::optional<CpuManagerCheckpoint>();
    return read.error();
  }
  auto parsed = parseCpuManagerCheckpoint(*read, path);
  if (!parsed) return parsed.error();
  return std::optional<CpuManagerCheckpoint>(std::move(*parsed));
}

}  // namespace koord
