// NriRuntimePeer: containerd's side of NRI (reference nri.md), written from the
// reference alone, to drive our plugin in tests, the agent e2e test and the NRI
// benchmark. It shares the generated protobuf classes with the plugin but has its
// OWN mux and ttrpc framing (nothing from nri/mux.h or nri/ttrpc.h): a framing bug
// of the plugin must show up here, not be shared.
//
// What it does, as the Go runtime (pkg/adaptation, NRI v0.8) does:
//  * listens on a unix socket (unlinked first) and serves one plugin connection at
//    a time, or adopts an already-connected fd (launched-plugin mode);
//  * serves Runtime.RegisterPlugin (idx must be two digits, name non-empty) and
//    Runtime.UpdateContainers (recorded, empty reply) on ConnID 2, and answers any
//    other method with code 12;
//  * is the ttrpc client on ConnID 1 (stream ids 1, 3, 5, ...): after registration
//    it sends Configure, then Synchronize (split into more=true chunks when the
//    request would exceed syncSplitBytes, §4.2 step 4), then whatever events the
//    test calls, one call at a time (the adaptation lock), each with a deadline;
//  * sends each ttrpc message with Go's framing (one frame <= 4096 bytes, else
//    4096 + rest) unless told otherwise.
//
// What it enforces, as the Go receiver would (a broken rule is appended to
// violations(), and the ones that kill a Go connection close it here too): at most
// 2 frames per ttrpc message and a first frame of min(size, 4096) bytes; no frame
// carrying bytes of two messages; no zero-length frame; no frame or message above
// the limits; known message types, flags 0; odd, increasing stream ids on ConnID 2;
// responses only on ConnID 1, requests only on ConnID 2; registration within
// registrationTimeout; a reply to every call within requestTimeout (else the
// plugin is dead: the connection is closed, as containerd does); split-sync
// replies (more=true, no updates). Frames of an unknown ConnID are dropped and
// counted, as the Go mux does.
//
// Threads: a session thread (accept loop, or the adopted fd) runs the handshake;
// one reader thread per connection demultiplexes everything; calls made by the
// test thread wait for their reply. Every public method is thread-safe. Set-up
// failures (bind, socketpair) throw: this is test code.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "nri/api.h"

namespace koord::test {

namespace nriapi = ::koord::nri::api;

inline constexpr uint32_t kPeerPluginConn = 1;   // runtime = ttrpc client
inline constexpr uint32_t kPeerRuntimeConn = 2;  // runtime = ttrpc server
inline constexpr size_t kPeerGoFrame = 4096;     // Go's bufio.Writer size
inline constexpr size_t kPeerMaxMessage = 4u << 20;

// How the peer cuts one ttrpc message into mux frames when it sends.
struct Framing {
  size_t chunk = 0;    // 0: Go's framing; else frames of `chunk` bytes (last shorter)
  bool whole = false;  // one frame, whatever the size (what kills a Go receiver)
  static Framing go() { return {}; }
  static Framing single() { return {0, true}; }
  static Framing chunks(size_t n) { return {n, false}; }
};
// The frame sizes `framing` gives a message of `total` bytes.
std::vector<size_t> frameSizes(size_t total, const Framing& framing);

struct NriPeerConfig {
  std::string runtimeName = "containerd";
  std::string runtimeVersion = "v1.7.27";
  std::string pluginConfig;  // ConfigureRequest.config ("" for external plugins)
  std::chrono::milliseconds registrationTimeout{5000};
  std::chrono::milliseconds requestTimeout{2000};
  // Fill registration_timeout / request_timeout (ms) in Configure (NRI >= v0.7).
  bool sendTimeouts = true;
  // A mask bit outside this closes the plugin at Configure (0x7FF before NRI v0.10).
  int32_t validEvents = 0x7FF;
  // A Synchronize request (ttrpc envelope) above this is split into chunks.
  size_t syncSplitBytes = kPeerMaxMessage;
  // Configure + Synchronize right after registration. Off: the test calls
  // configure() and synchronize() itself.
  bool autoHandshake = true;
  Framing framing;  // how we send
};

// The outcome of one call the peer made on ConnID 1.
struct CallReply {
  enum class Outcome {
    kOk,             // status absent or 0
    kStatus,         // the plugin answered status code != 0 (connection kept)
    kNotSubscribed,  // not sent: the plugin did not subscribe to the event
    kNoPlugin,       // not sent: no registered (and synchronized) plugin
    kTimeout,        // no reply within the deadline: connection closed
    kClosed,         // the connection ended before the reply
    kBadReply,       // reply envelope or payload does not parse
  };
  Outcome outcome = Outcome::kNoPlugin;
  int32_t code = 0;
  std::string message;  // status message, or why kBadReply/kClosed
  std::string payload;  // serialized result
  uint32_t streamId = 0;
  std::chrono::nanoseconds latency{0};
  bool ok() const { return outcome == Outcome::kOk; }
  std::string describe() const;
};

template <typename T>
struct Reply : CallReply {
  T response;
};

// One ttrpc message the peer received, as framed by the plugin.
struct ReceivedMessage {
  uint64_t connection = 0;  // which accepted connection (1, 2, ...)
  uint32_t connId = 0;
  uint32_t streamId = 0;
  uint8_t type = 0;
  size_t size = 0;             // header + data
  std::vector<size_t> frames;  // the frames it came in
};

struct PeerRegistration {
  uint64_t connection = 0;
  std::string name;
  std::string idx;
  bool accepted = false;
};

struct PeerStats {
  uint64_t connections = 0;  // accepted or adopted
  uint64_t registered = 0;   // accepted registrations
  uint64_t configured = 0;
  uint64_t synchronized = 0;    // handshakes completed
  uint64_t closed = 0;          // connections that ended
  uint64_t framesDropped = 0;   // unknown ConnID
  uint64_t strayResponses = 0;  // replies for no call in flight
  uint64_t syncChunks = 0;      // Synchronize requests sent
  uint64_t updateRequests = 0;  // Runtime.UpdateContainers served
};

class NriRuntimePeer {
 public:
  NriRuntimePeer();
  explicit NriRuntimePeer(NriPeerConfig config);
  ~NriRuntimePeer();  // stop()
  NriRuntimePeer(const NriRuntimePeer&) = delete;
  NriRuntimePeer& operator=(const NriRuntimePeer&) = delete;

  // Unlinks `path`, binds, listens and serves one connection at a time until stop().
  void listen(const std::string& path);
  // Launched mode: serves this connected socket (taken over; closed by the peer).
  void adopt(int fd);
  // Closes the connection and the listener (unlinking the socket), joins threads.
  // listen() or adopt() may be called again afterwards (a runtime restart).
  void stop();

  // The snapshot Synchronize sends (the handshake uses it; set it before).
  void setSyncState(std::vector<nriapi::PodSandbox> pods,
                    std::vector<nriapi::Container> containers);

  // Whether a plugin is registered, configured and synchronized on an open
  // connection; wait*: poll until true or the limit.
  bool ready() const;
  bool waitReady(std::chrono::milliseconds limit) const;
  // Until `connections` connections have completed the handshake in total.
  bool waitSynchronized(uint64_t connections, std::chrono::milliseconds limit) const;
  // Until no connection is open (the plugin or the peer closed it).
  bool waitClosed(std::chrono::milliseconds limit) const;
  bool waitUntil(const std::function<bool()>& pred, std::chrono::milliseconds limit) const;

  // Manual handshake (autoHandshake false), or a test's own extra calls.
  Reply<nriapi::ConfigureResponse> configure();
  // Sends the snapshot with the split rule; the reply is the final chunk's.
  Reply<nriapi::SynchronizeResponse> synchronize(const std::vector<nriapi::PodSandbox>& pods,
                                                 const std::vector<nriapi::Container>& containers);

  // Events (skipped with kNotSubscribed when not in the plugin's mask).
  Reply<nriapi::Empty> stateChange(nriapi::Event event, const nriapi::PodSandbox& pod,
                                   const nriapi::Container* container = nullptr);
  Reply<nriapi::CreateContainerResponse> createContainer(const nriapi::PodSandbox& pod,
                                                         const nriapi::Container& container);
  Reply<nriapi::UpdateContainerResponse> updateContainer(const nriapi::PodSandbox& pod,
                                                         const nriapi::Container& container,
                                                         const nriapi::LinuxResources& resources);
  Reply<nriapi::StopContainerResponse> stopContainer(const nriapi::PodSandbox& pod,
                                                     const nriapi::Container& container);
  // Any service/method/payload on ConnID 1, to a registered plugin (not necessarily
  // synchronized), with the given framing (default: the config's).
  CallReply call(const std::string& service, const std::string& method, const std::string& payload,
                 std::optional<Framing> framing = std::nullopt,
                 std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // Raw injection on the open connection (false: none open, or the write failed).
  bool sendRaw(std::string_view bytes);
  // One ttrpc message (header + data) on connId, cut by `framing`.
  bool sendMessage(uint32_t connId, std::string_view message, const Framing& framing);
  // Sends the first `keep` bytes of a CreateContainer request, then closes.
  bool closeMidMessage(size_t keep = 20);
  // Drops the plugin, as containerd does on a timeout.
  void closeConnection(const std::string& reason = "closed by test");

  // Records (copies).
  std::vector<PeerRegistration> registrations() const;
  std::vector<nriapi::UpdateContainersRequest> updateRequests() const;
  std::vector<nriapi::SynchronizeRequest> syncRequests() const;    // chunks sent
  std::vector<nriapi::SynchronizeResponse> syncResponses() const;  // final replies
  std::vector<ReceivedMessage> received() const;
  std::vector<std::string> violations() const;
  std::string violationsText() const;  // one a line, for test messages
  PeerStats stats() const;
  int32_t events() const;  // the mask of the current (or last) connection
  std::string lastCloseReason() const;

  // Builds a ttrpc message: 10-byte header (length, stream, type, flags) + data.
  static std::string encodeMessage(uint32_t streamId, uint8_t type, std::string_view data,
                                   uint8_t flags = 0);
  // A serialized ttrpc Request envelope.
  static std::string encodeRequest(const std::string& service, const std::string& method,
                                   const std::string& payload, int64_t timeoutNano);

 private:
  struct Conn;
  struct Stream;
  class LockGuard;

  void sessionLoop();
  void serve(const std::shared_ptr<Conn>& c);
  void readerLoop(std::shared_ptr<Conn> c);
  bool onBytes(Conn& c, const char* data, size_t n);
  bool onFrame(Conn& c, uint32_t connId, std::string payload);
  bool onMessage(Conn& c, uint32_t connId, uint32_t streamId, uint8_t type, uint8_t flags,
                 std::string data);
  void onRuntimeRequest(Conn& c, uint32_t streamId, const std::string& data);
  void flushDeferredLocked(Conn& c);
  bool writeMessage(Conn& c, uint32_t connId, uint32_t streamId, uint8_t type,
                    std::string_view data, const Framing& framing);
  bool writeAll(Conn& c, std::string_view bytes);
  void closeConn(Conn& c, const std::string& reason);
  void violation(Conn& c, const std::string& what);
  std::shared_ptr<Conn> current() const;
  CallReply callOn(const std::shared_ptr<Conn>& c, const std::string& service,
                   const std::string& method, const std::string& payload, const Framing& framing,
                   std::chrono::steady_clock::time_point deadline);
  bool sendMessage(Conn& c, uint32_t connId, std::string_view message, const Framing& framing);
  Reply<nriapi::SynchronizeResponse> synchronizeOn(const std::shared_ptr<Conn>& c,
                                                   const std::vector<nriapi::PodSandbox>& pods,
                                                   const std::vector<nriapi::Container>& ctrs);
  Reply<nriapi::ConfigureResponse> configureOn(const std::shared_ptr<Conn>& c);
  template <typename Resp>
  Reply<Resp> event(nriapi::Event event, const std::string& method, const std::string& payload);

  NriPeerConfig config_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::mutex callMu_;      // the adaptation lock: one call on ConnID 1 at a time
  bool lockHeld_ = false;  // callMu_ is held (guarded by mu_)

  std::string path_;
  int listenFd_ = -1;
  int wakeFd_[2] = {-1, -1};  // wakes the accept loop on stop()
  int adoptFd_ = -1;
  bool stopping_ = false;
  std::thread session_;
  std::shared_ptr<Conn> conn_;
  uint64_t connSerial_ = 0;

  std::vector<nriapi::PodSandbox> syncPods_;
  std::vector<nriapi::Container> syncContainers_;

  std::vector<PeerRegistration> registrations_;
  std::vector<nriapi::UpdateContainersRequest> updates_;
  std::vector<nriapi::SynchronizeRequest> syncRequests_;
  std::vector<nriapi::SynchronizeResponse> syncResponses_;
  std::vector<ReceivedMessage> received_;
  std::vector<std::string> violations_;
  PeerStats stats_;
  int32_t events_ = 0;
  std::string lastCloseReason_;
};

// A connected AF_UNIX stream pair {runtime end, plugin end}, both CLOEXEC.
std::pair<int, int> makeSocketPair();

// ---- Payloads as containerd 1.7 fills them for kubelet pods ----

enum class CgroupDriver { kCgroupfs, kSystemd };
enum class PodQos { kBestEffort, kBurstable, kGuaranteed };

struct PodSpec {
  std::string name = "nginx-7854ff8877-x2p9k";
  std::string ns = "default";
  std::string uid;  // "" = derived from namespace/name
  PodQos qos = PodQos::kBurstable;
  CgroupDriver driver = CgroupDriver::kCgroupfs;
  std::string koordQos;  // koordinator.sh/qosClass label ("" = none): BE, LS, LSR, ...
  std::map<std::string, std::string> labels;       // added to the kubelet ones
  std::map<std::string, std::string> annotations;  // added to the kubelet ones
  std::string ip = "10.244.1.17";
};

struct ContainerSpec {
  std::string name = "nginx";
  std::string image = "docker.io/library/nginx:1.25";
  int64_t cpuRequestMilli = 0;   // 0: none (shares 2)
  int64_t cpuLimitMilli = 0;     // 0: no quota
  int64_t memoryLimitBytes = 0;  // 0: none
  std::vector<std::string> env;  // added to the kubelet service env
  std::map<std::string, std::string> annotations;
  nriapi::ContainerState state = nriapi::CONTAINER_CREATED;
  uint32_t pid = 0;
};

// 64 lowercase hex characters derived from `seed` (stable across runs).
std::string hexId(std::string_view seed);
// A UUID-shaped id derived from `seed`.
std::string uuidFrom(std::string_view seed);
// The pod's cgroup parent: "/kubepods/besteffort/pod<uid>" (cgroupfs) or
// "kubepods-besteffort-pod<uid_with_underscores>.slice" (systemd).
std::string podCgroupParent(const std::string& uid, PodQos qos, CgroupDriver driver);
nriapi::PodSandbox makePod(const PodSpec& spec);
nriapi::Container makeContainer(const nriapi::PodSandbox& pod, const ContainerSpec& spec,
                                CgroupDriver driver = CgroupDriver::kCgroupfs);
// `pods` pods of one container each, mixed QoS, named `prefix-<i>` (sync snapshots).
void makeNode(size_t pods, std::vector<nriapi::PodSandbox>& outPods,
              std::vector<nriapi::Container>& outContainers,
              CgroupDriver driver = CgroupDriver::kCgroupfs, const std::string& prefix = "app");

}  // namespace koord::test
