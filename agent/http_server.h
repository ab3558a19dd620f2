// HttpServer: the agent's small HTTP/1.1 server (Boost.Beast on the agent's one
// io_context) for /metrics, /healthz, /readyz and later /config. GET and HEAD only.
// Built to survive abuse on a node: a bounded number of open connections (accept
// pauses at the limit, so the kernel backlog queues the rest), capped header and
// body sizes, read/write/idle timeouts per connection, and nothing blocking: a
// slow client holds one connection, never the loop.
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this first.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord {

struct HttpLimits {
  size_t maxConnections = 64;
  size_t maxHeaderBytes = 8 * 1024;
  size_t maxBodyBytes = 1024;
  std::chrono::milliseconds readTimeout{10'000};   // time to receive one whole request
  std::chrono::milliseconds writeTimeout{10'000};  // time to send one whole response
  std::chrono::milliseconds idleTimeout{60'000};   // keep-alive wait for the next request
};

struct HttpResponse {
  unsigned status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
};

// A route handler runs on the loop thread and must not block.
using HttpHandler = std::function<HttpResponse()>;

struct HttpStats {
  uint64_t connectionsAccepted = 0;
  uint64_t connectionsOpen = 0;
  uint64_t connectionsPeak = 0;   // most connections open at once; never above maxConnections
  uint64_t timeouts = 0;          // connections closed by a read/write/idle timeout
  uint64_t rejectedTooLarge = 0;  // 431/413 replies
  uint64_t badRequests = 0;       // unparsable requests
  std::map<std::pair<std::string, unsigned>, uint64_t> requests;  // (route or "other", code)
};

// Not thread-safe: construct, use and destroy it on the loop thread (or while the
// loop is not running). The io_context must outlive it.
class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpLimits limits);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers a GET route (exact path match). Call before listen().
  void route(std::string path, HttpHandler handler);

  // Binds and starts accepting. addr is Go-style: ":9316" (all addresses),
  // "127.0.0.1:0" (port picked by the kernel), "[::1]:9316", "localhost:9316".
  Status listen(const std::string& addr);
  uint16_t port() const;

  // Stops accepting and closes every open connection. Idempotent.
  void stop();

  const HttpStats& stats() const;

  // The request handling without a socket (the fuzz target, tests): the requests in
  // `bytes`, as one connection would read them with nothing after, parsed with the
  // server's limits, answered through its routes and serialized as it writes them;
  // counted in stats(). Returns the response statuses in order. It ends where a
  // connection would: after a reply that closes (an error reply, Connection:
  // close), or at bytes that do not finish a request (no reply).
  std::vector<unsigned> serveBytes(std::string_view bytes);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace koord
