// ApiClient (and the transport under it) against TestHttpServer over loopback. The
// server runs on its own thread; the client's io_context runs here, in bounded
// loops, so no test can hang. Times are real (sockets and TLS) with bounds wide
// enough for a loaded 2-core machine; the rate limiter's arithmetic runs on a
// ManualClock, so its assertions are exact.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "kube/api_client.h"
#include "kube/http_client.h"
#include "tests/support/run_until.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_http_server.h"

namespace koord::test_kube_api_client {  // this file's own names: tests build as unity chunks
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using test::runsOutOfWork;
using test::runUntil;
using test::TempTree;
using test::TestHttpServer;
using Steady = std::chrono::steady_clock;
using Reply = Result<ApiReply>;

ApiClientConfig configFor(const TestHttpServer& server) {
  ApiClientConfig config;
  config.api.server = server.url();
  config.api.caData = server.caPem();
  config.userAgent = "koordlet-cpp/9.9.9-test";
  config.qps = 0;  // no limit unless a test sets one
  return config;
}

std::string errorOf(const Reply& reply) {
  return reply.ok() ? "(no error)" : reply.error().message;
}

Reply sendOnce(net::io_context& io, ApiClient& client, ApiRequest request) {
  std::optional<Reply> reply;
  client.send(std::move(request), [&](Reply r) { reply.emplace(std::move(r)); });
  REQUIRE(runUntil(io, [&] { return reply.has_value(); }));
  return std::move(*reply);
}

ApiRequest get(std::string path, std::string resource) {
  ApiRequest r;
  r.path = std::move(path);
  r.resource = std::move(resource);
  return r;
}

uint64_t countOf(const ApiClient& client, const std::string& verb, const std::string& resource,
                 const std::string& code) {
  const auto& counts = client.counts();
  auto it = counts.find({verb, resource, code});
  return it == counts.end() ? 0 : it->second;
}

// What one watch delivered.
struct Watched {
  std::optional<unsigned> status;
  std::optional<std::chrono::seconds> retryAfter;
  std::vector<std::string> pieces;
  std::vector<Steady::time_point> pieceTimes;
  std::optional<Status> end;
  Steady::time_point endTime;

  WatchHandlers handlers() {
    WatchHandlers h;
    h.onOpen = [this](unsigned s, std::optional<std::chrono::seconds> r) {
      status = s;
      retryAfter = r;
    };
    h.onData = [this](std::string_view bytes) {
      pieces.emplace_back(bytes);
      pieceTimes.push_back(Steady::now());
      return true;
    };
    h.onEnd = [this](Status s) {
      end.emplace(std::move(s));
      endTime = Steady::now();
    };
    return h;
  }
  std::string joined() const {
    std::string out;
    for (const auto& p : pieces) out += p;
    return out;
  }
};

// Watches the pods with the given idle timeout until the watch ends, into w.
void watchPodsToEnd(net::io_context& io, ApiClient& client, std::chrono::milliseconds idle,
                    Watched& w) {
  client.watch(get("/api/v1/pods?watch=true", "pods"), idle, w.handlers());
  REQUIRE(runUntil(io, [&] { return w.end.has_value(); }));
}

uint16_t unusedPort() {
  net::io_context io;
  net::ip::tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();
}

TEST_CASE("a GET over HTTPS carries the bearer token, the user agent and Accept json",
          "[api-client]") {
  TestHttpServer server({.tls = true});
  server.setHandler([](const TestHttpServer::Request&) {
    return TestHttpServer::reply(200, R"({"kind":"Node"})");
  });
  ApiClientConfig config = configFor(server);
  config.api.token = "literal-token";
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, config, clock);
  CHECK(client.server() == server.url());

  const Reply reply = sendOnce(io, client, get("/api/v1/nodes/n1", "nodes"));
  INFO(errorOf(reply));
  REQUIRE(reply.ok());
  CHECK(reply->status == 200);
  CHECK(reply->body == R"({"kind":"Node"})");
  CHECK_FALSE(reply->retryAfter.has_value());

  const auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].method == "GET");
  CHECK(requests[0].target == "/api/v1/nodes/n1");
  CHECK(requests[0].header("authorization") == "Bearer literal-token");
  CHECK(requests[0].header("user-agent") == "koordlet-cpp/9.9.9-test");
  CHECK(requests[0].header("accept") == "application/json");
  CHECK(requests[0].header("host") == "127.0.0.1:" + std::to_string(server.port()));
  CHECK(requests[0].header("content-type").empty());
  CHECK(requests[0].serverName.empty());  // no SNI for an IP address (RFC 6066)
  CHECK(countOf(client, "GET", "nodes", "200") == 1);
}

TEST_CASE("a rotated token file is re-read before the next API request", "[api-client]") {
  TestHttpServer server({.tls = true});
  TempTree dir({{"token", "first-token\n"}});
  ApiClientConfig config = configFor(server);
  config.api.tokenFile = dir.path("token");
  config.api.token = "ignored-when-a-file-is-set";
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, config, clock);

  REQUIRE(sendOnce(io, client, get("/api", "api")).ok());
  // The kubelet's atomic writer: a new file renamed over the old (a new inode).
  dir.write("token.new", "second-token");
  std::filesystem::rename(dir.path("token.new"), dir.path("token"));
  REQUIRE(sendOnce(io, client, get("/api", "api")).ok());

  const auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].header("authorization") == "Bearer first-token");
  CHECK(requests[1].header("authorization") == "Bearer second-token");

  // Gone: the request fails before any I/O, naming the file, counted as "token".
  dir.remove("token");
  const Reply reply = sendOnce(io, client, get("/api", "api"));
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message, Contains("token file " + dir.path("token")));
  CHECK(server.requests().size() == 2);
  CHECK(countOf(client, "GET", "api", "token") == 1);
}

TEST_CASE("POST, PUT and PATCH bodies arrive with their content type", "[api-client]") {
  TestHttpServer server;
  server.setHandler([](const TestHttpServer::Request& r) {
    return TestHttpServer::reply(r.method == "POST" ? 201 : 200, "{}");
  });
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, configFor(server), clock);

  struct Case {
    std::string verb, contentType, expectedType;
  };
  const Case cases[] = {{"POST", "", "application/json"},
                        {"PUT", "", "application/json"},
                        {"PATCH", "application/merge-patch+json", "application/merge-patch+json"}};
  for (const auto& c : cases) {
    INFO(c.verb);
    ApiRequest request =
        get("/apis/slo.koordinator.sh/v1alpha1/nodemetrics/n1/status", "nodemetrics/status");
    request.verb = c.verb;
    request.body = R"({"status":{"verb":")" + c.verb + R"("}})";
    request.contentType = c.contentType;
    const Reply reply = sendOnce(io, client, request);
    INFO(errorOf(reply));
    REQUIRE(reply.ok());
    const auto seen = server.requests().back();
    CHECK(seen.method == c.verb);
    CHECK(seen.body == request.body);
    CHECK(seen.header("content-type") == c.expectedType);
    CHECK(seen.header("content-length") == std::to_string(request.body.size()));
  }
  CHECK(countOf(client, "POST", "nodemetrics/status", "201") == 1);
  CHECK(countOf(client, "PUT", "nodemetrics/status", "200") == 1);
  CHECK(countOf(client, "PATCH", "nodemetrics/status", "200") == 1);
}

TEST_CASE("the API server is verified: another CA fails, caData and caFile succeed",
          "[api-client]") {
  TestHttpServer server({.tls = true});
  net::io_context io;
  ManualClock clock;

  ApiClientConfig wrong = configFor(server);
  wrong.api.caData = server.otherCaPem();
  ApiClient wrongClient(io, wrong, clock);
  const Reply failed = sendOnce(io, wrongClient, get("/api", "api"));
  REQUIRE_FALSE(failed.ok());
  CHECK_THAT(failed.error().message, StartsWith("GET " + server.url() + "/api: TLS handshake"));
  CHECK_THAT(failed.error().message, Contains("certificate verify failed"));
  CHECK_THAT(failed.error().message, Contains("insecure-skip-tls-verify"));
  CHECK(countOf(wrongClient, "GET", "api", "tls") == 1);
  CHECK(server.requests().empty());

  ApiClient dataClient(io, configFor(server), clock);
  const Reply viaData = sendOnce(io, dataClient, get("/api", "api"));
  INFO(errorOf(viaData));
  CHECK(viaData.ok());

  TempTree dir({{"ca.crt", server.caPem()}});
  ApiClientConfig fileConfig = configFor(server);
  fileConfig.api.caData.clear();
  fileConfig.api.caFile = dir.path("ca.crt");
  ApiClient fileClient(io, fileConfig, clock);
  const Reply viaFile = sendOnce(io, fileClient, get("/api", "api"));
  INFO(errorOf(viaFile));
  CHECK(viaFile.ok());

  ApiClientConfig skip = wrong;
  skip.api.insecureSkipTlsVerify = true;
  ApiClient skipClient(io, skip, clock);
  const Reply skipped = sendOnce(io, skipClient, get("/api", "api"));
  INFO(errorOf(skipped));
  CHECK(skipped.ok());
}

TEST_CASE("a client certificate is presented to a server that requires one", "[api-client]") {
  TestHttpServer server({.tls = true, .requireClientCert = true});
  net::io_context io;
  ManualClock clock;

  ApiClient anonymous(io, configFor(server), clock);
  const Reply refused = sendOnce(io, anonymous, get("/api", "api"));
  CHECK_FALSE(refused.ok());
  CHECK(runUntil(io, [&] { return server.failedHandshakes() >= 1; }));
  CHECK(server.requests().empty());

  ApiClientConfig withData = configFor(server);
  withData.api.clientCertData = server.clientCertPem();
  withData.api.clientKeyData = server.clientKeyPem();
  ApiClient dataClient(io, withData, clock);
  const Reply viaData = sendOnce(io, dataClient, get("/api", "api"));
  INFO(errorOf(viaData));
  CHECK(viaData.ok());

  TempTree dir({{"client.crt", server.clientCertPem()}, {"client.key", server.clientKeyPem()}});
  ApiClientConfig withFiles = configFor(server);
  withFiles.api.clientCertFile = dir.path("client.crt");
  withFiles.api.clientKeyFile = dir.path("client.key");
  ApiClient fileClient(io, withFiles, clock);
  const Reply viaFiles = sendOnce(io, fileClient, get("/api", "api"));
  INFO(errorOf(viaFiles));
  CHECK(viaFiles.ok());
  CHECK(server.requests().size() == 2);
  CHECK(server.requests().back().header("authorization").empty());

  // A missing key file fails before any I/O, naming it.
  dir.remove("client.key");
  ApiClient broken(io, withFiles, clock);
  const Reply missing = sendOnce(io, broken, get("/api", "api"));
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Contains("TLS client key " + dir.path("client.key")));
  CHECK(countOf(broken, "GET", "api", "tls") == 1);
}

TEST_CASE("a chunked stream is delivered in pieces as they arrive", "[api-client]") {
  TestHttpServer server({.tls = true});
  server.setHandler([](const TestHttpServer::Request&) {
    return TestHttpServer::Reply{
        {TestHttpServer::chunkedHead(200) + TestHttpServer::chunk("a"), TestHttpServer::chunk("bb"),
         TestHttpServer::chunk("ccc"), TestHttpServer::chunk("")},
        150ms,
        false};
  });
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, configFor(server), clock);

  Watched w;
  watchPodsToEnd(io, client, 10s, w);
  INFO((w.end->ok() ? std::string("ok") : w.end->error().message));
  CHECK(w.end->ok());
  CHECK(w.status == 200u);
  CHECK(w.joined() == "abbccc");  // framing removed
  // The server paused 150 ms before each later piece: the first was handed over
  // well before the end, so bytes are not held back until the body is complete.
  REQUIRE(w.pieces.size() >= 2);
  CHECK(w.endTime - w.pieceTimes.front() >= 300ms);
  CHECK(server.requests().at(0).method == "GET");
  CHECK(countOf(client, "WATCH", "pods", "200") == 1);
  CHECK(countOf(client, "GET", "pods", "200") == 0);
}

TEST_CASE("a stream that goes silent ends with an idle timeout; traffic keeps it open",
          "[api-client]") {
  TestHttpServer server;
  // 12 pieces 100 ms apart (1.1 s in all, longer than the 700 ms idle timeout, which
  // each piece resets), then silence with the connection held open.
  server.setHandler([](const TestHttpServer::Request&) {
    TestHttpServer::Reply reply{{TestHttpServer::chunkedHead(200)}, 100ms, true};
    for (int i = 0; i < 12; ++i) reply.pieces.push_back(TestHttpServer::chunk("x"));
    return reply;
  });
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, configFor(server), clock);

  Watched w;
  watchPodsToEnd(io, client, 700ms, w);
  REQUIRE_FALSE(w.end->ok());
  CHECK_THAT(w.end->error().message, Contains("timed out after 700ms idle"));
  CHECK(transportErrorClass(w.end->error()) == "timeout");
  CHECK(w.joined() == std::string(12, 'x'));
  CHECK(countOf(client, "WATCH", "pods", "200") == 1);  // counted when it opened
}

TEST_CASE("a stream cut off mid-chunk ends with an error", "[api-client]") {
  TestHttpServer server({.tls = true});
  server.setHandler([](const TestHttpServer::Request&) {
    return TestHttpServer::Reply{
        {TestHttpServer::chunkedHead(200) + TestHttpServer::chunk("whole"), "10\r\nonly-part"},
        50ms,
        false};
  });
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, configFor(server), clock);

  Watched w;
  watchPodsToEnd(io, client, 10s, w);
  REQUIRE_FALSE(w.end->ok());
  CHECK_THAT(w.end->error().message, Contains("reply cut off"));
  CHECK_THAT(w.joined(), StartsWith("whole"));
}

TEST_CASE("a watch that fails before a reply ends with the error and is counted by class",
          "[api-client]") {
  ApiClientConfig config;
  config.api.server = "http://127.0.0.1:" + std::to_string(unusedPort());
  config.qps = 0;
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, config, clock);

  Watched w;
  watchPodsToEnd(io, client, 5s, w);
  REQUIRE_FALSE(w.end->ok());
  CHECK_THAT(w.end->error().message, Contains("Connection refused"));
  CHECK_FALSE(w.status.has_value());
  CHECK(countOf(client, "WATCH", "pods", "connect") == 1);
}

TEST_CASE("cancel suppresses every callback of a request, a watch and a throttled request",
          "[api-client]") {
  TestHttpServer server;
  server.setHandler([](const TestHttpServer::Request& r) {
    if (r.target.find("watch") != std::string::npos) {
      return TestHttpServer::Reply{
          {TestHttpServer::chunkedHead(200), TestHttpServer::chunk("x")}, 0ms, true};
    }
    return TestHttpServer::Reply{{}, 0ms, true};  // never answers
  });
  ApiClientConfig config = configFor(server);
  config.qps = 0.1;  // the third request waits 10 s: cancelled long before
  config.burst = 2;
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, config, clock);

  bool called = false;
  const auto sent = client.send(get("/api/v1/nodes", "nodes"), [&](Reply) { called = true; });
  Watched w;
  const auto watched = client.watch(get("/api/v1/pods?watch=true", "pods"), 10s, w.handlers());
  // Out of tokens: this one waits on the limiter, and is cancelled there.
  const auto throttled = client.send(get("/api/v1/nodes", "nodes"), [&](Reply) { called = true; });
  CHECK(client.throttledRequests() == 1);
  REQUIRE(runUntil(io, [&] { return !w.pieces.empty() && server.requests().size() >= 2; }));
  client.cancel(sent);
  client.cancel(watched);
  client.cancel(throttled);
  client.cancel(9999);  // unknown: ignored
  CHECK(runsOutOfWork(io));
  CHECK_FALSE(called);
  CHECK_FALSE(w.end.has_value());
  CHECK(server.requests().size() == 2);
  CHECK(countOf(client, "GET", "nodes", "200") == 0);
}

TEST_CASE("requests run concurrently, each on its own connection", "[api-client]") {
  TestHttpServer server;
  // Never answers: a client sending one request at a time would stop at the first.
  server.setHandler([](const TestHttpServer::Request&) {
    return TestHttpServer::Reply{{}, 0ms, true};
  });
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, configFor(server), clock);
  int called = 0;
  for (int i = 0; i < 4; ++i) {
    client.send(get("/api/v1/nodes/n" + std::to_string(i), "nodes"), [&](Reply) { ++called; });
  }
  REQUIRE(runUntil(io, [&] { return server.requests().size() == 4; }));
  client.cancelAll();
  CHECK(runsOutOfWork(io));
  CHECK(called == 0);
}

TEST_CASE("a host name is resolved, sent as SNI and verified against the DNS names",
          "[api-client]") {
  TestHttpServer server({.tls = true});
  ApiClientConfig config = configFor(server);
  config.api.server = "https://localhost:" + std::to_string(server.port());
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, config, clock);
  const Reply reply = sendOnce(io, client, get("/api", "api"));
  INFO(errorOf(reply));
  REQUIRE(reply.ok());
  CHECK(server.requests().at(0).header("host") == "localhost:" + std::to_string(server.port()));
  CHECK(server.requests().at(0).serverName == "localhost");
}

TEST_CASE("destroying the client abandons its requests without callbacks", "[api-client]") {
  TestHttpServer server;
  server.setHandler([](const TestHttpServer::Request&) {
    return TestHttpServer::Reply{{}, 0ms, true};
  });
  net::io_context io;
  ManualClock clock;
  bool called = false;
  Watched w;
  {
    ApiClient client(io, configFor(server), clock);
    client.send(get("/api/v1/nodes", "nodes"), [&](Reply) { called = true; });
    client.watch(get("/api/v1/pods?watch=true", "pods"), 10s, w.handlers());
    REQUIRE(runUntil(io, [&] { return server.requests().size() == 2; }));
  }
  CHECK(runsOutOfWork(io));
  CHECK_FALSE(called);
  CHECK_FALSE(w.end.has_value());
}

TEST_CASE("a 429 reply brings its Retry-After, to a request and to a watch", "[api-client]") {
  TestHttpServer server;
  server.setHandler([](const TestHttpServer::Request&) {
    return TestHttpServer::reply(429, R"({"kind":"Status","code":429})", {{"Retry-After", "7"}});
  });
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, configFor(server), clock);

  const Reply reply = sendOnce(io, client, get("/api/v1/nodes", "nodes"));
  REQUIRE(reply.ok());
  CHECK(reply->status == 429);
  CHECK(reply->retryAfter == std::chrono::seconds(7));

  Watched w;
  watchPodsToEnd(io, client, 10s, w);
  INFO((w.end->ok() ? std::string("ok") : w.end->error().message));
  CHECK(w.end->ok());
  CHECK(w.status == 429u);
  CHECK(w.retryAfter == std::chrono::seconds(7));
  CHECK(w.joined() == R"({"kind":"Status","code":429})");  // the Status body, for the caller
  CHECK(countOf(client, "GET", "nodes", "429") == 1);
  CHECK(countOf(client, "WATCH", "pods", "429") == 1);
}

TEST_CASE("Retry-After is read in its seconds form only", "[api-client]") {
  CHECK(parseRetryAfter("120") == std::chrono::seconds(120));
  CHECK(parseRetryAfter(" 3 ") == std::chrono::seconds(3));
  CHECK(parseRetryAfter("0") == std::chrono::seconds(0));
  CHECK_FALSE(parseRetryAfter("").has_value());
  CHECK_FALSE(parseRetryAfter("-1").has_value());
  CHECK_FALSE(parseRetryAfter("1.5").has_value());
  CHECK_FALSE(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT").has_value());
  CHECK_FALSE(parseRetryAfter("99999999999999999999").has_value());
}

TEST_CASE("requests are counted by verb, resource and status or error class", "[api-client]") {
  TestHttpServer server;
  server.setHandler([](const TestHttpServer::Request& r) {
    return TestHttpServer::reply(r.target == "/api/v1/nodes/missing" ? 404 : 200, "{}");
  });
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, configFor(server), clock);
  CHECK(sendOnce(io, client, get("/api/v1/nodes/n1", "nodes")).ok());
  CHECK(sendOnce(io, client, get("/api/v1/nodes/n1", "nodes")).ok());
  CHECK(sendOnce(io, client, get("/api/v1/nodes/missing", "nodes")).ok());
  ApiRequest patch = get("/api/v1/nodes/n1/status", "nodes/status");
  patch.verb = "PATCH";
  patch.body = "{}";
  CHECK(sendOnce(io, client, patch).ok());
  const Reply bad = sendOnce(io, client, get("/api/v1/nodes/a b", "nodes"));
  CHECK_THAT(errorOf(bad), Contains("invalid path"));
  ApiRequest badVerb = get("/api/v1/nodes/n1", "nodes");
  badVerb.verb = "GET /x HTTP/1.1\r\n";
  CHECK_THAT(errorOf(sendOnce(io, client, badVerb)), Contains("invalid verb"));

  ApiClientConfig refusedConfig;
  refusedConfig.api.server = "http://127.0.0.1:" + std::to_string(unusedPort());
  ApiClient refused(io, refusedConfig, clock);
  const Reply noServer = sendOnce(io, refused, get("/api/v1/pods", "pods"));
  CHECK_THAT(errorOf(noServer), Contains("connect 127.0.0.1:"));

  const std::map<ApiClient::CountKey, uint64_t> expected = {
      {{"GET", "nodes", "200"}, 2},          {{"GET", "nodes", "404"}, 1},
      {{"PATCH", "nodes/status", "200"}, 1}, {{"GET", "nodes", "other"}, 1},
      {{"INVALID", "nodes", "other"}, 1},
  };
  CHECK(client.counts() == expected);
  CHECK(refused.counts() ==
        std::map<ApiClient::CountKey, uint64_t>{{{"GET", "pods", "connect"}, 1}});
}

TEST_CASE("a request past its deadline or its size cap fails, counted as timeout and too_large",
          "[api-client]") {
  TestHttpServer server;
  server.setHandler([](const TestHttpServer::Request& r) {
    if (r.target == "/slow") {  // the head, then nothing
      return TestHttpServer::Reply{{TestHttpServer::chunkedHead(200)}, 0ms, true};
    }
    return TestHttpServer::reply(200, std::string(100, 'x'));
  });
  ApiClientConfig config = configFor(server);
  config.timeout = 300ms;
  config.maxBodyBytes = 10;
  net::io_context io;
  ManualClock clock;
  ApiClient client(io, config, clock);

  const Reply slow = sendOnce(io, client, get("/slow", "slow"));
  CHECK_THAT(errorOf(slow), Contains("timed out after 300ms reading the reply"));
  const Reply big = sendOnce(io, client, get("/big", "big"));
  CHECK_THAT(errorOf(big), Contains("reply larger than 10 bytes"));
  CHECK(countOf(client, "GET", "slow", "timeout") == 1);
  CHECK(countOf(client, "GET", "big", "too_large") == 1);
}

TEST_CASE("with qps 2 and burst 1 the second and third requests wait on the limiter",
          "[api-client]") {
  TestHttpServer server;
  ApiClientConfig config = configFor(server);
  config.qps = 2;
  config.burst = 1;
  net::io_context io;
  ManualClock clock;  // stands still: each reservation adds half a second of debt
  ApiClient client(io, config, clock);

  const auto start = Steady::now();
  std::vector<Steady::time_point> done;
  client.send(get("/api", "api"), [&](Reply r) {
    CHECK(r.ok());
    done.push_back(Steady::now());
  });
  client.send(get("/api", "api"), [&](Reply r) {
    CHECK(r.ok());
    done.push_back(Steady::now());
  });
  Watched w;
  client.watch(get("/api/v1/pods?watch=true", "pods"), 10s, w.handlers());  // a token too
  CHECK(client.throttledRequests() == 2);
  CHECK(client.throttledTime() == 500ms + 1000ms);
  REQUIRE(runUntil(io, [&] { return done.size() == 2 && w.end.has_value(); }));
  CHECK(server.requests().size() == 3);
  // The timers really waited (lower bounds only: a loaded machine is slower, never
  // faster).
  CHECK(done[1] - start >= 450ms);
  CHECK(w.endTime - start >= 950ms);
}

TEST_CASE("the server URL: default ports, IPv6 brackets, a path prefix, bad URLs", "[api-client]") {
  net::io_context io;
  ManualClock clock;
  auto serverOf = [&](std::string url) {
    ApiClientConfig config;
    config.api.server = std::move(url);
    return ApiClient(io, config, clock).server();
  };
  CHECK(serverOf("https://10.96.0.1") == "https://10.96.0.1:443");
  CHECK(serverOf("http://api.local") == "http://api.local:80");
  CHECK(serverOf("https://[fd00::1]:6443") == "https://[fd00::1]:6443");
  CHECK(serverOf("https://[fd00::1]") == "https://[fd00::1]:443");
  CHECK(serverOf("https://rancher:8443/k8s/clusters/c-1/") ==
        "https://rancher:8443/k8s/clusters/c-1");

  TestHttpServer server;
  ApiClientConfig prefixed = configFor(server);
  prefixed.api.server = server.url() + "/k8s/clusters/c-1";
  ApiClient client(io, prefixed, clock);
  REQUIRE(sendOnce(io, client, get("/api/v1/nodes", "nodes")).ok());
  CHECK(server.requests().at(0).target == "/k8s/clusters/c-1/api/v1/nodes");

  for (const char* bad :
       {"ftp://x", "https://", "https://h:0", "https://h:99999", "https://[::1", "https://h:"}) {
    INFO(bad);
    ApiClientConfig config;
    config.api.server = bad;
    ApiClient broken(io, config, clock);
    const Reply reply = sendOnce(io, broken, get("/api", "api"));
    REQUIRE_FALSE(reply.ok());
    CHECK_THAT(reply.error().message, Contains(std::string("API server \"") + bad + "\""));
  }
}

}  // namespace
}  // namespace koord::test_kube_api_client
