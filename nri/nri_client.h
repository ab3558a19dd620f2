// NriClient: keeps one PluginSession connected to the runtime, on its own thread
// and io_context, so a slow agent loop never delays a reply (containerd gives each
// call 2 s and drops the plugin on the first miss).
//
// External mode (the DaemonSet): connect() to the socket path; when the socket is
// absent, refused, or the runtime restarts (EOF, protocol error), wait and connect
// again, forever, with capped exponential back-off (koordlet gives up after its
// first failure: we do not). A connection that stayed up `healthyAfter` resets the
// back-off. Launched mode (NRI_PLUGIN_SOCKET=<fd>, the runtime exec'd us): use that
// fd; on EOF there is nothing to reconnect to, so onLaunchedEof fires (the agent
// exits, as the Go stub does).
//
// Logging: one line per state change (connected, lost, first failure of a
// streak), never one per retry.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "nri/plugin_session.h"
#include "nri/write_queue.h"

namespace koord::nri {

struct BackoffConfig {
  std::chrono::nanoseconds initial =
      std::chrono::seconds(1);                              // --runtime-hooks-nri-backoff-duration
  double factor = 2.0;                                      // --runtime-hooks-nri-backoff-factor
  std::chrono::nanoseconds cap = std::chrono::seconds(30);  // --runtime-hooks-nri-backoff-cap
};

// The wait before connection attempt `failures` + 1 after `failures` consecutive
// failures (failures >= 1): initial × factor^(failures-1), at most cap.
std::chrono::nanoseconds backoffDelay(const BackoffConfig& config, uint32_t failures);

struct NriClientConfig {
  std::string socketPath;         // <var-run-root>/<--runtime-hooks-nri-socket-path>
  std::optional<int> launchedFd;  // NRI_PLUGIN_SOCKET: pre-connected socket from the runtime
  SessionConfig session;
  BackoffConfig backoff;
  // A connection that lasted this long counts as healthy: the back-off restarts
  // from `initial` (koordlet: 6 s, a bit more than the 5 s registration timeout).
  std::chrono::nanoseconds healthyAfter = std::chrono::seconds(6);
  // Bytes waiting for the socket (write_queue.h): a runtime that stops reading
  // makes us close the connection and reconnect instead of buffering on.
  WriteLimits writeLimits;
};

enum class NriState {
  kStopped,      // not started, or stopped
  kConnecting,   // connect() in progress
  kRegistering,  // connected; registration, Configure or Synchronize under way
  kConnected,    // synchronized: receiving events
  kWaiting,      // back-off before the next attempt
  kClosed,       // launched mode: the runtime closed our socket
};
const char* toString(NriState s);

struct NriStatus {
  NriState state = NriState::kStopped;
  std::string lastError;     // why the last attempt or connection ended ("" = none)
  uint64_t attempts = 0;     // connection attempts
  uint64_t connects = 0;     // sessions that reached kConnected
  uint64_t disconnects = 0;  // connected sessions that ended
  // Connections we closed because the runtime broke a limit (counted, not logged
  // per event: each is one "lost"/failure line).
  uint64_t writeQueueOverflows = 0;  // the runtime stopped reading what we send
  uint64_t syncRefusals = 0;         // a Synchronize over the session's SyncLimits
  // The runtime sent what the protocol forbids: a frame or message over its limit, or
  // one that does not parse (PluginSession::Stats::protocolErrors).
  uint64_t protocolCloses = 0;
  std::string runtimeName;
  std::string runtimeVersion;
  std::string runtimeNriVersion;  // Configure's NRI_version; "" before NRI v0.12
  // Configure's request_timeout in ms; 0: the runtime's NRI is older than v0.7, and
  // it ignores the adjustment fields added since (oom_score_adj among them).
  int64_t requestTimeoutMs = 0;
  int32_t events = 0;
  // Lifecycle events received, all sessions: by NRI v0.12's per-event methods, or
  // by StateChange (older runtimes; newer ones warn of it as deprecated).
  uint64_t perEventCalls = 0;
  uint64_t stateChangeCalls = 0;
  std::chrono::nanoseconds nextRetryIn{0};  // in kWaiting
};

class NriClient {
 public:
  // The handler is called on the client's thread.
  NriClient(NriClientConfig config, NriHandler& handler);
  ~NriClient();  // stop()
  NriClient(const NriClient&) = delete;
  NriClient& operator=(const NriClient&) = delete;

  void start();  // spawns the thread; returns at once
  void stop();   // closes the connection, joins the thread

  NriStatus status() const;  // any thread

  // Sends Runtime.UpdateContainers when the session is synchronized; calls made
  // before that (or while disconnected) are dropped, as the reconciler repairs
  // what they would have. Any thread; posted to the client's thread, so it is
  // never sent from inside a handler.
  void updateContainers(api::UpdateContainersRequest req);

  // Launched mode: called once (on the client's thread) when the runtime closed
  // the socket.
  void onLaunchedEof(std::function<void()> callback);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace koord::nri
