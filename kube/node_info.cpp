#include "kube/node_info.h"
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include "base/quote.h"

#include <array>
#include <utility>

#include "base/quote.h"
#include "kube/json_quantity.h"
#include "kube/json_type.h"
#include "kube/pod.h"

namespace koord {
namespace {

using Json = nlohmann::json;

constexpr std::array<std::string_view, 5> kAddressTypes = {"Hostname", "ExternalIP", "InternalIP",
                                                           "ExternalDNS", "InternalDNS"};
constexpr std::array<std::string_view, 5> kFallbackOrder = {"InternalIP", "Hostname", "InternalDNS",
                                                            "ExternalIP", "ExternalDNS"};

// Errors of one node: "Node <name>: <path>: <what>".
class NodeErrors {
 public:
  explicit NodeErrors(std::string name) : prefix_("Node " + std::move(name)) {
    if (prefix_ == "Node ") prefix_ = "Node";
  }
  Error at(const std::string& path, std::string_view what) const {
    return makeError(prefix_ + ": " + path + ": " + std::string(what));
  }
  Error wrongType(const std::string& path, const char* want, const Json& got) const {
    return at(path, std::string("expected ") + want + ", got " + jsonTypeName(got));
  }

 private:
  std::string prefix_;
};

// obj[key] as an object; nullptr when absent or null, an error when not an object.
Result<const Json*> optionalObject(const Json& obj, const char* key, const std::string& path,
                                   const NodeErrors& err) {
  const Json* v = jsonMember(obj, key);
  if (v != nullptr && !v->is_object()) return err.wrongType(path, "an object", *v);
  return v;
}

Result<std::optional<int64_t>> quantity(const Json& list, const char* key, const std::string& path,
                                        bool milli, const NodeErrors& err) {
  const Json* v = jsonMember(list, key);
  if (v == nullptr) return std::optional<int64_t>();
  const std::string field = path + "." + key;
  const std::optional<std::string> text = jsonQuantityText(*v);
  if (!text) return err.wrongType(field, "a quantity string", *v);
  auto parsed = milli ? parseQuantityMilli(*text) : parseQuantity(*text);
  if (!parsed) return err.at(field, parsed.error().message);
  if (*parsed < 0) return err.at(field, "must not be negative, got " + *text);
  return std::optional<int64_t>(*parsed);
}

Result<NodeResources> resources(const Json& status, const char* key, const NodeErrors& err) {
  const std::string path = std::string("status.") + key;
  auto list = optionalObject(status, key, path, err);
  if (!list) return list.error();
  NodeResources out;
  if (*list == nullptr) return out;
  auto cpu = quantity(**list, "cpu", path, /*milli=*/true, err);
  if (!cpu) return cpu.error();
  auto memory = quantity(**list, "memory", path, /*milli=*/false, err);
  if (!memory) return memory.error();
  // kubernetes.io/batch-cpu's value is already milli-cores (koord-manager writes "3500").
  auto batchCpu = quantity(**list, "kubernetes.io/batch-cpu", path, /*milli=*/false, err);
  if (!batchCpu) return batchCpu.error();
  auto batchMemory = quantity(**list, "kubernetes.io/batch-memory", path, /*milli=*/false, err);
  if (!batchMemory) return batchMemory.error();
  auto midCpu = quantity(**list, "kubernetes.io/mid-cpu", path, /*milli=*/false, err);
  if (!midCpu) return midCpu.error();
  auto midMemory = quantity(**list, "kubernetes.io/mid-memory", path, /*milli=*/false, err);
  if (!midMemory) return midMemory.error();
  out.batchMemoryBytes = *batchMemory;
  out.midCpuMilli = *midCpu;
  out.midMemoryBytes = *midMemory;
  out.cpuMilli = *cpu;
  out.memoryBytes = *memory;
  out.batchCpuMilli = *batchCpu;
  return out;
}

// koordlet's GetNodeRawAllocatable: a ResourceList in JSON; anything else is read as
// absent (koordlet falls back to status.allocatable), not as a bad Node.
std::optional<NodeResources> rawAllocatable(const std::string& text, const NodeErrors& err) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto cpu = quantity(j, "cpu", "raw-allocatable", /*milli=*/true, err);
  auto memory = quantity(j, "memory", "raw-allocatable", /*milli=*/false, err);
  if (!cpu || !memory) return std::nullopt;
  NodeResources out;
  out.cpuMilli = *cpu;
  out.memoryBytes = *memory;
  return out;
}

Result<std::vector<NodeAddress>> addresses(const Json& status, const NodeErrors& err) {
  std::vector<NodeAddress> out;
  const Json* list = jsonMember(status, "addresses");
  if (list == nullptr) return out;
  if (!list->is_array()) return err.wrongType("status.addresses", "an array", *list);
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& a = (*list)[i];
    const std::string path = "status.addresses[" + std::to_string(i) + "]";
    if (!a.is_object()) return err.wrongType(path, "an object", a);
    NodeAddress addr;
    for (auto [key, dest] : {std::pair{"type", &addr.type}, std::pair{"address", &addr.address}}) {
      const Json* v = jsonMember(a, key);
      if (v == nullptr) return err.at(path + "." + key, "missing");
      if (!v->is_string()) return err.wrongType(path + "." + key, "a string", *v);
      *dest = v->get<std::string>();
    }
    out.push_back(std::move(addr));
  }
  return out;
}

Result<std::optional<int>> kubeletPort(const Json& status, const NodeErrors& err) {
  const std::string path = "status.daemonEndpoints.kubeletEndpoint";
  auto endpoints = optionalObject(status, "daemonEndpoints", "status.daemonEndpoints", err);
  if (!endpoints) return endpoints.error();
  if (*endpoints == nullptr) return std::optional<int>();
  auto kubelet = optionalObject(**endpoints, "kubeletEndpoint", path, err);
  if (!kubelet) return kubelet.error();
  if (*kubelet == nullptr) return std::optional<int>();
  const Json* port = jsonMember(**kubelet, "Port");  // the API spells it with a capital P
  if (port == nullptr) return std::optional<int>();
  if (!port->is_number_integer()) return err.wrongType(path + ".Port", "an integer", *port);
  const int64_t p = port->get<int64_t>();
  if (p < 0 || p > 65535) return err.at(path + ".Port", std::to_string(p) + " is not a port");
  if (p == 0) return std::optional<int>();  // not reported
  return std::optional<int>(static_cast<int>(p));
}

Result<std::optional<std::string>> annotation(const Json& annotations, std::string_view key,
                                              const NodeErrors& err) {
  if (!annotations.is_object()) return std::optional<std::string>();
  auto it = annotations.find(std::string(key));
  if (it == annotations.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) {
    return err.wrongType("metadata.annotations[" + std::string(key) + "]", "a string", *it);
  }
  return std::optional<std::string>(it->get<std::string>());
}

const NodeAddress* firstOfType(const NodeInfo& node, std::string_view type) {
  for (const auto& a : node.addresses) {
    if (a.type == type && !a.address.empty()) return &a;
  }
  return nullptr;
}

}  // namespace

Result<NodeInfo> parseNode(const Json& node) {
  if (!node.is_object()) return NodeErrors("").wrongType("(object)", "an object", node);
  NodeInfo out;

  const Json* meta = jsonMember(node, "metadata");
  if (meta == nullptr) return NodeErrors("").at("metadata", "missing");
  if (!meta->is_object()) return NodeErrors("").wrongType("metadata", "an object", *meta);
  const Json* name = jsonMember(*meta, "name");
  if (name == nullptr) return NodeErrors("").at("metadata.name", "missing");
  if (!name->is_string()) return NodeErrors("").wrongType("metadata.name", "a string", *name);
  out.name = name->get<std::string>();
  if (out.name.empty()) return NodeErrors("").at("metadata.name", "empty");
  const NodeErrors err(out.name);

  if (const Json* uid = jsonMember(*meta, "uid")) {
    if (!uid->is_string()) return err.wrongType("metadata.uid", "a string", *uid);
    out.uid = uid->get<std::string>();
  }
  if (const Json* rv = jsonMember(*meta, "resourceVersion")) {
    if (!rv->is_string()) return err.wrongType("metadata.resourceVersion", "a string", *rv);
    out.resourceVersion = rv->get<std::string>();
  }
  auto annotations = optionalObject(*meta, "annotations", "metadata.annotations", err);
  if (!annotations) return annotations.error();
  if (*annotations != nullptr) {
    auto reservation = annotation(**annotations, kNodeReservationAnnotation, err);
    if (!reservation) return reservation.error();
    out.reservationAnnotation = std::move(*reservation);
    auto systemQos = annotation(**annotations, kSystemQosResourceAnnotation, err);
    if (!systemQos) return systemQos.error();
    out.systemQosResourceAnnotation = std::move(*systemQos);
    auto raw = annotation(**annotations, kRawAllocatableAnnotation, err);
    if (!raw) return raw.error();
    if (*raw) out.rawAllocatable = rawAllocatable(**raw, err);
    auto ratio = annotation(**annotations, kCpuNormalizationRatioAnnotation, err);
    if (!ratio) return ratio.error();
    out.cpuNormalizationRatioAnnotation = std::move(*ratio);
  }

  auto status = optionalObject(node, "status", "status", err);
  if (!status) return status.error();
  if (*status == nullptr) return out;
  const Json& s = **status;

  auto addrs = addresses(s, err);
  if (!addrs) return addrs.error();
  out.addresses = std::move(*addrs);
  auto port = kubeletPort(s, err);
  if (!port) return port.error();
  out.kubeletPort = *port;
  auto allocatable = resources(s, "allocatable", err);
  if (!allocatable) return allocatable.error();
  out.allocatable = *allocatable;
  auto capacity = resources(s, "capacity", err);
  if (!capacity) return capacity.error();
  out.capacity = *capacity;
  return out;
}

bool isNodeAddressType(std::string_view type) {
  for (auto t : kAddressTypes) {
    if (t == type) return true;
  }
  return false;
}

std::optional<NodeAddress> pickKubeletAddress(const NodeInfo& node,
                                              std::string_view preferredType) {
  const std::string_view preferred =
      isNodeAddressType(preferredType) ? preferredType : "InternalIP";
  if (const NodeAddress* a = firstOfType(node, preferred)) return *a;
  for (auto type : kFallbackOrder) {
    if (const NodeAddress* a = firstOfType(node, type)) return *a;
  }
  return std::nullopt;
}

std::optional<std::string> kubeletAddress(const NodeInfo& node, std::string_view preferredType) {
  auto a = pickKubeletAddress(node, preferredType);
  if (!a) return std::nullopt;
  return a->address;
}

Result<double> parseCpuNormalizationRatio(std::string_view text) {
  const std::string t(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(t.c_str(), &end);
  // Go's ParseFloat takes no surrounding space (strtod skips leading space).
  if (t.empty() || std::isspace(static_cast<unsigned char>(t[0])) || end != t.c_str() + t.size() ||
      errno == ERANGE || !std::isfinite(v)) {
    return makeError("not a number: " + quoteText(text, 40));
  }
  if (!(v > 0)) return makeError("must be > 0, got " + quoteText(text, 40));
  return v;
}

}  // namespace koord
