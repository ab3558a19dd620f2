// PodsInformer end to end over loopback: the real KubeletClient (HTTPS with a
// bearer token) against the kubelet stand-in serving a real capture, then every
// kind of bad reply. The last good list must stay in force through each, every
// failure must be counted with its reason, and a streak must log once.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <iostream>
#include <optional>
#include <sstream>

#include "base/read_file.h"
#include "kube/pods_informer.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace test_kube_pods_informer {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using Behaviour = test::TestKubelet::Behaviour;

namespace {

struct CapturedLog {
  explicit CapturedLog(const Clock& clock) { Logger::setGlobal(out, clock, 0); }
  // The clock left in the global logger must outlive this object.
  ~CapturedLog() {
    static SystemClock system;
    Logger::setGlobal(std::cerr, system, 0);
  }
  size_t lines() const {
    auto s = out.str();
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  }
  std::ostringstream out;
};

std::string capture(const std::string& version) {
  auto text = readFile(test::fixturePath("kubelet/" + version + "/pods.json"));
  REQUIRE(text.ok());
  return *text;
}

// Runs the loop until `n` requests have completed (bounded).
void runRequests(boost::asio::io_context& io, const std::vector<KubeletRequestRecord>& records,
                 size_t n) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (records.size() < n && std::chrono::steady_clock::now() < deadline) {
    io.run_for(20ms);
    io.restart();
  }
  REQUIRE(records.size() >= n);
}

// One GET that must fail; the class of its error.
std::string classOfFailedGet(boost::asio::io_context& io, KubeletClient& client) {
  std::optional<Result<KubeletResponse>> got;
  client.get("/pods/", [&](Result<KubeletResponse> r) { got.emplace(std::move(r)); });
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!got && std::chrono::steady_clock::now() < deadline) {
    io.run_for(20ms);
    io.restart();
  }
  REQUIRE(got.has_value());
  REQUIRE_FALSE(got->ok());
  INFO(got->error().message);
  return transportErrorClass(got->error());
}

}  // namespace

TEST_CASE("the informer keeps the last good pod list through every kind of bad reply",
          "[informer]") {
  SystemClock clock;
  CapturedLog log(clock);
  FailureLog failures(clock);

  test::TestKubelet::Options kopts;
  kopts.tls = true;
  test::TestKubelet kubelet(kopts);
  kubelet.setExpectedToken("s3cret");
  kubelet.setBody(capture("k8s-1.35"));
  test::TempTree dir({{"token", "s3cret\n"}});

  boost::asio::io_context io;
  KubeletClientConfig config;
  config.host = kubelet.address();
  config.port = kubelet.port();
  config.useTls = true;
  config.caFile = kubelet.caFile();
  config.tokenFile = dir.path("token");
  // Wide enough for an 8 MiB reply over TLS under ASan on a loaded machine (500 ms was
  // not, once), short of the slow case's 3 s delay, which must still time out.
  config.timeout = 2s;
  config.maxBodyBytes = 4u << 20;
  KubeletClient client(io, config);
  // A short interval: each request follows the previous one quickly.
  PodsInformer informer(io, client, 10ms, clock, failures);
  std::vector<KubeletRequestRecord> records;
  size_t updates = 0;
  std::optional<size_t> updatesAtFirstFailure;
  informer.onRecord([&](const KubeletRequestRecord& r) {
    records.push_back(r);
    if (!r.failure.empty() && !updatesAtFirstFailure) updatesAtFirstFailure = updates;
  });
  informer.onUpdate([&](const std::vector<Pod>&) { ++updates; });

  informer.start();
  runRequests(io, records, 1);
  REQUIRE(records[0].failure.empty());
  CHECK(records[0].code == "200");
  REQUIRE(informer.synced());
  const size_t good = informer.pods().size();
  CHECK(good > 5);
  CHECK(updates >= 1);
  const size_t linesAfterSync = log.lines();

  struct Case {
    const char* name;
    std::function<void()> arrange;
    const char* failure;
    const char* code;
  };
  const std::string emptyList = R"({"kind":"PodList","apiVersion":"v1","items":[]})";
  std::vector<Case> cases = {
      {"slow",
       [&] {
         kubelet.setBehaviour(Behaviour::kSlow);
         kubelet.setSlowDelay(3s);
       },
       "transport", "timeout"},
      {"cut off", [&] { kubelet.setBehaviour(Behaviour::kCutOff); }, "transport", "io"},
      {"too large",
       [&] {
         kubelet.setBehaviour(Behaviour::kHuge);
         kubelet.setHugeBytes(8u << 20);
       },
       "transport", "too_large"},
      {"not JSON", [&] { kubelet.setBehaviour(Behaviour::kNotJson); }, "invalid", "200"},
      {"zero pods",
       [&] {
         kubelet.setBehaviour(Behaviour::kServe);
         kubelet.setBody(emptyList);
       },
       "empty", "200"},
      {"server error",
       [&] {
         kubelet.setBody(capture("k8s-1.35"));
         kubelet.setStatus(500);
       },
       "status", "500"},
      {"wrong token",
       [&] {
         kubelet.setStatus(200);
         kubelet.setExpectedToken("other");
       },
       "status", "401"},
  };
  for (const auto& c : cases) {
    c.arrange();
    size_t before = records.size();
    // Wait until a request made after the change completes.
    runRequests(io, records, before + 2);
    const auto& r = records.back();
    INFO(c.name << ": " << informer.lastError());
    CHECK(r.failure == c.failure);
    CHECK(r.code == c.code);
    CHECK(informer.synced());
    CHECK_FALSE(informer.lastOk());
    CHECK(informer.pods().size() == good);  // the last good list stays in force
  }
  // No failure ever replaced the list.
  REQUIRE(updatesAtFirstFailure.has_value());
  CHECK(updates == *updatesAtFirstFailure);
  // The whole streak of failures, across reasons, is one line.
  CHECK(log.lines() == linesAfterSync + 1);
  CHECK(log.out.str().find("keeping the last good pod list") != std::string::npos);

  // Recovery: a new, smaller list replaces the old one, with one recovery line.
  kubelet.setExpectedToken("s3cret");
  kubelet.setBody(capture("k8s-1.16"));
  size_t before = records.size();
  runRequests(io, records, before + 2);
  CHECK(records.back().failure.empty());
  CHECK(informer.lastOk());
  CHECK(informer.pods().size() != good);
  CHECK(updates > *updatesAtFirstFailure);
  CHECK(log.out.str().find("recovered after") != std::string::npos);
  informer.stop();
}

TEST_CASE("before the first good reply the informer has no pods and says why", "[informer]") {
  SystemClock clock;
  CapturedLog log(clock);
  FailureLog failures(clock);
  boost::asio::io_context io;
  KubeletClientConfig config;
  config.host = "127.0.0.1";
  config.port = 1;  // nothing listens on port 1
  config.useTls = false;
  KubeletClient client(io, config);
  PodsInformer informer(io, client, 10ms, clock, failures);
  std::vector<KubeletRequestRecord> records;
  informer.onRecord([&](const KubeletRequestRecord& r) { records.push_back(r); });
  informer.start();
  runRequests(io, records, 3);
  CHECK_FALSE(informer.synced());
  CHECK(informer.pods().empty());
  CHECK(records[0].failure == "transport");
  CHECK(records[0].code == "connect");
  CHECK(informer.lastError().find("Connection refused") != std::string::npos);
  CHECK(log.lines() == 1);
  CHECK(log.out.str().find("pods are unavailable, node metrics continue") != std::string::npos);
  informer.stop();
}

TEST_CASE("a request without a reply is labelled by the step that failed", "[informer]") {
  const std::string get = "GET https://10.0.0.5:10250/pods/: ";
  struct Case {
    std::string message;
    const char* code;
  };
  for (const Case& c : std::vector<Case>{
           {get + "timed out after 3s reading the reply", "timeout"},
           {get + "resolve node-a: Host not found (authoritative)", "dns"},
           {get + "connect 10.0.0.5:10250: Connection refused", "connect"},
           {get + "TLS handshake with 10.0.0.5:10250: certificate verify failed", "tls"},
           {get + "CA file /ca.crt: no usable certificate: x", "tls"},
           {get + "token file /t: No such file or directory", "token"},
           {get + "send request: Broken pipe", "io"},
           {get + "read reply: Connection reset by peer", "io"},
           {get + "reply cut off: the connection closed before the whole reply", "io"},
           {get + "reply larger than 67108864 bytes", "too_large"},
           {get + "reply header larger than 65536 bytes", "too_large"},
           {get + "malformed reply: bad version", "malformed"},
           {get + "a request is already in flight", "other"},
           {"GET http://[::1]:10255/pods/: connect [::1]:10255: Connection refused", "connect"},
           {"", "other"},
       }) {
    INFO(c.message);
    CHECK(transportErrorClass(makeError(c.message)) == c.code);
  }

  // The same from the real client's own errors.
  boost::asio::io_context io;
  test::TestKubelet kubelet;
  KubeletClientConfig plain;
  plain.host = kubelet.address();
  plain.port = kubelet.port();
  plain.useTls = false;
  plain.timeout = 5s;
  {
    kubelet.setBehaviour(Behaviour::kMalformed);
    KubeletClient client(io, plain);
    CHECK(classOfFailedGet(io, client) == "malformed");
  }
  {
    KubeletClientConfig tls = plain;
    tls.useTls = true;
    tls.skipVerify = true;
    KubeletClient client(io, tls);  // TLS to a plain-HTTP port
    CHECK(classOfFailedGet(io, client) == "tls");
  }
  {
    KubeletClientConfig noToken = plain;
    noToken.tokenFile = "/nonexistent/koordlet-test/token";
    KubeletClient client(io, noToken);
    CHECK(classOfFailedGet(io, client) == "token");
  }
}

TEST_CASE("a pod list byte for byte the one held is neither parsed again nor passed on",
          "[informer]") {
  ManualClock clock;
  CapturedLog log(clock);
  FailureLog failures(clock);
  boost::asio::io_context io;
  KubeletClientConfig config;
  config.host = "127.0.0.1";
  config.port = 1;
  KubeletClient client(io, config);
  PodsInformer informer(io, client, 10s, clock, failures);
  size_t updates = 0;
  informer.onUpdate([&](const std::vector<Pod>&) { ++updates; });

  const std::string list = capture("k8s-1.35");
  CHECK(informer.apply(KubeletResponse{200, list}).empty());
  CHECK(updates == 1);
  CHECK(informer.apply(KubeletResponse{200, list}).empty());
  CHECK(updates == 1);
  CHECK(informer.unchangedReplies() == 1);
  CHECK(informer.lastOk());

  // One byte different (same size): parsed and passed on.
  std::string edited = list;
  const size_t at = edited.find("\"Running\"");
  REQUIRE(at != std::string::npos);
  edited.replace(at, 9, "\"Pending\"");
  CHECK(informer.apply(KubeletResponse{200, edited}).empty());
  CHECK(updates == 2);
  // A failure in between does not make the held list's twin new.
  CHECK(informer.apply(KubeletResponse{500, edited}) == "status");
  CHECK_FALSE(informer.lastOk());
  CHECK(informer.apply(KubeletResponse{200, edited}).empty());
  CHECK(informer.lastOk());
  CHECK(updates == 2);
  CHECK(informer.unchangedReplies() == 2);
  // Back to the first list: new again.
  CHECK(informer.apply(KubeletResponse{200, list}).empty());
  CHECK(updates == 3);
}

}  // namespace test_kube_pods_informer

namespace test_kube_pods_informer {

TEST_CASE("a wake-up syncs at once, and during a request in flight queues exactly one more",
          "[informer]") {
  SystemClock clock;
  FailureLog failures(clock);
  boost::asio::io_context io;
  test::TestKubelet kubelet;
  kubelet.setBody(capture("k8s-1.35"));
  KubeletClientConfig config;
  config.host = kubelet.address();
  config.port = kubelet.port();
  config.useTls = false;
  KubeletClient client(io, config);
  PodsInformer informer(io, client, std::chrono::hours(1), clock, failures);
  std::vector<KubeletRequestRecord> records;
  informer.onRecord([&](const KubeletRequestRecord& r) { records.push_back(r); });
  informer.syncNow();  // before start: nothing (start makes the first sync)
  CHECK(informer.wakeUps() == 0);
  informer.start();
  // Three wake-ups while the first request is in flight: one more sync, not three.
  informer.syncNow();
  informer.syncNow();
  informer.syncNow();
  runRequests(io, records, 2);
  for (int i = 0; i < 10; ++i) {  // nothing else is due for an hour
    io.run_for(20ms);
    io.restart();
  }
  CHECK(records.size() == 2);
  CHECK(kubelet.requestCount() == 2);
  CHECK(informer.wakeUps() == 1);
  // Idle: a wake-up is a request now.
  informer.syncNow();
  runRequests(io, records, 3);
  CHECK(kubelet.requestCount() == 3);
  informer.stop();
}

}  // namespace test_kube_pods_informer
