// TestHttpServer implementation: an acceptor and one HttpSession per connection on the
// server's own io_context and thread. A session reads one request (Beast), asks the
// handler for the reply, writes its pieces with the gap between them on a timer,
// then closes or holds the connection until the peer leaves. Replies are raw bytes
// because tests need broken and streamed HTTP as well as well-formed.
#include "tests/support/test_http_server.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "tests/support/test_certs.h"
#include "tests/support/test_session.h"

namespace koord::test {
// Named, not anonymous: the Impl below holds its types, and a unity build would refuse
// a member of a type with internal linkage (-Wsubobject-linkage).
namespace http_server_impl {

using namespace session;

struct HttpShared {
  mutable std::mutex mu;
  TestHttpServer::Handler handler;
  std::vector<TestHttpServer::Request> requests;
  std::atomic<size_t> failedHandshakes{0};
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

template <typename Stream>
class HttpSession : public BasicSession<HttpSession<Stream>, Stream, HttpShared> {
  using Base = BasicSession<HttpSession<Stream>, Stream, HttpShared>;
  friend Base;
  using Base::close;
  using Base::kTls;
  using Base::req_;
  using Base::shared_;
  using Base::socket;
  using Base::stream_;
  using Base::timer_;

 public:
  using Base::Base;

 private:
  void onHandshakeFailed() { ++shared_->failedHandshakes; }

  void onRequest() {
    TestHttpServer::Request r;
    r.method = std::string(req_.method_string());
    r.target = std::string(req_.target());
    for (const auto& field : req_.base()) {
      r.headers[lower(field.name_string())] = std::string(field.value());
    }
    r.body = req_.body();
    if constexpr (kTls) {
      const char* sni = SSL_get_servername(stream_.native_handle(), TLSEXT_NAMETYPE_host_name);
      if (sni != nullptr) r.serverName = sni;
    }
    TestHttpServer::Handler handler;
    {
      std::lock_guard lock(shared_->mu);
      shared_->requests.push_back(r);
      handler = shared_->handler;
    }
    reply_ = handler ? handler(r) : TestHttpServer::reply(200, "{}");
    next_ = 0;
    writeNext();
  }

  void writeNext() {
    if (next_ >= reply_.pieces.size()) {
      if (reply_.hold) {
        hold();
      } else {
        close();
      }
      return;
    }
    if (next_ > 0 && reply_.gap.count() > 0) {
      timer_.expires_after(reply_.gap);
      timer_.async_wait([self = this->shared_from_this()](error_code ec) {
        if (!ec) self->writePiece();
      });
      return;
    }
    writePiece();
  }

  void writePiece() {
    net::async_write(stream_, net::buffer(reply_.pieces[next_]),
                     [self = this->shared_from_this()](error_code ec, size_t) {
                       if (ec) {
                         self->close();
                         return;
                       }
                       ++self->next_;
                       self->writeNext();
                     });
  }

  // Reads (and drops) until the peer closes, so the connection stays open and idle.
  void hold() {
    socket().async_read_some(net::buffer(sink_),
                             [self = this->shared_from_this()](error_code ec, size_t) {
                               if (ec) {
                                 self->close();
                               } else {
                                 self->hold();
                               }
                             });
  }

  TestHttpServer::Reply reply_;
  size_t next_ = 0;
  std::array<char, 1024> sink_{};
};

}  // namespace http_server_impl

using namespace http_server_impl;

std::string TestHttpServer::Request::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

TestHttpServer::Reply TestHttpServer::reply(
    unsigned status, std::string body,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  std::ostringstream head;
  head << "HTTP/1.1 " << status << " "
       << std::string(http::obsolete_reason(http::int_to_status(status))) << "\r\n";
  bool typed = false;
  for (const auto& [name, value] : headers) {
    head << name << ": " << value << "\r\n";
    typed = typed || lower(name) == "content-type";
  }
  if (!typed) head << "Content-Type: application/json\r\n";
  head << "Content-Length: " << body.size() << "\r\nConnection: close\r\n\r\n";
  return Reply{{head.str() + body}, {}, false};
}

std::string TestHttpServer::chunkedHead(unsigned status) {
  return "HTTP/1.1 " + std::to_string(status) + " " +
         std::string(http::obsolete_reason(http::int_to_status(status))) +
         "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
         "Connection: close\r\n\r\n";
}

std::string TestHttpServer::chunk(std::string_view data) {
  std::ostringstream out;
  out << std::hex << data.size() << "\r\n" << data << "\r\n";
  return out.str();
}

struct TestHttpServer::Impl : session::ServerLoop<HttpShared> {
  explicit Impl(Options opts) : options(opts) {}

  Options options;
  std::string caPem, otherCaPem, clientCertPem, clientKeyPem;
};

TestHttpServer::TestHttpServer() : TestHttpServer(Options{}) {}

TestHttpServer::TestHttpServer(Options options) : impl_(std::make_unique<Impl>(options)) {
  Impl& s = *impl_;
  if (s.options.tls) {
    const TestCa ca("test-http-ca");
    const PemPair server = ca.issueServer("test-http-server");
    const PemPair client = ca.issueClient("test-http-client");
    s.caPem = ca.certPem();
    s.otherCaPem = TestCa("unrelated-ca").certPem();
    s.clientCertPem = client.cert;
    s.clientKeyPem = client.key;
    s.useTls(server, "test http server");
    if (s.options.requireClientCert) {
      error_code ec;
      s.tls->add_certificate_authority(net::buffer(s.caPem), ec);
      if (!ec) s.tls->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
      if (ec) throw std::runtime_error("test http server: client CA: " + ec.message());
    }
  }
  s.serve<HttpSession>("127.0.0.1");
}

TestHttpServer::~TestHttpServer() { impl_->stop(); }

void TestHttpServer::setHandler(Handler handler) {
  std::lock_guard lock(impl_->shared->mu);
  impl_->shared->handler = std::move(handler);
}

uint16_t TestHttpServer::port() const { return impl_->port; }
std::string TestHttpServer::url() const {
  return std::string(impl_->options.tls ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(impl_->port);
}
const std::string& TestHttpServer::caPem() const { return impl_->caPem; }
const std::string& TestHttpServer::otherCaPem() const { return impl_->otherCaPem; }
const std::string& TestHttpServer::clientCertPem() const { return impl_->clientCertPem; }
const std::string& TestHttpServer::clientKeyPem() const { return impl_->clientKeyPem; }

std::vector<TestHttpServer::Request> TestHttpServer::requests() const {
  std::lock_guard lock(impl_->shared->mu);
  return impl_->shared->requests;
}

size_t TestHttpServer::failedHandshakes() const { return impl_->shared->failedHandshakes.load(); }

}  // namespace koord::test
