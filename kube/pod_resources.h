// A pod's requests and limits as the kubelet counts them (Kubernetes 1.29+, with
// restartable init containers, "sidecars"): component-helpers' PodRequests and
// PodLimits, and the kubelet's rule for whether a pod cgroup gets a limit at all.
//
//   requests: Σ app containers + Σ sidecars, raised to each regular init container's
//             request plus the sidecars started before it (init containers run in
//             spec order, each beside the sidecars already up); then the overhead.
//   limits:   the same arithmetic on limits, but unlimited (nullopt) as soon as any
//             container (app, sidecar or regular init) has none: the kubelet then
//             sets no pod-level limit for that resource. The overhead is added to a
//             limit only (never makes one).
// Values are one resource's, in its own unit. A negative value, or a sum past
// int64, is an error naming the container; nothing is clamped.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/result.h"

namespace koord {

enum class ContainerKind { kApp, kInit, kSidecar };
const char* toString(ContainerKind k);  // "container", "init container", "sidecar"

// One container's value of one resource; containers in spec order (init containers
// in their own order; app containers anywhere).
struct ContainerAmount {
  std::string_view name;
  ContainerKind kind = ContainerKind::kApp;
  std::optional<int64_t> value;  // absent: not set in the spec
};

// PodRequests for one resource (absent values count 0), plus `overhead`.
Result<int64_t> podRequests(std::span<const ContainerAmount> containers,
                            std::optional<int64_t> overhead = std::nullopt);
// PodLimits for one resource; nullopt when any container has no limit (or 0, which
// the kubelet treats as none for cpu and memory). Plus `overhead` when limited.
Result<std::optional<int64_t>> podLimits(std::span<const ContainerAmount> containers,
                                         std::optional<int64_t> overhead = std::nullopt);

}  // namespace koord
