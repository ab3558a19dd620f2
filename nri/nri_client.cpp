#include <utility>  // before Asio: Boost 1.74's Asio needs it under C++20

#include "nri/nri_client.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "base/log.h"

namespace koord::nri {

namespace asio = boost::asio;
using Socket = asio::local::stream_protocol::socket;
using SteadyClock = std::chrono::steady_clock;

// How long we wait for the RegisterPlugin reply (or a Configure, which implies
// it) before giving the connection up: the Go stub's registration timeout. A
// runtime that accepts but never answers would otherwise hold us forever.
constexpr std::chrono::seconds kRegistrationReplyTimeout{5};

std::chrono::nanoseconds backoffDelay(const BackoffConfig& config, uint32_t failures) {
  using std::chrono::nanoseconds;
  nanoseconds cap = std::max(config.cap, nanoseconds{0});
  nanoseconds initial = std::clamp(config.initial, nanoseconds{0}, cap);
  // A factor below 1 would shrink the wait as failures pile up: treat it as 1.
  double factor = config.factor >= 1.0 ? config.factor : 1.0;
  if (failures <= 1 || factor == 1.0) return initial;
  // In floating point: factor^(failures-1) overflows to inf long before any
  // integer would wrap, and inf (or NaN) compares as "not below the cap".
  double ns =
      static_cast<double>(initial.count()) * std::pow(factor, static_cast<double>(failures - 1));
  if (!(ns < static_cast<double>(cap.count()))) return cap;
  return nanoseconds{static_cast<int64_t>(ns)};
}

const char* toString(NriState s) {
  switch (s) {
    case NriState::kStopped:
      return "stopped";
    case NriState::kConnecting:
      return "connecting";
    case NriState::kRegistering:
      return "registering";
    case NriState::kConnected:
      return "connected";
    case NriState::kWaiting:
      return "waiting";
    case NriState::kClosed:
      return "closed";
  }
  return "unknown";
}

// Everything below runs on the client's thread, except status(), the callback
// setter, start() and stop(), which lock mu or only touch the io_context.
struct NriClient::Impl {
  Impl(NriClientConfig c, NriHandler& h) : config(std::move(c)), handler(h) {}

  NriClientConfig config;
  NriHandler& handler;
  asio::io_context io;
  std::thread thread;
  std::mutex lifecycleMu;  // start()/stop()
  std::atomic<std::thread::id> ioThreadId{};
  bool onIoThread() const { return ioThreadId.load() == std::this_thread::get_id(); }

  // io thread only.
  std::shared_ptr<Socket> socket;  // shared with in-flight writes (writeNext)
  asio::steady_timer retryTimer{io};
  asio::steady_timer registrationTimer{io};
  std::unique_ptr<PluginSession> session;
  // Events of the sessions that ended (client thread only; NriStatus adds the current).
  uint64_t endedPerEventCalls = 0;
  uint64_t endedStateChangeCalls = 0;
  uint64_t generation = 0;  // bumps on every close: stale completions are ignored
  WriteQueue writeQueue{config.writeLimits};
  bool writing = false;
  std::string closeWhenFlushed;  // non-empty: fail(this) once the queue is written
  std::array<char, 64 * 1024> readBuf{};
  uint32_t failures = 0;  // consecutive failed attempts or short-lived connections
  SteadyClock::time_point connectedAt{};
  bool streakLogged = false;
  std::string lastLoggedFailure;
  bool launchedUsed = false;
  bool eofReported = false;

  mutable std::mutex mu;  // guards st and eofCallback
  NriStatus st;
  std::function<void()> eofCallback;

  bool launched() const { return config.launchedFd.has_value(); }

  void begin() {
    if (launched()) {
      adoptLaunchedFd();
    } else {
      attempt();
    }
  }

  void adoptLaunchedFd() {
    {
      std::lock_guard lock(mu);
      ++st.attempts;
    }
    if (launchedUsed) {
      closedForGood("launched socket already closed");
      return;
    }
    launchedUsed = true;
    socket = std::make_shared<Socket>(io);
    boost::system::error_code ec;
    socket->assign(asio::local::stream_protocol(), *config.launchedFd, ec);
    if (ec) {
      closedForGood("cannot use NRI_PLUGIN_SOCKET fd " + std::to_string(*config.launchedFd) + ": " +
                    ec.message());
      return;
    }
    KLOG_INFO << "NRI: using the runtime's pre-connected socket (fd " << *config.launchedFd << ")";
    onConnected();
  }

  void attempt() {
    {
      std::lock_guard lock(mu);
      ++st.attempts;
      st.state = NriState::kConnecting;
      st.nextRetryIn = std::chrono::nanoseconds{0};
    }
    socket = std::make_shared<Socket>(io);
    uint64_t gen = generation;
    socket->async_connect(asio::local::stream_protocol::endpoint(config.socketPath),
                          [this, gen](const boost::system::error_code& ec) {
                            if (gen != generation) return;
                            if (ec) {
                              std::string why = ec.value() == ENOENT
                                                    ? "NRI socket " + config.socketPath + " absent"
                                                    : "cannot connect to NRI socket " +
                                                          config.socketPath + ": " + ec.message();
                              fail(why, false);
                              return;
                            }
                            onConnected();
                          });
  }

  void onConnected() {
    connectedAt = SteadyClock::now();
    session = std::make_unique<PluginSession>(config.session, handler);
    {
      std::lock_guard lock(mu);
      st.state = NriState::kRegistering;
    }
    send(session->start());
    read();
    uint64_t gen = generation;
    registrationTimer.expires_after(std::max<std::chrono::nanoseconds>(
        kRegistrationReplyTimeout, config.session.requestTimeout));
    registrationTimer.async_wait([this, gen](const boost::system::error_code& ec) {
      if (ec || gen != generation || !session) return;
      if (session->phase() == PluginSession::Phase::kRegistering) {
        fail("the runtime did not answer RegisterPlugin", true);
      }
    });
  }

  void read() {
    uint64_t gen = generation;
    socket->async_read_some(
        asio::buffer(readBuf), [this, gen](const boost::system::error_code& ec, size_t n) {
          if (gen != generation) return;
          if (ec) {
            fail(ec == asio::error::eof ? std::string("runtime closed the connection")
                                        : "read: " + ec.message(),
                 true);
            return;
          }
          auto out = session->receive(std::string_view(readBuf.data(), n));
          if (!out) {
            if (session->stats().protocolErrors > 0) {
              std::lock_guard lock(mu);
              ++st.protocolCloses;
            }
            fail(out.error().message, true);  // protocol error or refused registration
            return;
          }
          if (!out->empty() && !send(std::move(*out))) return;  // closed: queue full
          if (session->phase() == PluginSession::Phase::kFailed) {
            // A refused Synchronize: its error reply goes out first, then we close
            // (reading stops here: nothing more is served on this connection).
            {
              std::lock_guard lock(mu);
              ++st.syncRefusals;
            }
            closeAfterWrites(session->failure());
            return;
          }
          noteProgress();
          read();
        });
  }

  // After each read: report the session's progress once it is synchronized.
  void noteProgress() {
    if (session->phase() != PluginSession::Phase::kSynchronized) return;
    std::lock_guard lock(mu);
    st.perEventCalls = endedPerEventCalls + session->stats().perEventCalls;
    st.stateChangeCalls = endedStateChangeCalls + session->stats().stateChangeCalls;
    if (st.state == NriState::kConnected) return;
    st.state = NriState::kConnected;
    ++st.connects;
    st.lastError.clear();
    st.runtimeName = session->runtimeName();
    st.runtimeVersion = session->runtimeVersion();
    st.runtimeNriVersion = session->runtimeNriVersion();
    st.requestTimeoutMs = session->requestTimeoutMs();
    st.events = session->subscribedEvents();
    streakLogged = false;
    lastLoggedFailure.clear();
    KLOG_INFO << "NRI connected to " << (launched() ? "the launching runtime" : config.socketPath)
              << " (runtime " << st.runtimeName << " " << st.runtimeVersion << ", NRI "
              << (st.runtimeNriVersion.empty() ? "before v0.12" : st.runtimeNriVersion)
              << ", events 0x" << std::hex << st.events << std::dec << ")";
  }

  // All socket writes go through this queue, one async_write at a time, so the
  // frames of two messages never interleave. False when the queue is full: the
  // runtime is not reading, and the connection has been closed (the session is
  // gone; the caller must not touch it).
  bool send(std::string bytes) {
    if (bytes.empty() || !socket) return true;
    if (auto pushed = writeQueue.push(std::move(bytes)); !pushed) {
      {
        std::lock_guard lock(mu);
        ++st.writeQueueOverflows;
      }
      fail(pushed.error().message, true);
      return false;
    }
    if (!writing) writeNext();
    return true;
  }

  // Closes the connection once everything queued is written (at once if nothing is).
  void closeAfterWrites(const std::string& why) {
    closeWhenFlushed = why;
    if (!writing) fail(why, true);
  }

  void writeNext() {
    if (writeQueue.empty()) {
      writing = false;
      if (!closeWhenFlushed.empty()) fail(std::string(closeWhenFlushed), true);
      return;
    }
    writing = true;
    uint64_t gen = generation;
    // The handler holds the socket and the message: a connection dropped while
    // this write is in flight (closeSocket) must not free what the composed
    // write still uses when it resumes (it may call the socket again after a
    // partial write that completed before the close).
    const std::shared_ptr<const std::string>& message = writeQueue.front();
    asio::async_write(*socket, asio::buffer(*message),
                      [this, gen, keepSocket = socket, keepMessage = message](
                          const boost::system::error_code& ec, size_t) {
                        if (gen != generation) return;
                        if (ec) {
                          fail("write: " + ec.message(), true);
                          return;
                        }
                        writeQueue.pop();
                        writeNext();
                      });
  }

  // Drops the connection; pending completions see a new generation and do nothing.
  void closeSocket() {
    ++generation;
    registrationTimer.cancel();
    if (socket) {
      boost::system::error_code ignored;
      socket->shutdown(Socket::shutdown_both, ignored);
      socket->close(ignored);
    }
    socket.reset();
    if (session) {  // what noteProgress mirrored into st stays counted
      endedPerEventCalls += session->stats().perEventCalls;
      endedStateChangeCalls += session->stats().stateChangeCalls;
    }
    session.reset();
    writeQueue.clear();
    writing = false;
    closeWhenFlushed.clear();
  }

  // An attempt failed or a connection ended (wasConnected: the socket was up).
  void fail(const std::string& why, bool wasConnected) {
    bool wasSynchronized = false;
    {
      std::lock_guard lock(mu);
      wasSynchronized = st.state == NriState::kConnected;
      if (wasSynchronized) ++st.disconnects;
      st.lastError = why;
    }
    bool healthy = wasConnected && SteadyClock::now() - connectedAt >= config.healthyAfter;
    closeSocket();

    if (launched()) {
      closedForGood(why);
      return;
    }
    if (healthy) failures = 0;
    if (failures < UINT32_MAX) ++failures;
    auto delay = backoffDelay(config.backoff, failures);

    if (wasSynchronized) {
      KLOG_WARNING << "NRI connection to " << config.socketPath << " lost: " << why
                   << "; reconnecting";
      // The next failures are a new streak: containerd restarting shows up as one line.
      streakLogged = false;
      lastLoggedFailure.clear();
    } else if (!streakLogged || why != lastLoggedFailure) {
      KLOG_WARNING << why << ", retrying with back-off (next attempt in "
                   << std::chrono::duration_cast<std::chrono::milliseconds>(delay).count()
                   << " ms)";
      streakLogged = true;
      lastLoggedFailure = why;
    }

    {
      std::lock_guard lock(mu);
      st.state = NriState::kWaiting;
      st.nextRetryIn = delay;
    }
    uint64_t gen = generation;
    retryTimer.expires_after(delay);
    retryTimer.async_wait([this, gen](const boost::system::error_code& ec) {
      if (ec || gen != generation) return;
      attempt();
    });
  }

  // Launched mode: the runtime closed our socket (or never gave a usable one).
  void closedForGood(const std::string& why) {
    closeSocket();
    std::function<void()> callback;
    {
      std::lock_guard lock(mu);
      st.state = NriState::kClosed;
      st.lastError = why;
      if (!eofReported) callback = eofCallback;
    }
    if (eofReported) return;
    eofReported = true;
    KLOG_WARNING << "NRI: the runtime closed the plugin socket (" << why
                 << "); not reconnecting in launched mode";
    if (callback) callback();
  }

  void updateContainers(api::UpdateContainersRequest req) {
    if (!session || session->phase() != PluginSession::Phase::kSynchronized) {
      KLOG_V(2) << "NRI not synchronized: UpdateContainers for " << req.update_size()
                << " container(s) dropped";
      return;
    }
    send(session->updateContainers(req));
  }
};

NriClient::NriClient(NriClientConfig config, NriHandler& handler)
    : impl_(std::make_unique<Impl>(std::move(config), handler)) {}

NriClient::~NriClient() {
  if (impl_->onIoThread()) {
    // Destroyed from a handler or callback on our own thread (a misuse): the
    // thread cannot join itself, and it still runs on impl_ once we return.
    impl_->io.stop();
    impl_->thread.detach();
    static_cast<void>(impl_.release());
    return;
  }
  stop();
}

void NriClient::start() {
  std::lock_guard lock(impl_->lifecycleMu);
  if (impl_->thread.joinable()) return;
  impl_->io.restart();
  asio::post(impl_->io, [impl = impl_.get()] { impl->begin(); });
  impl_->thread = std::thread([impl = impl_.get()] {
    impl->ioThreadId = std::this_thread::get_id();
    impl->io.run();
    impl->ioThreadId = std::thread::id{};
  });
}

void NriClient::stop() {
  // From a handler or callback on our own thread: run() returns once it is done;
  // the owner's next stop() (or the destructor) joins the thread. Checked before
  // taking the lock, which an owner's stop() may hold while it joins us.
  if (impl_->onIoThread()) {
    impl_->io.stop();
    return;
  }
  std::lock_guard lock(impl_->lifecycleMu);
  if (!impl_->thread.joinable()) return;
  impl_->io.stop();
  impl_->thread.join();
  // The io thread is gone: its objects can be touched from here.
  impl_->retryTimer.cancel();
  impl_->closeSocket();
  std::lock_guard statusLock(impl_->mu);
  if (impl_->st.state != NriState::kClosed) impl_->st.state = NriState::kStopped;
  impl_->st.nextRetryIn = std::chrono::nanoseconds{0};
}

NriStatus NriClient::status() const {
  std::lock_guard lock(impl_->mu);
  return impl_->st;
}

void NriClient::updateContainers(api::UpdateContainersRequest req) {
  asio::post(impl_->io, [impl = impl_.get(), r = std::move(req)]() mutable {
    impl->updateContainers(std::move(r));
  });
}

void NriClient::onLaunchedEof(std::function<void()> callback) {
  std::lock_guard lock(impl_->mu);
  impl_->eofCallback = std::move(callback);
}

}  // namespace koord::nri
