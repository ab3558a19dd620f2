// Registration with koord-runtime-proxy: the file the proxy finds hook servers by
// (it loads every *json file of /etc/runtime/hookserver.d, the host directory
// the DaemonSet mounts at --runtime-hooks-config-path).
//
// koordlet.json, as koordlet writes it (Go's json.MarshalIndent with a tab, keys
// in this order, empty ones left out):
//   {
//   	"remote-endpoint": "<--runtime-hooks-host-endpoint>",
//   	"failure-policy": "<--runtime-hooks-failure-policy>",
//   	"runtime-hooks": [<the stages the enabled hooks use, minus --runtime-hooks-disable-stages>]
//   }
// Stages in the proto's order (koordlet's follow Go's map order, which the proxy
// ignores). Written atomically (a temporary file that does not end in "json",
// fsync, rename), and only when its content changes, so the proxy's watch sees
// one event per real change. Left in place on exit, as koordlet does: the proxy
// keeps asking the socket, and its failure policy decides what a container
// created while the agent restarts gets (Ignore: the request as the kubelet sent
// it; the reconciler repairs it once the agent is back).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qos/hook_runtime.h"

namespace koord::runtimeproxy {

inline constexpr const char* kRegistrationFile = "koordlet.json";

// The stages at which at least one of `enabled` runs, minus `disabled`.
std::vector<HookStage> registeredStages(std::span<const HookName> enabled,
                                        std::span<const HookStage> disabled);

// The file's content, byte for byte as koordlet's.
std::string registrationJson(std::string_view remoteEndpoint, std::string_view failurePolicy,
                             std::span<const HookStage> stages);

// <dir>/koordlet.json.
std::string registrationPath(const std::string& dir);

// Writes `content` to <dir>/koordlet.json unless it already holds exactly that
// (creating dir if missing). Returns whether it wrote; an error names the path.
Result<bool> writeRegistration(const std::string& dir, std::string_view content);

}  // namespace koord::runtimeproxy
