// NodeSLO config: the `spec` of koordinator's NodeSLO (reference koordlet.md §5.1)
// that drives the QoS strategies, read from --config (YAML or JSON) and merged
// over koordlet's built-in defaults, as koordlet merges the NodeSLO it watches.
//
// The file may hold a bare spec, a whole NodeSLO object (apiVersion/kind/spec), or
// koord-manager's slo-controller-config ConfigMap (each data key's clusterStrategy
// lands in its spec field), so operators can reuse what their cluster already has.
//
// Parsing is separate from I/O: parseNodeSlo takes the file's text and its name
// (for messages). Every rejection names the file, the field path and the reason:
//   "/etc/koordlet/slo.yaml: spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent:
//    150 is out of range 0..100"
// (all problems of one file are reported, one per line, at most 20). Syntax errors
// carry the position instead: "<file>:<line>:<column>: invalid YAML: <what>". Fields
// read from a ConfigMap are named where the operator edits them:
//   "<file>: data.resource-threshold-config: clusterStrategy.cpuSuppressPolicy: ..."
//
// Reading rules (decisions; koordlet itself gets a NodeSLO already checked by the
// API server and koord-manager, this agent reads a hand-edited file):
// - YAML 1.2 core scalars: plain 65 is an integer, "65" / '65' are strings, only
//   true/false (any case form) are booleans ("yes" is a string), ~ / null / empty is
//   "not set" (the default stays). Duplicate keys are an error. JSON is YAML, so a
//   JSON file takes the same path; the ConfigMap's data values are strict JSON as
//   koord-manager reads them (duplicate keys there: the last wins, as in Go). Not
//   supported: YAML merge keys (<<), tags beyond !!str/int/bool/float/null, text
//   that is not UTF-8. Aliases are expanded (at most 200000 values, 64 levels deep).
// - Field names match exactly or, as Go's encoding/json does for koord-manager,
//   case-insensitively (the docs' "CPUEvictTimeWindowSeconds" is accepted and shown
//   under its canonical name).
// - Strict (unknown field = error, with a "did you mean"): resourceUsedThresholdWithBE,
//   cpuBurstStrategy, resourceQOSStrategy and its class blocks (lsrClass, lsClass,
//   beClass, systemClass, cgroupRoot), their cpuQOS, memoryQOS and resctrlQOS, and the
//   ConfigMap wrappers (clusterStrategy/nodeStrategies). A typo there would silently
//   keep a default. Kept as-is, only checked to be an object/array: unknown top-level
//   spec fields (newer koordinator versions add some; each gets a note), systemStrategy,
//   extensions, hostApplications, policies, blkioQOS, networkQOS.
// - Every integer field of the strict blocks is checked for type and range, typed in
//   the structs below or not (e.g. cpuEvictBEUsageThresholdPercent 0..100), plus the
//   pairs koordinator's validator orders: each *LowerPercent below its threshold/upper
//   when both are set (after merging defaults), catRangeStartPercent below
//   catRangeEndPercent (strictly: an empty range is an empty cache mask, which the
//   kernel refuses), mbaPercent 1..100 (0 would starve the class).
// - Merge: a field in the file replaces the default, objects merge field by field,
//   arrays replace, a null leaves the default.
// - slo-controller-config ConfigMap: resource-threshold-config, resource-qos-config,
//   cpu-burst-config and system-config give their clusterStrategy; host-application-config
//   gives its top-level "applications" (its Go type has no clusterStrategy). The
//   nodeStrategies / nodeConfigs are NOT applied: choosing one needs the node's
//   labels, which this agent does not read. That, and the keys only koord-manager
//   reads (colocation-config, ...), are listed in NodeSloSpec::notes, which GET /config
//   shows.
// - A top-level mapping without "kind" is a bare spec, except that one holding only
//   "data" is read as a ConfigMap and one holding "spec" (and no spec field) as a
//   NodeSLO (snippets cut from the docs look like that).
// - Empty text or an empty document gives the defaults. A document that is not a
//   mapping, more than one document, or text over kMaxSloConfigBytes is an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "qos/host_apps.h"

namespace koord {

// Larger config files are refused (the real ones are a few KiB).
inline constexpr size_t kMaxSloConfigBytes = 1u << 20;

enum class CpuSuppressPolicy { kCpuset, kCfsQuota };
const char* toString(CpuSuppressPolicy p);  // "cpuset", "cfsQuota"

enum class CpuEvictPolicy { kEvictByRealLimit, kEvictByAllocatable };
const char* toString(CpuEvictPolicy p);  // "evictByRealLimit", "evictByAllocatable"

// spec.resourceUsedThresholdWithBE (only the fields the agent acts on are typed;
// the rest are validated as integers and kept for /config).
struct ResourceThresholdStrategy {
  bool enable = false;
  int64_t cpuSuppressThresholdPercent = 65;      // 0..100
  std::optional<int64_t> cpuSuppressMinPercent;  // 0..100, no default
  CpuSuppressPolicy cpuSuppressPolicy = CpuSuppressPolicy::kCpuset;
  int64_t memoryEvictThresholdPercent = 70;  // 0..100
  // Eviction (reference §4.4, §4.5); unset fields have no default in koordlet.
  std::optional<int64_t> memoryEvictLowerPercent;             // 0..100
  std::optional<int64_t> cpuEvictBESatisfactionUpperPercent;  // 0..100
  std::optional<int64_t> cpuEvictBESatisfactionLowerPercent;  // 0..100
  std::optional<int64_t> cpuEvictBEUsageThresholdPercent;     // 0..100
  std::optional<int64_t> cpuEvictTimeWindowSeconds;           // >= 1
  std::optional<int64_t> cpuEvictThresholdPercent;            // 0..100
  std::optional<int64_t> cpuEvictLowerPercent;                // 0..100
  CpuEvictPolicy cpuEvictPolicy = CpuEvictPolicy::kEvictByRealLimit;
  std::optional<int64_t> evictEnabledPriorityThreshold;  // int32
  // CPUAllocatableEvict, MemoryAllocatableEvict (koordlet v1.8): percent of the Node's
  // batch/mid allocatable requested, and the priority at or under which pods count.
  // koordinator's API comments say 110 and 100, but koordlet applies no default: an
  // unset field skips the feature (said as its decision).
  std::optional<int64_t> cpuAllocatableEvictThresholdPercent;     // >= 0
  std::optional<int64_t> cpuAllocatableEvictLowerPercent;         // >= 0, below it
  std::optional<int64_t> memoryAllocatableEvictThresholdPercent;  // >= 0
  std::optional<int64_t> memoryAllocatableEvictLowerPercent;      // >= 0, below it
  std::optional<int64_t> allocatableEvictPriorityThreshold;       // 0..7999
};

enum class CpuBurstPolicy { kNone, kCpuBurstOnly, kCfsQuotaBurstOnly, kAuto };
const char* toString(CpuBurstPolicy p);  // "none", "cpuBurstOnly", "cfsQuotaBurstOnly", "auto"

// spec.cpuBurstStrategy, also the shape of the pod annotation koordinator.sh/cpuBurst.
struct CpuBurstConfig {
  CpuBurstPolicy policy = CpuBurstPolicy::kNone;
  int64_t cpuBurstPercent = 1000;           // 0..10000
  int64_t cfsQuotaBurstPercent = 300;       // >= 100
  int64_t cfsQuotaBurstPeriodSeconds = -1;  // -1 = no limiter, else >= 0
  int64_t sharePoolThresholdPercent = 50;   // 0..100
  bool burstsCpu() const {
    return policy == CpuBurstPolicy::kCpuBurstOnly || policy == CpuBurstPolicy::kAuto;
  }
  bool burstsQuota() const {
    return policy == CpuBurstPolicy::kCfsQuotaBurstOnly || policy == CpuBurstPolicy::kAuto;
  }
};

// resourceQOSStrategy.<class>.memoryQOS (reference §4.3), typed now so the memory
// QoS strategy of the next milestone reads the same validated config.
struct MemoryQos {
  bool enable = false;
  int64_t minLimitPercent = 0;     // 0..100
  int64_t lowLimitPercent = 0;     // 0..100
  int64_t throttlingPercent = 0;   // 0..100
  int64_t wmarkRatio = 95;         // 0..100
  int64_t wmarkScalePermill = 20;  // 1..1000
  int64_t wmarkMinAdj = 0;         // -25..50
  int64_t priorityEnable = 0;      // 0/1
  int64_t priority = 0;            // 0..12
  int64_t oomKillGroup = 0;        // 0/1
};

// resourceQOSStrategy.<class>.resctrlQOS (reference §4.7).
struct ResctrlQos {
  bool enable = false;
  int64_t catRangeStartPercent = 0;  // 0..100, < end
  int64_t catRangeEndPercent = 100;  // 0..100
  int64_t mbaPercent = 100;          // 1..100
};

// resourceQOSStrategy.<class>.cpuQOS.
struct CpuQos {
  bool enable = false;
  int64_t groupIdentity = 0;  // -1..2
  int64_t schedIdle = 0;      // 0/1
  bool coreExpeller = false;
};

struct ResourceQos {
  CpuQos cpu;
  MemoryQos memory;
  ResctrlQos resctrl;
};

// spec.resourceQOSStrategy: one block per class, defaults per class as koordlet's.
//
// The blocks hold the configured values (file over defaults) even when their
// enable is false, and so does NodeSloSpec::effective, so GET /config shows what an
// operator set. koordlet instead replaces a disabled LSR/LS/BE cpu, memory or resctrl
// block by the "none" values below (resetting the kernel knobs): a strategy that
// writes for disabled classes too (resctrl schemata, memory QoS reset) checks
// `enable` or calls resetDisabled() to get koordlet's view. cgroupRoot only carries
// blkioQOS in koordlet; its typed blocks are the struct defaults unless set.
struct ResourceQosStrategy {
  ResourceQos lsr;
  ResourceQos ls;
  ResourceQos be;
  ResourceQos system;
  ResourceQos cgroupRoot;
};

struct NodeSloSpec {
  ResourceThresholdStrategy threshold;
  CpuBurstConfig cpuBurst;
  ResourceQosStrategy qos;
  // spec.hostApplications, the valid entries (qos/host_apps.h; bad ones are in notes).
  std::vector<HostApplication> hostApplications;
  // The whole effective spec in NodeSLO's JSON field names (defaults + file),
  // including the parts no strategy reads yet (systemStrategy, blkio, network,
  // hostApplications, extensions). This is what GET /config returns under "spec".
  nlohmann::json effective;
  // Where the spec came from: "defaults", "spec", "NodeSLO <name>" or
  // "ConfigMap <namespace>/<name>".
  std::string source = "defaults";
  // GET /explain: the spec fields the source set (NodeSLO-spec-shaped; a field not in
  // it is koordlet's default), and where the source is, for an operator to find
  // it: "NodeSLO node-1 resourceVersion 42", "file /etc/koordlet/slo.yaml
  // (ConfigMap koordinator-system/slo-controller-config)", "default".
  nlohmann::json given = nlohmann::json::object();
  std::string origin = "default";
  // What the file held but the agent does not apply (ConfigMap nodeStrategies, keys
  // read only by koord-manager, top-level fields it does not know), one sentence
  // each, for GET /config.
  std::vector<std::string> notes;
};

// koordlet's reset values for a disabled block (§5.1): cpu {0, 0, false}, memory the
// "none" row of §4.3, resctrl 0..100 / MBA 100. enable is false in each.
CpuQos noneCpuQos();
MemoryQos noneMemoryQos();
ResctrlQos noneResctrlQos();
// koordlet's view of the classes: LSR, LS and BE blocks whose enable is false
// replaced by the none values (SYSTEM and cgroupRoot are kept, as koordlet does).
ResourceQosStrategy resetDisabled(const ResourceQosStrategy& qos);

// koordlet's built-in spec, as if no file were given.
NodeSloSpec defaultNodeSlo();

// Parses text (YAML or JSON; JSON is YAML) and merges it over the defaults. A field
// set in the file replaces the default; objects merge field by field. Rejected:
// not a mapping, a wrong type, a percent out of range, an unknown policy, an
// unknown field in a typed block (a typo would otherwise silently keep a default).
Result<NodeSloSpec> parseNodeSlo(std::string_view text, std::string_view fileName);

// The pod annotation koordinator.sh/cpuBurst (JSON CPUBurstConfig) merged over the
// node's config, pod fields winning. Errors name the annotation and field:
//   "annotation koordinator.sh/cpuBurst: cpuBurstPercent: expected an integer, got string \"x\""
// Accepted fields: policy, cpuBurstPercent, cfsQuotaBurstPercent,
// cfsQuotaBurstPeriodSeconds (sharePoolThresholdPercent is node-level only); others
// are an error, null leaves the node's value.
Result<CpuBurstConfig> mergeCpuBurstAnnotation(const CpuBurstConfig& node, std::string_view json);

}  // namespace koord
