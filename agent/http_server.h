// HttpServer: the agent's small HTTP/1.1 server (Boost.Beast on the agent's one
// io_context) for /metrics, /healthz, /readyz and later /config. GET and HEAD only.
// Built to survive abuse on a node: a bounded number of open connections (accept
// pauses at the limit, so the kernel backlog queues the rest), capped header and
// body sizes, read/write/idle timeouts per connection, and nothing blocking: a
// slow client holds one connection, never the loop.
//
// Probes get room scrapers cannot take: past maxConnections, probeConnections more
// are accepted, and those serve probe routes only (anything else gets 503 and the
// connection closes). So a kubelet probe is answered while scrapers hold every
// ordinary slot, which a liveness probe failing under a scrape storm would turn
// into a restart.
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
  // 100 keep-alive scrapers at once (a load test's, or many Prometheus replicas)
  // are served, not queued: a queued keep-alive client waits for a slot that a
  // keep-alive peer never frees until its idle timeout.
  size_t maxConnections = 128;
  size_t probeConnections = 8;  // more, for probe routes only (see above)
  size_t maxHeaderBytes = 8 * 1024;
  size_t maxBodyBytes = 1024;
  std::chrono::milliseconds readTimeout{10'000};   // time to receive one whole request
  std::chrono::milliseconds writeTimeout{10'000};  // time to send one whole response
  std::chrono::milliseconds idleTimeout{60'000};   // keep-alive wait for the next request
};

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(unsigned code, std::string type, std::string text)
      : status(code), contentType(std::move(type)), body(std::move(text)) {}
  HttpResponse(unsigned code, std::string type, std::shared_ptr<const std::string> shared)
      : status(code), contentType(std::move(type)), sharedBody(std::move(shared)) {}

  unsigned status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
  // When set, the body sent instead of `body`, shared rather than copied: every
  // connection writing one rendered /metrics page holds the same bytes.
  std::shared_ptr<const std::string> sharedBody;
};

// A route handler runs on the loop thread and must not block.
using HttpHandler = std::function<HttpResponse()>;
// One that reads the request's query string (after '?', undecoded; "" when none).
using HttpQueryHandler = std::function<HttpResponse(std::string_view query)>;

struct HttpStats {
  uint64_t connectionsAccepted = 0;
  uint64_t connectionsOpen = 0;
  uint64_t connectionsPeak = 0;   // most open at once; never above maxConnections + probe ones
  uint64_t timeouts = 0;          // connections closed by a read/write/idle timeout
  uint64_t rejectedTooLarge = 0;  // 431/413 replies
  uint64_t badRequests = 0;       // unparsable requests
  uint64_t rejectedBusy = 0;      // 503s: a non-probe request on a probe connection
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

  // Registers a GET route (exact path match). Call before listen(). A probe route
  // is also served on the connections kept for probes.
  enum class RouteKind { kNormal, kProbe };
  void route(std::string path, HttpHandler handler, RouteKind kind = RouteKind::kNormal);
  // A GET route whose handler reads the query string (not a probe route).
  void routeQuery(std::string path, HttpQueryHandler handler);

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
