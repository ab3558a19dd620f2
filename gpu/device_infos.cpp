#include "gpu/device_infos.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "kube/json_type.h"
#include "kube/pod.h"

namespace koord {
namespace {

using nlohmann::json;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// A member matched as Go's decoder matches it: the exact name first, else any case.
const json* member(const json& obj, std::string_view name) {
  if (auto it = obj.find(name); it != obj.end()) return &*it;
  const std::string want = lower(name);
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (lower(it.key()) == want) return &*it;
  }
  return nullptr;
}

Error fieldError(const std::string& where, const std::string& want, const json& got) {
  return makeError(where + ": want " + want + ", got " + jsonTypeName(got));
}

// A string field ("" when absent or null, as Go leaves it).
Result<std::string> stringField(const json& obj, std::string_view name, const std::string& at) {
  const json* v = member(obj, name);
  if (v == nullptr || v->is_null()) return std::string();
  if (!v->is_string()) return fieldError(at + "." + std::string(name), "a string", *v);
  return v->get<std::string>();
}

Result<bool> boolField(const json& obj, std::string_view name, const std::string& at, bool dflt) {
  const json* v = member(obj, name);
  if (v == nullptr || v->is_null()) return dflt;
  if (!v->is_boolean()) return fieldError(at + "." + std::string(name), "a boolean", *v);
  return v->get<bool>();
}

std::optional<int> decimal(std::string_view s) {
  int v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

Result<XpuTopology> parseTopology(const json& t, const std::string& at) {
  if (!t.is_object()) return fieldError(at, "an object", t);
  XpuTopology out;
  if (const json* links = member(t, "p2pLinks"); links != nullptr && !links->is_null()) {
    if (!links->is_array()) return fieldError(at + ".p2pLinks", "an array", *links);
    out.p2pLinks.emplace();
    for (size_t i = 0; i < links->size(); ++i) {
      const json& l = (*links)[i];
      const std::string lat = at + ".p2pLinks[" + std::to_string(i) + "]";
      if (!l.is_object()) return fieldError(lat, "an object", l);
      auto peers = stringField(l, "peerMinor", lat);
      if (!peers) return peers.error();
      auto type = stringField(l, "type", lat);
      if (!type) return type.error();
      XpuP2pLink link;
      link.type = *type;
      link.usable = !peers->empty() && !type->empty();
      std::string_view rest = *peers;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        if (auto n = decimal(rest.substr(0, comma))) link.peers.push_back(*n);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
      out.p2pLinks->push_back(std::move(link));
    }
  }
  auto honor = boolField(t, "mustHonorPartition", at, false);
  if (!honor) return honor.error();
  out.mustHonorPartition = *honor;
  auto node = stringField(t, "nodeID", at);
  if (!node) return node.error();
  if (!node->empty()) {
    auto n = decimal(*node);
    if (!n) return makeError(at + ".nodeID: \"" + *node + "\" is not a number");
    out.numaNode = *n;
  }
  // socketID is read to check its type only: koordlet writes -1 whatever it says.
  if (auto socket = stringField(t, "socketID", at); !socket) return socket.error();
  auto pcie = stringField(t, "pcieID", at);
  if (!pcie) return pcie.error();
  auto bus = stringField(t, "busID", at);
  if (!bus) return bus.error();
  out.pcieId = *pcie;
  out.busId = *bus;
  return out;
}

Result<XpuDevice> parseDevice(const json& d, const std::string& at) {
  if (!d.is_object()) return fieldError(at, "an object", d);
  XpuDevice out;
  for (auto [name, field] : {std::pair{"vendor", &out.vendor}, std::pair{"model", &out.model},
                             std::pair{"uuid", &out.uuid}}) {
    auto v = stringField(d, name, at);
    if (!v) return v.error();
    *field = *v;
  }
  auto minor = stringField(d, "minor", at);
  if (!minor) return minor.error();
  auto n = decimal(*minor);
  if (!n || *n < 0) return makeError(at + ".minor: \"" + *minor + "\" is not a device number");
  out.minor = *n;
  if (const json* res = member(d, "resources"); res != nullptr && !res->is_null()) {
    if (!res->is_object()) return fieldError(at + ".resources", "an object", *res);
    for (const auto& [name, q] : res->items()) {
      const std::string qat = at + ".resources." + name;
      if (!q.is_string()) return fieldError(qat, "a quantity string", q);
      const std::string text = q.get<std::string>();
      if (auto parsed = parseQuantity(text); !parsed) {
        return makeError(qat + ": \"" + text + "\" is not a quantity (" + parsed.error().message +
                         ")");
      }
      out.resources.emplace_back(name, text);
    }
  }
  if (const json* t = member(d, "topology"); t != nullptr && !t->is_null()) {
    auto topo = parseTopology(*t, at + ".topology");
    if (!topo) return topo.error();
    out.topology = std::move(*topo);
  }
  if (const json* s = member(d, "status"); s != nullptr && !s->is_null()) {
    if (!s->is_object()) return fieldError(at + ".status", "an object", *s);
    XpuStatus st;
    auto healthy = boolField(*s, "healthy", at + ".status", false);
    if (!healthy) return healthy.error();
    auto code = stringField(*s, "errCode", at + ".status");
    if (!code) return code.error();
    auto message = stringField(*s, "errMessage", at + ".status");
    if (!message) return message.error();
    st.healthy = *healthy;
    st.errCode = *code;
    st.errMessage = *message;
    out.status = std::move(st);
  }
  return out;
}

// A label value the API server takes: at most 63 of [A-Za-z0-9-_.], alphanumeric at
// both ends, or empty.
bool validLabelValue(std::string_view v) {
  if (v.empty()) return true;
  if (v.size() > 63 || !std::isalnum(static_cast<unsigned char>(v.front())) ||
      !std::isalnum(static_cast<unsigned char>(v.back()))) {
    return false;
  }
  return std::all_of(v.begin(), v.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

// A condition's reason as the API server takes one (metav1.Condition:
// ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, at most 1024): the file's errCode when it
// is one, else its words joined in CamelCase (koord-device-daemon's NPU code is
// "chip error", which the server refuses with the whole Device: found against
// kube-apiserver v1.36), else "Unknown".
std::string conditionReason(const std::string& errCode) {
  auto valid = [](const std::string& r) {
    if (r.empty() || r.size() > 1024 || !std::isalpha(static_cast<unsigned char>(r.front()))) {
      return false;
    }
    const unsigned char last = static_cast<unsigned char>(r.back());
    if (!std::isalnum(last) && last != '_') return false;
    return std::all_of(r.begin(), r.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '_' || c == ',' || c == ':';
    });
  };
  if (valid(errCode)) return errCode;
  std::string camel;
  bool upper = true;
  for (unsigned char c : errCode) {
    if (!std::isalnum(c)) {
      upper = true;
      continue;
    }
    camel += static_cast<char>(upper ? std::toupper(c) : c);
    upper = false;
  }
  if (camel.size() > 1024) camel.resize(1024);
  return valid(camel) ? camel : "Unknown";
}

// metav1.Condition's message is at most 32768 bytes: a longer one fails the Device.
constexpr size_t kMaxMessage = 32768;

// At most `max` bytes of `s`, cut before a UTF-8 character, never inside one.
std::string cutUtf8(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end);
}

std::string resourceName(const std::string& fileName) {
  if (fileName == "gpu-core" || fileName == "gpu-memory") return "koordinator.sh/" + fileName;
  return fileName;
}

DeviceGpu gpuOf(const XpuDevice& d) {
  DeviceGpu g;
  g.uuid = d.uuid;
  g.minor = d.minor;
  g.resources[kGpuMemoryRatioResource] = "100";
  for (const auto& [name, q] : d.resources) g.resources[resourceName(name)] = q;
  if (d.topology) {
    g.topology = DeviceTopology{-1, d.topology->numaNode, d.topology->pcieId, d.topology->busId};
  }
  if (d.status) {
    g.health = d.status->healthy;
    DeviceCondition c;
    c.healthy = d.status->healthy;
    if (c.healthy) {
      c.reason = "DeviceHealthy";
      c.message = "device is healthy";
    } else {
      c.reason = conditionReason(d.status->errCode);
      c.message = d.status->errMessage.empty() ? "device is unhealthy"
                                               : cutUtf8(d.status->errMessage, kMaxMessage);
    }
    g.condition = std::move(c);
  }
  return g;
}

// The gpu-partitions annotation's value; "" when no device has a usable link.
std::string partitionTable(const std::vector<const XpuDevice*>& devices) {
  std::set<std::vector<int>> seen;
  std::map<std::string, nlohmann::ordered_json> table;  // size as text: Go's key order
  for (const XpuDevice* d : devices) {
    if (!d->topology || !d->topology->p2pLinks) continue;
    for (const XpuP2pLink& l : *d->topology->p2pLinks) {
      if (!l.usable) continue;
      std::vector<int> minors = l.peers;
      minors.push_back(d->minor);
      std::sort(minors.begin(), minors.end());
      minors.erase(std::unique(minors.begin(), minors.end()), minors.end());
      if (!seen.insert(minors).second) continue;
      nlohmann::ordered_json p;
      p["minors"] = minors;
      p["gpuLinkType"] = l.type;
      p["allocationScore"] = 1;
      nlohmann::ordered_json& list = table[std::to_string(minors.size())];
      if (list.is_null()) list = nlohmann::ordered_json::array();
      list.push_back(std::move(p));
    }
  }
  if (table.empty()) return "";
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (auto& [size, list] : table) out[size] = std::move(list);
  return out.dump();
}

}  // namespace

Result<std::vector<XpuDevice>> parseDeviceInfoFile(std::string_view text,
                                                   const std::string& source) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    return makeError(source + ": not JSON" + (text.empty() ? " (empty file)" : ""));
  }
  std::vector<XpuDevice> out;
  if (doc.is_null()) return out;
  if (!doc.is_array()) return fieldError(source, "an array of devices", doc);
  for (size_t i = 0; i < doc.size(); ++i) {
    auto d = parseDevice(doc[i], source + ": [" + std::to_string(i) + "]");
    if (!d) return d.error();
    out.push_back(std::move(*d));
  }
  return out;
}

XpuContent deviceContentFromInfos(const std::vector<XpuDevice>& devices, std::string now) {
  XpuContent out;
  out.content.conditionTime = std::move(now);
  std::set<int> minors;
  std::set<std::string> uuids;
  std::vector<const XpuDevice*> kept;
  for (const XpuDevice& d : devices) {
    const std::string who =
        "device " + (d.uuid.empty() ? "(no uuid)" : d.uuid) + " minor " + std::to_string(d.minor);
    if (d.uuid.empty()) {
      out.skipped.push_back(who + ": no uuid");
    } else if (!minors.insert(d.minor).second) {
      out.skipped.push_back(who + ": another device has this minor");
    } else if (!uuids.insert(d.uuid).second) {
      out.skipped.push_back(who + ": another device has this uuid");
    } else {
      kept.push_back(&d);
      out.content.gpus.push_back(gpuOf(d));
    }
  }
  std::sort(out.content.gpus.begin(), out.content.gpus.end(),
            [](const DeviceGpu& a, const DeviceGpu& b) { return a.minor < b.minor; });
  if (kept.empty()) return out;
  const XpuDevice& first = *kept.front();
  // An invalid value would fail every update of the Device: that label is left out.
  for (auto [key, value] :
       {std::pair{kGpuModelLabel, &first.model}, std::pair{kGpuVendorLabel, &first.vendor}}) {
    if (validLabelValue(*value)) {
      out.content.labels[key] = *value;
    } else {
      out.skipped.push_back(std::string("label ") + key + ": \"" + *value +
                            "\" is no label value (63 letters, digits, '-', '_', '.' at most)");
    }
  }
  if (first.topology && first.topology->p2pLinks) {
    out.content.labels[kGpuPartitionPolicyLabel] =
        first.topology->mustHonorPartition ? "Honor" : "Prefer";
  }
  if (auto table = partitionTable(kept); !table.empty()) {
    out.content.annotations[kGpuPartitionsAnnotation] = table;
  }
  return out;
}

}  // namespace koord
