// HttpServer implementation: one acceptor plus one Connection object per open socket,
// all driven by the caller's io_context on the loop thread. Every Asio/Beast call
// uses its error_code form, and handler exceptions are caught at the boundary, so
// nothing throws into the loop.
//
// Lifetimes: the server state (ServerCore) is owned by shared_ptr. The pending
// accept, the accept-retry timer and every Connection hold a shared_ptr to it, so it
// outlives every handler that can still run; the core only keeps weak_ptrs to its
// connections, so there is no cycle. stop() closes the acceptor and every socket and
// cancels every timer; the aborted handlers then run once and drop their references,
// and the io_context runs out of work.
//
// Timeouts: each connection has one timer, re-armed per phase:
//   read    from accept (or from the first byte of a keep-alive request) until the
//           whole request is parsed: readTimeout. A slowloris that trickles header
//           bytes is cut here, because the deadline is not extended by progress.
//   write   for sending one whole response: writeTimeout. Cut with RST (SO_LINGER 0)
//           so the kernel drops the unsent bytes instead of keeping them for a peer
//           that does not read.
//   idle    between keep-alive requests: idleTimeout.
//   linger  draining input after an error reply (see kLingerTime).
//
// Probe connections: a connection accepted while maxConnections are open is a probe
// connection (it stays one for its life): a route registered as a probe is served on
// it, anything else gets 503 with Connection: close. Accept pauses at
// maxConnections + probeConnections.
//
// Bodies: a response is written from a shared, immutable string (SharedBody), so a
// page a handler hands out as sharedBody is never copied per connection.
//
// Dispatch order: the method is checked before the path, so a method other than GET
// or HEAD gets 405 (with Allow: GET, HEAD) on every path, known or not; this server
// serves nothing but GET and HEAD, so the method is not allowed anywhere.
#include "agent/http_server.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/optional.hpp>
#include <exception>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/log.h"

namespace koord {
namespace http_internal {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Millis = std::chrono::milliseconds;

// Bytes asked of the kernel per read while idle or draining.
constexpr size_t kReadChunk = 4096;
// After an error reply (400/413/431) the client may still be sending. Closing a socket
// with unread input makes the kernel send RST, which can destroy the reply before the
// client reads it; so we shut down our side and discard input for at most this long
// (and at most kLingerBytes) before closing.
constexpr Millis kLingerTime{1000};
constexpr size_t kLingerBytes = 256 * 1024;
// Accept failures that are not the peer's doing (EMFILE, ENOBUFS) retry with a backoff
// doubling from min to max, so a full fd table does not spin the loop.
constexpr Millis kAcceptBackoffMin{5};
constexpr Millis kAcceptBackoffMax{1000};
// Stats key for requests that match no route (or could not be parsed).
constexpr std::string_view kOtherRoute = "other";
constexpr std::string_view kTextPlain = "text/plain; charset=utf-8";

class Connection;

// A Beast body whose value is a shared immutable string: writing sends its bytes in
// place. Only ever written (the server reads requests into string_body).
struct SharedBody {
  using value_type = std::shared_ptr<const std::string>;
  static std::uint64_t size(const value_type& v) { return v ? v->size() : 0; }

  class writer {
   public:
    using const_buffers_type = net::const_buffer;
    template <bool isRequest, class Fields>
    writer(const http::header<isRequest, Fields>&, const value_type& body) : body_(body) {}
    void init(error_code& ec) { ec = {}; }
    boost::optional<std::pair<const_buffers_type, bool>> get(error_code& ec) {
      ec = {};
      if (!body_ || body_->empty()) return boost::none;
      return {{net::const_buffer(body_->data(), body_->size()), false}};
    }

   private:
    const value_type& body_;
  };
};

class ServerCore : public std::enable_shared_from_this<ServerCore> {
 public:
  ServerCore(net::io_context& io, HttpLimits limits);

  struct Route {
    HttpQueryHandler handler;
    bool probe = false;
  };
  void addRoute(std::string path, HttpQueryHandler handler, bool probe);
  Status listen(const std::string& addr);
  uint16_t port() const { return port_; }
  void stop();
  const HttpStats& stats() const { return stats_; }
  std::vector<unsigned> serveBytes(std::string_view bytes);

 private:
  friend class Connection;

  Status bindEndpoint(const tcp::endpoint& endpoint, bool dualStack, const std::string& addr,
                      error_code* bindError);
  void accept();
  void onAccept(error_code ec, tcp::socket socket);
  void onConnectionClosed(Connection* connection);
  // Returns the route for path (nullptr if none) and sets *key to the stats key.
  const Route* findRoute(std::string_view path, std::string_view* key) const;
  HttpResponse invoke(const HttpQueryHandler& handler, std::string_view path,
                      std::string_view query);
  void countRequest(std::string_view key, unsigned status);
  // The answer to a parsed request, counted; returns whether the connection stays open.
  // probeOnly: the connection was accepted past maxConnections (probe routes only).
  bool respond(const http::request<http::string_body>& req, http::response<SharedBody>& res,
               bool probeOnly);
  // The answer to a request that failed to parse (400/413/431), counted; false when
  // there is nobody to answer (the peer closed or reset mid-request). target: the
  // request's target when its start line was parsed, else "".
  bool respondToError(error_code ec, std::string_view target, http::response<SharedBody>& res);

  net::io_context& io_;
  HttpLimits limits_;
  std::map<std::string, Route, std::less<>> routes_;
  tcp::acceptor acceptor_;
  net::steady_timer acceptRetry_;
  Millis acceptBackoff_{0};
  bool acceptPending_ = false;  // an async_accept or its retry timer is outstanding
  bool stopped_ = false;
  bool handlerFailureLogged_ = false;
  uint16_t port_ = 0;
  HttpStats stats_;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections_;
};

// One accepted socket: read a request, write the response, repeat while keep-alive.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<ServerCore> server, tcp::socket socket, bool probeOnly)
      : server_(std::move(server)),
        limits_(server_->limits_),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        probeOnly_(probeOnly) {}

  void start() { readRequest(); }
  // Closes the socket, cancels the timer and tells the server. Idempotent. abortive
  // sends RST and drops unsent data (used when a peer stops reading).
  void close(bool abortive = false);

 private:
  enum class Phase { kRead, kWrite, kIdle, kLinger };
  enum class After { kKeepAlive, kClose, kLinger };

  void arm(Phase phase, Millis timeout);
  void onTimer(error_code ec);
  void readRequest();
  void waitForNextRequest();
  void onRequest(error_code ec);
  void onReadError(error_code ec);
  void write(After after);
  void onWritten(error_code ec);
  void lingerClose();
  void drain();

  std::shared_ptr<ServerCore> server_;
  const HttpLimits& limits_;
  tcp::socket socket_;
  net::steady_timer timer_;
  Phase phase_ = Phase::kRead;
  After after_ = After::kClose;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<SharedBody> res_;
  size_t drained_ = 0;
  bool closed_ = false;
  const bool probeOnly_;  // accepted past maxConnections: serves probe routes only
};

// ---- Connection ----

void Connection::arm(Phase phase, Millis timeout) {
  phase_ = phase;
  timer_.expires_after(timeout);  // cancels a pending wait, whose handler then sees an error
  timer_.async_wait([self = shared_from_this()](error_code ec) { self->onTimer(ec); });
}

void Connection::onTimer(error_code ec) {
  if (ec || closed_) return;
  // A wait that had already fired when the timer was re-armed still completes without
  // error; the new expiry in the future tells it apart.
  if (timer_.expiry() > net::steady_timer::clock_type::now()) return;
  if (phase_ != Phase::kLinger) ++server_->stats_.timeouts;
  KLOG_V(5) << "http: connection timed out in phase " << static_cast<int>(phase_);
  close(phase_ == Phase::kWrite);
}

void Connection::readRequest() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(
      std::min<size_t>(limits_.maxHeaderBytes, std::numeric_limits<std::uint32_t>::max())));
  parser_->body_limit(static_cast<std::uint64_t>(limits_.maxBodyBytes));
  arm(Phase::kRead, limits_.readTimeout);
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](error_code ec, size_t) { self->onRequest(ec); });
}

// Between keep-alive requests the idle timeout applies; the read timeout starts with
// the first byte of the next request (or at once if it is already buffered).
void Connection::waitForNextRequest() {
  if (buffer_.size() > 0) {
    readRequest();
    return;
  }
  arm(Phase::kIdle, limits_.idleTimeout);
  socket_.async_read_some(buffer_.prepare(kReadChunk),
                          [self = shared_from_this()](error_code ec, size_t n) {
                            if (self->closed_) return;
                            if (ec) {  // peer closed or reset: the normal end of keep-alive
                              self->close();
                              return;
                            }
                            self->buffer_.commit(n);
                            self->readRequest();
                          });
}

void Connection::onRequest(error_code ec) {
  if (closed_) return;
  if (ec) {
    onReadError(ec);
    return;
  }
  const bool keepAlive = server_->respond(parser_->get(), res_, probeOnly_);
  write(keepAlive ? After::kKeepAlive : After::kClose);
}

void Connection::onReadError(error_code ec) {
  const std::string_view target = parser_ ? parser_->get().target() : std::string_view();
  if (!server_->respondToError(ec, target, res_)) {
    close();  // the peer closed or reset the connection: nobody to answer
    return;
  }
  write(After::kLinger);
}

void Connection::write(After after) {
  after_ = after;
  arm(Phase::kWrite, limits_.writeTimeout);
  http::async_write(socket_, res_,
                    [self = shared_from_this()](error_code ec, size_t) { self->onWritten(ec); });
}

void Connection::onWritten(error_code ec) {
  if (closed_) return;
  res_ = {};  // release the body (a /metrics page can be large) while idle
  if (ec) {
    close();
    return;
  }
  switch (after_) {
    case After::kKeepAlive:
      waitForNextRequest();
      return;
    case After::kClose: {
      error_code ignored;
      socket_.shutdown(tcp::socket::shutdown_send, ignored);
      close();
      return;
    }
    case After::kLinger:
      lingerClose();
      return;
  }
}

void Connection::lingerClose() {
  error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_send, ignored);
  buffer_.consume(buffer_.size());
  arm(Phase::kLinger, std::min(kLingerTime, limits_.readTimeout));
  drain();
}

void Connection::drain() {
  // prepare() without commit(): the same scratch space is reused for every read.
  socket_.async_read_some(buffer_.prepare(kReadChunk),
                          [self = shared_from_this()](error_code ec, size_t n) {
                            if (self->closed_) return;
                            self->drained_ += n;
                            if (ec || self->drained_ >= kLingerBytes) {
                              self->close();
                              return;
                            }
                            self->drain();
                          });
}

void Connection::close(bool abortive) {
  if (closed_) return;
  closed_ = true;
  error_code ignored;
  if (abortive) socket_.set_option(tcp::socket::linger(true, 0), ignored);
  socket_.close(ignored);
  timer_.cancel();
  server_->onConnectionClosed(this);
}

// ---- ServerCore ----

ServerCore::ServerCore(net::io_context& io, HttpLimits limits)
    : io_(io), limits_(limits), acceptor_(io), acceptRetry_(io) {
  // Zero would never accept anything; one is the smallest server that works.
  limits_.maxConnections = std::max<size_t>(limits_.maxConnections, 1);
}

void ServerCore::addRoute(std::string path, HttpQueryHandler handler, bool probe) {
  routes_[std::move(path)] = Route{std::move(handler), probe};
}

namespace {

struct HostPort {
  std::string host;  // empty: all addresses
  uint16_t port = 0;
};

// Splits a Go-style listen address: "host:port", "[v6]:port", ":port".
Result<HostPort> splitHostPort(std::string_view addr) {
  std::string_view host;
  std::string_view port;
  if (!addr.empty() && addr.front() == '[') {
    const auto end = addr.find(']');
    if (end == std::string_view::npos) return makeError("missing ']' in address");
    host = addr.substr(1, end - 1);
    const auto rest = addr.substr(end + 1);
    if (rest.empty() || rest.front() != ':') return makeError("missing port in address");
    port = rest.substr(1);
  } else {
    const auto colon = addr.rfind(':');
    if (colon == std::string_view::npos) return makeError("missing port in address");
    host = addr.substr(0, colon);
    if (host.find(':') != std::string_view::npos) {
      return makeError("too many colons in address (bracket IPv6 addresses)");
    }
    port = addr.substr(colon + 1);
  }
  uint32_t value = 0;
  const bool digits =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits) {
    for (char c : port) value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (!digits || value > 65535) return makeError("invalid port \"" + std::string(port) + "\"");
  return HostPort{std::string(host), static_cast<uint16_t>(value)};
}

bool isBindFatal(const error_code& ec) {
  // These say the address itself is unusable; trying another family would hide them.
  return ec == net::error::address_in_use || ec == net::error::access_denied;
}

int sysErrno(const error_code& ec) {
  return ec.category() == boost::system::system_category() ? ec.value() : 0;
}

}  // namespace

Status ServerCore::bindEndpoint(const tcp::endpoint& endpoint, bool dualStack,
                                const std::string& addr, error_code* bindError) {
  auto fail = [&](const char* step, const error_code& ec) -> Status {
    *bindError = ec;
    error_code ignored;
    acceptor_.close(ignored);
    return makeError("listen tcp " + addr + ": " + step + ": " + ec.message(), sysErrno(ec));
  };
  error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) return fail("socket", ec);
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) return fail("setsockopt SO_REUSEADDR", ec);
  if (dualStack) {
    acceptor_.set_option(net::ip::v6_only(false), ec);
    if (ec) return fail("setsockopt IPV6_V6ONLY", ec);
  }
  acceptor_.bind(endpoint, ec);
  if (ec) return fail("bind", ec);
  acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen", ec);
  const auto local = acceptor_.local_endpoint(ec);
  if (ec) return fail("getsockname", ec);
  port_ = local.port();
  return Ok{};
}

Status ServerCore::listen(const std::string& addr) {
  if (stopped_) return makeError("listen tcp " + addr + ": server is stopped");
  if (acceptor_.is_open()) return makeError("listen tcp " + addr + ": already listening");
  auto hostPort = splitHostPort(addr);
  if (!hostPort) return makeError("listen tcp " + addr + ": " + hostPort.error().message);

  // Candidates in order of preference, each tried until one binds.
  std::vector<tcp::endpoint> candidates;
  const bool wildcard = hostPort->host.empty();
  if (wildcard) {
    // Dual-stack [::] serves IPv4 too; 0.0.0.0 when the kernel has no IPv6.
    candidates.emplace_back(net::ip::address_v6::any(), hostPort->port);
    candidates.emplace_back(net::ip::address_v4::any(), hostPort->port);
  } else {
    error_code ec;
    const auto literal = net::ip::make_address(hostPort->host, ec);
    if (!ec) {
      candidates.emplace_back(literal, hostPort->port);
    } else {
      // A name: resolved once at start-up (blocking getaddrinfo, before the loop
      // serves anything). IPv4 first, as Go's net.Listen does for "localhost".
      tcp::resolver resolver(io_);
      const auto results = resolver.resolve(hostPort->host, std::to_string(hostPort->port),
                                            tcp::resolver::numeric_service, ec);
      if (ec) {
        return makeError("listen tcp " + addr + ": lookup " + hostPort->host + ": " + ec.message(),
                         sysErrno(ec));
      }
      for (const auto& entry : results) candidates.push_back(entry.endpoint());
      std::stable_partition(candidates.begin(), candidates.end(),
                            [](const tcp::endpoint& e) { return e.address().is_v4(); });
      if (candidates.empty()) {
        return makeError("listen tcp " + addr + ": lookup " + hostPort->host + ": no addresses");
      }
    }
  }

  Status last = Ok{};
  for (const auto& endpoint : candidates) {
    error_code bindError;
    last = bindEndpoint(endpoint, wildcard && endpoint.address().is_v6(), addr, &bindError);
    if (last.ok() || isBindFatal(bindError)) break;
  }
  if (!last.ok()) return last;
  KLOG_V(1) << "http: listening on " << addr << " (port " << port_ << ")";
  accept();
  return Ok{};
}

// Keeps at most one accept outstanding, and none while maxConnections plus the probe
// connections are open: the kernel's listen backlog then holds further clients until
// a connection closes.
void ServerCore::accept() {
  if (stopped_ || acceptPending_ || !acceptor_.is_open()) return;
  if (connections_.size() >= limits_.maxConnections + limits_.probeConnections) return;
  acceptPending_ = true;
  acceptor_.async_accept([self = shared_from_this()](error_code ec, tcp::socket socket) {
    self->onAccept(ec, std::move(socket));
  });
}

void ServerCore::onAccept(error_code ec, tcp::socket socket) {
  acceptPending_ = false;
  if (stopped_) return;  // the socket, if any, closes as it goes out of scope
  if (ec == net::error::operation_aborted) return;
  if (ec == net::error::connection_aborted) {  // the peer gave up while queued
    accept();
    return;
  }
  if (ec) {
    acceptBackoff_ = acceptBackoff_.count() == 0 ? kAcceptBackoffMin
                                                 : std::min(acceptBackoff_ * 2, kAcceptBackoffMax);
    // One line per failure streak, not per retry.
    if (acceptBackoff_ == kAcceptBackoffMin) {
      KLOG_WARNING << "http: accept failed, retrying with backoff: " << ec.message();
    }
    acceptPending_ = true;
    acceptRetry_.expires_after(acceptBackoff_);
    acceptRetry_.async_wait([self = shared_from_this()](error_code waitEc) {
      self->acceptPending_ = false;
      if (!waitEc) self->accept();
    });
    return;
  }
  acceptBackoff_ = Millis{0};

  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  const bool probeOnly = connections_.size() >= limits_.maxConnections;
  auto connection = std::make_shared<Connection>(shared_from_this(), std::move(socket), probeOnly);
  connections_.emplace(connection.get(), connection);
  ++stats_.connectionsAccepted;
  stats_.connectionsOpen = connections_.size();
  stats_.connectionsPeak = std::max(stats_.connectionsPeak, stats_.connectionsOpen);
  KLOG_V(5) << "http: connection accepted, " << stats_.connectionsOpen << " open";
  connection->start();
  accept();
}

void ServerCore::onConnectionClosed(Connection* connection) {
  connections_.erase(connection);
  stats_.connectionsOpen = connections_.size();
  KLOG_V(5) << "http: connection closed, " << stats_.connectionsOpen << " open";
  accept();  // resumes accepting if the limit had paused it
}

const ServerCore::Route* ServerCore::findRoute(std::string_view path, std::string_view* key) const {
  const auto it = routes_.find(path);
  if (it == routes_.end()) {
    *key = kOtherRoute;
    return nullptr;
  }
  *key = it->first;
  return &it->second;
}

// Handlers must not throw; one that does gets a 500 instead of taking down the loop.
HttpResponse ServerCore::invoke(const HttpQueryHandler& handler, std::string_view path,
                                std::string_view query) {
  HttpResponse out;
  std::string failure;
  try {
    out = handler(query);
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  // Codes outside 200..599 would break framing (1xx) or Beast (> 999).
  if (failure.empty() && (out.status < 200 || out.status > 599)) {
    failure = "invalid status " + std::to_string(out.status);
  }
  if (failure.empty()) return out;
  if (!handlerFailureLogged_) {  // a bug, logged once rather than per request
    handlerFailureLogged_ = true;
    KLOG_WARNING << "http: handler for " << path << " failed: " << failure;
  }
  return HttpResponse{500, std::string(kTextPlain), "internal server error\n"};
}

void ServerCore::countRequest(std::string_view key, unsigned status) {
  ++stats_.requests[{std::string(key), status}];
}

bool ServerCore::respond(const http::request<http::string_body>& req,
                         http::response<SharedBody>& res, bool probeOnly) {
  std::string_view target = req.target();
  const size_t mark = target.find('?');
  const std::string_view query =
      mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1);
  target = target.substr(0, mark);
  const bool head = req.method() == http::verb::head;
  const bool get = req.method() == http::verb::get;

  std::string_view key;
  const Route* route = findRoute(target, &key);
  HttpResponse out;
  bool busy = false;
  if (!get && !head) {
    key = route ? key : kOtherRoute;
    out = HttpResponse{405, std::string(kTextPlain), "method not allowed\n"};
  } else if (route == nullptr) {
    out = HttpResponse{404, std::string(kTextPlain), "404 page not found\n"};
  } else if (probeOnly && !route->probe) {
    busy = true;
    ++stats_.rejectedBusy;
    out = HttpResponse{503, std::string(kTextPlain),
                       "server busy: every connection slot is taken; retry\n"};
  } else {
    out = invoke(route->handler, key, query);
  }
  countRequest(key, out.status);

  const bool keepAlive = req.keep_alive() && !stopped_ && !busy;
  res = {};
  res.version(req.version());
  res.result(out.status);
  if (!out.contentType.empty()) res.set(http::field::content_type, out.contentType);
  if (out.status == 405) res.set(http::field::allow, "GET, HEAD");
  res.keep_alive(keepAlive);
  // HEAD: the headers GET would send, Content-Length included, and no body.
  if (!out.sharedBody) out.sharedBody = std::make_shared<const std::string>(std::move(out.body));
  res.content_length(out.sharedBody->size());
  if (!head) res.body() = std::move(out.sharedBody);
  return keepAlive;
}

bool ServerCore::respondToError(error_code ec, std::string_view target,
                                http::response<SharedBody>& res) {
  unsigned status = 400;
  std::string_view body = "bad request\n";
  if (ec == http::error::header_limit) {
    ++stats_.rejectedTooLarge;
    status = 431;
    body = "request header fields too large\n";
  } else if (ec == http::error::body_limit) {
    ++stats_.rejectedTooLarge;
    status = 413;
    body = "request body too large\n";
  } else if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
             ec.category() != http::make_error_code(http::error::bad_method).category()) {
    return false;
  } else {
    ++stats_.badRequests;
  }
  // Counted under the route when the start line was parsed before the error (a 413,
  // usually a 431), else under "other" (a 400, a start line over the header limit).
  std::string_view key = kOtherRoute;
  if (!target.empty()) findRoute(target.substr(0, target.find('?')), &key);
  countRequest(key, status);
  res = {};
  res.version(11);
  res.result(status);
  res.set(http::field::content_type, kTextPlain);
  res.keep_alive(false);
  res.content_length(body.size());
  res.body() = std::make_shared<const std::string>(body);
  return true;
}

// What a connection does with bytes it reads, from parsing to the serialized
// responses, with every byte already read: need_more is the end of the input.
std::vector<unsigned> ServerCore::serveBytes(std::string_view bytes) {
  std::vector<unsigned> statuses;
  beast::flat_buffer buffer;
  const size_t n = bytes.size();
  net::buffer_copy(buffer.prepare(n), net::buffer(bytes.data(), n));
  buffer.commit(n);
  while (buffer.size() > 0) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(limits_.maxHeaderBytes, std::numeric_limits<std::uint32_t>::max())));
    parser.body_limit(static_cast<std::uint64_t>(limits_.maxBodyBytes));
    error_code ec;
    while (!parser.is_done()) {
      const size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (ec == http::error::need_more || (!ec && used == 0)) {
        ec = {};
        parser.put_eof(ec);
        if (!ec && !parser.is_done()) ec = http::error::partial_message;
      }
      if (ec) break;
    }
    http::response<SharedBody> res;
    bool keepAlive = false;
    if (ec) {
      const std::string_view target =
          parser.is_header_done() ? parser.get().target() : std::string_view();
      if (!respondToError(ec, target, res)) break;
    } else {
      keepAlive = respond(parser.get(), res, false);
    }
    // Serialized as a connection writes it; a message Beast cannot frame throws here.
    std::ostringstream wire;
    wire << res;
    statuses.push_back(res.result_int());
    if (!keepAlive) break;
  }
  return statuses;
}

void ServerCore::stop() {
  if (stopped_) return;
  stopped_ = true;
  error_code ignored;
  acceptor_.close(ignored);
  acceptRetry_.cancel();
  // close() erases from connections_, so walk a copy.
  const auto open = connections_;
  for (const auto& [raw, weak] : open) {
    if (auto connection = weak.lock()) connection->close();
  }
  connections_.clear();
  stats_.connectionsOpen = 0;
}

}  // namespace http_internal

struct HttpServer::Impl : http_internal::ServerCore {
  using ServerCore::ServerCore;
};

HttpServer::HttpServer(boost::asio::io_context& io, HttpLimits limits)
    : impl_(std::make_shared<Impl>(io, limits)) {}

HttpServer::~HttpServer() { impl_->stop(); }

void HttpServer::route(std::string path, HttpHandler handler, RouteKind kind) {
  impl_->addRoute(
      std::move(path), [h = std::move(handler)](std::string_view) { return h(); },
      kind == RouteKind::kProbe);
}

void HttpServer::routeQuery(std::string path, HttpQueryHandler handler) {
  impl_->addRoute(std::move(path), std::move(handler), false);
}

Status HttpServer::listen(const std::string& addr) { return impl_->listen(addr); }

uint16_t HttpServer::port() const { return impl_->port(); }

void HttpServer::stop() { impl_->stop(); }

const HttpStats& HttpServer::stats() const { return impl_->stats(); }

std::vector<unsigned> HttpServer::serveBytes(std::string_view bytes) {
  return impl_->serveBytes(bytes);
}

}  // namespace koord
