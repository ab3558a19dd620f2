#include "agent/explain.h"

#include <sstream>

#include "base/time_format.h"
#include "cgroupfs/layout.h"
#include "kube/qos_class.h"

namespace koord {

namespace {

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded: %XX and '+' for a blank.
Result<std::string> urlDecode(std::string_view in, std::string_view name) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out += ' ';
    } else if (in[i] == '%') {
      const int hi = i + 2 < in.size() ? hexDigit(in[i + 1]) : -1;
      const int lo = i + 2 < in.size() ? hexDigit(in[i + 2]) : -1;
      if (hi < 0 || lo < 0) return makeError("explain: " + std::string(name) + ": bad %-encoding");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

// A dir relative to the cgroup root, without leading or trailing '/': "" (the
// root) or parts that are not empty, "." or "..".
Result<std::string> cleanDir(std::string dir) {
  if (dir.find('\0') != std::string::npos) return makeError("explain: path: contains a NUL");
  while (!dir.empty() && dir.front() == '/') dir.erase(0, 1);
  while (!dir.empty() && dir.back() == '/') dir.pop_back();
  size_t start = 0;
  while (!dir.empty() && start <= dir.size()) {
    size_t end = dir.find('/', start);
    if (end == std::string::npos) end = dir.size();
    if (!isSafePathComponent(std::string_view(dir.data() + start, end - start))) {
      return makeError("explain: path: \"" + dir + "\" has an empty, \".\" or \"..\" part");
    }
    start = end + 1;
  }
  return dir;
}

}  // namespace

std::optional<Knob> knobByName(std::string_view name) {
  for (size_t i = 0; i < kKnobCount; ++i) {
    const Knob k = static_cast<Knob>(i);
    const KnobSpec& spec = knobSpec(k);
    if (name == spec.name || (spec.v2File != nullptr && name == spec.v2File)) return k;
  }
  return std::nullopt;
}

Result<ExplainQuery> parseExplainQuery(std::string_view query) {
  ExplainQuery q;
  int targets = 0;
  bool any = false;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    auto value =
        urlDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), key);
    if (!value) return value.error();
    any = true;
    if (key == "pod") {
      const size_t slash = value->find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == value->size() ||
          value->find('/', slash + 1) != std::string::npos) {
        return makeError("explain: pod: expected <namespace>/<name>, got \"" + *value + "\"");
      }
      q.pod = std::move(*value);
      ++targets;
    } else if (key == "uid") {
      if (value->empty()) return makeError("explain: uid: empty");
      q.uid = std::move(*value);
      ++targets;
    } else if (key == "path") {
      auto dir = cleanDir(std::move(*value));
      if (!dir) return dir.error();
      q.path = std::move(*dir);
      ++targets;
    } else if (key == "below") {
      if (*value != "true" && *value != "false") {
        return makeError("explain: below: expected true or false, got \"" + *value + "\"");
      }
      q.below = *value == "true";
    } else if (key == "knob") {
      q.knob = knobByName(*value);
      if (!q.knob)
        return makeError("explain: knob: \"" + *value + "\" is not a file the agent manages");
    } else {
      return makeError("explain: unknown parameter \"" + std::string(key) +
                       "\" (pod, uid, path, below, knob)");
    }
  }
  if (targets > 1) return makeError("explain: give one of pod, uid and path");
  if (!any || (targets == 0 && !q.knob)) {
    return makeError("explain: give pod=<namespace>/<name>, uid=, path= or knob=");
  }
  if (targets == 0) q.below = true;  // knob alone: everywhere
  return q;
}

nlohmann::json explainPod(const Pod& pod) {
  nlohmann::json j = {
      {"namespace", pod.ns},
      {"name", pod.name},
      {"uid", pod.uid},
      {"phase", pod.phase},
      {"qos", toString(pod.qosWithDefault())},
      {"qosLabel", pod.koordQos == KoordQos::kNone ? nlohmann::json(nullptr)
                                                   : nlohmann::json(toString(pod.koordQos))},
      {"kubeQos", toString(pod.kubeQos)}};
  if (pod.priority) j["priority"] = *pod.priority;
  // What the strategies and hooks read of a pod: koordinator's annotations and labels.
  nlohmann::json notes = nlohmann::json::object();
  for (const auto* map : {&pod.annotations, &pod.labels}) {
    for (const auto& [k, v] : *map) {
      if (k.find("koordinator.sh/") != std::string::npos) notes[k] = v;
    }
  }
  j["koordinator"] = std::move(notes);
  nlohmann::json containers = nlohmann::json::array();
  for (const Container& c : pod.containers) {
    nlohmann::json cj = {{"name", c.name}};
    auto list = [](const ResourceList& r) {
      nlohmann::json o = nlohmann::json::object();
      if (r.cpuMilli) o["cpu"] = std::to_string(*r.cpuMilli) + "m";
      if (r.memoryBytes) o["memory"] = *r.memoryBytes;
      if (r.batchCpuMilli) o["kubernetes.io/batch-cpu"] = *r.batchCpuMilli;
      if (r.batchMemoryBytes) o["kubernetes.io/batch-memory"] = *r.batchMemoryBytes;
      if (r.midCpuMilli) o["kubernetes.io/mid-cpu"] = *r.midCpuMilli;
      if (r.midMemoryBytes) o["kubernetes.io/mid-memory"] = *r.midMemoryBytes;
      return o;
    };
    cj["requests"] = list(c.requests);
    cj["limits"] = list(c.limits);
    containers.push_back(std::move(cj));
  }
  j["containers"] = std::move(containers);
  return j;
}

nlohmann::json explainJson(const ExplainQuery& query, const Pod* pod,
                           const std::vector<ExplainEntry>& entries,
                           const std::function<std::string(Knob, const KnobValue&)>& render) {
  nlohmann::json q = nlohmann::json::object();
  if (!query.pod.empty()) q["pod"] = query.pod;
  if (!query.uid.empty()) q["uid"] = query.uid;
  if (query.pod.empty() && query.uid.empty() && (!query.path.empty() || !query.knob)) {
    q["path"] = query.path;
  }
  if (query.below) q["below"] = true;
  if (query.knob) q["knob"] = knobSpec(*query.knob).name;
  nlohmann::json knobs = nlohmann::json::array();
  for (const ExplainEntry& e : entries) {
    const KnobRecord& r = e.record;
    nlohmann::json k = {{"path", e.file},
                        {"dir", r.dir},
                        {"knob", knobSpec(r.knob).name},
                        {"scope", e.scope},
                        {"owner", r.owner}};
    if (e.kernel) {
      k["kernel"] = *e.kernel;
    } else {
      k["kernel"] = nullptr;
      k["kernelError"] = e.kernel.error().message;
    }
    k["asked"] = r.asked ? nlohmann::json(render(r.knob, *r.asked)) : nlohmann::json(nullptr);
    if (r.written) {
      k["written"] = {{"value", render(r.knob, *r.written)},
                      {"at", rfc3339Millis(r.writtenAt)},
                      {"dryRun", r.writtenDryRun}};
    } else {
      k["written"] = nullptr;
    }
    nlohmann::json inputs = nlohmann::json::array();
    if (r.why) {
      for (const WriteInput& in : r.why->inputs) {
        nlohmann::json i = {{"name", in.name}, {"value", in.value}};
        if (!in.source.empty()) i["source"] = in.source;
        inputs.push_back(std::move(i));
      }
    }
    k["inputs"] = std::move(inputs);
    k["rule"] =
        r.why && !r.why->rule.empty() ? nlohmann::json(r.why->rule) : nlohmann::json(nullptr);
    if (r.drift) {
      k["drift"] = {{"value", *r.drift},
                    {"replaced", r.driftReplaced},
                    {"noticedAt", rfc3339Millis(r.driftAt)},
                    {"times", r.drifts}};
    } else {
      k["drift"] = nullptr;
    }
    if (r.refusal) {
      k["refused"] = {{"value", r.refusal->value},
                      {"reason", r.refusal->reason},
                      {"by", r.refusal->by},
                      {"message", r.refusal->message},
                      {"at", rfc3339Millis(r.refusal->at)}};
    } else {
      k["refused"] = nullptr;
    }
    k["matches"] = e.matches ? nlohmann::json(*e.matches) : nlohmann::json(nullptr);
    knobs.push_back(std::move(k));
  }
  return {{"query", std::move(q)},
          {"pod", pod ? explainPod(*pod) : nlohmann::json(nullptr)},
          {"knobs", std::move(knobs)}};
}

std::string explainTable(const nlohmann::json& answer) {
  std::ostringstream out;
  auto str = [](const nlohmann::json& j, const char* key) -> std::string {
    if (!j.is_object()) return "";
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return "-";
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  if (const auto pod = answer.find("pod"); pod != answer.end() && pod->is_object()) {
    out << "pod " << str(*pod, "namespace") << "/" << str(*pod, "name") << " (uid "
        << str(*pod, "uid") << "): qos " << str(*pod, "qos") << ", kube " << str(*pod, "kubeQos")
        << "\n";
    if (const auto k = pod->find("koordinator"); k != pod->end() && !k->empty()) {
      for (const auto& [key, v] : k->items())
        out << "  " << key << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
    }
    out << "\n";
  }
  static const nlohmann::json kNull;
  // A member, or null: the answer may come from another version of the agent.
  auto at = [](const nlohmann::json& j, const char* key) -> const nlohmann::json& {
    if (!j.is_object()) return kNull;
    const auto it = j.find(key);
    return it == j.end() ? kNull : *it;
  };
  const nlohmann::json& knobs = at(answer, "knobs");
  if (!knobs.is_array()) return out.str() + "the agent's answer has no knob list\n";
  if (knobs.empty()) {
    out << "no knob the agent manages here\n";
    return out.str();
  }
  for (const nlohmann::json& k : knobs) {
    out << str(k, "dir") << "/" << str(k, "knob") << "  [" << str(k, "scope") << "]\n";
    out << "  owner    " << str(k, "owner") << "\n";
    out << "  kernel   " << str(k, "kernel");
    if (at(k, "kernelError").is_string()) out << " (" << str(k, "kernelError") << ")";
    out << "\n  asked    " << str(k, "asked") << "\n";
    const nlohmann::json& w = at(k, "written");
    out << "  written  "
        << (w.is_object() ? str(w, "value") + " at " + str(w, "at") +
                                (w.value("dryRun", false) ? " (dry run: not written)" : "")
                          : "- (the file already held it)")
        << "\n";
    if (const nlohmann::json& d = at(k, "drift"); d.is_object()) {
      out << "  drift    " << str(d, "value") << " found where we had " << str(d, "replaced")
          << ", noticed " << str(d, "noticedAt") << " (" << str(d, "times")
          << " times), repaired\n";
    }
    if (const nlohmann::json& r = at(k, "refused"); r.is_object()) {
      out << "  refused  " << str(r, "value") << " (" << str(r, "reason") << ", asked by "
          << str(r, "by") << " at " << str(r, "at") << "): " << str(r, "message") << "\n";
    }
    if (at(k, "rule").is_string()) out << "  rule     " << str(k, "rule") << "\n";
    const nlohmann::json& inputs = at(k, "inputs");
    for (const nlohmann::json& in : inputs.is_array() ? inputs : nlohmann::json::array()) {
      out << "    " << str(in, "name") << " = " << str(in, "value");
      if (at(in, "source").is_string()) out << "  (" << str(in, "source") << ")";
      out << "\n";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace koord
