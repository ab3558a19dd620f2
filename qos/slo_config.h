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
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent/result.h"

namespace koord {

enum class CpuSuppressPolicy { kCpuset, kCfsQuota };
const char* toString(CpuSuppressPolicy p);  // "cpuset", "cfsQuota"

// spec.resourceUsedThresholdWithBE (only the fields the agent acts on are typed;
// the rest are validated as integers and kept for /config).
struct ResourceThresholdStrategy {
  bool enable = false;
  int64_t cpuSuppressThresholdPercent = 65;          // 0..100
  std::optional<int64_t> cpuSuppressMinPercent;      // 0..100, no default
  CpuSuppressPolicy cpuSuppressPolicy = CpuSuppressPolicy::kCpuset;
  int64_t memoryEvictThresholdPercent = 70;          // 0..100
};

enum class CpuBurstPolicy { kNone, kCpuBurstOnly, kCfsQuotaBurstOnly, kAuto };
const char* toString(CpuBurstPolicy p);  // "none", "cpuBurstOnly", "cfsQuotaBurstOnly", "auto"

// spec.cpuBurstStrategy, also the shape of the pod annotation koordinator.sh/cpuBurst.
struct CpuBurstConfig {
  CpuBurstPolicy policy = CpuBurstPolicy::kNone;
  int64_t cpuBurstPercent = 1000;            // >= 0
  int64_t cfsQuotaBurstPercent = 300;        // >= 100
  int64_t cfsQuotaBurstPeriodSeconds = -1;   // -1 = no limiter, else >= 0
  int64_t sharePoolThresholdPercent = 50;    // 0..100
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
  int64_t catRangeStartPercent = 0;  // 0..100, <= end
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
  // The whole effective spec in NodeSLO's JSON field names (defaults + file),
  // including the parts no strategy reads yet (systemStrategy, blkio, network,
  // hostApplications, extensions). This is what GET /config returns under "spec".
  nlohmann::json effective;
};

// koordlet's built-in spec, as if no file were given.
NodeSloSpec defaultNodeSlo();

// Parses text (YAML or JSON; JSON is YAML) and merges it over the defaults. A field
// set in the file replaces the default; objects merge field by field. Rejected:
// not a mapping, a wrong type, a percent out of range, an unknown policy, an
// unknown field in a typed block (a typo would otherwise silently keep a default).
Result<NodeSloSpec> parseNodeSlo(std::string_view text, std::string_view fileName);

// The pod annotation koordinator.sh/cpuBurst (JSON CPUBurstConfig) merged over the
// node's config, pod fields winning. Errors name the annotation and field.
Result<CpuBurstConfig> mergeCpuBurstAnnotation(const CpuBurstConfig& node, std::string_view json);

}  // namespace koord
