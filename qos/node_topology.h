// The node as koord-scheduler sees it: the content of the node's
// NodeResourceTopology (kube/nrt_object.h) and the CPU share pools the CPUSetAllocator
// hook gives pods, computed together from the CPU topology, the kubelet's CPU manager,
// the node's reservations and the pods, as koordlet does (reference koordlet.md §4.10,
// §5.3; statesinformer's node topology). Pure: the agent gathers the inputs.
//
// Annotations (values as Go's json.Marshal prints them: field order, omitempty, "null"
// for an absent list, as koordlet's values are):
//   node.koordinator.sh/cpu-topology   {"detail":[{"id","core","socket","node"}...]}, by id.
//       "core" and "socket" are lscpu's logical ids (koordlet reads `lscpu -e`; see
//       lscpuTopology below), and so are the sockets everywhere else here.
//   node.koordinator.sh/cpu-basic-info {"cpuModel","hyperThreadEnabled","turboEnabled",
//       "catL3CbmMask","vendorID"}
//   node.koordinator.sh/cpu-shared-pools     [{"socket","node","cpuset"}...] per NUMA node:
//       every CPU minus any pod's resource-status cpuset, minus the CPUs the kubelet's
//       static policy pinned (pod-cpu-allocs), minus the node reservation's reservedCPUs,
//       minus the exclusive SYSTEM-QoS cpuset; sorted by socket, then node; a pool the
//       reservation empties stays, without "cpuset"; no pool at all: [].
//   node.koordinator.sh/be-cpu-shared-pools  the same, but only LSE pods' cpusets removed.
//   kubelet.koordinator.sh/cpu-manager-policy {"policy","options","reservedCPUs"}
//   node.koordinator.sh/pod-cpu-allocs [{"namespace","name","uid","cpuset",
//       "managedByKubelet":true}...] (static policy only), by uid.
//   node.koordinator.sh/reservation, node.koordinator.sh/system-qos-resource: copies of
//       what the node keeps, reservedCPUs normalised (or, with only resources.cpu,
//       chosen by topology); {} for no reservation or system-qos resource. The
//       system-qos cpuset is held to the node's online CPUs (others: a warning).
// Zones: one per NUMA node, cpu (its CPU count), memory (its MemTotal), hugepages-1Gi
// and hugepages-2Mi always "0", as koordlet reports them with its HugePageReport gate
// off (the gate has no effect here, said at start).
// Topology policy: the kubelet's topologyManagerPolicy × topologyManagerScope.
//
// Departures (decisions): only online CPUs are listed (koordlet's lscpu also lists
// offline ones, which no cpuset can use); only active (Pending/Running) pods hold
// CPUs out of the pools; a NUMA node with memory and no CPU still gets a zone (cpu 0)
// where koordlet fails the whole report; a pod whose resource-status does not parse
// is skipped with a warning, as koordlet.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "kube/kubelet_config.h"
#include "kube/nrt_object.h"
#include "kube/pod.h"
#include "metrics/cpu_topology.h"
#include "metrics/node_hardware.h"

namespace koord {

struct CpuSharePool {
  int socket = 0;
  int node = 0;
  std::vector<int> cpus;
  bool operator==(const CpuSharePool&) const = default;
};

// What the CPUSetAllocator hook decides from (koordlet's cpuset rule).
struct CpuSetRule {
  std::vector<CpuSharePool> sharePools;    // LS
  std::vector<CpuSharePool> beSharePools;  // BE (used with BECPUManager only)
  std::string kubeletPolicy;               // "static" keeps unpinned pods' cpusets
  std::vector<int> systemQosCpus;          // the SYSTEM-QoS cpuset (exclusive or not)
  bool operator==(const CpuSetRule&) const = default;
  // Every share pool's CPUs, ascending.
  std::vector<int> allShareCpus() const;
  // The pools of the given NUMA nodes, ascending.
  std::vector<int> shareCpusOfNodes(const std::vector<int>& nodes) const;
};

struct NodeTopologyInputs {
  const CpuTopology* topology = nullptr;  // with placement (sysfs), required
  CpuBasicInfo basicInfo;
  std::map<int, int64_t> numaMemoryBytes;  // empty: all on node 0 with memTotalBytes
  int64_t memTotalBytes = 0;               // /proc/meminfo MemTotal
  KubeletCpuConfig kubelet;                // policy "" = not known
  bool kubeletConfigKnown = false;         // from /configz (else only the policy, from a flag)
  const CpuManagerCheckpoint* checkpoint = nullptr;  // static policy only
  // The node's reservation and system-qos-resource JSON, as chosen (flag or Node
  // annotation); nullopt: none.
  std::optional<std::string> reservationJson;
  std::optional<std::string> systemQosResourceJson;
  std::vector<const Pod*> pods;
};

struct NodeTopology {
  NrtContent content;
  CpuSetRule rule;
  std::vector<std::string> warnings;  // one line per skipped input, naming it
};

// Errors: no topology, or a topology without placement (the ids-only fallback);
// a reservation or system-qos JSON that does not parse (naming it).
Result<NodeTopology> computeNodeTopology(const NodeTopologyInputs& in);

// The kubelet's topology manager policy and scope as an NRT topology policy:
// "SingleNUMANodeContainerLevel", ..., "None".
std::string nrtTopologyPolicy(const std::string& policy, const std::string& scope);

// n CPUs chosen as the kubelet's static policy picks its reserved CPUs from a free
// node: whole sockets first, then whole cores (by lowest CPU id), then single CPUs,
// lowest ids first. Fewer CPUs than asked when the node has fewer.
std::vector<int> takeCpusByTopology(const CpuTopology& topo, int n);

// The topology as lscpu numbers it (koordlet's source): sockets numbered 0, 1, ...
// in the order each physical_package_id first appears by ascending CPU id, cores
// likewise per (socket, core_id) pair, so core ids are unique on the node. A
// 2-socket arm64 node's packages 36 and 8442 become sockets 0 and 1.
CpuTopology lscpuTopology(const CpuTopology& topo);

}  // namespace koord
