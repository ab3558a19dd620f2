#include "tests/support/nri_runtime_peer.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace koord::test {

namespace {

using Clock = std::chrono::steady_clock;
namespace wire = ::koord::nri::wire;

constexpr size_t kMuxHeader = 8;
constexpr size_t kTtrpcHeader = 10;
constexpr size_t kMaxFrame = 64u << 20;  // above this a frame length is garbage
constexpr uint8_t kRequest = 1;
constexpr uint8_t kResponse = 2;
constexpr const char* kPluginService = "nri.pkg.api.v1alpha1.Plugin";
constexpr const char* kRuntimeService = "nri.pkg.api.v1alpha1.Runtime";

void putBe32(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>((v >> 24) & 0xff));
  out.push_back(static_cast<char>((v >> 16) & 0xff));
  out.push_back(static_cast<char>((v >> 8) & 0xff));
  out.push_back(static_cast<char>(v & 0xff));
}

uint32_t getBe32(const char* p) {
  auto b = [p](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(p[i])); };
  return (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

std::string hex32(int32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", static_cast<unsigned>(v));
  return buf;
}

std::string encodeResponse(int32_t code, const std::string& message, const std::string& payload) {
  wire::Response r;
  if (code != 0) {
    r.mutable_status()->set_code(code);
    r.mutable_status()->set_message(message);
  }
  if (!payload.empty()) r.set_payload(payload);
  return r.SerializeAsString();
}

}  // namespace

std::vector<size_t> frameSizes(size_t total, const Framing& framing) {
  std::vector<size_t> out;
  if (framing.whole || total == 0) {
    out.push_back(total);
  } else if (framing.chunk == 0) {
    out.push_back(std::min(total, kPeerGoFrame));
    if (total > kPeerGoFrame) out.push_back(total - kPeerGoFrame);
  } else {
    for (size_t off = 0; off < total; off += framing.chunk)
      out.push_back(std::min(framing.chunk, total - off));
  }
  return out;
}

std::string CallReply::describe() const {
  static const char* names[] = {"ok",      "status", "not-subscribed", "no-plugin",
                                "timeout", "closed", "bad-reply"};
  std::ostringstream os;
  os << names[static_cast<int>(outcome)];
  if (code != 0) os << " code=" << code;
  if (!message.empty()) os << " (" << message << ")";
  os << " stream=" << streamId;
  return os.str();
}

// ---- connection state ----

struct NriRuntimePeer::Stream {
  std::string buf;             // bytes of the message being reassembled
  std::vector<size_t> frames;  // sizes of the frames it came in so far
};

struct NriRuntimePeer::Conn {
  uint64_t serial = 0;
  int fd = -1;
  bool launched = false;
  std::mutex writeMu;
  std::thread reader;

  // Guarded by the peer's mu_.
  bool open = true;
  bool registered = false;
  bool refused = false;
  bool configured = false;
  bool synchronized = false;
  int32_t events = 0;
  uint32_t nextStream = 1;        // our client ids on ConnID 1
  uint32_t lastPluginStream = 0;  // the plugin's last id on ConnID 2
  struct Pending {
    bool done = false;
    std::string data;  // the Response envelope
  };
  std::map<uint32_t, std::shared_ptr<Pending>> pending;
  // UpdateContainers replies held back while the adaptation lock is taken.
  std::vector<std::pair<uint32_t, std::string>> deferred;

  // Reader thread only.
  char header[kMuxHeader] = {};
  size_t headerHave = 0;
  uint32_t frameConn = 0;
  size_t frameLeft = 0;
  std::string frame;
  Stream streams[2];
};

// ---- lifecycle ----

NriRuntimePeer::NriRuntimePeer() : NriRuntimePeer(NriPeerConfig{}) {}

NriRuntimePeer::NriRuntimePeer(NriPeerConfig config) : config_(std::move(config)) {}

NriRuntimePeer::~NriRuntimePeer() { stop(); }

void NriRuntimePeer::listen(const std::string& path) {
  stop();
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    throw std::runtime_error("socket path too long");
  ::unlink(path.c_str());  // containerd removes a stale socket first
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
    int e = errno;
    ::close(fd);
    throw std::runtime_error("bind/listen " + path + ": " + std::strerror(e));
  }
  if (::pipe2(wakeFd_, O_CLOEXEC) != 0) {
    ::close(fd);
    throw std::runtime_error("pipe2 failed");
  }
  {
    std::lock_guard lock(mu_);
    path_ = path;
    listenFd_ = fd;
    stopping_ = false;
  }
  session_ = std::thread(&NriRuntimePeer::sessionLoop, this);
}

void NriRuntimePeer::adopt(int fd) {
  stop();
  if (::pipe2(wakeFd_, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  {
    std::lock_guard lock(mu_);
    adoptFd_ = fd;
    stopping_ = false;
  }
  session_ = std::thread(&NriRuntimePeer::sessionLoop, this);
}

void NriRuntimePeer::stop() {
  std::shared_ptr<Conn> c;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    c = conn_;
  }
  cv_.notify_all();
  if (wakeFd_[1] >= 0) {
    char b = 1;
    [[maybe_unused]] ssize_t n = ::write(wakeFd_[1], &b, 1);
  }
  if (c) closeConn(*c, "runtime stopped");
  if (session_.joinable()) session_.join();
  std::lock_guard lock(mu_);
  if (listenFd_ >= 0) {
    ::close(listenFd_);
    listenFd_ = -1;
    ::unlink(path_.c_str());
  }
  if (adoptFd_ >= 0) {
    ::close(adoptFd_);  // adopted but never served
    adoptFd_ = -1;
  }
  for (int& fd : wakeFd_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

void NriRuntimePeer::setSyncState(std::vector<nriapi::PodSandbox> pods,
                                  std::vector<nriapi::Container> containers) {
  std::lock_guard lock(mu_);
  syncPods_ = std::move(pods);
  syncContainers_ = std::move(containers);
}

void NriRuntimePeer::sessionLoop() {
  int adopted;
  {
    std::lock_guard lock(mu_);
    adopted = adoptFd_;
    adoptFd_ = -1;
  }
  auto makeConn = [this](int fd, bool launched) {
    auto c = std::make_shared<Conn>();
    c->fd = fd;
    c->launched = launched;
    // A plugin that stops reading must not hang the test: a blocked write fails.
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return c;
  };
  if (adopted >= 0) {
    serve(makeConn(adopted, true));
    return;
  }
  for (;;) {
    pollfd pfd[2] = {{listenFd_, POLLIN, 0}, {wakeFd_[0], POLLIN, 0}};
    int n = ::poll(pfd, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || pfd[1].revents != 0) return;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    serve(makeConn(fd, false));
  }
}

// One plugin connection, start to end (containerd handles them serially too).
void NriRuntimePeer::serve(const std::shared_ptr<Conn>& c) {
  {
    std::lock_guard lock(mu_);
    c->serial = ++connSerial_;
    conn_ = c;
    stats_.connections++;
    events_ = 0;
  }
  c->reader = std::thread(&NriRuntimePeer::readerLoop, this, c);

  bool registered;
  {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, config_.registrationTimeout,
                 [&] { return c->registered || c->refused || !c->open || stopping_; });
    registered = c->registered && c->open && !stopping_;
    if (!c->registered && !c->refused && c->open && !stopping_) {
      lock.unlock();
      violation(*c, "no RegisterPlugin within " +
                        std::to_string(config_.registrationTimeout.count()) + " ms");
      closeConn(*c, "plugin registration timed out");
    }
  }

  if (registered && config_.autoHandshake) {
    std::vector<nriapi::PodSandbox> pods;
    std::vector<nriapi::Container> ctrs;
    {
      std::lock_guard lock(mu_);
      pods = syncPods_;
      ctrs = syncContainers_;
    }
    auto conf = configureOn(c);
    if (conf.ok()) {
      auto sync = synchronizeOn(c, pods, ctrs);
      if (sync.ok()) {
        std::lock_guard lock(mu_);
        if (c->open) {
          c->synchronized = true;
          stats_.synchronized++;
        }
      } else if (sync.outcome == CallReply::Outcome::kStatus) {
        // NRI >= v0.7 closes a plugin whose Synchronize failed.
        closeConn(*c, "synchronize failed: " + sync.message);
      }
    } else if (conf.outcome == CallReply::Outcome::kStatus) {
      closeConn(*c, "configure failed: " + conf.message);
    }
    cv_.notify_all();
  }

  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !c->open || stopping_; });
  }
  closeConn(*c, "runtime stopped");
  c->reader.join();
  {
    // A test thread still holding the Conn must not write to a reused fd number.
    std::lock_guard w(c->writeMu);
    ::close(c->fd);
    c->fd = -1;
  }
  std::lock_guard lock(mu_);
  if (conn_ == c) conn_.reset();
  cv_.notify_all();
}

void NriRuntimePeer::closeConn(Conn& c, const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    if (!c.open) return;
    c.open = false;
    lastCloseReason_ = reason;
    stats_.closed++;
  }
  ::shutdown(c.fd, SHUT_RDWR);  // wakes the reader; the fd is closed after it is joined
  cv_.notify_all();
}

void NriRuntimePeer::closeConnection(const std::string& reason) {
  if (auto c = current()) closeConn(*c, reason);
}

void NriRuntimePeer::violation(Conn& c, const std::string& what) {
  std::lock_guard lock(mu_);
  violations_.push_back("conn " + std::to_string(c.serial) + ": " + what);
}

std::shared_ptr<NriRuntimePeer::Conn> NriRuntimePeer::current() const {
  std::lock_guard lock(mu_);
  return conn_;
}

// ---- reading ----

void NriRuntimePeer::readerLoop(std::shared_ptr<Conn> c) {
  std::string buf(256 * 1024, '\0');
  for (;;) {
    ssize_t n = ::read(c->fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      bool midFrame = c->headerHave != 0 || c->frameLeft != 0;
      closeConn(*c, n == 0 ? (midFrame ? "plugin closed mid-frame" : "plugin closed the connection")
                           : "read error: " + std::string(std::strerror(errno)));
      break;
    }
    if (!onBytes(*c, buf.data(), static_cast<size_t>(n))) break;
    std::lock_guard lock(mu_);
    if (!c->open) break;
  }
  // Fail calls still waiting.
  cv_.notify_all();
}

bool NriRuntimePeer::onBytes(Conn& c, const char* data, size_t n) {
  while (n > 0) {
    if (c.frameLeft == 0 && c.headerHave < kMuxHeader) {
      size_t take = std::min(n, kMuxHeader - c.headerHave);
      std::memcpy(c.header + c.headerHave, data, take);
      c.headerHave += take;
      data += take;
      n -= take;
      if (c.headerHave < kMuxHeader) return true;
      c.frameConn = getBe32(c.header);
      c.frameLeft = getBe32(c.header + 4);
      c.frame.clear();
      if (c.frameLeft > kMaxFrame) {
        violation(c, "mux frame length " + std::to_string(c.frameLeft) + " (garbage)");
        closeConn(c, "garbage mux frame");
        return false;
      }
      if (c.frameLeft == 0) {
        c.headerHave = 0;
        violation(c, "zero-length mux frame on ConnID " + std::to_string(c.frameConn) +
                         " (Go never sends one)");
        continue;
      }
      c.frame.reserve(c.frameLeft);
    }
    size_t take = std::min(n, c.frameLeft);
    c.frame.append(data, take);
    data += take;
    n -= take;
    c.frameLeft -= take;
    if (c.frameLeft == 0) {
      c.headerHave = 0;
      if (!onFrame(c, c.frameConn, std::move(c.frame))) return false;
      c.frame = std::string();
    }
  }
  return true;
}

bool NriRuntimePeer::onFrame(Conn& c, uint32_t connId, std::string payload) {
  if (connId != kPeerPluginConn && connId != kPeerRuntimeConn) {
    std::lock_guard lock(mu_);
    stats_.framesDropped++;  // the Go mux drops these silently
    return true;
  }
  Stream& s = c.streams[connId - 1];
  const std::string where = "ConnID " + std::to_string(connId);
  if (s.buf.empty()) {
    s.frames.clear();
    // The Go receiver reads a message's first frame into a 4096-byte bufio
    // buffer in one Read(): a larger frame fails with ENOMEM and kills ttrpc.
    if (payload.size() > kPeerGoFrame) {
      violation(c, where + ": frame of " + std::to_string(payload.size()) +
                       " bytes starts a message (a Go receiver fails above 4096)");
      closeConn(c, "oversized first frame");
      return false;
    }
  }
  s.frames.push_back(payload.size());
  s.buf += payload;
  while (s.buf.size() >= kTtrpcHeader) {
    const size_t len = getBe32(s.buf.data());
    if (len > kPeerMaxMessage) {
      // Go discards such a message and fails that stream; we stop here, since a
      // correct plugin never sends one.
      violation(c, where + ": ttrpc message length " + std::to_string(len) + " > 4 MiB");
      closeConn(c, "oversized ttrpc message");
      return false;
    }
    const size_t total = kTtrpcHeader + len;
    if (s.buf.size() < total) break;
    const uint32_t streamId = getBe32(s.buf.data() + 4);
    const auto type = static_cast<uint8_t>(s.buf[8]);
    const auto flags = static_cast<uint8_t>(s.buf[9]);
    std::string data = s.buf.substr(kTtrpcHeader, len);
    std::vector<size_t> frames = s.frames;
    s.buf.erase(0, total);
    const std::string what = where + " stream " + std::to_string(streamId) + ": message of " +
                             std::to_string(total) + " bytes";
    if (!s.buf.empty()) {
      violation(c, what + " shares a frame with the next message");
      s.frames = {s.buf.size()};
    } else {
      s.frames.clear();
    }
    if (frames.size() > 2) {
      violation(c, what + " in " + std::to_string(frames.size()) + " frames (at most 2)");
    } else if (total <= kPeerGoFrame && frames.size() != 1) {
      violation(c, what + " in " + std::to_string(frames.size()) + " frames (must be one)");
    } else if (total > kPeerGoFrame && frames[0] != kPeerGoFrame) {
      violation(c, what + ": first frame " + std::to_string(frames[0]) + " bytes (must be 4096)");
    }
    {
      std::lock_guard lock(mu_);
      received_.push_back(ReceivedMessage{c.serial, connId, streamId, type, total, frames});
    }
    if (!onMessage(c, connId, streamId, type, flags, std::move(data))) return false;
  }
  return true;
}

bool NriRuntimePeer::onMessage(Conn& c, uint32_t connId, uint32_t streamId, uint8_t type,
                               uint8_t flags, std::string data) {
  const std::string where =
      "ConnID " + std::to_string(connId) + " stream " + std::to_string(streamId);
  if (type != kRequest && type != kResponse) {
    violation(c, where + ": message type " + std::to_string(type) + " (NRI is unary)");
    closeConn(c, "garbage ttrpc message type");
    return false;
  }
  if (flags != 0) violation(c, where + ": flags " + std::to_string(flags) + " (must be 0)");
  if (connId == kPeerPluginConn) {
    if (type != kResponse) {
      violation(c, where + ": a request on ConnID 1 (the plugin serves there)");
      return true;
    }
    std::lock_guard lock(mu_);
    auto it = c.pending.find(streamId);
    if (it == c.pending.end()) {
      stats_.strayResponses++;  // Go logs and ignores these
      return true;
    }
    it->second->done = true;
    it->second->data = std::move(data);
    cv_.notify_all();
    return true;
  }
  if (type != kRequest) {
    violation(c, where + ": a response on ConnID 2 (the runtime serves there)");
    return true;
  }
  onRuntimeRequest(c, streamId, data);
  std::lock_guard lock(mu_);
  return c.open;
}

void NriRuntimePeer::onRuntimeRequest(Conn& c, uint32_t streamId, const std::string& data) {
  const std::string where = "ConnID 2 stream " + std::to_string(streamId);
  auto reply = [&](int32_t code, const std::string& message, const std::string& payload) {
    writeMessage(c, kPeerRuntimeConn, streamId, kResponse, encodeResponse(code, message, payload),
                 config_.framing);
  };
  {
    std::unique_lock lock(mu_);
    if (streamId % 2 == 0) {
      lock.unlock();
      violation(c, where + ": even stream id from the plugin");
      reply(3, "StreamID must be odd for client initiated streams", "");
      return;
    }
    if (streamId <= c.lastPluginStream) {
      lock.unlock();
      violation(c, where + ": stream id not above the last one (" +
                       std::to_string(c.lastPluginStream) + ")");
      reply(3, "StreamID cannot be re-used and must increment", "");
      return;
    }
    c.lastPluginStream = streamId;
  }
  wire::Request req;
  if (!req.ParseFromString(data)) {
    violation(c, where + ": request envelope does not parse");
    closeConn(c, "bad request envelope");
    return;
  }
  if (req.service() != kRuntimeService) {
    reply(12, "service " + req.service(), "");
    return;
  }
  if (req.method() == "RegisterPlugin") {
    nriapi::RegisterPluginRequest r;
    if (!r.ParseFromString(req.payload())) {
      violation(c, where + ": RegisterPluginRequest does not parse");
      reply(2, "failed to unmarshal RegisterPluginRequest", "");
      return;
    }
    std::string refusal;
    const std::string& idx = r.plugin_idx();
    bool idxOk =
        idx.size() == 2 && idx[0] >= '0' && idx[0] <= '9' && idx[1] >= '0' && idx[1] <= '9';
    // Launched plugins: the runtime already knows name and index and ignores these.
    if (!c.launched && !idxOk) refusal = "invalid plugin index \"" + idx + "\"";
    if (!c.launched && r.plugin_name().empty()) refusal = "empty plugin name";
    bool again;
    {
      std::lock_guard lock(mu_);
      again = c.registered;
      registrations_.push_back({c.serial, r.plugin_name(), idx, refusal.empty() && !again});
    }
    if (again) {
      violation(c, where + ": RegisterPlugin again on a registered connection");
      reply(2, "plugin already registered", "");
      return;
    }
    if (!refusal.empty()) {
      violation(c, "registration refused: " + refusal);
      reply(2, refusal, "");
      {
        std::lock_guard lock(mu_);
        c.refused = true;
      }
      closeConn(c, "registration refused: " + refusal);
      return;
    }
    reply(0, "", "");
    {
      std::lock_guard lock(mu_);
      c.registered = true;
      stats_.registered++;
    }
    cv_.notify_all();
    return;
  }
  if (req.method() == "UpdateContainers") {
    nriapi::UpdateContainersRequest r;
    if (!r.ParseFromString(req.payload())) {
      violation(c, where + ": UpdateContainersRequest does not parse");
      reply(2, "failed to unmarshal UpdateContainersRequest", "");
      return;
    }
    std::string out = encodeResponse(0, "", nriapi::UpdateContainersResponse().SerializeAsString());
    {
      std::lock_guard lock(mu_);
      updates_.push_back(std::move(r));
      stats_.updateRequests++;
      // containerd applies updates under the adaptation lock: while a call to
      // the plugin is in flight the reply waits for it.
      if (lockHeld_) {
        c.deferred.emplace_back(streamId, std::move(out));
        return;
      }
    }
    writeMessage(c, kPeerRuntimeConn, streamId, kResponse, out, config_.framing);
    return;
  }
  reply(12, "method " + req.method(), "");
}

// ---- writing ----

std::string NriRuntimePeer::encodeMessage(uint32_t streamId, uint8_t type, std::string_view data,
                                          uint8_t flags) {
  std::string out;
  out.reserve(kTtrpcHeader + data.size());
  putBe32(out, static_cast<uint32_t>(data.size()));
  putBe32(out, streamId);
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  out.append(data);
  return out;
}

std::string NriRuntimePeer::encodeRequest(const std::string& service, const std::string& method,
                                          const std::string& payload, int64_t timeoutNano) {
  wire::Request r;
  r.set_service(service);
  r.set_method(method);
  r.set_payload(payload);
  if (timeoutNano > 0) r.set_timeout_nano(timeoutNano);
  return r.SerializeAsString();
}

bool NriRuntimePeer::writeAll(Conn& c, std::string_view bytes) {
  if (c.fd < 0) return false;  // the connection is gone (callers hold writeMu)
  while (!bytes.empty()) {
    ssize_t n = ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool NriRuntimePeer::writeMessage(Conn& c, uint32_t connId, uint32_t streamId, uint8_t type,
                                  std::string_view data, const Framing& framing) {
  return sendMessage(c, connId, encodeMessage(streamId, type, data), framing);
}

bool NriRuntimePeer::sendMessage(Conn& c, uint32_t connId, std::string_view message,
                                 const Framing& framing) {
  std::string out;
  out.reserve(message.size() + 64);
  size_t off = 0;
  for (size_t size : frameSizes(message.size(), framing)) {
    putBe32(out, connId);
    putBe32(out, static_cast<uint32_t>(size));
    out.append(message.substr(off, size));
    off += size;
  }
  bool ok;
  {
    std::lock_guard lock(c.writeMu);
    ok = writeAll(c, out);
  }
  if (!ok) closeConn(c, "write failed: " + std::string(std::strerror(errno)));
  return ok;
}

bool NriRuntimePeer::sendMessage(uint32_t connId, std::string_view message,
                                 const Framing& framing) {
  auto c = current();
  if (!c) return false;
  return sendMessage(*c, connId, message, framing);
}

bool NriRuntimePeer::sendRaw(std::string_view bytes) {
  auto c = current();
  if (!c) return false;
  std::lock_guard lock(c->writeMu);
  return writeAll(*c, bytes);
}

bool NriRuntimePeer::closeMidMessage(size_t keep) {
  auto c = current();
  if (!c) return false;
  uint32_t stream;
  {
    std::lock_guard lock(mu_);
    if (!c->open) return false;
    stream = c->nextStream;
    c->nextStream += 2;
  }
  nriapi::CreateContainerRequest req;
  *req.mutable_pod() = makePod(PodSpec{});
  *req.mutable_container() = makeContainer(req.pod(), ContainerSpec{});
  std::string msg =
      encodeMessage(stream, kRequest,
                    encodeRequest(kPluginService, "CreateContainer", req.SerializeAsString(), 0));
  // A frame header announcing the whole first frame, then only `keep` bytes of it.
  size_t frame = std::min(msg.size(), kPeerGoFrame);
  keep = std::min(keep, frame - 1);
  std::string out;
  putBe32(out, kPeerPluginConn);
  putBe32(out, static_cast<uint32_t>(frame));
  out.append(msg, 0, keep);
  bool ok;
  {
    std::lock_guard lock(c->writeMu);
    ok = writeAll(*c, out);
  }
  closeConn(*c, "closed mid-message by test");
  return ok;
}

// ---- calls on ConnID 1 ----

// The adaptation lock: held for a whole call (or handshake); UpdateContainers
// replies wait for its release.
class NriRuntimePeer::LockGuard {
 public:
  explicit LockGuard(NriRuntimePeer& p) : p_(p), lock_(p.callMu_) {
    std::lock_guard l(p_.mu_);
    p_.lockHeld_ = true;
  }
  ~LockGuard() {
    std::shared_ptr<Conn> c;
    std::vector<std::pair<uint32_t, std::string>> out;
    {
      std::lock_guard l(p_.mu_);
      p_.lockHeld_ = false;
      c = p_.conn_;
      if (c) out.swap(c->deferred);
    }
    for (auto& [stream, data] : out)
      p_.writeMessage(*c, kPeerRuntimeConn, stream, kResponse, data, p_.config_.framing);
  }

 private:
  NriRuntimePeer& p_;
  std::lock_guard<std::mutex> lock_;
};

CallReply NriRuntimePeer::callOn(const std::shared_ptr<Conn>& c, const std::string& service,
                                 const std::string& method, const std::string& payload,
                                 const Framing& framing, Clock::time_point deadline) {
  CallReply out;
  auto pending = std::make_shared<Conn::Pending>();
  {
    std::lock_guard lock(mu_);
    if (!c->open) {
      out.outcome = CallReply::Outcome::kClosed;
      out.message = "connection closed";
      return out;
    }
    out.streamId = c->nextStream;
    c->nextStream += 2;
    c->pending[out.streamId] = pending;
  }
  const auto start = Clock::now();
  const int64_t timeoutNano =
      std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - start).count();
  std::string msg =
      encodeMessage(out.streamId, kRequest,
                    encodeRequest(service, method, payload, std::max<int64_t>(timeoutNano, 1)));
  sendMessage(*c, kPeerPluginConn, msg, framing);

  std::unique_lock lock(mu_);
  cv_.wait_until(lock, deadline, [&] { return pending->done || !c->open; });
  out.latency = Clock::now() - start;
  c->pending.erase(out.streamId);
  if (!pending->done) {
    if (c->open) {
      lock.unlock();
      out.outcome = CallReply::Outcome::kTimeout;
      out.message =
          "no reply to " + method + " within " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::milliseconds>(deadline - start).count()) +
          " ms";
      violation(*c, "stream " + std::to_string(out.streamId) + ": " + out.message);
      closeConn(*c, "request timed out: " + method);  // the plugin is dead to containerd
    } else {
      out.outcome = CallReply::Outcome::kClosed;
      out.message = "connection closed before the reply to " + method;
    }
    return out;
  }
  lock.unlock();
  wire::Response resp;
  if (!resp.ParseFromString(pending->data)) {
    out.outcome = CallReply::Outcome::kBadReply;
    out.message = "response envelope does not parse";
    violation(*c, "stream " + std::to_string(out.streamId) + ": " + out.message);
    return out;
  }
  out.code = resp.has_status() ? resp.status().code() : 0;
  out.message = resp.has_status() ? resp.status().message() : "";
  out.payload = resp.payload();
  out.outcome = out.code == 0 ? CallReply::Outcome::kOk : CallReply::Outcome::kStatus;
  return out;
}

CallReply NriRuntimePeer::call(const std::string& service, const std::string& method,
                               const std::string& payload, std::optional<Framing> framing,
                               std::optional<std::chrono::milliseconds> timeout) {
  LockGuard guard(*this);
  auto c = current();
  CallReply out;
  bool registered;
  {
    std::lock_guard lock(mu_);
    registered = c && c->open && c->registered;
  }
  if (!registered) return out;  // kNoPlugin
  return callOn(c, service, method, payload, framing.value_or(config_.framing),
                Clock::now() + timeout.value_or(config_.requestTimeout));
}

Reply<nriapi::ConfigureResponse> NriRuntimePeer::configureOn(const std::shared_ptr<Conn>& c) {
  LockGuard guard(*this);
  nriapi::ConfigureRequest req;
  req.set_config(config_.pluginConfig);
  req.set_runtime_name(config_.runtimeName);
  req.set_runtime_version(config_.runtimeVersion);
  if (config_.sendTimeouts) {
    req.set_registration_timeout(config_.registrationTimeout.count());
    req.set_request_timeout(config_.requestTimeout.count());
  }
  Reply<nriapi::ConfigureResponse> out;
  static_cast<CallReply&>(out) = callOn(c, kPluginService, "Configure", req.SerializeAsString(),
                                        config_.framing, Clock::now() + config_.requestTimeout);
  if (!out.ok()) return out;
  if (!out.response.ParseFromString(out.payload)) {
    out.outcome = CallReply::Outcome::kBadReply;
    out.message = "ConfigureResponse does not parse";
    violation(*c, out.message);
    closeConn(*c, out.message);
    return out;
  }
  int32_t events = out.response.events();
  if ((events & ~config_.validEvents) != 0) {
    out.outcome = CallReply::Outcome::kBadReply;
    out.message = "invalid plugin events " + hex32(events);
    violation(*c, out.message);
    closeConn(*c, out.message);
    return out;
  }
  if (events == 0) events = config_.validEvents;  // 0 subscribes to everything
  std::lock_guard lock(mu_);
  c->configured = true;
  c->events = events;
  events_ = events;
  stats_.configured++;
  return out;
}

Reply<nriapi::SynchronizeResponse> NriRuntimePeer::synchronizeOn(
    const std::shared_ptr<Conn>& c, const std::vector<nriapi::PodSandbox>& pods,
    const std::vector<nriapi::Container>& ctrs) {
  LockGuard guard(*this);
  Reply<nriapi::SynchronizeResponse> out;
  // One deadline for all chunks of a split sync, as Go's context.
  const auto deadline = Clock::now() + config_.requestTimeout;
  size_t podsAt = 0, ctrsAt = 0;
  size_t podsPer = pods.size(), ctrsPer = ctrs.size();
  for (;;) {
    nriapi::SynchronizeRequest req;
    for (size_t i = podsAt; i < podsAt + podsPer; ++i) *req.add_pods() = pods[i];
    for (size_t i = ctrsAt; i < ctrsAt + ctrsPer; ++i) *req.add_containers() = ctrs[i];
    const size_t podsLeft = pods.size() - podsAt, ctrsLeft = ctrs.size() - ctrsAt;
    req.set_more(podsLeft > podsPer || ctrsLeft > ctrsPer);
    std::string payload = req.SerializeAsString();
    // Go's ttrpc client refuses to send a message above its limit; the runtime
    // then scales the counts by limit/size (at most 0.9) and tries again.
    const size_t size = encodeRequest(kPluginService, "Synchronize", payload, 1).size();
    if (size > config_.syncSplitBytes) {
      if (podsPer + ctrsPer <= 1) {
        out.outcome = CallReply::Outcome::kBadReply;
        out.message = "cannot split the sync request below " +
                      std::to_string(config_.syncSplitBytes) + " bytes";
        closeConn(*c, out.message);
        return out;
      }
      if (podsPer <= 1 && ctrsPer <= 1) {
        ctrsPer = 0;  // a pod alone first
        continue;
      }
      const double factor = std::min(0.9, static_cast<double>(config_.syncSplitBytes) / size);
      // Keep at least one object of each kind still in the chunk (Go can reach
      // zero pods per chunk and never finish; we do not copy that).
      auto scale = [factor](size_t n) {
        return n == 0 ? size_t{0} : std::max<size_t>(1, static_cast<size_t>(n * factor));
      };
      podsPer = scale(podsPer);
      ctrsPer = scale(ctrsPer);
      continue;
    }
    {
      std::lock_guard lock(mu_);
      syncRequests_.push_back(req);
      stats_.syncChunks++;
    }
    static_cast<CallReply&>(out) =
        callOn(c, kPluginService, "Synchronize", payload, config_.framing, deadline);
    if (!out.ok()) return out;
    if (!out.response.ParseFromString(out.payload)) {
      out.outcome = CallReply::Outcome::kBadReply;
      out.message = "SynchronizeResponse does not parse";
      violation(*c, out.message);
      closeConn(*c, out.message);
      return out;
    }
    if (!req.more()) {
      std::lock_guard lock(mu_);
      syncResponses_.push_back(out.response);
      return out;
    }
    if (out.response.update_size() > 0 || !out.response.more()) {
      out.outcome = CallReply::Outcome::kBadReply;
      out.message = "plugin does not handle split sync requests";
      violation(*c, out.message);
      closeConn(*c, out.message);
      return out;
    }
    podsAt += podsPer;
    ctrsAt += ctrsPer;
    podsPer = std::min(podsPer, pods.size() - podsAt);
    ctrsPer = std::min(ctrsPer, ctrs.size() - ctrsAt);
    if (podsPer == 0 && ctrsPer == 0) {  // never stall: one more of what is left
      podsPer = pods.size() - podsAt;
      ctrsPer = ctrs.size() - ctrsAt;
    }
  }
}

Reply<nriapi::ConfigureResponse> NriRuntimePeer::configure() {
  auto c = current();
  Reply<nriapi::ConfigureResponse> out;
  if (!c) return out;
  return configureOn(c);
}

Reply<nriapi::SynchronizeResponse> NriRuntimePeer::synchronize(
    const std::vector<nriapi::PodSandbox>& pods, const std::vector<nriapi::Container>& containers) {
  auto c = current();
  Reply<nriapi::SynchronizeResponse> out;
  if (!c) return out;
  out = synchronizeOn(c, pods, containers);
  if (out.ok()) {
    std::lock_guard lock(mu_);
    if (c->open && !c->synchronized) {
      c->synchronized = true;
      stats_.synchronized++;
    }
  }
  cv_.notify_all();
  return out;
}

template <typename Resp>
Reply<Resp> NriRuntimePeer::event(nriapi::Event ev, const std::string& method,
                                  const std::string& payload) {
  LockGuard guard(*this);
  Reply<Resp> out;
  auto c = current();
  {
    std::lock_guard lock(mu_);
    if (!c || !c->open || !c->synchronized) return out;  // kNoPlugin
    const int32_t bit = int32_t{1} << (static_cast<int>(ev) - 1);
    if ((c->events & bit) == 0) {
      out.outcome = CallReply::Outcome::kNotSubscribed;
      return out;
    }
  }
  static_cast<CallReply&>(out) = callOn(c, kPluginService, method, payload, config_.framing,
                                        Clock::now() + config_.requestTimeout);
  if (out.ok() && !out.response.ParseFromString(out.payload)) {
    out.outcome = CallReply::Outcome::kBadReply;
    out.message = method + " response does not parse";
    violation(*c, out.message);
  }
  return out;
}

Reply<nriapi::Empty> NriRuntimePeer::stateChange(nriapi::Event ev, const nriapi::PodSandbox& pod,
                                                 const nriapi::Container* container) {
  nriapi::StateChangeEvent req;
  req.set_event(ev);
  *req.mutable_pod() = pod;
  if (container != nullptr) *req.mutable_container() = *container;
  return event<nriapi::Empty>(ev, "StateChange", req.SerializeAsString());
}

Reply<nriapi::CreateContainerResponse> NriRuntimePeer::createContainer(
    const nriapi::PodSandbox& pod, const nriapi::Container& container) {
  nriapi::CreateContainerRequest req;
  *req.mutable_pod() = pod;
  *req.mutable_container() = container;
  return event<nriapi::CreateContainerResponse>(nriapi::CREATE_CONTAINER, "CreateContainer",
                                                req.SerializeAsString());
}

Reply<nriapi::UpdateContainerResponse> NriRuntimePeer::updateContainer(
    const nriapi::PodSandbox& pod, const nriapi::Container& container,
    const nriapi::LinuxResources& resources) {
  nriapi::UpdateContainerRequest req;
  *req.mutable_pod() = pod;
  *req.mutable_container() = container;
  *req.mutable_linux_resources() = resources;
  return event<nriapi::UpdateContainerResponse>(nriapi::UPDATE_CONTAINER, "UpdateContainer",
                                                req.SerializeAsString());
}

Reply<nriapi::StopContainerResponse> NriRuntimePeer::stopContainer(
    const nriapi::PodSandbox& pod, const nriapi::Container& container) {
  nriapi::StopContainerRequest req;
  *req.mutable_pod() = pod;
  *req.mutable_container() = container;
  return event<nriapi::StopContainerResponse>(nriapi::STOP_CONTAINER, "StopContainer",
                                              req.SerializeAsString());
}

// ---- waiting and records ----

bool NriRuntimePeer::ready() const {
  std::lock_guard lock(mu_);
  return conn_ && conn_->open && conn_->synchronized;
}

bool NriRuntimePeer::waitUntil(const std::function<bool()>& pred,
                               std::chrono::milliseconds limit) const {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(5));
  }
}

bool NriRuntimePeer::waitReady(std::chrono::milliseconds limit) const {
  return waitUntil([this] { return ready(); }, limit);
}

bool NriRuntimePeer::waitSynchronized(uint64_t connections, std::chrono::milliseconds limit) const {
  return waitUntil([&] { return stats().synchronized >= connections; }, limit);
}

bool NriRuntimePeer::waitClosed(std::chrono::milliseconds limit) const {
  return waitUntil(
      [this] {
        std::lock_guard lock(mu_);
        return !conn_ || !conn_->open;
      },
      limit);
}

std::vector<PeerRegistration> NriRuntimePeer::registrations() const {
  std::lock_guard lock(mu_);
  return registrations_;
}
std::vector<nriapi::UpdateContainersRequest> NriRuntimePeer::updateRequests() const {
  std::lock_guard lock(mu_);
  return updates_;
}
std::vector<nriapi::SynchronizeRequest> NriRuntimePeer::syncRequests() const {
  std::lock_guard lock(mu_);
  return syncRequests_;
}
std::vector<nriapi::SynchronizeResponse> NriRuntimePeer::syncResponses() const {
  std::lock_guard lock(mu_);
  return syncResponses_;
}
std::vector<ReceivedMessage> NriRuntimePeer::received() const {
  std::lock_guard lock(mu_);
  return received_;
}
std::vector<std::string> NriRuntimePeer::violations() const {
  std::lock_guard lock(mu_);
  return violations_;
}
std::string NriRuntimePeer::violationsText() const {
  std::string out;
  for (const auto& v : violations()) out += v + "\n";
  return out;
}
PeerStats NriRuntimePeer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}
int32_t NriRuntimePeer::events() const {
  std::lock_guard lock(mu_);
  return events_;
}
std::string NriRuntimePeer::lastCloseReason() const {
  std::lock_guard lock(mu_);
  return lastCloseReason_;
}

std::pair<int, int> makeSocketPair() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw std::runtime_error("socketpair: " + std::string(std::strerror(errno)));
  return {sv[0], sv[1]};
}

// ---- payloads ----

namespace {

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char ch : s) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::string hexDigits(std::string_view seed, size_t n) {
  uint64_t state = fnv1a(seed);
  std::string out;
  char buf[17];
  while (out.size() < n) {
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(splitmix(state)));
    out += buf;
  }
  out.resize(n);
  return out;
}

const char* qosDir(PodQos qos) {
  switch (qos) {
    case PodQos::kBestEffort:
      return "besteffort";
    case PodQos::kBurstable:
      return "burstable";
    case PodQos::kGuaranteed:
      return "";
  }
  return "";
}

nriapi::LinuxNamespace ns(const std::string& type, const std::string& path) {
  nriapi::LinuxNamespace n;
  n.set_type(type);
  n.set_path(path);
  return n;
}

void addMount(nriapi::Container& c, const std::string& dst, const std::string& type,
              const std::string& src, std::initializer_list<const char*> options) {
  auto* m = c.add_mounts();
  m->set_destination(dst);
  m->set_type(type);
  m->set_source(src);
  for (const char* o : options) m->add_options(o);
}

}  // namespace

std::string hexId(std::string_view seed) { return hexDigits(seed, 64); }

std::string uuidFrom(std::string_view seed) {
  std::string h = hexDigits(std::string("uuid/") + std::string(seed), 32);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-4" + h.substr(13, 3) + "-a" + h.substr(17, 3) +
         "-" + h.substr(20, 12);
}

std::string podCgroupParent(const std::string& uid, PodQos qos, CgroupDriver driver) {
  const std::string dir = qosDir(qos);
  if (driver == CgroupDriver::kCgroupfs)
    return "/kubepods/" + (dir.empty() ? "" : dir + "/") + "pod" + uid;
  std::string u = uid;
  std::replace(u.begin(), u.end(), '-', '_');
  return "kubepods-" + (dir.empty() ? "" : dir + "-") + "pod" + u + ".slice";
}

nriapi::PodSandbox makePod(const PodSpec& spec) {
  nriapi::PodSandbox p;
  const std::string uid = spec.uid.empty() ? uuidFrom(spec.ns + "/" + spec.name) : spec.uid;
  p.set_id(hexId("sandbox/" + spec.ns + "/" + spec.name + "/" + uid));
  p.set_name(spec.name);
  p.set_uid(uid);
  p.set_namespace_(spec.ns);
  auto& labels = *p.mutable_labels();
  for (const auto& [k, v] : spec.labels) labels[k] = v;
  if (spec.labels.empty()) {
    labels["app"] = "nginx";
    labels["pod-template-hash"] = "7854ff8877";
  }
  if (!spec.koordQos.empty()) labels["koordinator.sh/qosClass"] = spec.koordQos;
  labels["io.kubernetes.pod.name"] = spec.name;
  labels["io.kubernetes.pod.namespace"] = spec.ns;
  labels["io.kubernetes.pod.uid"] = uid;
  auto& ann = *p.mutable_annotations();
  ann["kubernetes.io/config.seen"] = "2024-05-02T09:14:31.127735781Z";
  ann["kubernetes.io/config.source"] = "api";
  for (const auto& [k, v] : spec.annotations) ann[k] = v;
  p.set_runtime_handler("");
  auto* linux = p.mutable_linux();
  const std::string parent = podCgroupParent(uid, spec.qos, spec.driver);
  linux->set_cgroup_parent(parent);
  linux->set_cgroups_path(spec.driver == CgroupDriver::kCgroupfs
                              ? parent + "/" + p.id()
                              : parent + ":cri-containerd:" + p.id());
  *linux->add_namespaces() = ns("pid", "");
  *linux->add_namespaces() = ns("ipc", "");
  *linux->add_namespaces() = ns("uts", "");
  *linux->add_namespaces() = ns("mount", "");
  *linux->add_namespaces() = ns("network", "/var/run/netns/cni-" + uuidFrom("netns/" + uid));
  linux->mutable_resources()->mutable_cpu()->mutable_shares()->set_value(2);  // the pause container
  p.set_pid(static_cast<uint32_t>(1000 + fnv1a(uid) % 60000));
  p.add_ips(spec.ip);
  return p;
}

nriapi::Container makeContainer(const nriapi::PodSandbox& pod, const ContainerSpec& spec,
                                CgroupDriver driver) {
  nriapi::Container c;
  c.set_id(hexId("container/" + pod.id() + "/" + spec.name));
  c.set_pod_sandbox_id(pod.id());
  c.set_name(spec.name);
  c.set_state(spec.state);
  auto& labels = *c.mutable_labels();
  labels["io.kubernetes.container.name"] = spec.name;
  labels["io.kubernetes.pod.name"] = pod.name();
  labels["io.kubernetes.pod.namespace"] = pod.namespace_();
  labels["io.kubernetes.pod.uid"] = pod.uid();
  auto& ann = *c.mutable_annotations();
  ann["io.kubernetes.container.hash"] = hexDigits("hash/" + c.id(), 8);
  ann["io.kubernetes.container.restartCount"] = "0";
  ann["io.kubernetes.container.terminationMessagePath"] = "/dev/termination-log";
  ann["io.kubernetes.container.terminationMessagePolicy"] = "File";
  ann["io.kubernetes.pod.terminationGracePeriod"] = "30";
  ann["io.kubernetes.cri.container-type"] = "container";
  ann["io.kubernetes.cri.container-name"] = spec.name;
  ann["io.kubernetes.cri.image-name"] = spec.image;
  ann["io.kubernetes.cri.sandbox-id"] = pod.id();
  ann["io.kubernetes.cri.sandbox-name"] = pod.name();
  ann["io.kubernetes.cri.sandbox-namespace"] = pod.namespace_();
  ann["io.kubernetes.cri.sandbox-uid"] = pod.uid();
  for (const auto& [k, v] : spec.annotations) ann[k] = v;
  for (const char* a : {"/docker-entrypoint.sh", "nginx", "-g", "daemon off;"}) c.add_args(a);
  c.add_env("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  c.add_env("HOSTNAME=" + pod.name());
  c.add_env("NGINX_VERSION=1.25.5");
  for (const auto& e : spec.env) c.add_env(e);
  c.add_env("KUBERNETES_SERVICE_HOST=10.96.0.1");
  c.add_env("KUBERNETES_SERVICE_PORT=443");
  c.add_env("KUBERNETES_SERVICE_PORT_HTTPS=443");
  c.add_env("KUBERNETES_PORT=tcp://10.96.0.1:443");
  c.add_env("KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443");
  c.add_env("KUBERNETES_PORT_443_TCP_PROTO=tcp");
  c.add_env("KUBERNETES_PORT_443_TCP_PORT=443");
  c.add_env("KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1");
  const std::string podDir = "/var/lib/kubelet/pods/" + pod.uid();
  const std::string sandboxDir =
      "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/" + pod.id();
  addMount(c, "/proc", "proc", "proc", {"nosuid", "noexec", "nodev"});
  addMount(c, "/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"});
  addMount(c, "/dev/pts", "devpts", "devpts",
           {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"});
  addMount(c, "/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"});
  addMount(c, "/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"});
  addMount(c, "/sys/fs/cgroup", "cgroup", "cgroup",
           {"nosuid", "noexec", "nodev", "relatime", "ro"});
  addMount(c, "/etc/hosts", "bind", podDir + "/etc-hosts", {"rbind", "rprivate", "rw"});
  addMount(c, "/dev/termination-log", "bind",
           podDir + "/containers/" + spec.name + "/" + hexDigits("term/" + c.id(), 8),
           {"rbind", "rprivate", "rw"});
  addMount(c, "/etc/hostname", "bind", sandboxDir + "/hostname", {"rbind", "rprivate", "rw"});
  addMount(c, "/etc/resolv.conf", "bind", sandboxDir + "/resolv.conf", {"rbind", "rprivate", "rw"});
  addMount(c, "/dev/shm", "bind",
           "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/" + pod.id() + "/shm",
           {"rbind", "rprivate", "rw"});
  addMount(c, "/var/run/secrets/kubernetes.io/serviceaccount", "bind",
           podDir + "/volumes/kubernetes.io~projected/kube-api-access-" +
               hexDigits("sa/" + pod.uid(), 5),
           {"rbind", "rprivate", "ro"});

  auto* linux = c.mutable_linux();
  const std::string podPid = "/proc/" + std::to_string(pod.pid()) + "/ns/";
  *linux->add_namespaces() = ns("pid", "");
  *linux->add_namespaces() = ns("ipc", podPid + "ipc");
  *linux->add_namespaces() = ns("uts", podPid + "uts");
  *linux->add_namespaces() = ns("mount", "");
  *linux->add_namespaces() = ns("network", podPid + "net");
  const std::string& parent = pod.linux().cgroup_parent();
  const bool be = parent.find("besteffort") != std::string::npos;
  const bool burstable = parent.find("burstable") != std::string::npos;
  auto* cpu = linux->mutable_resources()->mutable_cpu();
  // kubelet: shares = request × 1024 / 1000 (min 2); quota = limit × period / 1000.
  cpu->mutable_shares()->set_value(
      spec.cpuRequestMilli > 0 ? std::max<int64_t>(2, spec.cpuRequestMilli * 1024 / 1000) : 2);
  if (spec.cpuLimitMilli > 0) {
    cpu->mutable_quota()->set_value(spec.cpuLimitMilli * 100);
    cpu->mutable_period()->set_value(100000);
  }
  if (spec.memoryLimitBytes > 0) {
    linux->mutable_resources()->mutable_memory()->mutable_limit()->set_value(spec.memoryLimitBytes);
  }
  linux->mutable_oom_score_adj()->set_value(be ? 1000 : burstable ? 968 : -997);
  linux->set_cgroups_path(driver == CgroupDriver::kCgroupfs ? parent + "/" + c.id()
                                                            : parent + ":cri-containerd:" + c.id());
  c.set_pid(spec.pid);
  auto* rl = c.add_rlimits();
  rl->set_type("RLIMIT_NOFILE");
  rl->set_hard(1048576);
  rl->set_soft(1048576);
  return c;
}

void makeNode(size_t pods, std::vector<nriapi::PodSandbox>& outPods,
              std::vector<nriapi::Container>& outContainers, CgroupDriver driver,
              const std::string& prefix) {
  for (size_t i = 0; i < pods; ++i) {
    PodSpec ps;
    // "<prefix>-<replicaset hash>-<pod suffix>", built by append: GCC 12's
    // -Wrestrict misfires on the operator+ chain.
    ps.name = prefix;
    ps.name.append("-").append(hexDigits(prefix + std::to_string(i), 10));
    ps.name.append("-").append(hexDigits(std::to_string(i).append("s"), 5));
    ps.ns = i % 4 == 0 ? "kube-system" : "default";
    ps.driver = driver;
    ps.ip = "10.244." + std::to_string(1 + i / 250) + "." + std::to_string(2 + i % 250);
    ps.labels = {{"app", prefix}, {"pod-template-hash", hexDigits(prefix, 10)}};
    ContainerSpec cs;
    cs.name = prefix;
    cs.state = nriapi::CONTAINER_RUNNING;
    cs.pid = static_cast<uint32_t>(2000 + i);
    switch (i % 3) {
      case 0:  // a koordinator batch pod
        ps.qos = PodQos::kBestEffort;
        ps.koordQos = "BE";
        ps.labels["koordinator.sh/priority-class"] = "koord-batch";
        break;
      case 1:
        ps.qos = PodQos::kBurstable;
        ps.koordQos = "LS";
        cs.cpuRequestMilli = 250;
        cs.cpuLimitMilli = 1000;
        cs.memoryLimitBytes = 256ll << 20;
        break;
      default:  // a pinned LSR pod
        ps.qos = PodQos::kGuaranteed;
        ps.koordQos = "LSR";
        ps.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"2-3"})";
        cs.cpuRequestMilli = cs.cpuLimitMilli = 2000;
        cs.memoryLimitBytes = 1ll << 30;
        break;
    }
    outPods.push_back(makePod(ps));
    outContainers.push_back(makeContainer(outPods.back(), cs, driver));
  }
}

}  // namespace koord::test
