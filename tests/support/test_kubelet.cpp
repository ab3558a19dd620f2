// TestKubelet implementation: an acceptor and one KubeletSession per connection on the
// server's own io_context and thread. A session reads one request, answers it as the
// current Behaviour says, and closes (the client under test opens a connection per
// request). Replies are written as raw bytes rather than Beast messages, because most
// behaviours are deliberately broken HTTP.
#include "tests/support/test_kubelet.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "tests/support/temp_tree.h"
#include "tests/support/test_certs.h"
#include "tests/support/test_session.h"

namespace koord::test {
// Named, not anonymous: the Impl below holds its types, and a unity build would refuse
// a member of a type with internal linkage (-Wsubobject-linkage).
namespace kubelet_impl {

using namespace session;
using Behaviour = TestKubelet::Behaviour;

// ---- Server ----

constexpr size_t kHugeChunk = 64 * 1024;
constexpr size_t kHugeHeaderFiller = 70 * 1024;  // over the client's 64 KiB header limit
constexpr std::string_view kHtmlPage = "<html><body><h1>Not JSON</h1></body></html>\n";
constexpr std::string_view kEmptyPodList =
    R"({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]})";

struct Settings {
  Behaviour behaviour = Behaviour::kServe;
  unsigned status = 200;
  // KubeletShared so a request takes a snapshot without copying a multi-MiB body.
  std::shared_ptr<const std::string> body = std::make_shared<std::string>(kEmptyPodList);
  std::chrono::milliseconds slowDelay{10'000};
  size_t hugeBytes = 256u << 20;
  std::string expectedToken;
  // GET /configz's body (always served as it is, 200); null: 404, as the read-only
  // port answers.
  std::shared_ptr<const std::string> configz;
};

// What the test thread and the server thread share.
struct SharedState {
  mutable std::mutex mu;
  Settings settings;
  std::string lastToken;
  std::string lastHead;
  std::atomic<size_t> requests{0};
  std::atomic<size_t> hugeMostBytes{0};  // the most body bytes one kHuge reply sent
};

std::string statusLine(unsigned status) {
  return "HTTP/1.1 " + std::to_string(status) + " " +
         std::string(http::obsolete_reason(http::int_to_status(status))) + "\r\n";
}

std::string head(unsigned status, std::string_view contentType, size_t contentLength) {
  return statusLine(status) + "Content-Type: " + std::string(contentType) +
         "\r\nContent-Length: " + std::to_string(contentLength) + "\r\nConnection: close\r\n\r\n";
}

// One connection. Stream is tcp::socket or ssl::stream<tcp::socket>.
template <typename Stream>
class KubeletSession : public BasicSession<KubeletSession<Stream>, Stream, SharedState> {
  using Base = BasicSession<KubeletSession<Stream>, Stream, SharedState>;
  friend Base;
  using Base::close;
  using Base::req_;
  using Base::shared_;
  using Base::stream_;
  using Base::timer_;

 public:
  using Base::Base;

 private:
  void onRequest() {
    const std::string auth(req_[http::field::authorization]);
    Settings s;
    {
      std::ostringstream head;
      head << req_.base();
      std::lock_guard lock(shared_->mu);
      ++shared_->requests;
      shared_->lastToken = auth.rfind("Bearer ", 0) == 0 ? auth.substr(7) : auth;
      shared_->lastHead = head.str();
      s = shared_->settings;
    }
    if (!s.expectedToken.empty() && auth != "Bearer " + s.expectedToken) {
      send(text(401, "Unauthorized\n"));
      return;
    }
    if (req_.method() == http::verb::get && req_.target() == "/configz" && s.configz) {
      send(head(200, "application/json", s.configz->size()), s.configz);
      return;
    }
    if (req_.method() != http::verb::get || req_.target() != "/pods/") {
      send(text(404, "404 page not found\n"));
      return;
    }
    switch (s.behaviour) {
      case Behaviour::kServe:
        send(head(s.status, "application/json", s.body->size()), s.body);
        return;
      case Behaviour::kSlow:
        timer_.expires_after(s.slowDelay);
        timer_.async_wait([self = this->shared_from_this(), s](error_code ec) {
          if (ec) return;
          self->send(head(s.status, "application/json", s.body->size()), s.body);
        });
        return;
      case Behaviour::kCutOff:
        send(head(s.status, "application/json", s.body->size()), s.body, s.body->size() / 2);
        return;
      case Behaviour::kHuge:
        hugeLeft_ = s.hugeBytes;
        send(statusLine(200) +
             "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
             "Connection: close\r\n\r\n");
        return;
      case Behaviour::kNotJson:
        send(head(200, "text/html", kHtmlPage.size()),
             std::make_shared<const std::string>(kHtmlPage));
        return;
      case Behaviour::kMalformed:
        send("this is not an HTTP reply\r\n\r\n");
        return;
      case Behaviour::kReset:
        reset_ = true;
        send(head(s.status, "application/json", s.body->size()), s.body, s.body->size() / 2);
        return;
      case Behaviour::kHugeHeader:
        send(statusLine(200) + "X-Filler: " + std::string(kHugeHeaderFiller, 'a') +
             "\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
        return;
    }
  }

  static std::string text(unsigned status, std::string_view body) {
    return head(status, "text/plain; charset=utf-8", body.size()) + std::string(body);
  }

  // Writes headBytes and the first bodyBytes of body, then closes (or, for kHuge,
  // goes on with the chunks).
  void send(std::string headBytes, std::shared_ptr<const std::string> body = nullptr,
            size_t bodyBytes = std::string::npos) {
    head_ = std::move(headBytes);
    body_ = std::move(body);
    const size_t n = body_ ? std::min(bodyBytes, body_->size()) : 0;
    const std::array<net::const_buffer, 2> buffers{net::buffer(head_),
                                                   net::buffer(body_ ? body_->data() : "", n)};
    net::async_write(stream_, buffers, [self = this->shared_from_this()](error_code ec, size_t) {
      if (!ec && self->reset_) {
        // SO_LINGER with a zero timeout: close() sends RST, not FIN.
        error_code ignored;
        self->socket().set_option(tcp::socket::linger(true, 0), ignored);
        self->socket().close(ignored);
        self->timer_.cancel();
      } else if (ec || self->hugeLeft_ == 0) {
        self->close();
      } else {
        self->sendChunk();
      }
    });
  }

  // kHuge: 64 KiB chunks until hugeLeft_ is spent; a client that stops reading at
  // its cap closes the connection, which ends the loop with a write error.
  void sendChunk() {
    const size_t n = std::min(hugeLeft_, kHugeChunk);
    hugeLeft_ -= n;
    std::ostringstream size;
    size << std::hex << n;
    head_ =
        size.str() + "\r\n" + std::string(n, ' ') + "\r\n" + (hugeLeft_ == 0 ? "0\r\n\r\n" : "");
    net::async_write(
        stream_, net::buffer(head_), [self = this->shared_from_this(), n](error_code ec, size_t) {
          if (!ec) {
            self->hugeSent_ += n;
            size_t most = self->shared_->hugeMostBytes.load();
            while (most < self->hugeSent_ &&
                   !self->shared_->hugeMostBytes.compare_exchange_weak(most, self->hugeSent_)) {
            }
          }
          if (ec || self->hugeLeft_ == 0) {
            self->close();
          } else {
            self->sendChunk();
          }
        });
  }

  std::string head_;
  std::shared_ptr<const std::string> body_;
  size_t hugeLeft_ = 0;
  size_t hugeSent_ = 0;
  bool reset_ = false;  // kReset: end with RST after the partial body
};

}  // namespace kubelet_impl

using namespace kubelet_impl;

struct TestKubelet::Impl : session::ServerLoop<SharedState> {
  explicit Impl(Options opts) : options(std::move(opts)) {}

  template <typename F>
  void update(F change) {
    std::lock_guard lock(shared->mu);
    change(shared->settings);
  }

  // Runs f on the io thread and waits for it.
  template <typename F>
  void onIo(F f) {
    std::promise<void> done;
    net::post(io, [&] {
      try {
        f();
        done.set_value();
      } catch (...) {
        done.set_exception(std::current_exception());
      }
    });
    done.get_future().get();
  }

  Options options;
  // Keeps io running while stop() has closed the listener (no other work then).
  net::executor_work_guard<net::io_context::executor_type> work = net::make_work_guard(io);
  std::optional<TempTree> dir;
  std::string caFile;
  std::string otherCaFile;
};

TestKubelet::TestKubelet() : TestKubelet(Options{}) {}

TestKubelet::TestKubelet(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {
  Impl& s = *impl_;
  if (s.options.tls) {
    const TestCa ca("test-kubelet-ca");
    const PemPair server = ca.issueServer("test-kubelet");
    const TestCa otherCa("unrelated-ca");
    s.dir.emplace();
    s.dir->write("ca.crt", ca.certPem());
    s.dir->write("other-ca.crt", otherCa.certPem());
    s.caFile = s.dir->path("ca.crt");
    s.otherCaFile = s.dir->path("other-ca.crt");

    s.useTls(server, "test kubelet");
  }
  s.serve<KubeletSession>(s.options.address);
}

TestKubelet::~TestKubelet() { impl_->stop(); }

void TestKubelet::stop() {
  impl_->onIo([this] {
    error_code ignored;
    impl_->acceptor.close(ignored);
  });
}

void TestKubelet::start() {
  impl_->onIo([this] {
    if (impl_->acceptor.is_open()) return;
    session::listen(impl_->acceptor, impl_->options.address, impl_->port);
    session::acceptEach(impl_->acceptor, [this](tcp::socket socket) {
      session::startSession<KubeletSession>(impl_->tlsOrNull(), std::move(socket), impl_->shared);
    });
  });
}

uint16_t TestKubelet::port() const { return impl_->port; }
const std::string& TestKubelet::address() const { return impl_->options.address; }
const std::string& TestKubelet::caFile() const { return impl_->caFile; }
const std::string& TestKubelet::otherCaFile() const { return impl_->otherCaFile; }

void TestKubelet::setBehaviour(Behaviour behaviour) {
  impl_->update([&](Settings& s) { s.behaviour = behaviour; });
}
void TestKubelet::setStatus(unsigned status) {
  impl_->update([&](Settings& s) { s.status = status; });
}
void TestKubelet::setBody(std::string body) {
  auto shared = std::make_shared<const std::string>(std::move(body));
  impl_->update([&](Settings& s) { s.body = std::move(shared); });
}
void TestKubelet::setConfigz(std::string body) {
  auto shared = std::make_shared<const std::string>(std::move(body));
  impl_->update([&](Settings& s) { s.configz = std::move(shared); });
}
void TestKubelet::setSlowDelay(std::chrono::milliseconds delay) {
  impl_->update([&](Settings& s) { s.slowDelay = delay; });
}
void TestKubelet::setHugeBytes(size_t bytes) {
  impl_->update([&](Settings& s) { s.hugeBytes = bytes; });
}
void TestKubelet::setExpectedToken(std::string token) {
  impl_->update([&](Settings& s) { s.expectedToken = std::move(token); });
}

std::string TestKubelet::lastToken() const {
  std::lock_guard lock(impl_->shared->mu);
  return impl_->shared->lastToken;
}
size_t TestKubelet::requestCount() const { return impl_->shared->requests.load(); }
size_t TestKubelet::hugeMostBytesSent() const { return impl_->shared->hugeMostBytes.load(); }
std::string TestKubelet::lastRequestHead() const {
  std::lock_guard lock(impl_->shared->mu);
  return impl_->shared->lastHead;
}

}  // namespace koord::test
