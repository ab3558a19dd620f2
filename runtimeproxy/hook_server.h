// HookServer: koord-runtime-proxy's RuntimeHookService (package runtime.v1alpha1)
// on a unix socket (or TCP if asked), answering through ProxyHooks.
//
// Why libgrpc++ (Debian's, with protobuf-compiler-grpc for the stubs) and not our
// own HTTP/2: the proxy is a Go gRPC client (grpc-go, lazy dial, HTTP/2 with
// HPACK, flow control, keepalive and GOAWAY); a second HTTP/2 stack of ours would
// be far more code to get right than the hooks themselves, and NRI's ttrpc (which
// we do frame ourselves) is a much smaller protocol.
//
// Bounds and faults:
//   * at most `maxInFlight` calls are handled at once; more are answered
//     RESOURCE_EXHAUSTED at once (and counted), never queued; gRPC's own threads
//     are capped by a resource quota (`maxThreads`);
//   * a message over `maxMessageBytes` is refused by gRPC (RESOURCE_EXHAUSTED)
//     before it reaches us; so is a stream over `maxStreamsPerConnection`;
//   * garbage (not HTTP/2) closes its connection; a client that connects and
//     says nothing holds one descriptor and costs nothing else (gRPC limits a
//     connection's life, `maxAge`, and idleness, `idleTimeout`, only once it has
//     spoken HTTP/2; grpc-go, the proxy, redials after either);
//   * a call is answered from the published HookState only, never waiting on the
//     agent loop, a file or the network.
// The socket: a stale socket at the path is replaced (as koordlet); anything else
// there is refused with an error; the parent directory is created; the socket is
// made 0660 and removed again on stop.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "runtimeproxy/proxy_hooks.h"

namespace grpc {
class Server;
}

namespace koord::runtimeproxy {

struct HookServerConfig {
  std::string network = "unix";  // unix | tcp | tcp4 | tcp6
  std::string address;           // socket path, or host:port
  int maxInFlight = 32;
  int maxThreads = 16;
  int maxMessageBytes = 4 << 20;
  int maxStreamsPerConnection = 32;
  std::chrono::milliseconds handshakeTimeout{5000};
  std::chrono::milliseconds idleTimeout{std::chrono::minutes(5)};
  // Every connection is closed this long after it opened (GOAWAY, then `maxAgeGrace`
  // for calls in flight; grpc-go redials at the next call): the one bound on a
  // client that connects and never speaks HTTP/2.
  std::chrono::milliseconds maxAge{std::chrono::minutes(10)};
  std::chrono::milliseconds maxAgeGrace{std::chrono::seconds(10)};
};

// The seven RPCs, in the order of the proto.
enum class Rpc : int {
  kPreRunPodSandbox,
  kPostStopPodSandbox,
  kPreCreateContainer,
  kPreStartContainer,
  kPostStartContainer,
  kPostStopContainer,
  kPreUpdateContainerResources,
};
inline constexpr int kRpcCount = 7;
const char* rpcName(Rpc rpc);  // "PreRunPodSandboxHook", ...
HookStage stageOf(Rpc rpc);

// Counters: calls answered per RPC and outcome.
enum class Outcome : int { kOk, kInvalidArgument, kFailedPrecondition, kBusy };
inline constexpr int kOutcomeCount = 4;
const char* toString(
    Outcome o);  // "OK", "InvalidArgument", "FailedPrecondition", "ResourceExhausted"

struct HookServerStatus {
  bool serving = false;
  std::string endpoint;   // "unix:///path" or "host:port"
  std::string lastError;  // why it is not serving
  std::array<std::array<uint64_t, kOutcomeCount>, kRpcCount> calls{};
  uint64_t total() const;
  uint64_t failed() const;  // every outcome but OK
};

class HookServer {
 public:
  HookServer(HookServerConfig config, ProxyHooks& hooks);
  ~HookServer();
  HookServer(const HookServer&) = delete;
  HookServer& operator=(const HookServer&) = delete;

  // Binds and starts serving on gRPC's threads. An error names the address.
  Status start();
  // Stops accepting, lets calls in flight finish (at most `grace`), removes the
  // unix socket.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000));
  HookServerStatus status() const;

  // For the service implementation: admission and accounting of one call.
  bool admit();
  void finish(Rpc rpc, Outcome outcome);
  ProxyHooks& hooks() { return *hooks_; }

 private:
  class Service;
  HookServerConfig config_;
  ProxyHooks* hooks_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string endpoint_;
  std::string lastError_;
  std::atomic<int> inFlight_{0};
  std::array<std::array<std::atomic<uint64_t>, kOutcomeCount>, kRpcCount> calls_{};
};

// Prepares a unix socket path: creates the parent directory, removes a stale
// socket, refuses anything else already there. Exposed for tests.
Status prepareSocketPath(const std::string& path);

}  // namespace koord::runtimeproxy
