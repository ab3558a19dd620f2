// parsePodList: the kubelet's GET /pods/ reply (a v1.PodList) -> std::vector<Pod>.
//
// Contract: never throws and never crashes on any input. JSON is parsed with
// exceptions disabled and every field is type-checked before it is read.
//
// Any error fails the whole list, including a non-object item or an item without
// metadata.uid. This is deliberate: the caller keeps its last good list, which
// is safer than acting on a partial one (a pod missing from the list looks like
// a pod that left the node, and strategies would release or reclaim its
// resources). koordlet does the same, as Go's JSON decoding of a PodList fails
// as a whole. The message names the JSON path at fault.
//
// Deliberate leniencies, all of which the kubelet itself never produces:
// absent or null objects, arrays and strings read as empty; a null quantity
// reads as unset; an unknown status.qosClass is recomputed from the spec; only
// the four resources the agent uses (cpu, memory, kubernetes.io/batch-cpu,
// kubernetes.io/batch-memory) are checked, others are ignored.
// Strict where the agent depends on a value: a container or container status
// without a name (it could not be matched), a containerID that is not
// "<runtime>://<id>", and a spec.priority that is not an int32 are errors.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/quote.h"
#include "base/time_format.h"
#include "kube/json_quantity.h"
#include "kube/json_type.h"
#include "kube/pod.h"

namespace koord {
namespace {

using Json = nlohmann::json;

constexpr const char* kLabelQos = "koordinator.sh/qosClass";
constexpr const char* kLabelPriorityClass = "koordinator.sh/priority-class";

// ---- paths and errors --------------------------------------------------------

// "a.b" for plain keys; a key with other characters ("kubernetes.io/batch-cpu",
// or anything a hostile list may hold) is quoted: a["kubernetes.io/batch-cpu"].
std::string child(const std::string& path, std::string_view key) {
  bool plain = !key.empty();
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) {
      plain = false;
      break;
    }
  }
  if (!plain) return path + "[" + quoteText(key, 64) + "]";
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string element(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

Error errorAt(const std::string& path, std::string_view message) {
  return makeError(path + ": " + std::string(message));
}

Error wrongType(const std::string& path, const char* want, const Json& got) {
  return errorAt(path, std::string("expected ") + want + ", got " + got.type_name());
}

// Optional object member: nullptr when absent or null, an error when not an object.
Result<const Json*> optionalObject(const Json& parent, const char* key, const std::string& path) {
  const Json* v = jsonMember(parent, key);
  if (v != nullptr && !v->is_object()) return wrongType(child(path, key), "object", *v);
  return v;
}

Result<const Json*> optionalArray(const Json& parent, const char* key, const std::string& path) {
  const Json* v = jsonMember(parent, key);
  if (v != nullptr && !v->is_array()) return wrongType(child(path, key), "array", *v);
  return v;
}

// Optional string member: "" when absent or null.
Result<std::string> optionalString(const Json& parent, const char* key, const std::string& path) {
  const Json* v = jsonMember(parent, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return wrongType(child(path, key), "string", *v);
  return v->get_ref<const std::string&>();
}

Result<std::map<std::string, std::string>> stringMap(const Json& parent, const char* key,
                                                     const std::string& path) {
  auto object = optionalObject(parent, key, path);
  if (!object) return object.error();
  std::map<std::string, std::string> out;
  if (*object == nullptr) return out;
  const std::string mapPath = child(path, key);
  for (const auto& [k, v] : (*object)->items()) {
    if (!v.is_string()) return wrongType(child(mapPath, k), "string", v);
    out.emplace(k, v.get_ref<const std::string&>());
  }
  return out;
}

// ---- resources -----------------------------------------------------------------

// One quantity of a resource list: unset when absent or null; a string or a bare
// number (jsonQuantityText).
Result<std::optional<int64_t>> quantity(const Json& list, const char* key, const std::string& path,
                                        bool milli) {
  const Json* v = jsonMember(list, key);
  if (v == nullptr) return std::optional<int64_t>();
  const std::optional<std::string> text = jsonQuantityText(*v);
  if (!text) return wrongType(child(path, key), "a quantity string", *v);
  auto parsed = milli ? parseQuantityMilli(*text) : parseQuantity(*text);
  if (!parsed) return errorAt(child(path, key), parsed.error().message);
  return std::optional<int64_t>(*parsed);
}

Result<ResourceList> resourceList(const Json& resources, const char* key, const std::string& path) {
  auto list = optionalObject(resources, key, path);
  if (!list) return list.error();
  ResourceList out;
  if (*list == nullptr) return out;
  const Json& l = **list;
  const std::string listPath = child(path, key);
  // kubernetes.io/batch-cpu's and mid-cpu's quantities are already in milli-cores
  // ("1000" = 1 core), so they are read with parseQuantity, not parseQuantityMilli.
  struct Field {
    const char* name;
    bool milli;
    std::optional<int64_t> ResourceList::*field;
  };
  static constexpr Field kFields[] = {
      {"cpu", true, &ResourceList::cpuMilli},
      {"memory", false, &ResourceList::memoryBytes},
      {kBatchCpuResource, false, &ResourceList::batchCpuMilli},
      {kBatchMemoryResource, false, &ResourceList::batchMemoryBytes},
      {kMidCpuResource, false, &ResourceList::midCpuMilli},
      {kMidMemoryResource, false, &ResourceList::midMemoryBytes},
  };
  for (const Field& f : kFields) {
    auto q = quantity(l, f.name, listPath, f.milli);
    if (!q) return q.error();
    out.*f.field = *q;
  }
  return out;
}

// ---- containers ----------------------------------------------------------------

Result<Container> container(const Json& item, const std::string& path, bool init) {
  if (!item.is_object()) return wrongType(path, "object", item);
  Container c;
  c.init = init;
  auto name = optionalString(item, "name", path);
  if (!name) return name.error();
  if (name->empty()) return errorAt(child(path, "name"), "missing");
  c.name = std::move(*name);
  if (init) {
    auto policy = optionalString(item, "restartPolicy", path);
    if (!policy) return policy.error();
    c.restartable = *policy == "Always";
  }
  auto resources = optionalObject(item, "resources", path);
  if (!resources) return resources.error();
  if (*resources != nullptr) {
    const std::string resPath = child(path, "resources");
    auto requests = resourceList(**resources, "requests", resPath);
    if (!requests) return requests.error();
    auto limits = resourceList(**resources, "limits", resPath);
    if (!limits) return limits.error();
    c.requests = *requests;
    c.limits = *limits;
  }
  return c;
}

Result<std::vector<Container>> containers(const Json& spec, const char* key,
                                          const std::string& specPath, bool init) {
  auto array = optionalArray(spec, key, specPath);
  if (!array) return array.error();
  std::vector<Container> out;
  if (*array == nullptr) return out;
  const std::string arrayPath = child(specPath, key);
  out.reserve((*array)->size());
  for (size_t i = 0; i < (*array)->size(); ++i) {
    auto c = container((**array)[i], element(arrayPath, i), init);
    if (!c) return c.error();
    out.push_back(std::move(*c));
  }
  return out;
}

// Fills runtime and id of each container from status.(init)containerStatuses,
// matched by name. A containerID is "<runtime>://<id>" (kubecontainer.ContainerID);
// anything else is an error, as koordinator's ParseContainerId rejects it. An
// unknown runtime is kept as written; the cgroup layout rejects it later.
Status applyStatuses(std::vector<Container>& list, const Json& status, const char* key,
                     const std::string& statusPath) {
  auto array = optionalArray(status, key, statusPath);
  if (!array) return array.error();
  if (*array == nullptr) return Ok{};
  const std::string arrayPath = child(statusPath, key);
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const Json& s = (**array)[i];
    const std::string path = element(arrayPath, i);
    if (!s.is_object()) return wrongType(path, "object", s);
    auto name = optionalString(s, "name", path);
    if (!name) return name.error();
    if (name->empty()) return errorAt(child(path, "name"), "missing");
    auto id = optionalString(s, "containerID", path);
    if (!id) return id.error();
    std::string runtime;
    std::string containerId;
    if (!id->empty()) {
      const size_t sep = id->find("://");
      if (sep == std::string::npos || sep == 0 || sep + 3 == id->size() ||
          id->find("://", sep + 3) != std::string::npos) {
        return errorAt(child(path, "containerID"),
                       "invalid container ID " + quoteText(*id, 128) + " (want <runtime>://<id>)");
      }
      runtime = id->substr(0, sep);
      containerId = id->substr(sep + 3);
    }
    // A status for a container not in the spec (ephemeral, or a racing update)
    // is ignored.
    for (Container& c : list) {
      if (c.name == *name) {
        c.runtime = runtime;
        c.id = containerId;
        break;
      }
    }
  }
  return Ok{};
}

// ---- classification --------------------------------------------------------------

int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) return std::numeric_limits<int64_t>::max();
  return sum;
}

// Kube QoS when status.qosClass is absent: kubectl's GetPodQOS (which koordinator
// calls), over containers and init containers, cpu and memory only, ignoring
// zero values. A request that is unset where a limit is set counts as the limit:
// the API server defaults it so before any kubelet sees the pod, and without it
// a limits-only pod would read as Burstable. Values are compared after rounding
// up to milli-cores and bytes, so two quantities less than a milli-core apart
// compare equal; real specs do not have such values.
KubeQos computeKubeQos(const std::vector<Container>& regular, const std::vector<Container>& init) {
  struct Sum {
    std::optional<int64_t> cpu;
    std::optional<int64_t> memory;
  };
  Sum requests;
  Sum limits;
  bool guaranteed = true;
  auto add = [](std::optional<int64_t>& sum, const std::optional<int64_t>& v) {
    if (v && *v > 0) sum = saturatingAdd(sum.value_or(0), *v);
  };
  auto visit = [&](const Container& c) {
    const std::optional<int64_t> cpuRequest =
        c.requests.cpuMilli ? c.requests.cpuMilli : c.limits.cpuMilli;
    const std::optional<int64_t> memoryRequest =
        c.requests.memoryBytes ? c.requests.memoryBytes : c.limits.memoryBytes;
    add(requests.cpu, cpuRequest);
    add(requests.memory, memoryRequest);
    add(limits.cpu, c.limits.cpuMilli);
    add(limits.memory, c.limits.memoryBytes);
    const bool cpuLimit = c.limits.cpuMilli && *c.limits.cpuMilli > 0;
    const bool memoryLimit = c.limits.memoryBytes && *c.limits.memoryBytes > 0;
    if (!cpuLimit || !memoryLimit) guaranteed = false;
  };
  for (const Container& c : regular) visit(c);
  for (const Container& c : init) visit(c);

  if (!requests.cpu && !requests.memory && !limits.cpu && !limits.memory) {
    return KubeQos::kBestEffort;
  }
  // Guaranteed: every request has an equal limit and there are as many limits as
  // requests, i.e. the two sums are identical.
  if (guaranteed && requests.cpu == limits.cpu && requests.memory == limits.memory) {
    return KubeQos::kGuaranteed;
  }
  return KubeQos::kBurstable;
}

std::optional<KubeQos> kubeQosByName(const std::string& name) {
  if (name == "Guaranteed") return KubeQos::kGuaranteed;
  if (name == "Burstable") return KubeQos::kBurstable;
  if (name == "BestEffort") return KubeQos::kBestEffort;
  return std::nullopt;
}

// As koordinator's GetPodPriorityClassRaw: a present label decides alone (an
// unknown value is kNone, without falling back to spec.priority); without the
// label, the priority ranges.
PriorityClass priorityClassOf(const Pod& pod) {
  if (const auto it = pod.labels.find(kLabelPriorityClass); it != pod.labels.end()) {
    if (it->second == "koord-prod") return PriorityClass::kProd;
    if (it->second == "koord-mid") return PriorityClass::kMid;
    if (it->second == "koord-batch") return PriorityClass::kBatch;
    if (it->second == "koord-free") return PriorityClass::kFree;
    return PriorityClass::kNone;
  }
  if (!pod.priority) return PriorityClass::kNone;
  const int32_t p = *pod.priority;
  if (p >= 9000 && p <= 9999) return PriorityClass::kProd;
  if (p >= 7000 && p <= 7999) return PriorityClass::kMid;
  if (p >= 5000 && p <= 5999) return PriorityClass::kBatch;
  if (p >= 3000 && p <= 3999) return PriorityClass::kFree;
  return PriorityClass::kNone;
}

// ---- pods --------------------------------------------------------------------------

Result<std::optional<int32_t>> priority(const Json& spec, const std::string& specPath) {
  const Json* v = jsonMember(spec, "priority");
  if (v == nullptr) return std::optional<int32_t>();
  const std::string path = child(specPath, "priority");
  if (!v->is_number_integer()) return wrongType(path, "an integer", *v);
  bool inRange;
  if (v->is_number_unsigned()) {
    inRange = v->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
  } else {
    const int64_t i = v->get<int64_t>();
    inRange = i >= std::numeric_limits<int32_t>::min() && i <= std::numeric_limits<int32_t>::max();
  }
  if (!inRange) return errorAt(path, "out of int32 range");
  return std::optional<int32_t>(static_cast<int32_t>(v->get<int64_t>()));
}

Result<Pod> pod(const Json& item, const std::string& path) {
  if (!item.is_object()) return wrongType(path, "object", item);
  Pod p;

  const std::string metaPath = child(path, "metadata");
  auto meta = optionalObject(item, "metadata", path);
  if (!meta) return meta.error();
  if (*meta == nullptr) return errorAt(metaPath, "missing");
  const Json& m = **meta;
  auto uid = optionalString(m, "uid", metaPath);
  if (!uid) return uid.error();
  // The uid names the pod's cgroup; a pod without one cannot be managed.
  if (uid->empty()) return errorAt(child(metaPath, "uid"), "missing");
  p.uid = std::move(*uid);
  auto ns = optionalString(m, "namespace", metaPath);
  if (!ns) return ns.error();
  p.ns = std::move(*ns);
  auto name = optionalString(m, "name", metaPath);
  if (!name) return name.error();
  p.name = std::move(*name);
  auto deletion = optionalString(m, "deletionTimestamp", metaPath);
  if (!deletion) return deletion.error();
  p.terminating = !deletion->empty();
  auto created = optionalString(m, "creationTimestamp", metaPath);
  if (!created) return created.error();
  if (!created->empty()) {
    auto t = parseRfc3339(*created);
    if (!t) return errorAt(child(metaPath, "creationTimestamp"), t.error().message);
    p.created = *t;
  }
  auto labels = stringMap(m, "labels", metaPath);
  if (!labels) return labels.error();
  p.labels = std::move(*labels);
  auto annotations = stringMap(m, "annotations", metaPath);
  if (!annotations) return annotations.error();
  p.annotations = std::move(*annotations);

  const std::string specPath = child(path, "spec");
  auto spec = optionalObject(item, "spec", path);
  if (!spec) return spec.error();
  if (*spec != nullptr) {
    const Json& s = **spec;
    auto prio = priority(s, specPath);
    if (!prio) return prio.error();
    p.priority = *prio;
    auto regular = containers(s, "containers", specPath, false);
    if (!regular) return regular.error();
    p.containers = std::move(*regular);
    auto init = containers(s, "initContainers", specPath, true);
    if (!init) return init.error();
    p.initContainers = std::move(*init);
    auto overhead = resourceList(s, "overhead", specPath);
    if (!overhead) return overhead.error();
    p.overhead = *overhead;
  }

  const std::string statusPath = child(path, "status");
  auto status = optionalObject(item, "status", path);
  if (!status) return status.error();
  std::optional<KubeQos> statusQos;
  if (*status != nullptr) {
    const Json& st = **status;
    auto phase = optionalString(st, "phase", statusPath);
    if (!phase) return phase.error();
    p.phase = std::move(*phase);
    auto qosClass = optionalString(st, "qosClass", statusPath);
    if (!qosClass) return qosClass.error();
    statusQos = kubeQosByName(*qosClass);
    if (Status s = applyStatuses(p.containers, st, "containerStatuses", statusPath); !s) {
      return s.error();
    }
    if (Status s = applyStatuses(p.initContainers, st, "initContainerStatuses", statusPath); !s) {
      return s.error();
    }
  }

  p.kubeQos = statusQos ? *statusQos : computeKubeQos(p.containers, p.initContainers);
  if (const auto it = p.labels.find(kLabelQos); it != p.labels.end()) {
    p.koordQos = koordQosFromLabel(it->second);
  }
  p.priorityClass = priorityClassOf(p);
  return p;
}

// Replaces bytes outside printable ASCII (the parser's "last read" excerpt is
// raw input) and caps the length, so the message is safe to log.
std::string sanitize(std::string_view text) {
  constexpr size_t kMax = 300;
  std::string out;
  for (char c : text.substr(0, kMax)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > kMax) out += "...";
  return out;
}

// Collects the parser's message without building a DOM; used only after a
// failed parse, so good input is parsed once.
class ErrorMessageSax : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    message = e.what();
    return false;
  }
  std::string message;
};

std::string jsonErrorMessage(std::string_view text) {
  ErrorMessageSax sax;
  Json::sax_parse(text.begin(), text.end(), &sax);
  std::string_view m = sax.message;
  // "[json.exception.parse_error.101] parse error at line 1, ..." -> "parse error at ..."
  if (const size_t close = m.find("] "); !m.empty() && m[0] == '[' && close != m.npos) {
    m.remove_prefix(close + 2);
  }
  return m.empty() ? "invalid JSON" : sanitize(m);
}

}  // namespace

Result<std::vector<Pod>> parsePodList(std::string_view json) {
  const Json root = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return makeError("not JSON: " + jsonErrorMessage(json));
  if (!root.is_object()) {
    return makeError(std::string("not a PodList: expected a JSON object, got ") + root.type_name());
  }
  // The kubelet always sends kind "PodList"; accept its absence as Go's decoder does.
  auto kind = optionalString(root, "kind", "");
  if (!kind) return kind.error();
  if (!kind->empty() && *kind != "PodList") {
    return makeError("not a PodList: kind " + quoteText(*kind, 64));
  }
  // An empty PodList may carry "items": null (Go's nil slice).
  auto items = optionalArray(root, "items", "");
  if (!items) return items.error();
  std::vector<Pod> pods;
  if (*items == nullptr) return pods;
  pods.reserve((*items)->size());
  for (size_t i = 0; i < (*items)->size(); ++i) {
    auto p = pod((**items)[i], element("items", i));
    if (!p) return p.error();
    pods.push_back(std::move(*p));
  }
  return pods;
}

}  // namespace koord
