// KubeletClient against TestKubelet over loopback. The test kubelet runs on its own
// thread; the client's io_context runs here, in bounded loops, so no test can hang.
// Times are real (these are end-to-end tests of sockets and TLS) with bounds wide
// enough for a loaded 2-core machine under sanitizers.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "kube/kubelet_client.h"
#include "tests/support/run_until.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace koord::test_kube_kubelet_client {  // this file's own names: tests build as unity chunks
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using test::runsOutOfWork;
using test::runUntil;
using test::TempTree;
using test::TestKubelet;
using Behaviour = TestKubelet::Behaviour;
using Steady = std::chrono::steady_clock;
using Reply = Result<KubeletResponse>;

KubeletClientConfig plainConfig(const TestKubelet& kubelet) {
  KubeletClientConfig config;
  config.host = kubelet.address();
  config.port = kubelet.port();
  config.useTls = false;
  config.timeout = 10s;  // only the timeout test meets the deadline
  return config;
}

KubeletClientConfig tlsConfig(const TestKubelet& kubelet) {
  KubeletClientConfig config = plainConfig(kubelet);
  config.useTls = true;
  config.caFile = kubelet.caFile();
  return config;
}

std::string errorOf(const Reply& reply) {
  return reply.ok() ? "(no error)" : reply.error().message;
}

// One get() and its reply.
Reply getOnce(net::io_context& io, KubeletClient& client, const std::string& path = "/pods/") {
  std::optional<Reply> reply;
  client.get(path, [&](Reply r) { reply.emplace(std::move(r)); });
  REQUIRE(runUntil(io, [&] { return reply.has_value(); }));
  return std::move(*reply);
}

// A loopback port nobody listens on (bound, then released).
uint16_t unusedPort() {
  net::io_context io;
  net::ip::tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();
}

TEST_CASE("every real kubelet /pods capture arrives byte-identical over plain HTTP", "[kubelet]") {
  TestKubelet kubelet;
  net::io_context io;
  KubeletClient client(io, plainConfig(kubelet));
  CHECK(client.endpoint() == "http://127.0.0.1:" + std::to_string(kubelet.port()));

  std::vector<std::filesystem::path> captures;
  for (const auto& entry : std::filesystem::directory_iterator(test::fixturePath("kubelet"))) {
    if (entry.path().filename().string().rfind("k8s-", 0) == 0) {
      captures.push_back(entry.path() / "pods.json");
    }
  }
  REQUIRE(captures.size() == 11);
  for (const auto& path : captures) {
    INFO(path.string());
    const auto body = readFile(path.string());
    REQUIRE(body.ok());
    kubelet.setBody(*body);
    const Reply reply = getOnce(io, client);
    INFO(errorOf(reply));
    REQUIRE(reply.ok());
    CHECK(reply->status == 200);
    CHECK(reply->body.size() == body->size());
    CHECK((reply->body == *body));  // parenthesized: no 100 KiB dump on failure
  }
  CHECK(kubelet.requestCount() == captures.size());

  const std::string head = kubelet.lastRequestHead();
  CHECK_THAT(head, StartsWith("GET /pods/ HTTP/1.1\r\n"));
  CHECK_THAT(head, Contains("Host: 127.0.0.1:" + std::to_string(kubelet.port()) + "\r\n"));
  CHECK_THAT(head, Contains("Accept: application/json\r\n"));
  CHECK_THAT(head, Contains("User-Agent: koordlet-cpp\r\n"));
  CHECK(head.find("Authorization") == std::string::npos);
}

TEST_CASE("HTTPS verifies the kubelet against the CA file and sends the bearer token",
          "[kubelet]") {
  TestKubelet kubelet({.tls = true});
  kubelet.setExpectedToken("token-one");
  kubelet.setBody(R"({"kind":"PodList","items":[]})");
  TempTree dir({{"token", "token-one\n"}});
  KubeletClientConfig config = tlsConfig(kubelet);
  config.tokenFile = dir.path("token");
  net::io_context io;
  KubeletClient client(io, config);
  CHECK(client.endpoint() == "https://127.0.0.1:" + std::to_string(kubelet.port()));

  const Reply reply = getOnce(io, client);
  INFO(errorOf(reply));
  REQUIRE(reply.ok());
  CHECK(reply->status == 200);
  CHECK(reply->body == R"({"kind":"PodList","items":[]})");
  CHECK(kubelet.lastToken() == "token-one");  // trailing newline trimmed
}

TEST_CASE("a host name is resolved and verified against the certificate's DNS names", "[kubelet]") {
  TestKubelet kubelet({.tls = true});
  KubeletClientConfig config = tlsConfig(kubelet);
  config.host = "localhost";  // may resolve to ::1 first, where nothing listens
  net::io_context io;
  KubeletClient client(io, config);

  const Reply reply = getOnce(io, client);
  INFO(errorOf(reply));
  REQUIRE(reply.ok());
  CHECK(reply->status == 200);
  CHECK_THAT(kubelet.lastRequestHead(),
             Contains("Host: localhost:" + std::to_string(kubelet.port()) + "\r\n"));
}

TEST_CASE("a rotated token file is re-read before the next request", "[kubelet]") {
  TestKubelet kubelet({.tls = true});
  TempTree dir({{"token", "token-one\n"}});
  KubeletClientConfig config = tlsConfig(kubelet);
  config.tokenFile = dir.path("token");
  net::io_context io;
  KubeletClient client(io, config);

  REQUIRE(getOnce(io, client).ok());
  CHECK(kubelet.lastToken() == "token-one");

  // As the kubelet's atomic writer rotates a projected token: a new file renamed over.
  dir.write("token.new", "token-two\n");
  std::filesystem::rename(dir.path("token.new"), dir.path("token"));
  kubelet.setExpectedToken("token-two");
  Reply reply = getOnce(io, client);
  INFO(errorOf(reply));
  REQUIRE(reply.ok());
  CHECK(reply->status == 200);
  CHECK(kubelet.lastToken() == "token-two");

  // Rewritten in place: same inode, other size.
  dir.write("token", "token-three-longer \r\n");
  kubelet.setExpectedToken("token-three-longer");
  reply = getOnce(io, client);
  REQUIRE(reply.ok());
  CHECK(reply->status == 200);
  CHECK(kubelet.lastToken() == "token-three-longer");
}

TEST_CASE("a kubelet certificate from another CA fails the TLS handshake with a verify error",
          "[kubelet]") {
  TestKubelet kubelet({.tls = true});
  KubeletClientConfig config = tlsConfig(kubelet);
  config.caFile = kubelet.otherCaFile();
  net::io_context io;
  KubeletClient client(io, config);

  const Reply reply = getOnce(io, client);
  REQUIRE_FALSE(reply.ok());
  const std::string& message = reply.error().message;
  CHECK_THAT(message, StartsWith("GET https://127.0.0.1:" + std::to_string(kubelet.port())));
  CHECK_THAT(message, Contains("TLS handshake"));
  CHECK_THAT(message, Contains("certificate verify failed"));
  CHECK_THAT(message, Contains("--kubelet-skip-tls-verify"));
  CHECK(kubelet.requestCount() == 0);  // nothing was sent
}

TEST_CASE("skipVerify accepts a certificate from an unknown CA, as koordlet does", "[kubelet]") {
  TestKubelet kubelet({.tls = true});
  KubeletClientConfig config = tlsConfig(kubelet);
  config.caFile = kubelet.otherCaFile();
  config.skipVerify = true;
  net::io_context io;
  KubeletClient client(io, config);

  const Reply reply = getOnce(io, client);
  INFO(errorOf(reply));
  REQUIRE(reply.ok());
  CHECK(reply->status == 200);
}

TEST_CASE("a certificate that does not name the kubelet's IP fails verification", "[kubelet]") {
  std::optional<TestKubelet> kubelet;
  try {  // the certificate names 127.0.0.1 only; 127.0.0.2 is loopback too on Linux
    kubelet.emplace(TestKubelet::Options{.tls = true, .address = "127.0.0.2"});
  } catch (const std::exception& e) {
    KOORDLET_SKIP("cannot listen on 127.0.0.2: " << e.what());
  }
  net::io_context io;
  KubeletClient client(io, tlsConfig(*kubelet));

  const Reply reply = getOnce(io, client);
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message, Contains("TLS handshake"));
  CHECK_THAT(reply.error().message, Contains("IP address mismatch"));
  CHECK(kubelet->requestCount() == 0);
}

TEST_CASE("a missing token file is an error naming the file", "[kubelet]") {
  TestKubelet kubelet;
  TempTree dir;
  KubeletClientConfig config = plainConfig(kubelet);
  config.tokenFile = dir.path("token");
  net::io_context io;
  KubeletClient client(io, config);

  const Reply reply = getOnce(io, client);
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message,
             Contains("token file " + dir.path("token") + ": No such file or directory"));
  CHECK(reply.error().sysErrno == ENOENT);
  CHECK(kubelet.requestCount() == 0);

  // Once the file appears, requests go out.
  dir.write("token", "late-token");
  REQUIRE(getOnce(io, client).ok());
  CHECK(kubelet.lastToken() == "late-token");
}

TEST_CASE("a bad or missing CA file is an error naming the file", "[kubelet]") {
  TestKubelet kubelet({.tls = true});
  TempTree dir({{"ca.crt", "this is not a certificate\n"}});
  KubeletClientConfig config = tlsConfig(kubelet);
  config.caFile = dir.path("ca.crt");
  net::io_context io;
  KubeletClient client(io, config);

  Reply reply = getOnce(io, client);
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message, Contains("CA file " + dir.path("ca.crt") + ": "));

  // Fixed in place: the next request reloads it.
  std::filesystem::copy_file(kubelet.caFile(), dir.path("ca.crt"),
                             std::filesystem::copy_options::overwrite_existing);
  reply = getOnce(io, client);
  INFO(errorOf(reply));
  REQUIRE(reply.ok());

  dir.remove("ca.crt");
  reply = getOnce(io, client);
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message,
             Contains("CA file " + dir.path("ca.crt") + ": No such file or directory"));
}

TEST_CASE("a kubelet slower than the timeout is reported as timed out", "[kubelet]") {
  TestKubelet kubelet;
  kubelet.setBehaviour(Behaviour::kSlow);
  kubelet.setSlowDelay(10s);
  KubeletClientConfig config = plainConfig(kubelet);
  config.timeout = 300ms;
  net::io_context io;
  KubeletClient client(io, config);

  const auto start = Steady::now();
  const Reply reply = getOnce(io, client);
  const auto elapsed = Steady::now() - start;
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message, Contains("timed out after 300ms"));
  CHECK(reply.error().sysErrno == ETIMEDOUT);
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 3s);
  CHECK(runsOutOfWork(io));  // the socket is closed, nothing left pending
}

TEST_CASE("a reply cut off mid-body is an error", "[kubelet]") {
  const bool tls = GENERATE(false, true);
  INFO((tls ? "https" : "http"));
  TestKubelet kubelet({.tls = tls});
  kubelet.setBehaviour(Behaviour::kCutOff);
  kubelet.setBody(std::string(100'000, 'x'));
  net::io_context io;
  KubeletClient client(io, tls ? tlsConfig(kubelet) : plainConfig(kubelet));

  const Reply reply = getOnce(io, client);
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message, Contains("reply cut off"));
}

TEST_CASE("a reply larger than the cap is an error naming the cap", "[kubelet]") {
  TestKubelet kubelet;
  KubeletClientConfig config = plainConfig(kubelet);
  config.maxBodyBytes = 1u << 20;
  net::io_context io;
  KubeletClient client(io, config);

  SECTION("streamed in chunks") {
    kubelet.setBehaviour(Behaviour::kHuge);
    kubelet.setHugeBytes(8u << 20);
    const Reply reply = getOnce(io, client);
    REQUIRE_FALSE(reply.ok());
    CHECK_THAT(reply.error().message, Contains("reply larger than 1048576 bytes"));
  }
  SECTION("announced by Content-Length") {
    kubelet.setBody(std::string((1u << 20) + 1, 'x'));
    const Reply reply = getOnce(io, client);
    REQUIRE_FALSE(reply.ok());
    CHECK_THAT(reply.error().message, Contains("reply larger than 1048576 bytes"));
  }
  SECTION("exactly the cap is accepted") {
    kubelet.setBody(std::string(1u << 20, 'x'));
    const Reply reply = getOnce(io, client);
    INFO(errorOf(reply));
    REQUIRE(reply.ok());
    CHECK(reply->body.size() == 1u << 20);
  }
}

TEST_CASE("a refused connection is an error naming the endpoint", "[kubelet]") {
  KubeletClientConfig config;
  config.host = "127.0.0.1";
  config.port = unusedPort();
  config.useTls = false;
  net::io_context io;
  KubeletClient client(io, config);

  const Reply reply = getOnce(io, client);
  REQUIRE_FALSE(reply.ok());
  const std::string endpoint = "127.0.0.1:" + std::to_string(config.port);
  CHECK_THAT(reply.error().message, StartsWith("GET http://" + endpoint + "/pods/: "));
  CHECK_THAT(reply.error().message, Contains("connect " + endpoint + ": Connection refused"));
  CHECK(reply.error().sysErrno == ECONNREFUSED);
}

TEST_CASE("a non-200 status comes back as a response with that status", "[kubelet]") {
  TestKubelet kubelet;
  net::io_context io;
  KubeletClient client(io, plainConfig(kubelet));

  kubelet.setStatus(503);
  kubelet.setBody("kubelet is starting");
  Reply reply = getOnce(io, client);
  INFO(errorOf(reply));
  REQUIRE(reply.ok());
  CHECK(reply->status == 503);
  CHECK(reply->body == "kubelet is starting");

  // The kubelet's answer to a missing or rejected token.
  kubelet.setExpectedToken("expected");
  reply = getOnce(io, client);
  REQUIRE(reply.ok());
  CHECK(reply->status == 401);
}

TEST_CASE("a reply that is not JSON is returned as is for the caller to reject", "[kubelet]") {
  TestKubelet kubelet;
  kubelet.setBehaviour(Behaviour::kNotJson);
  net::io_context io;
  KubeletClient client(io, plainConfig(kubelet));

  const Reply reply = getOnce(io, client);
  INFO(errorOf(reply));
  REQUIRE(reply.ok());
  CHECK(reply->status == 200);
  CHECK_THAT(reply->body, StartsWith("<html>"));
}

TEST_CASE("a reply that is not HTTP or has a huge header is an error", "[kubelet]") {
  TestKubelet kubelet;
  net::io_context io;
  KubeletClient client(io, plainConfig(kubelet));

  kubelet.setBehaviour(Behaviour::kMalformed);
  Reply reply = getOnce(io, client);
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message, Contains("malformed reply"));

  kubelet.setBehaviour(Behaviour::kHugeHeader);
  reply = getOnce(io, client);
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message, Contains("reply header larger than 65536 bytes"));
}

TEST_CASE("TLS to a plain-HTTP port fails in the TLS handshake", "[kubelet]") {
  TestKubelet kubelet;
  KubeletClientConfig config = plainConfig(kubelet);
  config.useTls = true;
  config.skipVerify = true;
  net::io_context io;
  KubeletClient client(io, config);

  const Reply reply = getOnce(io, client);
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message, Contains("TLS handshake"));
}

TEST_CASE("cancel suppresses the callback and leaves no work on the loop", "[kubelet]") {
  TestKubelet kubelet({.tls = true});
  kubelet.setBehaviour(Behaviour::kSlow);
  kubelet.setSlowDelay(10s);
  net::io_context io;
  KubeletClient client(io, tlsConfig(kubelet));

  bool called = false;
  client.get("/pods/", [&](Reply) { called = true; });
  REQUIRE(runUntil(io, [&] { return kubelet.requestCount() == 1; }));
  client.cancel();
  const auto start = Steady::now();
  CHECK(runsOutOfWork(io));
  CHECK(Steady::now() - start < 3s);
  CHECK_FALSE(called);

  // The client is usable again.
  kubelet.setBehaviour(Behaviour::kServe);
  const Reply reply = getOnce(io, client);
  INFO(errorOf(reply));
  CHECK(reply.ok());
}

TEST_CASE("destroying the client abandons the request without its callback", "[kubelet]") {
  TestKubelet kubelet;
  kubelet.setBehaviour(Behaviour::kSlow);
  kubelet.setSlowDelay(10s);
  net::io_context io;
  auto client = std::make_unique<KubeletClient>(io, plainConfig(kubelet));

  bool called = false;
  client->get("/pods/", [&](Reply) { called = true; });
  REQUIRE(runUntil(io, [&] { return kubelet.requestCount() == 1; }));
  client.reset();
  CHECK(runsOutOfWork(io));
  CHECK_FALSE(called);
}

TEST_CASE("a second get while one is in flight fails at once", "[kubelet]") {
  TestKubelet kubelet;
  kubelet.setBehaviour(Behaviour::kSlow);
  kubelet.setSlowDelay(10s);
  net::io_context io;
  KubeletClient client(io, plainConfig(kubelet));

  bool firstCalled = false;
  client.get("/pods/", [&](Reply) { firstCalled = true; });
  std::optional<Reply> second;
  client.get("/pods/", [&](Reply r) { second.emplace(std::move(r)); });
  CHECK_FALSE(second.has_value());  // never inside get()
  REQUIRE(runUntil(
      io, [&] { return second.has_value(); }, 2s));
  REQUIRE_FALSE(second->ok());
  CHECK_THAT(second->error().message, Contains("already in flight"));
  CHECK_FALSE(firstCalled);
  client.cancel();
  CHECK(runsOutOfWork(io));
  CHECK_FALSE(firstCalled);
}

TEST_CASE("a path that cannot go on a request line is refused", "[kubelet]") {
  KubeletClientConfig config;
  config.port = unusedPort();
  config.useTls = false;
  net::io_context io;
  KubeletClient client(io, config);

  const Reply reply = getOnce(io, client, "/pods/ HTTP/1.0\r\nX-Evil: 1");
  REQUIRE_FALSE(reply.ok());
  CHECK_THAT(reply.error().message, Contains("invalid path"));
}

}  // namespace
}  // namespace koord::test_kube_kubelet_client
