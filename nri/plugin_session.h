// PluginSession: the plugin side of one NRI connection as a state machine, bytes in,
// bytes out, no sockets (reference nri.md §2-§4). The socket owner (nri_client.h)
// writes what start() and receive() return and feeds what it reads.
//
// Sequence: start() yields RegisterPlugin (ConnID 2, stream 1). The runtime then
// calls Configure, Synchronize and the subscribed events on ConnID 1; Configure may
// arrive before the RegisterPlugin reply, so everything is demultiplexed from one
// input. Split Synchronize (more=true chunks) is buffered and answered more=true
// with no updates; the last chunk (more=false) goes to the handler with the union.
// Shutdown is a no-op; an unknown service or method gets status code 12, as Go
// ttrpc answers (containerd 2.3 then falls back to StateChange). NRI v0.12's
// per-event methods (RunPodSandbox, RemovePodSandbox, ...) are served like the
// StateChange they replace.
//
// The handler runs inside receive(); it must answer from memory (see NriHandler).
// Calls we make (UpdateContainers) are only produced by updateContainers(), which
// the owner must not call from inside a handler: containerd holds its NRI lock
// while it waits for our reply and UpdateContainers needs the same lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/result.h"
#include "nri/api.h"
#include "nri/mux.h"
#include "nri/ttrpc.h"

namespace koord::nri {

// What the agent does on each call. Called on the connection's thread; every
// method must return from in-memory state (no disk, network or kubelet call): the
// runtime gives each call 2 s and drops the plugin on the first miss.
class NriHandler {
 public:
  virtual ~NriHandler() = default;
  // The event mask to subscribe (never 0: 0 means "everything" to the runtime).
  // An error is sent back (code 2) and the runtime drops the plugin.
  virtual Result<int32_t> configure(const api::ConfigureRequest& req) = 0;
  // The whole snapshot (a split sync's chunks merged). Updates to send back.
  virtual Result<api::SynchronizeResponse> synchronize(const api::SynchronizeRequest& req) = 0;
  virtual Result<api::CreateContainerResponse> createContainer(
      const api::CreateContainerRequest& req) = 0;
  virtual Result<api::UpdateContainerResponse> updateContainer(
      const api::UpdateContainerRequest& req) = 0;
  virtual Result<api::StopContainerResponse> stopContainer(
      const api::StopContainerRequest& req) = 0;
  // RunPodSandbox, RemovePodSandbox and every other subscribed event.
  virtual Status stateChange(const api::StateChangeEvent& event) = 0;
};

// The most one Synchronize may carry, split chunks merged. Far above any real
// node: the kubelet runs 110 pods by default and large nodes a few hundred, each
// with a handful of containers, so 100 000 of either is over 100 times what a
// node holds; a 20 000-pod, 30 000-container snapshot serializes to about 4 MiB,
// and 64 MiB is also what we accept as one unsplit message (kMaxReceiveMessage:
// runtimes before 1.7.26 do not split). Past these the runtime is broken or
// hostile, and buffering on would only grow our memory.
inline constexpr size_t kMaxSyncPods = 100'000;
inline constexpr size_t kMaxSyncContainers = 100'000;
inline constexpr size_t kMaxSyncBytes = kMaxReceiveMessage;  // serialized chunks, summed

struct SyncLimits {
  size_t maxPods = kMaxSyncPods;
  size_t maxContainers = kMaxSyncContainers;
  size_t maxBytes = kMaxSyncBytes;
};

struct SessionConfig {
  std::string pluginName = "koordlet_nri";
  std::string pluginIndex = "00";
  // RegisterPlugin's NRI_version: the protocol this session speaks (NRI v0.12's
  // per-event methods). Runtimes from NRI v0.12 log it ("registered as ... (with NRI
  // version ...)"); older ones skip the unknown field.
  std::string nriVersion = "v0.12.0";
  // timeout_nano sent with our requests (the Go stub sends about 2 s).
  std::chrono::nanoseconds requestTimeout = std::chrono::seconds(2);
  SyncLimits syncLimits;
};

class PluginSession {
 public:
  enum class Phase {
    kRegistering,   // RegisterPlugin sent, no reply yet
    kRegistered,    // the runtime accepted the registration
    kConfigured,    // Configure answered
    kSynchronized,  // Synchronize answered: we receive events now
    kFailed,        // registration refused, or a protocol error
  };

  PluginSession(SessionConfig config, NriHandler& handler);

  // The bytes to send first: RegisterPlugin on ConnID 2.
  std::string start();

  // Consumes bytes read from the socket (any split) and returns the bytes to send
  // in reply (may be empty). An error is a protocol violation (garbage frame, a
  // ttrpc header of an unknown type, an unparsable envelope, a registration the
  // runtime refused): the owner closes the connection.
  //
  // A refused Synchronize (over SyncLimits) returns its code-8 reply and leaves
  // the session kFailed, with failure() saying why: the owner sends the reply,
  // then closes the connection. Nothing after that request is served.
  Result<std::string> receive(std::string_view bytes);

  // A Runtime.UpdateContainers call: the bytes to send ("" when the request would
  // exceed 4 MiB, which no runtime accepts). Never call it while a handler runs
  // (see the top of this file).
  std::string updateContainers(const api::UpdateContainersRequest& req);

  Phase phase() const { return phase_; }
  const std::string& runtimeName() const { return runtimeName_; }
  const std::string& runtimeVersion() const { return runtimeVersion_; }
  // Configure's NRI_version: the runtime's NRI library ("" before NRI v0.12).
  const std::string& runtimeNriVersion() const { return runtimeNriVersion_; }
  // Configure's request_timeout in ms (0: the runtime is older than NRI v0.7).
  int64_t requestTimeoutMs() const { return requestTimeoutMs_; }
  int32_t subscribedEvents() const { return events_; }
  // Why the session failed after answering (a refused Synchronize); "" otherwise.
  const std::string& failure() const { return failure_; }
  // What a split Synchronize holds so far: never above SyncLimits.
  size_t bufferedSyncBytes() const { return pendingSyncBytes_; }
  size_t bufferedSyncPods() const { return static_cast<size_t>(pendingSync_.pods_size()); }
  size_t bufferedSyncContainers() const {
    return static_cast<size_t>(pendingSync_.containers_size());
  }

  struct Stats {
    uint64_t requests = 0;       // Plugin-service requests answered
    uint64_t unimplemented = 0;  // answered code 12
    uint64_t handlerErrors = 0;  // answered with an error status
    uint64_t syncChunks = 0;     // Synchronize requests (more=true ones included)
    uint64_t syncRefused = 0;    // Synchronize refused for exceeding SyncLimits
    // Pod and container lifecycle events by the way they came: NRI v0.12's per-event
    // methods (RunPodSandbox, ...), or the StateChange that older runtimes send (and
    // newer ones fall back to for a plugin that answers code 12).
    uint64_t perEventCalls = 0;
    uint64_t stateChangeCalls = 0;
    uint64_t updateReplies = 0;   // replies to our UpdateContainers calls
    uint64_t updateFailures = 0;  // of which failed (status or failed containers)
    // What the runtime sent that could not be read (a mux frame or ttrpc message over
    // its limit or malformed, an unparsable request): the session fails. A refused
    // registration is not one.
    uint64_t protocolErrors = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  std::string serve(const TtrpcMessage& msg);
  std::string dispatch(const std::string& method, const std::string& payload);
  std::string stateChange(const std::string& method, api::Event event, const std::string& payload);
  std::string failed(Code code, std::string_view message);
  std::string synchronize(const std::string& payload);
  std::string refuseSync(const std::string& why);
  Status onResponse(const TtrpcMessage& msg);
  void advance(Phase to);

  SessionConfig config_;
  NriHandler* handler_;
  MuxReader mux_;
  Phase phase_ = Phase::kRegistering;
  uint32_t nextStream_ = 1;              // our client stream ids on ConnID 2
  uint32_t lastPeerStream_ = 0;          // the runtime's last stream id on ConnID 1
  std::set<uint32_t> pendingUpdates_;    // stream ids of UpdateContainers in flight
  api::SynchronizeRequest pendingSync_;  // chunks of a split sync so far
  bool syncBuffered_ = false;            // pendingSync_ holds more=true chunks
  size_t pendingSyncBytes_ = 0;          // their serialized sizes, summed
  std::string failure_;
  bool registerPending_ = false;  // RegisterPlugin (stream 1) not answered yet
  std::string runtimeName_;
  std::string runtimeVersion_;
  std::string runtimeNriVersion_;
  int64_t requestTimeoutMs_ = 0;
  int32_t events_ = 0;
  Stats stats_;
};

}  // namespace koord::nri
