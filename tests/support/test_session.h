// The Beast plumbing the test servers (TestKubelet, TestHttpServer, TestApiServer)
// share: a listening acceptor, an accept loop, one session per connection over
// plain TCP or TLS, the TLS handshake, reading a request, a timer, and closing.
// What a server answers is its own: its Session derives from BasicSession (CRTP)
// and supplies onRequest(); it may replace close() and onHandshakeFailed().
//
// Decisions: header only (the sessions are templates over the stream); sessions
// run on the server's io thread only, so nothing here locks; no close sends a TLS
// close_notify (a cut-off reply must look cut off): closeSocket() shuts the TCP
// socket down and closes it, for the default close() and a server's own.
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include "tests/support/test_certs.h"

namespace koord::test::session {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;

// One connection. Stream is tcp::socket or ssl::stream<tcp::socket>; Shared is
// what the server's thread and the test's share. Derived must be made with
// std::make_shared (it can inherit the constructor: `using Base::Base;`), give
// BasicSession access to its onRequest() (e.g. `friend Base;`), and may replace
// close() and onHandshakeFailed().
template <typename Derived, typename Stream, typename Shared>
class BasicSession : public std::enable_shared_from_this<Derived> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, tcp::socket>;

  // The stream is made from streamArgs: a socket, then the TLS context if TLS.
  template <typename... StreamArgs>
  explicit BasicSession(std::shared_ptr<Shared> shared, StreamArgs&&... streamArgs)
      : shared_(std::move(shared)), stream_(std::forward<StreamArgs>(streamArgs)...) {}

  // The handshake if TLS, then the first request.
  void start() {
    if constexpr (kTls) {
      stream_.async_handshake(ssl::stream_base::server, [self = self()](error_code ec) {
        if (ec) {
          self->onHandshakeFailed();
          self->close();
        } else {
          self->readRequest();
        }
      });
    } else {
      readRequest();
    }
  }

 protected:
  std::shared_ptr<Derived> self() { return this->shared_from_this(); }

  tcp::socket& socket() {
    if constexpr (kTls) {
      return stream_.next_layer();
    } else {
      return stream_;
    }
  }

  // Reads the next request into req_ (emptied first), then Derived::onRequest();
  // a read error (the peer left, bad HTTP) closes.
  void readRequest() {
    req_ = {};
    http::async_read(stream_, buffer_, req_, [self = self()](error_code ec, size_t) {
      if (ec) {
        self->close();
      } else {
        self->onRequest();
      }
    });
  }

  // The default: a failed handshake only closes.
  void onHandshakeFailed() {}

  // The default close: timer_ cancelled, no more sends, the socket closed.
  void close() {
    timer_.cancel();
    closeSocket(tcp::socket::shutdown_send);
  }

  // Shuts the socket down and closes it, errors ignored; no TLS close_notify.
  void closeSocket(tcp::socket::shutdown_type how) {
    error_code ignored;
    socket().shutdown(how, ignored);
    socket().close(ignored);
  }

  std::shared_ptr<Shared> shared_;
  Stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  // For Derived's delays and deadlines; the default close() cancels it.
  net::steady_timer timer_{stream_.get_executor()};
};

// Opens acceptor on address:port (port 0: any free one) with reuse_address and
// listens; returns the port. Throws (boost::system::system_error) on failure.
inline uint16_t listen(tcp::acceptor& acceptor, const std::string& address, uint16_t port = 0) {
  const tcp::endpoint endpoint(net::ip::make_address(address), port);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen();
  return acceptor.local_endpoint().port();
}

// Accepts connections until the acceptor is closed, handing each socket to
// onSocket (on the io thread); a failed accept is skipped.
template <typename OnSocket>
void acceptEach(tcp::acceptor& acceptor, OnSocket onSocket) {
  acceptor.async_accept([&acceptor, onSocket](error_code ec, tcp::socket socket) mutable {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) onSocket(std::move(socket));
    acceptEach(acceptor, onSocket);
  });
}

// Makes and starts SessionT<ssl::stream<tcp::socket>> over socket when tls is
// set, else SessionT<tcp::socket>; args come first in its constructor, then the
// stream's. Returned as As (void, or a base both kinds share).
template <template <typename> class SessionT, typename As = void, typename... Args>
std::shared_ptr<As> startSession(ssl::context* tls, tcp::socket socket, Args&&... args) {
  if (tls != nullptr) {
    auto s = std::make_shared<SessionT<ssl::stream<tcp::socket>>>(std::forward<Args>(args)...,
                                                                  std::move(socket), *tls);
    s->start();
    return s;
  }
  auto s = std::make_shared<SessionT<tcp::socket>>(std::forward<Args>(args)..., std::move(socket));
  s->start();
  return s;
}

// A server's io side: its shared state, TLS context (if TLS), io_context,
// acceptor, port and thread. A server's Impl derives from it, sets up tls, then
// serve()s (or listens its own way and runs io on thread).
template <typename Shared>
struct ServerLoop {
  ServerLoop() = default;
  ServerLoop(const ServerLoop&) = delete;
  ServerLoop& operator=(const ServerLoop&) = delete;
  ~ServerLoop() { stop(); }

  // Serves TLS with server's certificate chain and key; throws naming who.
  void useTls(const PemPair& server, const std::string& who) {
    tls.emplace(ssl::context::tls_server);
    error_code ec;
    tls->use_certificate_chain(net::buffer(server.cert), ec);
    if (!ec) tls->use_private_key(net::buffer(server.key), ssl::context::pem, ec);
    if (ec) throw std::runtime_error(who + ": server certificate: " + ec.message());
  }

  ssl::context* tlsOrNull() { return tls ? &*tls : nullptr; }

  // Listens on address (any free port), starts a SessionT<stream> per connection,
  // and runs io on thread until stop().
  template <template <typename> class SessionT>
  void serve(const std::string& address) {
    port = session::listen(acceptor, address);
    acceptEach(acceptor, [this](tcp::socket socket) {
      startSession<SessionT>(tlsOrNull(), std::move(socket), shared);
    });
    thread = std::thread([this] { io.run(); });
  }

  // Stops io and joins thread; again is harmless.
  void stop() {
    io.stop();
    if (thread.joinable()) thread.join();
  }

  std::shared_ptr<Shared> shared = std::make_shared<Shared>();
  // Declared before io: sessions still queued in io hold SSL objects made from it.
  std::optional<ssl::context> tls;
  net::io_context io;
  tcp::acceptor acceptor{io};
  uint16_t port = 0;
  std::thread thread;
};

}  // namespace koord::test::session
