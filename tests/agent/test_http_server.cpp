// HttpServer over loopback: the server runs on 127.0.0.1:0 with its io_context on a
// background thread, and the test body is the client, using blocking POSIX sockets
// whose SO_RCVTIMEO/SO_SNDTIMEO bound every wait so no test can hang. Timeouts are
// real time here (this is an end-to-end test of sockets), with bounds wide enough
// for a loaded 2-core machine under sanitizers.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <future>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "agent/http_server.h"
#include "base/log.h"

namespace koord::test_agent_http_server {  // this file's own names: tests build as unity chunks
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// Bound on every blocking client call unless a test sets a shorter one.
constexpr auto kClientTimeout = 10s;
// Larger than the kernel will buffer between a server and a client that does not read
// (tcp_wmem max 4 MiB plus a tiny receive buffer).
constexpr size_t kBigBodyBytes = 16u << 20;
constexpr std::string_view kTextPlain = "text/plain; charset=utf-8";

// Long timeouts, so only the test that is about a timeout sees one fire; no probe
// connections, so only the tests about them see a slot past maxConnections.
HttpLimits relaxedLimits() {
  HttpLimits limits;
  limits.probeConnections = 0;
  limits.readTimeout = 10s;
  limits.writeTimeout = 10s;
  limits.idleTimeout = 10s;
  return limits;
}

Steady::duration since(Steady::time_point start) { return Steady::now() - start; }

// The server under test with a few routes, its loop on a background thread.
class TestServer {
 public:
  explicit TestServer(HttpLimits limits) : server_(io_, limits) {
    server_.route("/hello", [] { return HttpResponse{200, std::string(kTextPlain), "hello\n"}; });
    server_.route("/metrics", [] {
      return HttpResponse{200, "text/plain; version=0.0.4", "up 1\n"};
    });
    server_.route(
        "/healthz",
        [] {
          return HttpResponse{200, std::string(kTextPlain), "ok\n"};
        },
        HttpServer::RouteKind::kProbe);
    server_.route("/big", [] {
      return HttpResponse{200, "application/octet-stream", std::string(kBigBodyBytes, 'x')};
    });
  }
  ~TestServer() { shutdown(); }

  HttpServer& server() { return server_; }

  // Listens on 127.0.0.1 with a kernel-picked port and starts the loop thread.
  void start() {
    auto status = server_.listen("127.0.0.1:0");
    REQUIRE(status.ok());
    thread_ = std::thread([this] {
      io_.run();
      done_.set_value();
    });
  }
  uint16_t port() const { return server_.port(); }

  // Posts stop() to the loop; true when io_context::run() returned within bound.
  bool stopAndWaitForRun(std::chrono::seconds bound) {
    boost::asio::post(io_, [this] { server_.stop(); });
    return finished_.wait_for(bound) == std::future_status::ready;
  }

  // A copy of the counters taken on the loop thread (the loop is their only writer).
  HttpStats stats() {
    if (finished_.wait_for(0s) == std::future_status::ready) return server_.stats();
    auto promise = std::make_shared<std::promise<HttpStats>>();
    auto future = promise->get_future();
    boost::asio::post(io_, [this, promise] { promise->set_value(server_.stats()); });
    REQUIRE(future.wait_for(kClientTimeout) == std::future_status::ready);
    return future.get();
  }

 private:
  // Never leaves a running thread behind, even when a REQUIRE failed mid-test.
  void shutdown() {
    if (!thread_.joinable()) return;
    if (!stopAndWaitForRun(10s)) io_.stop();
    thread_.join();
  }

  boost::asio::io_context io_;
  HttpServer server_;
  std::thread thread_;
  std::promise<void> done_;
  std::shared_future<void> finished_ = done_.get_future().share();
};

struct Response {
  unsigned status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

enum class End { kClosed, kTimeout };

// A blocking loopback client. Every read and write is bounded by a socket timeout.
class Client {
 public:
  // rcvBuf > 0 shrinks the receive buffer (set before connect, so the window is small).
  explicit Client(uint16_t port, int rcvBuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    setTimeout(SO_RCVTIMEO, kClientTimeout);
    setTimeout(SO_SNDTIMEO, kClientTimeout);
    if (rcvBuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvBuf, sizeof rcvBuf);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void setReceiveTimeout(std::chrono::milliseconds timeout) { setTimeout(SO_RCVTIMEO, timeout); }

  bool send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads one response framed by Content-Length (no body for a HEAD request).
  // nullopt when the connection closed or the receive timeout passed first.
  std::optional<Response> readResponse(bool head = false) {
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return std::nullopt;
    }
    Response r;
    std::istringstream lines(pending_.substr(0, end));
    std::string line;
    std::getline(lines, line);
    if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12) return std::nullopt;
    r.status = static_cast<unsigned>(std::stoul(line.substr(9, 3)));
    while (std::getline(lines, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    pending_.erase(0, end + 4);
    auto length = r.header("content-length");
    if (length.empty()) return std::nullopt;  // this server always sends it
    size_t bodyBytes = head ? 0 : std::stoul(length);
    while (pending_.size() < bodyBytes) {
      if (!fill()) return std::nullopt;
    }
    r.body = pending_.substr(0, bodyBytes);
    pending_.erase(0, bodyBytes);
    return r;
  }

  // Reads and discards until the server closes (EOF or reset) or the receive timeout
  // passes; *bytes gets the count discarded, buffered bytes included.
  End readToEnd(size_t* bytes = nullptr) {
    size_t total = pending_.size();
    pending_.clear();
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        total += static_cast<size_t>(n);
        continue;
      }
      if (bytes) *bytes = total;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return End::kTimeout;
      return End::kClosed;
    }
  }

 private:
  void setTimeout(int option, std::chrono::microseconds timeout) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000);
    tv.tv_usec = static_cast<suseconds_t>(timeout.count() % 1'000'000);
    ::setsockopt(fd_, SOL_SOCKET, option, &tv, sizeof tv);
  }
  bool fill() {
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      pending_.append(buf, static_cast<size_t>(n));
      return true;
    }
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string pending_;
};

std::string get(std::string_view target, std::string_view extraHeaders = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: test\r\n" + std::string(extraHeaders) +
         "\r\n";
}

uint64_t requestCount(const HttpStats& stats, const std::string& route, unsigned status) {
  auto it = stats.requests.find({route, status});
  return it == stats.requests.end() ? 0 : it->second;
}

TEST_CASE("a registered route answers GET with its body, content type and length", "[http]") {
  TestServer ts(relaxedLimits());
  ts.start();
  Client c(ts.port());
  REQUIRE(c.connected());
  REQUIRE(c.send(get("/hello")));
  auto r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "hello\n");
  CHECK(r->header("content-length") == "6");
  CHECK(r->header("content-type") == kTextPlain);

  REQUIRE(c.send(get("/metrics")));
  r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->header("content-type") == "text/plain; version=0.0.4");
  CHECK(r->body == "up 1\n");

  auto stats = ts.stats();
  CHECK(requestCount(stats, "/hello", 200) == 1);
  CHECK(requestCount(stats, "/metrics", 200) == 1);
}

TEST_CASE("HEAD gets the headers GET would get and no body", "[http]") {
  TestServer ts(relaxedLimits());
  ts.start();
  Client c(ts.port());
  REQUIRE(c.send("HEAD /hello HTTP/1.1\r\nHost: test\r\n\r\n"));
  auto r = c.readResponse(/*head=*/true);
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->header("content-length") == "6");
  CHECK(r->header("content-type") == kTextPlain);
  // Had a body been sent, it would now be read as the start of this response.
  REQUIRE(c.send(get("/hello")));
  r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "hello\n");
}

TEST_CASE("an unknown path gets 404 and is counted as other", "[http]") {
  TestServer ts(relaxedLimits());
  ts.start();
  Client c(ts.port());
  REQUIRE(c.send(get("/nope")));
  auto r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 404);
  CHECK(r->header("content-length") == std::to_string(r->body.size()));
  CHECK(requestCount(ts.stats(), "other", 404) == 1);
}

TEST_CASE("a method other than GET or HEAD gets 405 with Allow on known and unknown paths",
          "[http]") {
  TestServer ts(relaxedLimits());
  ts.start();
  Client c(ts.port());
  REQUIRE(c.send("POST /hello HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\n\r\nabc"));
  auto r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 405);
  CHECK(r->header("allow") == "GET, HEAD");
  // The method wins over the path: an unknown path gets 405 too, not 404.
  REQUIRE(c.send("DELETE /nope HTTP/1.1\r\nHost: test\r\n\r\n"));
  r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 405);
  CHECK(r->header("allow") == "GET, HEAD");
  // A 405 is a well-formed exchange: the connection stays usable.
  REQUIRE(c.send(get("/hello")));
  r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);

  auto stats = ts.stats();
  CHECK(requestCount(stats, "/hello", 405) == 1);
  CHECK(requestCount(stats, "other", 405) == 1);
}

TEST_CASE("the query string is ignored for routing", "[http]") {
  TestServer ts(relaxedLimits());
  ts.start();
  Client c(ts.port());
  REQUIRE(c.send(get("/metrics?x=1&name[]=y")));
  auto r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "up 1\n");
  CHECK(requestCount(ts.stats(), "/metrics", 200) == 1);
}

TEST_CASE("keep-alive serves several requests, pipelined ones too, on one connection", "[http]") {
  TestServer ts(relaxedLimits());
  ts.start();
  Client c(ts.port());
  REQUIRE(c.send(get("/hello")));
  auto r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  REQUIRE(c.send(get("/metrics")));
  r = c.readResponse();
  REQUIRE(r);
  CHECK(r->body == "up 1\n");
  // Two requests in one segment: both answered, in order.
  REQUIRE(c.send(get("/hello") + get("/nope")));
  r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 404);
  CHECK(ts.stats().connectionsAccepted == 1);

  // HTTP/1.0 without keep-alive, and Connection: close, end the connection.
  Client old(ts.port());
  REQUIRE(old.send("GET /hello HTTP/1.0\r\n\r\n"));
  r = old.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(old.readToEnd() == End::kClosed);
  Client closing(ts.port());
  REQUIRE(closing.send(get("/hello", "Connection: close\r\n")));
  r = closing.readResponse();
  REQUIRE(r);
  CHECK(r->header("connection") == "close");
  CHECK(closing.readToEnd() == End::kClosed);
}

TEST_CASE("headers larger than maxHeaderBytes get 431 and the connection is closed", "[http]") {
  auto limits = relaxedLimits();
  limits.maxHeaderBytes = 1024;
  TestServer ts(limits);
  ts.start();
  Client c(ts.port());
  REQUIRE(c.send(get("/hello", "X-Big: " + std::string(4000, 'a') + "\r\n")));
  auto r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 431);
  CHECK(r->header("connection") == "close");
  CHECK(c.readToEnd() == End::kClosed);

  // Headers just under the limit are fine.
  Client ok(ts.port());
  REQUIRE(ok.send(get("/hello", "X-Big: " + std::string(800, 'a') + "\r\n")));
  r = ok.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);

  auto stats = ts.stats();
  CHECK(stats.rejectedTooLarge == 1);
  CHECK(requestCount(stats, "/hello", 431) == 1);  // the start line had been parsed
}

TEST_CASE("a body larger than maxBodyBytes gets 413 and the connection is closed", "[http]") {
  TestServer ts(relaxedLimits());  // maxBodyBytes 1024
  ts.start();
  Client c(ts.port());
  REQUIRE(c.send(get("/hello", "Content-Length: 5000\r\n") + std::string(5000, 'b')));
  auto r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 413);
  CHECK(r->header("connection") == "close");
  CHECK(c.readToEnd() == End::kClosed);

  Client small(ts.port());
  REQUIRE(small.send(get("/hello", "Content-Length: 10\r\n") + std::string(10, 'b')));
  r = small.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);

  auto stats = ts.stats();
  CHECK(stats.rejectedTooLarge == 1);
  CHECK(requestCount(stats, "/hello", 413) == 1);
}

TEST_CASE("an unparsable request gets 400 and the connection is closed", "[http]") {
  TestServer ts(relaxedLimits());
  ts.start();
  Client text(ts.port());
  REQUIRE(text.send("NOT HTTP AT ALL\r\n\r\n"));
  auto r = text.readResponse();
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(text.readToEnd() == End::kClosed);

  // The start of a TLS ClientHello, as a misconfigured scraper would send.
  Client tls(ts.port());
  REQUIRE(tls.send(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15)));
  r = tls.readResponse();
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(tls.readToEnd() == End::kClosed);

  auto stats = ts.stats();
  CHECK(stats.badRequests == 2);
  CHECK(requestCount(stats, "other", 400) == 2);
}

TEST_CASE("a slow client does not delay another client's request", "[http]") {
  auto limits = relaxedLimits();
  limits.readTimeout = 5s;
  TestServer ts(limits);
  ts.start();
  Client slow(ts.port());
  REQUIRE(slow.send("GET /hello HTTP/1.1\r\nHost: te"));  // and then nothing

  auto start = Steady::now();
  Client fast(ts.port());
  REQUIRE(fast.send(get("/hello")));
  auto r = fast.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(since(start) < 2s);  // well under the 5 s the slow client may hold its connection
  CHECK(ts.stats().connectionsOpen == 2);
}

TEST_CASE("a client trickling a request is disconnected at readTimeout", "[http]") {
  auto limits = relaxedLimits();
  limits.readTimeout = 300ms;
  TestServer ts(limits);
  ts.start();
  auto start = Steady::now();
  Client c(ts.port());
  REQUIRE(c.send("GET /hello HTTP/1.1\r\nX-Slow: "));
  // One header byte every 50 ms: progress must not extend the deadline.
  c.setReceiveTimeout(50ms);
  bool closed = false;
  while (!closed && since(start) < 10s) {
    if (c.readToEnd() == End::kClosed || !c.send("a")) closed = true;
  }
  auto elapsed = since(start);
  REQUIRE(closed);
  CHECK(elapsed >= 250ms);
  CHECK(elapsed < 3s);
  CHECK(ts.stats().timeouts == 1);
}

TEST_CASE("an idle keep-alive connection is closed at idleTimeout", "[http]") {
  auto limits = relaxedLimits();
  limits.idleTimeout = 300ms;
  TestServer ts(limits);
  ts.start();
  Client c(ts.port());
  REQUIRE(c.send(get("/hello")));
  REQUIRE(c.readResponse());
  auto start = Steady::now();
  CHECK(c.readToEnd() == End::kClosed);
  auto elapsed = since(start);
  CHECK(elapsed >= 200ms);
  CHECK(elapsed < 3s);
  CHECK(ts.stats().timeouts == 1);
}

TEST_CASE("a client that stops reading a large response is cut at writeTimeout", "[http]") {
  auto limits = relaxedLimits();
  limits.writeTimeout = 300ms;
  limits.maxConnections = 1;  // so the next client's answer shows when the slot frees
  TestServer ts(limits);
  ts.start();
  Client stalled(ts.port(), /*rcvBuf=*/4096);
  REQUIRE(stalled.send(get("/big")));  // and never read

  auto start = Steady::now();
  Client next(ts.port());
  REQUIRE(next.send(get("/hello")));
  auto r = next.readResponse();  // waits in the backlog until the stalled one is cut
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(since(start) < 5s);

  size_t received = 0;
  CHECK(stalled.readToEnd(&received) == End::kClosed);
  CHECK(received < kBigBodyBytes);
  auto stats = ts.stats();
  CHECK(stats.timeouts == 1);
  CHECK(stats.connectionsPeak == 1);
}

TEST_CASE("at maxConnections the server stops accepting until a connection closes", "[http]") {
  auto limits = relaxedLimits();
  limits.maxConnections = 2;
  TestServer ts(limits);
  ts.start();
  // Two keep-alive connections, answered once each, so the server has accepted both.
  Client a(ts.port());
  Client b(ts.port());
  for (Client* c : {&a, &b}) {
    REQUIRE(c->send(get("/hello")));
    REQUIRE(c->readResponse());
  }
  // A third client connects (the kernel backlog completes the handshake) but is not
  // served while both slots are taken.
  Client waiting(ts.port());
  REQUIRE(waiting.connected());
  REQUIRE(waiting.send(get("/hello")));
  waiting.setReceiveTimeout(500ms);
  CHECK_FALSE(waiting.readResponse());
  auto stats = ts.stats();
  CHECK(stats.connectionsOpen == 2);
  CHECK(stats.connectionsAccepted == 2);

  a.close();
  waiting.setReceiveTimeout(kClientTimeout);
  auto r = waiting.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  stats = ts.stats();
  CHECK(stats.connectionsAccepted == 3);
  CHECK(stats.connectionsPeak == 2);
}

TEST_CASE("past maxConnections a probe is still answered and a scrape gets 503", "[http]") {
  auto limits = relaxedLimits();
  limits.maxConnections = 2;
  limits.probeConnections = 1;
  TestServer ts(limits);
  ts.start();
  // Two keep-alive scrapers take every ordinary slot.
  Client a(ts.port());
  Client b(ts.port());
  for (Client* c : {&a, &b}) {
    REQUIRE(c->send(get("/metrics")));
    REQUIRE(c->readResponse());
  }
  // The kept slot serves a probe, again and again on the same connection...
  Client probe(ts.port());
  for (int i = 0; i < 3; ++i) {
    REQUIRE(probe.send(get("/healthz")));
    auto r = probe.readResponse();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->body == "ok\n");
  }
  // ...and a scrape there gets 503 and the connection closes, freeing the slot.
  REQUIRE(probe.send(get("/metrics")));
  auto busy = probe.readResponse();
  REQUIRE(busy);
  CHECK(busy->status == 503);
  CHECK(busy->headers["connection"] == "close");
  CHECK(probe.readToEnd() == End::kClosed);
  // With the kept slot held by another client, a fourth waits in the backlog.
  Client probe2(ts.port());
  REQUIRE(probe2.send(get("/healthz")));
  REQUIRE(probe2.readResponse());
  Client waiting(ts.port());
  REQUIRE(waiting.send(get("/healthz")));
  waiting.setReceiveTimeout(500ms);
  CHECK_FALSE(waiting.readResponse());
  auto stats = ts.stats();
  CHECK(stats.connectionsOpen == 3);
  CHECK(stats.connectionsPeak == 3);
  CHECK(stats.rejectedBusy == 1);
  CHECK(requestCount(stats, "/metrics", 503) == 1);
  CHECK(requestCount(stats, "/healthz", 200) == 4);
}

TEST_CASE("at maxConnections a waiting client is served once an idle connection times out",
          "[http]") {
  auto limits = relaxedLimits();
  limits.maxConnections = 2;
  limits.readTimeout = 300ms;
  TestServer ts(limits);
  ts.start();
  auto start = Steady::now();
  Client idle1(ts.port());  // connect and never send
  Client idle2(ts.port());
  Client waiting(ts.port());
  REQUIRE(waiting.send(get("/hello")));
  auto r = waiting.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  // idle1 was accepted after it connected, so no slot frees before start + readTimeout.
  CHECK(since(start) >= 300ms);
  CHECK(since(start) < 5s);
  auto stats = ts.stats();
  CHECK(stats.timeouts >= 1);
  CHECK(stats.connectionsPeak == 2);
}

TEST_CASE("200 parallel clients are all served by a server limited to 64 connections", "[http]") {
  auto limits = relaxedLimits();
  limits.maxConnections = 64;
  TestServer ts(limits);
  ts.start();
  constexpr int kClients = 200;
  std::atomic<int> served{0};
  std::promise<void> go;
  std::shared_future<void> ready = go.get_future().share();
  std::vector<std::thread> clients;
  clients.reserve(kClients);
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, port = ts.port()] {
      ready.wait();
      Client c(port);
      if (!c.send(get("/hello", "Connection: close\r\n"))) return;
      auto r = c.readResponse();
      // Waiting for the server's close means its bookkeeping is done too.
      if (r && r->status == 200 && r->body == "hello\n" && c.readToEnd() == End::kClosed) {
        ++served;
      }
    });
  }
  go.set_value();
  for (auto& t : clients) t.join();
  CHECK(served == kClients);
  auto stats = ts.stats();
  CHECK(stats.connectionsAccepted == kClients);
  CHECK(stats.connectionsPeak <= 64);
  CHECK(stats.connectionsOpen == 0);
  CHECK(requestCount(stats, "/hello", 200) == kClients);
}

TEST_CASE("a handler that throws gets 500, logged once, and the server keeps serving", "[http]") {
  static const SystemClock kClock;
  static std::ostringstream logged;
  Logger::setGlobal(logged, kClock, 0);
  {
    TestServer ts(relaxedLimits());
    ts.server().route("/boom", []() -> HttpResponse { throw std::runtime_error("kaput"); });
    ts.server().route("/bad", [] { return HttpResponse{42, "text/plain", ""}; });
    ts.start();
    Client c(ts.port());
    for (const char* target : {"/boom", "/boom", "/bad", "/hello"}) {
      REQUIRE(c.send(get(target)));
      auto r = c.readResponse();
      REQUIRE(r);
      CHECK(r->status == (std::string_view(target) == "/hello" ? 200u : 500u));
    }
    auto stats = ts.stats();
    CHECK(requestCount(stats, "/boom", 500) == 2);
    CHECK(requestCount(stats, "/bad", 500) == 1);
  }
  Logger::setGlobal(std::cerr, kClock, 0);
  auto text = logged.str();
  CHECK(text.find("kaput") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}

TEST_CASE("listening on a taken port returns an error naming the address", "[http]") {
  boost::asio::io_context io;
  HttpServer first(io, HttpLimits{});
  REQUIRE(first.listen("127.0.0.1:0").ok());
  auto addr = "127.0.0.1:" + std::to_string(first.port());
  HttpServer second(io, HttpLimits{});
  auto status = second.listen(addr);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().message.find(addr) != std::string::npos);
  CHECK(status.error().sysErrno == EADDRINUSE);
  // All-address listening on the same port collides with it too.
  HttpServer wildcard(io, HttpLimits{});
  auto all = wildcard.listen(":" + std::to_string(first.port()));
  REQUIRE_FALSE(all.ok());
  CHECK(all.error().message.find(":" + std::to_string(first.port())) != std::string::npos);
}

TEST_CASE("listen accepts Go-style addresses and rejects malformed ones", "[http]") {
  boost::asio::io_context io;
  for (const char* addr : {":0", "127.0.0.1:0", "localhost:0"}) {
    INFO(addr);
    HttpServer server(io, HttpLimits{});
    auto status = server.listen(addr);
    REQUIRE(status.ok());
    CHECK(server.port() != 0);
    Client c(server.port());  // reachable on IPv4 loopback (the backlog accepts the handshake)
    CHECK(c.connected());
  }
  {
    HttpServer server(io, HttpLimits{});
    auto status = server.listen("[::1]:0");
    if (status.ok()) {
      CHECK(server.port() != 0);
    } else {
      WARN("no IPv6 loopback here: " << status.error().message);
    }
  }
  for (const char* addr : {"9316", "127.0.0.1:99999", "127.0.0.1:http", "127.0.0.1:", "[::1",
                           "[::1]9316", "::1:9316"}) {
    INFO(addr);
    HttpServer server(io, HttpLimits{});
    auto status = server.listen(addr);
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().message.find(addr) != std::string::npos);
  }
}

TEST_CASE("stop closes open connections and lets io_context run return", "[http]") {
  TestServer ts(relaxedLimits());
  ts.start();
  Client idle(ts.port());
  REQUIRE(idle.send(get("/hello")));
  REQUIRE(idle.readResponse());
  // Answered once (so surely accepted), then stopped halfway through a second request.
  Client partial(ts.port());
  REQUIRE(partial.send(get("/hello")));
  REQUIRE(partial.readResponse());
  REQUIRE(partial.send("GET /hello HTTP/1.1\r\n"));
  REQUIRE(ts.stats().connectionsOpen == 2);

  REQUIRE(ts.stopAndWaitForRun(10s));
  CHECK(idle.readToEnd() == End::kClosed);
  CHECK(partial.readToEnd() == End::kClosed);
  ts.server().stop();  // again: a no-op (and the destructor calls it a third time)
  CHECK(ts.stats().connectionsOpen == 0);
  // Nobody accepts any more.
  Client late(ts.port());
  CHECK_FALSE(late.connected());
}

TEST_CASE("serveBytes answers a connection's bytes as a socket would, with no socket", "[http]") {
  boost::asio::io_context io;
  HttpLimits limits;
  limits.maxHeaderBytes = 512;
  limits.maxBodyBytes = 8;
  HttpServer server(io, limits);
  server.route("/hello", [] { return HttpResponse{200, "text/plain", "hi"}; });
  server.route("/throws", []() -> HttpResponse { throw std::runtime_error("boom"); });

  // Pipelined keep-alive requests: each answered, in order, until Connection: close.
  const std::string pipelined =
      "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n"
      "HEAD /hello?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n"
      "DELETE /hello HTTP/1.1\r\nHost: a\r\n\r\n"
      "GET /throws HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
      "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n";
  CHECK(server.serveBytes(pipelined) == std::vector<unsigned>{200, 200, 404, 405, 500});
  CHECK(server.stats().requests.at({"/hello", 200}) == 2);
  CHECK(server.stats().requests.at({"other", 404}) == 1);

  // The error replies end the connection: 413, 431, 400.
  CHECK(server.serveBytes("POST /hello HTTP/1.1\r\nContent-Length: 9\r\n\r\n123456789") ==
        std::vector<unsigned>{413});
  CHECK(server.serveBytes("GET /hello HTTP/1.1\r\nX: " + std::string(600, 'a') + "\r\n\r\n") ==
        std::vector<unsigned>{431});
  CHECK(server.serveBytes("GARBAGE\r\n\r\nGET /hello HTTP/1.1\r\n\r\n") ==
        std::vector<unsigned>{400});
  CHECK(server.stats().rejectedTooLarge == 2);
  CHECK(server.stats().badRequests == 1);
  // A request cut short gets no reply, as a peer that closed mid-request.
  CHECK(server.serveBytes("GET /hello HTTP/1.1\r\nHost:").empty());
  CHECK(server.serveBytes("").empty());
}

}  // namespace
}  // namespace koord::test_agent_http_server
