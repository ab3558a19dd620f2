// What the node topology needs from the kubelet's own configuration, as koordlet
// reads it (reference koordlet.md §1.3, §5.3; statesinformer's node topology):
//  * GET /configz on the kubelet: {"kubeletconfig": {...KubeletConfiguration...}}:
//    cpuManagerPolicy, cpuManagerPolicyOptions, reservedSystemCPUs, the cpu of
//    kubeReserved and systemReserved (the static policy's reserved CPUs when
//    reservedSystemCPUs is not set), topologyManagerPolicy and -Scope;
//  * <var-lib-kubelet-dir>/cpu_manager_state, the static CPU manager's checkpoint:
//    {"policyName", "defaultCpuSet", "entries": {"<pod uid>": {"<container>": "cpus"}},
//    "checksum"}: the CPUs the kubelet pinned, reported as pod-cpu-allocs.
//
// Parsing only; the agent does the I/O. Errors name the source and the field:
// "kubelet /configz: kubeletconfig.cpuManagerPolicyOptions.full-pcpus-only: got a number".
// Fields the agent does not use are not looked at (a newer kubelet's additions
// never fail the parse).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace koord {

struct KubeletCpuConfig {
  std::string cpuManagerPolicy;                                // "none", "static"; "" absent
  std::map<std::string, std::string> cpuManagerPolicyOptions;  // e.g. full-pcpus-only=true
  std::string reservedSystemCpus;                              // "0-1"; "" absent
  int64_t reservedCpuMilli = 0;       // kubeReserved.cpu + systemReserved.cpu
  std::string topologyManagerPolicy;  // "none", "best-effort", "restricted", "single-numa-node"
  std::string topologyManagerScope;   // "container", "pod"
  bool operator==(const KubeletCpuConfig&) const = default;
};

// The body of the kubelet's /configz.
Result<KubeletCpuConfig> parseKubeletConfigz(std::string_view body);

struct CpuManagerCheckpoint {
  std::string policyName;
  std::string defaultCpuSet;
  // pod uid -> container name -> its CPU list as the kubelet wrote it.
  std::map<std::string, std::map<std::string, std::string>> entries;
};

// The kubelet's cpu_manager_state. `source` names the file in errors. The old
// (kubelet < 1.18) format keyed entries by container id with string values: an
// error, as koordlet's parse fails on it too.
Result<CpuManagerCheckpoint> parseCpuManagerCheckpoint(std::string_view text,
                                                       std::string_view source);

// The checkpoint as read from `path`: an absent file (ENOENT) is no checkpoint
// (nothing pinned, nullopt); any other read error, or text that does not parse, is
// an error naming the file.
Result<std::optional<CpuManagerCheckpoint>> readCpuManagerCheckpoint(
    const Result<std::string>& read, std::string_view path);

}  // namespace koord
