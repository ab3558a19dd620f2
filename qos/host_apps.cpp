#include "qos/host_apps.h"

#include <set>
#include <string_view>

#include "base/quote.h"

namespace koord {

namespace {

using nlohmann::json;

constexpr const char* kField = "spec.hostApplications";

// "", or every '/'-separated part a safe component (no "..", not absolute).
bool isRelativeDir(std::string_view path, std::string& why) {
  if (path.empty()) return true;
  if (path.front() == '/') {
    why = "must be relative to its base, got " + quoteText(path, 80);
    return false;
  }
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const std::string_view part = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    // "a//b" and a trailing '/' are harmless in a path; "." and ".." are not allowed.
    if (!part.empty() && !isSafePathComponent(part)) {
      why = "must stay under its base (no \".\" or \"..\" parts), got " + quoteText(path, 80);
      return false;
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return true;
}

std::optional<PriorityClass> priorityByName(std::string_view s) {
  if (s.empty()) return PriorityClass::kNone;
  if (s == "koord-prod") return PriorityClass::kProd;
  if (s == "koord-mid") return PriorityClass::kMid;
  if (s == "koord-batch") return PriorityClass::kBatch;
  if (s == "koord-free") return PriorityClass::kFree;
  return std::nullopt;
}

std::optional<KoordQos> qosByName(std::string_view s) {
  if (s.empty()) return KoordQos::kNone;
  for (KoordQos q :
       {KoordQos::kLSE, KoordQos::kLSR, KoordQos::kLS, KoordQos::kBE, KoordQos::kSystem}) {
    if (s == toString(q)) return q;
  }
  return std::nullopt;
}

// A string member: "" when absent or null; false (with `why`) for another type.
bool stringField(const json& obj, const char* key, std::string& out, std::string& why) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return true;
  if (!it->is_string()) {
    why = std::string(key) + ": expected a string, got " + it->type_name();
    return false;
  }
  out = it->get<std::string>();
  return true;
}

// One entry, or false with `why` naming the field.
bool parseEntry(const json& e, HostApplication& app, std::string& why,
                std::vector<std::string>& notes, const std::string& where) {
  if (!e.is_object()) {
    why = std::string("expected an object, got ") + e.type_name();
    return false;
  }
  if (!stringField(e, "name", app.name, why)) return false;
  if (app.name.empty()) {
    why = "name: missing";
    return false;
  }
  if (!isSafePathComponent(app.name)) {
    why = "name: must be one path component, got " + quoteText(app.name, 80);
    return false;
  }
  if (!stringField(e, "priority", app.priorityText, why)) return false;
  const auto p = priorityByName(app.priorityText);
  if (!p) {
    why = "priority: want koord-prod, koord-mid, koord-batch, koord-free or \"\", got " +
          quoteText(app.priorityText, 40);
    return false;
  }
  app.priority = *p;
  if (!stringField(e, "qos", app.qosText, why)) return false;
  const auto q = qosByName(app.qosText);
  if (!q) {
    why = "qos: want LSE, LSR, LS, BE, SYSTEM or \"\", got " + quoteText(app.qosText, 40);
    return false;
  }
  app.qos = *q;
  const auto cp = e.find("cgroupPath");
  if (cp != e.end() && !cp->is_null()) {
    if (!cp->is_object()) {
      why = std::string("cgroupPath: expected an object, got ") + cp->type_name();
      return false;
    }
    app.hasCgroupPath = true;
    std::string base;
    if (!stringField(*cp, "base", base, why) ||
        !stringField(*cp, "parentDir", app.parentDir, why) ||
        !stringField(*cp, "relativePath", app.relativePath, why)) {
      why = "cgroupPath." + why;
      return false;
    }
    if (base == "Kubepods") {
      app.base = HostAppBase::kKubepods;
    } else if (base == "KubepodsBurstable") {
      app.base = HostAppBase::kKubepodsBurstable;
    } else if (base == "KubepodsBesteffort") {
      app.base = HostAppBase::kKubepodsBesteffort;
    } else {
      if (!base.empty() && base != "CgroupRoot") {
        notes.push_back(where + ": cgroupPath.base " + quoteText(base, 40) +
                        " is not CgroupRoot, Kubepods, KubepodsBurstable or KubepodsBesteffort; "
                        "read as CgroupRoot (as koordlet)");
      }
      app.base = HostAppBase::kCgroupRoot;
    }
    for (auto [key, value] :
         {std::pair{"parentDir", &app.parentDir}, std::pair{"relativePath", &app.relativePath}}) {
      std::string bad;
      if (!isRelativeDir(*value, bad)) {
        why = std::string("cgroupPath.") + key + ": " + bad;
        return false;
      }
    }
    // A base alone is the cgroup root or a kubepods QoS dir: every pod's, not an app's.
    if (app.parentDir.find_first_not_of('/') == std::string::npos &&
        app.relativePath.find_first_not_of('/') == std::string::npos) {
      why = "cgroupPath: names its base itself (" + (base.empty() ? "CgroupRoot" : base) +
            "), not a directory under it";
      return false;
    }
  }
  return true;
}

std::string joinDirs(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) {
    while (!p.empty() && p.front() == '/') p.remove_prefix(1);
    while (!p.empty() && p.back() == '/') p.remove_suffix(1);
    if (p.empty()) continue;
    if (!out.empty()) out += '/';
    out += p;
  }
  return out;
}

}  // namespace

std::vector<HostApplication> parseHostApplications(const json& list,
                                                   std::vector<std::string>& notes) {
  std::vector<HostApplication> out;
  if (list.is_null()) return out;
  if (!list.is_array()) {
    notes.push_back(std::string(kField) + ": expected an array, got " + list.type_name() +
                    "; no host application is reported");
    return out;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    std::string where = std::string(kField) + "[" + std::to_string(i) + "]";
    if (e.is_object()) {
      if (auto n = e.find("name"); n != e.end() && n->is_string()) {
        where += " (name " + quoteText(n->get<std::string>(), 40) + ")";
      }
    }
    HostApplication app;
    std::string why;
    if (!parseEntry(e, app, why, notes, where)) {
      notes.push_back(where + ": " + why + "; skipped, the others kept");
      continue;
    }
    if (!names.insert(app.name).second) {
      notes.push_back(where + ": name repeats an earlier entry; skipped, the others kept");
      continue;
    }
    out.push_back(std::move(app));
  }
  return out;
}

std::string hostAppCgroupDir(const HostApplication& app, const CgroupLayout& layout) {
  std::string dir;
  if (!app.hasCgroupPath) {
    switch (app.qos) {
      case KoordQos::kLSE:
      case KoordQos::kLSR:
      case KoordQos::kLS:
        dir = "host-latency-sensitive/" + app.name;
        break;
      case KoordQos::kBE:
        dir = "host-best-effort/" + app.name;
        break;
      case KoordQos::kSystem:
      case KoordQos::kNone:
        dir = app.name;
        break;
    }
  } else {
    std::string base;
    switch (app.base) {
      case HostAppBase::kKubepods:
        base = layout.kubeRootDir();
        break;
      case HostAppBase::kKubepodsBurstable:
        base = layout.qosDir(KubeQos::kBurstable);
        break;
      case HostAppBase::kKubepodsBesteffort:
        base = layout.qosDir(KubeQos::kBestEffort);
        break;
      case HostAppBase::kCgroupRoot:
        break;
    }
    dir = joinDirs({base, app.parentDir, app.relativePath});
  }
  const std::string root = layout.kubeRootDir();
  for (const std::string& qosDir :
       {root, layout.qosDir(KubeQos::kBurstable), layout.qosDir(KubeQos::kBestEffort)}) {
    if (dir == qosDir) return "";
  }
  if (dir.empty() || (root.size() > dir.size() && root.compare(0, dir.size(), dir) == 0 &&
                      root[dir.size()] == '/')) {
    return "";  // the cgroup root, or an ancestor of kubepods
  }
  return dir;
}

}  // namespace koord
