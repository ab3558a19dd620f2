// The NRI protobuf messages (api.proto, ttrpc.proto) under short names. The
// generated code lives in ::nri::pkg::api::v1alpha1 (the wire package name); our
// own code is koord::nri, so it always goes through this alias.
#pragma once

#include "nri/api.pb.h"
#include "nri/ttrpc.pb.h"

namespace koord::nri {
namespace api = ::nri::pkg::api::v1alpha1;
namespace wire = ::koord::ttrpc;

inline constexpr const char* kRuntimeService = "nri.pkg.api.v1alpha1.Runtime";
inline constexpr const char* kPluginService = "nri.pkg.api.v1alpha1.Plugin";

// Subscription mask bit of an event: 1 << (event - 1) (reference nri.md §5.2).
constexpr int32_t eventBit(api::Event e) { return int32_t{1} << (static_cast<int>(e) - 1); }
// Bits a runtime before NRI v0.10 (containerd 1.7, 2.0, 2.1) accepts.
inline constexpr int32_t kValidEventsBeforeV010 = 0x7FF;
}  // namespace koord::nri
