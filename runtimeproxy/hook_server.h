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
//   * gRPC's callback API with a raw-message service: a handler parses the request
//     itself (one that does not parse is InvalidArgument, counted), computes the
//     answer from memory and hands it over; sending it holds no thread, so a slow
//     reader blocks nobody;
//   * at most `maxInFlight` calls are handled at once; more are answered
//     RESOURCE_EXHAUSTED at once (and counted), never queued; gRPC's threads are
//     capped by a resource quota (`maxThreads`);
//   * a message over `maxMessageBytes` is refused by gRPC (RESOURCE_EXHAUSTED)
//     before it reaches us, as is a stream over `maxStreamsPerConnection`; those
//     are not in our counts;
//   * garbage (not HTTP/2) closes its connection; a client that stops reading
//     holds its open streams' answers (at most `maxStreamsPerConnection` small
//     messages) until its connection ends; a client that connects
//     and says nothing holds one descriptor (gRPC 1.51 closed no such connection
//     within 5 s in our test, whatever the handshake timeout); connections that
//     spoke HTTP/2 are closed after `idleTimeout` idle or `maxAge` (grpc-go, the
//     proxy, redials at its next call);
//   * a call is answered from the published HookState only, never waiting on the
//     agent loop, a file or the network. Our deadline is `deadline` (100 ms, the
//     kubelet's CRI timeout is 2 min): a call that took longer is counted
//     (`HookServerStatus::overDeadline`), which has never happened in a
//     measurement (p99 0.21-0.25 ms, bench/RESULTS.md).
// The socket: the parent directory is created; a stale socket (nobody accepts on
// it: a killed agent's) is replaced, as koordlet; a socket some process still
// serves is refused (koordlet would take it over), as is anything else at the
// path; the socket is made 0660, and removed on stop (gRPC does; since a served
// socket is never taken over, the one it removes is ours).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runtimeproxy/proxy_hooks.h"

namespace grpc {
class Server;
class Status;
}  // namespace grpc

namespace koord::runtimeproxy {

struct HookServerConfig {
  std::string network = "unix";  // unix | tcp | tcp4 | tcp6 (the address gives the family)
  std::string address;           // socket path, or host:port
  int maxInFlight = 12;
  int maxThreads = 20;
  int maxMessageBytes = 4 << 20;
  int maxStreamsPerConnection = 32;
  std::chrono::milliseconds handshakeTimeout{5000};
  std::chrono::milliseconds idleTimeout{std::chrono::minutes(5)};
  std::chrono::milliseconds maxAge{std::chrono::minutes(10)};
  std::chrono::milliseconds maxAgeGrace{std::chrono::seconds(10)};
  std::chrono::milliseconds deadline{100};
};

// The seven RPCs, one per stage the proxy dispatches (PreRemoveRunPodSandbox has
// none), in the proto's order.
inline constexpr HookStage kRpcStages[] = {
    HookStage::kPreRunPodSandbox,           HookStage::kPostStopPodSandbox,
    HookStage::kPreCreateContainer,         HookStage::kPreStartContainer,
    HookStage::kPostStartContainer,         HookStage::kPostStopContainer,
    HookStage::kPreUpdateContainerResources};
std::string rpcName(HookStage stage);  // "PreRunPodSandboxHook", ...
// "/runtime.v1alpha1.RuntimeHookService/PreCreateContainerHook" -> its stage.
std::optional<HookStage> stageOfMethod(std::string_view method);

// Counters: calls answered per stage and outcome.
enum class Outcome : int { kOk, kInvalidArgument, kFailedPrecondition, kBusy };
inline constexpr int kOutcomeCount = 4;
inline constexpr size_t kStageCount = std::size(kAllStages);
const char* toString(
    Outcome o);  // "OK", "InvalidArgument", "FailedPrecondition", "ResourceExhausted"

struct HookServerStatus {
  bool serving = false;
  std::string endpoint;   // "unix:///path" or "host:port"
  std::string lastError;  // why it is not serving
  std::array<std::array<uint64_t, kOutcomeCount>, kStageCount> calls{};  // by HookStage
  uint64_t overDeadline = 0;
  uint64_t total() const;
  uint64_t failed() const;  // every outcome but OK
  uint64_t count(HookStage stage, Outcome o) const {
    return calls[static_cast<size_t>(stage)][static_cast<size_t>(o)];
  }
};

// start(), stop() and status() belong to one thread (the agent loop); gRPC's threads
// touch only the atomic counters.
class HookServer {
 public:
  HookServer(HookServerConfig config, ProxyHooks& hooks);
  ~HookServer();
  HookServer(const HookServer&) = delete;
  HookServer& operator=(const HookServer&) = delete;

  // Binds and starts serving on gRPC's threads. An error names the address.
  Status start();
  // Stops accepting and lets calls in flight finish (at most `grace`); gRPC
  // removes the unix socket.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(1000));
  HookServerStatus status() const;

  // For the service implementation: one admission slot (released by the guard
  // whatever happens in the call) and one count per call.
  class Slot {
   public:
    explicit Slot(HookServer& s);
    ~Slot();
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    bool admitted() const { return admitted_; }

   private:
    HookServer* server_;
    bool admitted_;
  };
  void count(HookStage stage, Outcome outcome, std::chrono::steady_clock::duration took);
  // One call, from the request's bytes to the answer's: admission, parsing (a request
  // that does not parse is InvalidArgument), ProxyHooks, counting.
  grpc::Status answer(HookStage stage, const std::string& request, std::string* wire);

 private:
  class Service;
  HookServerConfig config_;
  ProxyHooks* hooks_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string endpoint_;
  std::string lastError_;
  std::atomic<int> inFlight_{0};
  std::array<std::array<std::atomic<uint64_t>, kOutcomeCount>, kStageCount> calls_{};
  std::atomic<uint64_t> overDeadline_{0};
};

// Prepares a unix socket path: creates the parent directory, removes a stale
// socket, refuses a socket something serves and anything else. Exposed for tests.
Status prepareSocketPath(const std::string& path);

}  // namespace koord::runtimeproxy
