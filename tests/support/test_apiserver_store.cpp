// The stand-in's model: resources, routes, Status bodies, the object store and the
// answers to non-watch requests (see test_apiserver_store.h).
#include "tests/support/test_apiserver_store.h"

#include <array>
#include <cstdio>
#include <ctime>
#include <regex>

namespace koord::test::apiserver {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::array<ResourceType, 7> kResources{{
    {"nodes", "Node", "", "v1", false},
    {"pods", "Pod", "", "v1", true},
    {"events", "Event", "", "v1", true},
    {"nodeslos", "NodeSLO", "slo.koordinator.sh", "v1alpha1", false},
    {"nodemetrics", "NodeMetric", "slo.koordinator.sh", "v1alpha1", false},
    {"noderesourcetopologies", "NodeResourceTopology", "topology.node.k8s.io", "v1alpha1", false},
    {"devices", "Device", "scheduling.koordinator.sh", "v1alpha1", false},
}};

std::vector<std::string_view> splitPath(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    const size_t slash = path.find('/', i);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > i) parts.push_back(path.substr(i, end - i));
    i = end + 1;
  }
  return parts;
}

std::string nowRfc3339() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// RFC 3339 date-time, the OpenAPI "date-time" format the CRD schema checks.
bool isRfc3339(const json& v) {
  static const std::regex kDateTime(
      R"(^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$)");
  return v.is_string() && std::regex_match(v.get<std::string>(), kDateTime);
}

ordered_json details(const ResourceType& t, const std::string& name, std::string_view kind) {
  ordered_json d;
  if (!name.empty()) d["name"] = name;
  if (!t.group.empty()) d["group"] = t.group;
  d["kind"] = kind;
  return d;
}

// The 422 the NodeMetric CRD's schema gives a status.updateTime that is not a date-time.
std::optional<Reply> validate(const ResourceType& t, const std::string& name, const json& obj) {
  if (t.plural != "nodemetrics" || !obj.contains("status") || !obj["status"].is_object()) {
    return std::nullopt;
  }
  const json& status = obj["status"];
  if (!status.contains("updateTime") || status["updateTime"].is_null() ||
      isRfc3339(status["updateTime"])) {
    return std::nullopt;
  }
  const std::string value = status["updateTime"].dump();
  const std::string cause =
      "Invalid value: " + value + ": updateTime in body must be of type date-time: " + value;
  ordered_json d = details(t, name, t.kind);
  d["causes"] = ordered_json::array(
      {{{"reason", "FieldValueTypeInvalid"}, {"message", cause}, {"field", "status.updateTime"}}});
  const std::string message = std::string(t.kind) + "." + std::string(t.group) + " \"" + name +
                              "\" is invalid: status.updateTime: " + cause;
  return jsonReply(422, statusBody(422, "Invalid", message, std::move(d)));
}

std::string rvOf(const json& obj) {
  const json* meta = obj.contains("metadata") ? &obj["metadata"] : nullptr;
  if (meta == nullptr || !meta->is_object() || !meta->contains("resourceVersion")) return "";
  const json& rv = (*meta)["resourceVersion"];
  return rv.is_string() ? rv.get<std::string>() : rv.dump();
}

std::optional<json> parseBody(const std::string& body, Reply& error) {
  json parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    error = jsonReply(400, statusBody(400, "BadRequest", "the request body is not a JSON object"));
    return std::nullopt;
  }
  return parsed;
}

bool isMergePatch(std::string_view contentType) {
  return contentType.rfind("application/merge-patch+json", 0) == 0 ||
         contentType.rfind("application/strategic-merge-patch+json", 0) == 0;
}

Reply create(const Route& r, const std::string& body, ObjectStore& store) {
  Reply error;
  std::optional<json> obj = parseBody(body, error);
  if (!obj) return error;
  json& meta = (*obj)["metadata"];
  if (!meta.is_object()) meta = json::object();
  if (r.type->namespaced) meta["namespace"] = r.ns;
  std::string name = meta.value("name", "");
  if (name.empty() && meta.contains("generateName")) {
    static constexpr std::string_view kChars = "bcdfghjklmnpqrstvwxz2456789";
    std::string suffix;
    for (int64_t n = store.resourceVersion() * 7919; suffix.size() < 5; n /= 27) {
      suffix += kChars[static_cast<size_t>(n % 27)];
    }
    name = meta.value("generateName", "") + suffix;
    meta["name"] = name;
  }
  if (name.empty()) {
    return jsonReply(422, statusBody(422, "Invalid",
                                     "metadata.name: Required value: name or "
                                     "generateName is required"));
  }
  if (store.find(*r.type, r.ns, name) != nullptr) {
    return jsonReply(409, alreadyExists(*r.type, name));
  }
  if (auto invalid = validate(*r.type, name, *obj)) return *invalid;
  return jsonReply(201, store.put(*r.type, std::move(*obj)));
}

Reply badRequest(const std::string& message) {
  return jsonReply(400, statusBody(400, "BadRequest", message));
}

Reply evict(const Route& r, const std::string& body, ObjectStore& store) {
  Reply error;
  std::optional<json> in = parseBody(body, error);
  if (!in) return error;
  const std::string apiVersion = in->value("apiVersion", "");
  if ((apiVersion != "policy/v1" && apiVersion != "policy/v1beta1") ||
      in->value("kind", "") != "Eviction") {
    return badRequest("the body is not a policy/v1 Eviction (apiVersion \"" + apiVersion +
                      "\", kind \"" + in->value("kind", "") + "\")");
  }
  const json meta = in->value("metadata", json::object());
  if (!meta.is_object() || meta.value("name", "") != r.name) {
    return badRequest("name in URL does not match name in Eviction object");
  }
  const json* pod = store.find(*r.type, r.ns, r.name);
  if (pod == nullptr) return jsonReply(404, notFound(*r.type, r.name));
  const std::string phase = pod->contains("status") && (*pod)["status"].is_object()
                                ? (*pod)["status"].value("phase", "")
                                : "";
  // A budget counts only running pods: a Pending pod is evicted whatever it says. It
  // is checked before the UID precondition, as the real server does.
  if (const ObjectStore::Budget* budget = store.budgetOf(r.ns, r.name);
      budget && phase == "Running") {
    const std::string why =
        budget->processed
            ? "The disruption budget " + budget->name + " needs 1 healthy pods and has 1 currently"
            : "The disruption budget " + budget->name + " is still being processed by the server.";
    ordered_json d{
        {"causes", ordered_json::array({{{"reason", "DisruptionBudget"}, {"message", why}}})}};
    if (!budget->processed) d["retryAfterSeconds"] = 10;
    Reply reply = jsonReply(429, statusBody(429, "TooManyRequests",
                                            "Cannot evict pod as it would violate the pod's "
                                            "disruption budget.",
                                            std::move(d)));
    if (!budget->processed) reply.headers.emplace_back("Retry-After", "10");
    return reply;
  }
  const std::string uid = (*pod)["metadata"].value("uid", "");
  const json::json_pointer uidField("/deleteOptions/preconditions/uid");
  const json wanted = in->contains(uidField) ? in->at(uidField) : json(nullptr);
  if (wanted.is_string() && wanted.get<std::string>() != uid) {
    ordered_json d{{"name", r.name}, {"kind", "Pod"}};
    return jsonReply(
        409, statusBody(409, "Conflict",
                        "Operation cannot be fulfilled on Pod \"" + r.name +
                            "\": the UID in the precondition (" + wanted.get<std::string>() +
                            ") does not match the UID in record (" + uid +
                            "). The object might have been deleted and then "
                            "recreated",
                        std::move(d)));
  }
  // The stand-in deletes the pod at once (see the header).
  store.remove(*r.type, r.ns, r.name);
  ordered_json success{{"kind", "Status"},
                       {"apiVersion", "v1"},
                       {"metadata", ordered_json::object()},
                       {"status", "Success"},
                       {"code", 201}};
  return jsonReply(201, success);
}

// PUT or PATCH of the object or its status.
Reply update(std::string_view method, const Route& r, std::string_view contentType,
             const std::string& body, ObjectStore& store) {
  if (method == "PATCH" && !isMergePatch(contentType)) {
    return jsonReply(415, statusBody(415, "UnsupportedMediaType",
                                     "the body of the request was in an unknown format - "
                                     "accepted media types include: "
                                     "application/merge-patch+json"));
  }
  Reply error;
  std::optional<json> in = parseBody(body, error);
  if (!in) return error;
  const json* stored = store.find(*r.type, r.ns, r.name);
  if (stored == nullptr) return jsonReply(404, notFound(*r.type, r.name));
  const std::string wanted = rvOf(*in);
  if (!wanted.empty() && wanted != rvOf(*stored)) {
    return jsonReply(409, conflict(*r.type, r.name));
  }
  json proposed = *stored;
  if (method == "PATCH") {
    proposed.merge_patch(*in);
  } else {
    proposed = *in;
  }
  json next = *stored;
  if (r.subresource == "status") {
    if (proposed.contains("status")) {
      next["status"] = proposed["status"];
    } else {
      next.erase("status");
    }
  } else {
    next = proposed;
    if (stored->contains("status")) {
      next["status"] = (*stored)["status"];
    } else {
      next.erase("status");
    }
    next["metadata"]["name"] = r.name;
  }
  if (auto invalid = validate(*r.type, r.name, next)) return *invalid;
  return jsonReply(200, store.put(*r.type, std::move(next)));
}

}  // namespace

std::string ResourceType::apiVersion() const {
  return group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
}

std::string ResourceType::qualified() const {
  return group.empty() ? std::string(plural) : std::string(plural) + "." + std::string(group);
}

const ResourceType* findResource(std::string_view plural) {
  for (const ResourceType& t : kResources) {
    if (t.plural == plural) return &t;
  }
  return nullptr;
}

bool Route::watch() const {
  const auto it = query.find("watch");
  return it != query.end() && (it->second == "true" || it->second == "1");
}

std::string Route::nameSelector() const {
  const auto it = query.find("fieldSelector");
  if (it == query.end()) return "";
  constexpr std::string_view kPrefix = "metadata.name=";
  return it->second.rfind(kPrefix, 0) == 0 ? it->second.substr(kPrefix.size()) : "";
}

std::string Route::resourceName() const {
  if (type == nullptr) return "";
  return subresource.empty() ? std::string(type->plural)
                             : std::string(type->plural) + "/" + subresource;
}

std::string percentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      unsigned v = 0;
      if (std::sscanf(std::string(s.substr(i + 1, 2)).c_str(), "%2x", &v) == 1) {
        out += static_cast<char>(v);
        i += 2;
        continue;
      }
    }
    out += s[i] == '+' ? ' ' : s[i];
  }
  return out;
}

std::optional<Route> parseTarget(std::string_view target) {
  Route r;
  const size_t q = target.find('?');
  if (q != std::string_view::npos) {
    std::string_view query = target.substr(q + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view pair = query.substr(0, amp);
      const size_t eq = pair.find('=');
      r.query[percentDecode(pair.substr(0, eq))] =
          eq == std::string_view::npos ? "" : percentDecode(pair.substr(eq + 1));
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    }
  }
  std::vector<std::string_view> p = splitPath(target.substr(0, q));
  std::string_view groupVersion;
  size_t i = 0;
  if (p.size() >= 2 && p[0] == "api") {
    groupVersion = p[1];
    i = 2;
  } else if (p.size() >= 3 && p[0] == "apis") {
    groupVersion = target.substr(0, q).substr(6);  // "G/V/..."
    groupVersion = groupVersion.substr(0, p[1].size() + 1 + p[2].size());
    i = 3;
  } else {
    return std::nullopt;
  }
  if (i + 1 < p.size() && p[i] == "namespaces") {
    r.ns = std::string(p[i + 1]);
    i += 2;
  }
  if (i >= p.size()) return std::nullopt;
  r.type = findResource(p[i]);
  if (r.type == nullptr || r.type->apiVersion() != groupVersion) return std::nullopt;
  if (!r.ns.empty() && !r.type->namespaced) return std::nullopt;
  if (i + 1 < p.size()) r.name = std::string(p[i + 1]);
  if (i + 2 < p.size()) r.subresource = std::string(p[i + 2]);
  if (i + 3 < p.size()) return std::nullopt;
  if (!r.subresource.empty() && r.subresource != "status" &&
      !(r.subresource == "eviction" && r.type->plural == "pods")) {
    return std::nullopt;
  }
  return r;
}

ordered_json statusBody(int code, std::string_view reason, const std::string& message,
                        ordered_json details) {
  ordered_json s{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", ordered_json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason}};
  if (!details.is_null()) s["details"] = std::move(details);
  s["code"] = code;
  return s;
}

ordered_json notFound(const ResourceType& t, const std::string& name) {
  return statusBody(404, "NotFound", t.qualified() + " \"" + name + "\" not found",
                    details(t, name, t.plural));
}

ordered_json conflict(const ResourceType& t, const std::string& name) {
  return statusBody(409, "Conflict",
                    "Operation cannot be fulfilled on " + t.qualified() + " \"" + name +
                        "\": the object has been modified; please apply your changes to the "
                        "latest version and try again",
                    details(t, name, t.plural));
}

ordered_json alreadyExists(const ResourceType& t, const std::string& name) {
  return statusBody(409, "AlreadyExists", t.qualified() + " \"" + name + "\" already exists",
                    details(t, name, t.plural));
}

ordered_json unauthorized() { return statusBody(401, "Unauthorized", "Unauthorized"); }

ordered_json forbidden(const Route& route, const std::string& verb) {
  const ResourceType& t = *route.type;
  const std::string subject =
      route.name.empty() ? t.qualified() : t.qualified() + " \"" + route.name + "\"";
  const std::string scope =
      route.ns.empty() ? "at the cluster scope" : "in the namespace \"" + route.ns + "\"";
  return statusBody(403, "Forbidden",
                    subject +
                        " is forbidden: User \"system:serviceaccount:koordinator-system:koordlet\""
                        " cannot " +
                        verb + " resource \"" + route.resourceName() + "\" in API group \"" +
                        std::string(t.group) + "\" " + scope,
                    // details.kind: the resource without its subresource, as a real
                    // server says ("pods" for pods/eviction, "nodemetrics" for
                    // nodemetrics/status).
                    details(t, route.name, t.plural));
}

ordered_json tooManyRequests(int retryAfterSeconds) {
  return statusBody(429, "TooManyRequests", "Too many requests, please try again later.",
                    ordered_json{{"retryAfterSeconds", retryAfterSeconds}});
}

ordered_json internalError() {
  return statusBody(500, "InternalError",
                    "Internal error occurred: injected by the test API server",
                    ordered_json{{"causes", ordered_json::array({{{"message", "injected"}}})}});
}

ordered_json expired(int64_t requested, int64_t oldest) {
  return statusBody(410, "Expired",
                    "too old resource version: " + std::to_string(requested) + " (" +
                        std::to_string(oldest) + ")");
}

const char* toString(EventType t) {
  switch (t) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
  }
  return "?";
}

json ObjectStore::put(const ResourceType& t, json object) {
  json& meta = object["metadata"];
  if (!meta.is_object()) meta = json::object();
  const std::string ns = t.namespaced ? meta.value("namespace", "default") : "";
  if (t.namespaced) meta["namespace"] = ns;
  const std::string name = meta.value("name", "");
  const Key key{std::string(t.plural), ns, name};
  const auto old = objects_.find(key);
  if (!object.contains("apiVersion")) object["apiVersion"] = t.apiVersion();
  if (!object.contains("kind")) object["kind"] = t.kind;
  if (old != objects_.end()) {
    // Identity stays with the object across updates.
    for (const char* field : {"uid", "creationTimestamp"}) {
      if (old->second["metadata"].contains(field)) meta[field] = old->second["metadata"][field];
    }
  }
  if (!meta.contains("uid")) {
    char uid[40];
    std::snprintf(uid, sizeof uid, "00000000-0000-4000-8000-%012llx",
                  static_cast<unsigned long long>(++uids_));
    meta["uid"] = uid;
  }
  if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = nowRfc3339();
  meta["resourceVersion"] = std::to_string(++rv_);
  const EventType type = old == objects_.end() ? EventType::kAdded : EventType::kModified;
  objects_[key] = object;
  history_.push_back(Change{rv_, type, &t, ns, name, object});
  return object;
}

void ObjectStore::protect(const std::string& ns, const std::string& name, const std::string& budget,
                          bool processed) {
  budgets_[{ns, name}] = Budget{budget, processed};
}

void ObjectStore::unprotect(const std::string& ns, const std::string& name) {
  budgets_.erase({ns, name});
}

const ObjectStore::Budget* ObjectStore::budgetOf(const std::string& ns,
                                                 const std::string& name) const {
  const auto it = budgets_.find({ns, name});
  return it == budgets_.end() ? nullptr : &it->second;
}

bool ObjectStore::remove(const ResourceType& t, const std::string& ns, const std::string& name) {
  const auto it = objects_.find(Key{std::string(t.plural), ns, name});
  if (it == objects_.end()) return false;
  json object = std::move(it->second);
  objects_.erase(it);
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  history_.push_back(Change{rv_, EventType::kDeleted, &t, ns, name, std::move(object)});
  return true;
}

const json* ObjectStore::find(const ResourceType& t, const std::string& ns,
                              const std::string& name) const {
  const auto it = objects_.find(Key{std::string(t.plural), ns, name});
  return it == objects_.end() ? nullptr : &it->second;
}

std::vector<json> ObjectStore::list(const ResourceType& t, const std::string& ns,
                                    const std::string& name) const {
  std::vector<json> out;
  for (const auto& [key, object] : objects_) {
    const auto& [plural, objectNs, objectName] = key;
    if (plural != t.plural || (!ns.empty() && objectNs != ns)) continue;
    if (!name.empty() && objectName != name) continue;
    out.push_back(object);
  }
  return out;
}

std::vector<Change> ObjectStore::changesAfter(int64_t rv, const ResourceType& t,
                                              const std::string& ns,
                                              const std::string& name) const {
  std::vector<Change> out;
  for (auto it = history_.rbegin(); it != history_.rend() && it->rv > rv; ++it) {
    if (it->resource != &t || (!ns.empty() && it->ns != ns)) continue;
    if (!name.empty() && it->name != name) continue;
    out.push_back(*it);
  }
  return {out.rbegin(), out.rend()};
}

Reply jsonReply(unsigned status, const ordered_json& body) {
  return Reply{status, body.dump() + "\n", {}};
}

Reply jsonReply(unsigned status, const json& body) { return Reply{status, body.dump() + "\n", {}}; }

std::string verbOf(std::string_view method, const Route& route) {
  if (method == "GET") return route.watch() ? "watch" : route.name.empty() ? "list" : "get";
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return "delete";
  return std::string(method);
}

Reply handleRequest(std::string_view method, const Route& r, std::string_view contentType,
                    const std::string& body, ObjectStore& store) {
  const std::string verb = verbOf(method, r);
  if (verb == "get") {
    const json* obj = store.find(*r.type, r.ns, r.name);
    return obj ? jsonReply(200, *obj) : jsonReply(404, notFound(*r.type, r.name));
  }
  if (verb == "list") {
    std::vector<json> items = store.list(*r.type, r.ns, r.nameSelector());
    if (r.type->group.empty()) {
      // A core list's items carry no kind or apiVersion (node-list-by-name.body);
      // a custom resource's do.
      for (json& item : items) {
        item.erase("kind");
        item.erase("apiVersion");
      }
    }
    json list{{"apiVersion", r.type->apiVersion()},
              {"kind", std::string(r.type->kind) + "List"},
              {"items", items},
              {"metadata", {{"resourceVersion", std::to_string(store.resourceVersion())}}}};
    if (!r.type->group.empty()) list["metadata"]["continue"] = "";  // as the CRD lists have
    return jsonReply(200, list);
  }
  if (verb == "create" && r.subresource == "eviction") return evict(r, body, store);
  if (verb == "create" && r.name.empty()) return create(r, body, store);
  if ((verb == "update" || verb == "patch") && !r.name.empty()) {
    return update(method, r, contentType, body, store);
  }
  if (verb == "delete" && !r.name.empty() && r.subresource.empty()) {
    json obj = store.find(*r.type, r.ns, r.name) ? *store.find(*r.type, r.ns, r.name) : json();
    if (!store.remove(*r.type, r.ns, r.name)) return jsonReply(404, notFound(*r.type, r.name));
    return jsonReply(200, obj);
  }
  return jsonReply(405, statusBody(405, "MethodNotAllowed",
                                   "the server does not allow this method on the requested "
                                   "resource"));
}

}  // namespace koord::test::apiserver
