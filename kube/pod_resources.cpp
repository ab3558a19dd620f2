#include "kube/pod_resources.h"

#include <algorithm>

namespace koord {
namespace {

Result<int64_t> add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return makeError("sum overflows int64");
  return out;
}

Status checkValue(const ContainerAmount& c) {
  if (c.value && *c.value < 0) {
    return makeError(std::string(toString(c.kind)) + " " + std::string(c.name) + ": value " +
                     std::to_string(*c.value) + " is negative");
  }
  return Ok{};
}

// The kubelet's loop, shared by requests and limits: `sum` of app containers and
// sidecars, `initMax` of each regular init container beside the sidecars before it.
Result<int64_t> aggregate(std::span<const ContainerAmount> containers) {
  int64_t sum = 0;
  int64_t sidecars = 0;
  int64_t initMax = 0;
  for (const ContainerAmount& c : containers) {
    if (Status s = checkValue(c); !s) return s.error();
    const int64_t v = c.value.value_or(0);
    Result<int64_t> next = int64_t{0};
    switch (c.kind) {
      case ContainerKind::kApp:
        next = add(sum, v);
        if (!next) return next.error();
        sum = *next;
        break;
      case ContainerKind::kSidecar:
        next = add(sum, v);
        if (!next) return next.error();
        sum = *next;
        next = add(sidecars, v);
        if (!next) return next.error();
        sidecars = *next;
        initMax = std::max(initMax, sidecars);
        break;
      case ContainerKind::kInit:
        next = add(sidecars, v);
        if (!next) return next.error();
        initMax = std::max(initMax, *next);
        break;
    }
  }
  return std::max(sum, initMax);
}

}  // namespace

const char* toString(ContainerKind k) {
  switch (k) {
    case ContainerKind::kApp:
      return "container";
    case ContainerKind::kInit:
      return "init container";
    case ContainerKind::kSidecar:
      return "sidecar";
  }
  return "container";
}

Result<int64_t> podRequests(std::span<const ContainerAmount> containers,
                            std::optional<int64_t> overhead) {
  auto total = aggregate(containers);
  if (!total) return total.error();
  if (overhead && *overhead > 0) return add(*total, *overhead);
  return *total;
}

Result<std::optional<int64_t>> podLimits(std::span<const ContainerAmount> containers,
                                         std::optional<int64_t> overhead) {
  auto total = aggregate(containers);
  if (!total) return total.error();
  for (const ContainerAmount& c : containers) {
    if (!c.value || *c.value == 0) return std::optional<int64_t>{};
  }
  if (containers.empty()) return std::optional<int64_t>{};
  if (overhead && *overhead > 0) {
    auto withOverhead = add(*total, *overhead);
    if (!withOverhead) return withOverhead.error();
    return std::optional<int64_t>{*withOverhead};
  }
  return std::optional<int64_t>{*total};
}

}  // namespace koord
