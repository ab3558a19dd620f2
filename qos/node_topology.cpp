#include "qos/node_topology.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "cgroupfs/knob.h"
#include "metrics/quantity_format.h"
#include "qos/snapshot.h"

namespace koord {
namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) { return j.dump(); }

std::vector<int> sorted(std::set<int> s) { return {s.begin(), s.end()}; }

// Pools of the CPUs left, one per NUMA node, by (socket, node). The socket is the
// first CPU's, as koordlet. "null" when none is left.
std::vector<CpuSharePool> poolsOf(const std::set<int>& cpus,
                                  const std::map<int, const CpuInfo*>& byId) {
  std::map<int, std::vector<int>> byNode;
  for (int id : cpus) byNode[byId.at(id)->node].push_back(id);
  std::vector<CpuSharePool> out;
  for (auto& [node, list] : byNode) {
    out.push_back(CpuSharePool{byId.at(list.front())->socket, node, list});
  }
  std::sort(out.begin(), out.end(), [](const CpuSharePool& a, const CpuSharePool& b) {
    return std::pair(a.socket, a.node) < std::pair(b.socket, b.node);
  });
  return out;
}

std::string poolsJson(const std::vector<CpuSharePool>& pools) {
  ojson arr = ojson::array();
  for (const CpuSharePool& p : pools) {
    ojson o;
    o["socket"] = p.socket;
    o["node"] = p.node;
    if (!p.cpus.empty()) o["cpuset"] = renderCpuList(p.cpus);
    arr.push_back(std::move(o));
  }
  return dump(arr);
}

std::string basicInfoJson(const CpuBasicInfo& b) {
  ojson o = ojson::object();
  if (!b.cpuModel.empty()) o["cpuModel"] = b.cpuModel;
  if (b.hyperThreadEnabled) o["hyperThreadEnabled"] = true;
  if (b.turboEnabled) o["turboEnabled"] = true;
  if (!b.catL3CbmMask.empty()) o["catL3CbmMask"] = b.catL3CbmMask;
  if (!b.vendorId.empty()) o["vendorID"] = b.vendorId;
  return dump(o);
}

std::string topologyJson(const CpuTopology& topo) {
  ojson detail = ojson::array();
  for (const CpuInfo& c : topo.cpus) {
    ojson o;
    o["id"] = c.id;
    o["core"] = c.core;
    o["socket"] = c.socket;
    o["node"] = c.node;
    detail.push_back(std::move(o));
  }
  ojson out = ojson::object();
  if (!detail.empty()) out["detail"] = std::move(detail);
  return dump(out);
}

// The cpu-manager-policy annotation and the reserved CPUs of a static kubelet.
std::string policyJson(const NodeTopologyInputs& in, const std::vector<int>& reserved) {
  ojson o = ojson::object();
  if (!in.kubelet.cpuManagerPolicy.empty()) o["policy"] = in.kubelet.cpuManagerPolicy;
  if (!in.kubelet.cpuManagerPolicyOptions.empty()) {
    ojson opts = ojson::object();
    for (const auto& [k, v] : in.kubelet.cpuManagerPolicyOptions) opts[k] = v;
    o["options"] = std::move(opts);
  }
  if (!reserved.empty()) o["reservedCPUs"] = renderCpuList(reserved);
  return dump(o);
}

Result<ojson> parseObject(const std::string& text, const char* what) {
  ojson doc = ojson::parse(text, nullptr, false);
  if (doc.is_discarded()) return makeError(std::string(what) + ": not valid JSON");
  if (!doc.is_null() && !doc.is_object()) return makeError(std::string(what) + ": not an object");
  return doc;
}

}  // namespace

std::vector<int> CpuSetRule::allShareCpus() const {
  std::set<int> all;
  for (const CpuSharePool& p : sharePools) all.insert(p.cpus.begin(), p.cpus.end());
  return sorted(std::move(all));
}

std::vector<int> CpuSetRule::shareCpusOfNodes(const std::vector<int>& nodes) const {
  std::set<int> all;
  for (const CpuSharePool& p : sharePools) {
    if (std::find(nodes.begin(), nodes.end(), p.node) != nodes.end()) {
      all.insert(p.cpus.begin(), p.cpus.end());
    }
  }
  return sorted(std::move(all));
}

CpuTopology lscpuTopology(const CpuTopology& topo) {
  // Numbered over online and offline CPUs by ascending id, as lscpu lists them.
  std::vector<CpuInfo> all = topo.cpus;
  all.insert(all.end(), topo.offline.begin(), topo.offline.end());
  std::sort(all.begin(), all.end(), [](const CpuInfo& a, const CpuInfo& b) { return a.id < b.id; });
  std::map<int, int> sockets;
  std::map<std::pair<int, int>, int> cores;
  std::map<int, std::pair<int, int>> logical;  // id -> (socket, core)
  for (const CpuInfo& c : all) {
    const int socket =
        sockets.try_emplace(c.socket, static_cast<int>(sockets.size())).first->second;
    const int core =
        cores.try_emplace({c.socket, c.core}, static_cast<int>(cores.size())).first->second;
    logical[c.id] = {socket, core};
  }
  CpuTopology out = topo;
  for (auto* list : {&out.cpus, &out.offline}) {
    for (CpuInfo& c : *list) std::tie(c.socket, c.core) = logical.at(c.id);
  }
  return out;
}

std::vector<int> takeCpusByTopology(const CpuTopology& topo, int n) {
  std::set<int> taken;
  if (n <= 0) return {};
  // Sockets and cores (by socket, core_id), each as its ascending CPU ids.
  std::map<int, std::vector<int>> sockets;
  std::map<std::pair<int, int>, std::vector<int>> cores;
  for (const CpuInfo& c : topo.cpus) {
    sockets[c.socket].push_back(c.id);
    cores[{c.socket, c.core}].push_back(c.id);
  }
  auto need = [&] { return n - static_cast<int>(taken.size()); };
  for (const auto& [id, cpus] : sockets) {
    if (need() >= static_cast<int>(cpus.size())) taken.insert(cpus.begin(), cpus.end());
  }
  // Whole cores, socket by socket, each socket's by lowest CPU id (the kubelet's
  // core id): the kubelet packs a reservation into the first socket.
  std::vector<std::pair<int, const std::vector<int>*>> coreList;
  for (const auto& [key, cpus] : cores) coreList.push_back({key.first, &cpus});
  std::sort(coreList.begin(), coreList.end(), [](const auto& a, const auto& b) {
    return std::pair(a.first, a.second->front()) < std::pair(b.first, b.second->front());
  });
  for (const auto& [socket, cpus] : coreList) {
    // A core of one thread is no different from a single CPU: the next step, by id.
    if (cpus->size() < 2 || taken.count(cpus->front()) != 0) continue;
    if (need() >= static_cast<int>(cpus->size())) taken.insert(cpus->begin(), cpus->end());
  }
  // Single CPUs, socket by socket, lowest ids first.
  for (const auto& [id, cpus] : sockets) {
    for (int cpu : cpus) {
      if (need() <= 0) break;
      taken.insert(cpu);
    }
  }
  return sorted(std::move(taken));
}

std::string nrtTopologyPolicy(const std::string& policy, const std::string& scope) {
  std::string level;
  if (scope == "container") level = "ContainerLevel";
  if (scope == "pod") level = "PodLevel";
  if (level.empty()) return "None";
  if (policy == "single-numa-node") return "SingleNUMANode" + level;
  if (policy == "restricted") return "Restricted" + level;
  if (policy == "best-effort") return "BestEffort" + level;
  return "None";
}

Result<NodeTopology> computeNodeTopology(const NodeTopologyInputs& in) {
  if (in.topology == nullptr || in.topology->cpus.empty()) {
    return makeError("no CPU topology");
  }
  if (!in.topology->placement) {
    return makeError("the CPU topology has no cores, sockets or NUMA nodes (sysfs unreadable)");
  }
  const CpuTopology topo = lscpuTopology(*in.topology);
  NodeTopology out;
  std::map<int, const CpuInfo*> byId;
  for (const CpuInfo& c : topo.cpus) byId[c.id] = &c;
  std::set<int> ls;
  for (const CpuInfo& c : topo.cpus) ls.insert(c.id);

  // The node's reservation: its reservedCPUs, or resources.cpu taken by topology.
  ojson reservationCopy = ojson::object();
  std::vector<int> nodeReserved;
  if (in.reservationJson && !in.reservationJson->empty()) {
    auto parsed = parseNodeReservation(*in.reservationJson);
    if (!parsed) return makeError("reservation: " + parsed.error().message);
    auto raw = parseObject(*in.reservationJson, "reservation");
    if (!raw) return raw.error();
    nodeReserved = parsed->reservedCpus;
    if (nodeReserved.empty() && parsed->cpuMilli > 0) {
      nodeReserved = takeCpusByTopology(topo, static_cast<int>((parsed->cpuMilli + 999) / 1000));
    }
    if (raw->is_object()) {
      if (auto r = raw->find("resources"); r != raw->end() && r->is_object() && !r->empty()) {
        reservationCopy["resources"] = *r;
      }
      if (!nodeReserved.empty()) reservationCopy["reservedCPUs"] = renderCpuList(nodeReserved);
      if (auto a = raw->find("applyPolicy");
          a != raw->end() && a->is_string() && !a->get<std::string>().empty()) {
        reservationCopy["applyPolicy"] = *a;
      }
    }
  }
  // SYSTEM-QoS: its cpuset (rule 3), removed from the pools when exclusive.
  std::string systemQosCopy = "{}";  // koordlet: an empty SystemQOSResource when absent
  std::vector<int> systemExclusive;
  if (in.systemQosResourceJson && !in.systemQosResourceJson->empty()) {
    auto raw = parseObject(*in.systemQosResourceJson, "system-qos-resource");
    if (!raw) return raw.error();
    if (raw->is_object()) {
      ojson copy = ojson::object();
      if (auto c = raw->find("cpuset"); c != raw->end() && c->is_string()) {
        auto cpus = parseAnnotationCpuList(c->get<std::string>());
        if (!cpus) return makeError("system-qos-resource: cpuset: " + cpus.error().message);
        // Only CPUs the node has: a cpuset naming others would be refused by the kernel.
        std::vector<int> missing;
        for (int id : *cpus) {
          (byId.count(id) != 0 ? out.rule.systemQosCpus : missing).push_back(id);
        }
        if (!missing.empty()) {
          out.warnings.push_back("system-qos-resource: cpuset: CPUs " + renderCpuList(missing) +
                                 " are not online on this node, left out");
        }
        if (!cpus->empty()) copy["cpuset"] = c->get<std::string>();
      }
      bool exclusive = true;  // koordinator's default when absent
      if (auto e = raw->find("cpusetExclusive"); e != raw->end() && e->is_boolean()) {
        exclusive = e->get<bool>();
        copy["cpusetExclusive"] = exclusive;
      }
      if (exclusive) systemExclusive = out.rule.systemQosCpus;
      systemQosCopy = dump(copy);
    }
  }

  // The kubelet's static policy: its reserved CPUs and the CPUs it pinned.
  std::vector<int> kubeletReserved;
  ojson allocs = ojson::array();
  const bool isStatic = in.kubelet.cpuManagerPolicy == "static";
  if (isStatic) {
    if (!in.kubelet.reservedSystemCpus.empty()) {
      auto cpus = parseAnnotationCpuList(in.kubelet.reservedSystemCpus);
      if (cpus) {
        kubeletReserved = *cpus;
      } else {
        out.warnings.push_back("kubelet reservedSystemCPUs: " + cpus.error().message);
      }
    } else if (in.kubelet.reservedCpuMilli > 0) {
      kubeletReserved =
          takeCpusByTopology(topo, static_cast<int>((in.kubelet.reservedCpuMilli + 999) / 1000));
    }
  }
  std::map<std::string, const Pod*> podsByUid;
  std::set<std::string> koordManaged;  // LS/BE pods and pods with a scheduler cpuset
  for (const Pod* p : in.pods) {
    if (p == nullptr) continue;
    podsByUid[p->uid] = p;
    if (p->koordQos == KoordQos::kLS || p->koordQos == KoordQos::kBE) koordManaged.insert(p->uid);
  }

  // Pods' scheduler cpusets (resource-status): out of both pools (BE: LSE only).
  std::set<int> be = ls;
  for (const Pod* p : in.pods) {
    if (p == nullptr || !p->active()) continue;
    auto it = p->annotations.find(kResourceStatusAnnotation);
    if (it == p->annotations.end()) continue;
    auto cpus = parseResourceStatusCpuset(it->second);
    if (!cpus) {
      out.warnings.push_back("pod " + p->ns + "/" + p->name + ": " + cpus.error().message);
      continue;
    }
    if (cpus->empty()) continue;
    koordManaged.insert(p->uid);
    for (int id : *cpus) {
      ls.erase(id);
      if (p->koordQos == KoordQos::kLSE) be.erase(id);
    }
  }
  if (isStatic && in.checkpoint != nullptr) {
    for (const auto& [uid, containers] : in.checkpoint->entries) {  // map: by uid
      if (koordManaged.count(uid) != 0) continue;
      std::set<int> cpus;
      for (const auto& [name, list] : containers) {
        auto parsed = parseAnnotationCpuList(list);
        if (!parsed) {
          out.warnings.push_back("cpu_manager_state: entries." + uid + "." + name + ": " +
                                 parsed.error().message);
          continue;
        }
        cpus.insert(parsed->begin(), parsed->end());
      }
      if (cpus.empty()) continue;
      ojson a = ojson::object();
      if (auto p = podsByUid.find(uid); p != podsByUid.end()) {
        a["namespace"] = p->second->ns;
        a["name"] = p->second->name;
      }
      a["uid"] = uid;
      a["cpuset"] = renderCpuList(sorted(cpus));
      a["managedByKubelet"] = true;
      allocs.push_back(std::move(a));
      for (int id : cpus) {
        ls.erase(id);
        be.erase(id);
      }
    }
  }
  // The pools of what pods and the kubelet left; then the node's reserved and
  // exclusive SYSTEM CPUs out of each, a pool they empty kept without its cpuset, as
  // koordlet's removeNodeReservedCPUs / removeSystemQOSCPUs leave it.
  auto carve = [&](std::vector<CpuSharePool> pools) {
    for (CpuSharePool& p : pools) {
      std::erase_if(p.cpus, [&](int id) {
        return std::binary_search(nodeReserved.begin(), nodeReserved.end(), id) ||
               std::binary_search(systemExclusive.begin(), systemExclusive.end(), id);
      });
    }
    return pools;
  };
  out.rule.sharePools = carve(poolsOf(ls, byId));
  out.rule.beSharePools = carve(poolsOf(be, byId));
  out.rule.kubeletPolicy = in.kubelet.cpuManagerPolicy;

  auto& anno = out.content.annotations;
  anno[kAnnoCpuBasicInfo] = basicInfoJson(in.basicInfo);
  anno[kAnnoCpuTopology] = topologyJson(topo);
  anno[kAnnoCpuSharedPools] = poolsJson(out.rule.sharePools);
  anno[kAnnoBeCpuSharedPools] = poolsJson(out.rule.beSharePools);
  anno[kAnnoCpuManagerPolicy] = policyJson(in, kubeletReserved);
  anno[kAnnoPodCpuAllocs] = allocs.empty() ? "null" : dump(allocs);
  anno[kAnnoNodeReservation] = dump(reservationCopy);
  anno[kAnnoSystemQosResource] = systemQosCopy;
  out.content.topologyPolicy =
      in.kubeletConfigKnown
          ? nrtTopologyPolicy(in.kubelet.topologyManagerPolicy, in.kubelet.topologyManagerScope)
          : "None";

  // Zones: every NUMA node with CPUs or memory.
  std::map<int, int> cpusPerNode;
  for (const CpuInfo& c : topo.cpus) ++cpusPerNode[c.node];
  std::map<int, int64_t> memory = in.numaMemoryBytes;
  if (memory.empty()) memory[0] = in.memTotalBytes;
  std::set<int> nodes;
  for (const auto& [n, count] : cpusPerNode) nodes.insert(n);
  for (const auto& [n, bytes] : memory) nodes.insert(n);
  for (int n : nodes) {
    NrtZone z;
    z.name = "node-" + std::to_string(n);
    z.resources = {
        {"cpu", std::to_string(cpusPerNode.count(n) != 0 ? cpusPerNode[n] : 0)},
        {"hugepages-1Gi", "0"},
        {"hugepages-2Mi", "0"},
        {"memory", formatQuantityBinarySI(memory.count(n) != 0 ? memory[n] : 0)},
    };
    out.content.zones.push_back(std::move(z));
  }
  std::sort(out.content.zones.begin(), out.content.zones.end(),
            [](const NrtZone& a, const NrtZone& b) { return a.name < b.name; });
  return out;
}

}  // namespace koord
