// Tests for the API server stand-in (tests/support/test_apiserver.h), the ground the
// API client's and the informers' tests stand on: its replies must be a real
// kube-apiserver's (tests/fixtures/kube-api/), byte framing included. The client
// here is raw bytes over a socket, so nothing of the code under test is trusted.
// Real time on 127.0.0.1, every wait bounded (5 s).
#include <catch2/catch.hpp>

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "kube/watch_stream.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver.h"

namespace test_kube_test_apiserver {  // this file's own names: tests build as unity chunks

using namespace koord;
using nlohmann::json;
using test::TestApiServer;

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

std::string fixture(const std::string& name) {
  auto text = readFile(test::fixturePath("kube-api/" + name));
  REQUIRE(text.ok());
  return *text;
}

struct Head {
  unsigned status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
};

// One connection, raw bytes: requests written by hand, replies parsed here.
class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  }

  void send(const std::string& method, const std::string& target, const std::string& body = "",
            const std::string& extra = "") {
    std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                      "User-Agent: raw-client/1\r\n" + extra;
    if (!body.empty() || method != "GET") {
      req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
    req += "\r\n" + body;
    net::write(socket_, net::buffer(req));
  }

  // Reads until pred(data) holds, the peer closes, or 5 s pass; whether pred held.
  template <typename Pred>
  bool readUntil(Pred pred, std::chrono::milliseconds limit = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!pred(data_)) {
      if (eof_) return false;
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= 0ms) return false;
      char buf[4096];
      bool done = false;
      socket_.async_read_some(net::buffer(buf), [&](boost::system::error_code ec, size_t n) {
        data_.append(buf, n);
        if (ec && ec != net::error::operation_aborted) eof_ = true;
        done = true;
      });
      io_.restart();
      io_.run_for(std::chrono::duration_cast<std::chrono::milliseconds>(left));
      if (!done) {
        socket_.cancel();
        io_.restart();
        io_.run();
        return pred(data_);
      }
    }
    return true;
  }

  Head head() {
    REQUIRE(readUntil([](const std::string& d) { return d.find("\r\n\r\n") != d.npos; }));
    const size_t end = data_.find("\r\n\r\n");
    Head h;
    const std::string text = data_.substr(0, end);
    data_.erase(0, end + 4);
    h.status = static_cast<unsigned>(std::stoul(text.substr(9, 3)));
    size_t i = text.find("\r\n");
    while (i != std::string::npos) {
      const size_t next = text.find("\r\n", i + 2);
      const std::string line = text.substr(i + 2, next == text.npos ? next : next - i - 2);
      const size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(c));
      h.headers[name] = line.substr(colon + 2);
      i = next;
    }
    return h;
  }

  // A whole Content-Length reply.
  std::pair<Head, std::string> reply() {
    Head h = head();
    const size_t length = std::stoul(h.headers.at("content-length"));
    REQUIRE(readUntil([&](const std::string& d) { return d.size() >= length; }));
    std::string body = data_.substr(0, length);
    data_.erase(0, length);
    return {h, body};
  }

  // The next chunk's data with its framing checked ("" for the last chunk);
  // nullopt if the stream stopped before a whole chunk came.
  std::optional<std::string> chunk(std::chrono::milliseconds limit = 5000ms) {
    auto whole = [](const std::string& d) {
      const size_t eol = d.find("\r\n");
      if (eol == d.npos) return false;
      return d.size() >= eol + 2 + std::stoul(d.substr(0, eol), nullptr, 16) + 2;
    };
    if (!readUntil(whole, limit)) return std::nullopt;
    const size_t eol = data_.find("\r\n");
    const size_t n = std::stoul(data_.substr(0, eol), nullptr, 16);
    std::string out = data_.substr(eol + 2, n);
    REQUIRE(data_.substr(eol + 2 + n, 2) == "\r\n");
    data_.erase(0, eol + 2 + n + 2);
    return out;
  }

  json event() {
    std::optional<std::string> c = chunk();
    REQUIRE(c.has_value());
    REQUIRE(!c->empty());
    REQUIRE(c->back() == '\n');  // one event JSON and its newline per chunk
    return json::parse(*c);
  }

  bool closedByPeer() {
    readUntil([](const std::string&) { return false; }, 3000ms);
    return eof_;
  }
  const std::string& pending() const { return data_; }

 private:
  net::io_context io_;
  tcp::socket socket_{io_};
  std::string data_;
  bool eof_ = false;
};

std::pair<Head, std::string> call(TestApiServer& server, const std::string& method,
                                  const std::string& target, const std::string& body = "",
                                  const std::string& extra = "") {
  RawClient c(server.port());
  c.send(method, target, body, extra);
  return c.reply();
}

// One GET over TLS, the server verified against caFile as 127.0.0.1; the status,
// or 0 when the exchange failed or took over 5 s.
unsigned tlsGet(uint16_t port, const std::string& caFile, const std::string& target) {
  namespace ssl = net::ssl;
  namespace http = boost::beast::http;
  net::io_context io;
  ssl::context ctx(ssl::context::tls_client);
  ctx.load_verify_file(caFile);
  ssl::stream<tcp::socket> stream(io, ctx);
  stream.set_verify_mode(ssl::verify_peer);
  stream.set_verify_callback(ssl::host_name_verification("127.0.0.1"));
  boost::beast::flat_buffer buffer;
  http::request<http::empty_body> req(http::verb::get, target, 11);
  req.set(http::field::host, "127.0.0.1");
  http::response<http::string_body> res;
  unsigned status = 0;
  stream.next_layer().async_connect(
      tcp::endpoint(net::ip::make_address("127.0.0.1"), port), [&](boost::system::error_code ec) {
        if (ec) return;
        stream.async_handshake(ssl::stream_base::client, [&](boost::system::error_code ec) {
          if (ec) return;
          http::async_write(stream, req, [&](boost::system::error_code ec, size_t) {
            if (ec) return;
            http::async_read(stream, buffer, res, [&](boost::system::error_code ec, size_t) {
              if (!ec) status = res.result_int();
            });
          });
        });
      });
  io.run_for(5s);
  return status;
}

const std::string kSlos = "/apis/slo.koordinator.sh/v1alpha1/nodeslos";
const std::string kMetrics = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics";
const std::string kMergePatch = "Content-Type: application/merge-patch+json\r\n";

json nodeSlo(const std::string& name, bool enable) {
  return {{"metadata", {{"name", name}}},
          {"spec", {{"resourceUsedThresholdWithBE", {{"enable", enable}}}}}};
}

// The header names of a captured reply (tests/fixtures/kube-api/NAME.headers).
std::set<std::string> capturedHeaderNames(const std::string& name) {
  const std::string text = fixture(name + ".headers");
  std::set<std::string> names;
  for (size_t i = text.find("\r\n"); i != std::string::npos;) {
    const size_t next = text.find("\r\n", i + 2);
    const std::string line = text.substr(i + 2, next == text.npos ? next : next - i - 2);
    if (const size_t colon = line.find(':'); colon != std::string::npos) {
      std::string n = line.substr(0, colon);
      for (char& c : n) c = static_cast<char>(std::tolower(c));
      names.insert(n);
    }
    i = next;
  }
  REQUIRE(names.size() >= 4);
  return names;
}

std::set<std::string> headerNames(const Head& h) {
  std::set<std::string> names;
  for (const auto& [n, v] : h.headers) names.insert(n);
  return names;
}

// The NodeMetric as koord-manager created it in the capture, without its version.
json capturedNodeMetric() {
  json obj = json::parse(fixture("nodemetric-get.body"));
  obj["metadata"].erase("resourceVersion");
  return obj;
}

}  // namespace

TEST_CASE("a list by name carries the current resourceVersion and a watch from it sees a put") {
  TestApiServer server;
  server.put("nodeslos", nodeSlo("rig-node", false));
  server.put("nodeslos", nodeSlo("other-node", false));

  auto [head, body] = call(server, "GET", kSlos + "?fieldSelector=metadata.name%3Drig-node");
  REQUIRE(head.status == 200);
  CHECK(headerNames(head) == capturedHeaderNames("nodeslo-list-by-name"));
  const json list = json::parse(body);
  const json captured = json::parse(fixture("nodeslo-list-by-name.body"));
  CHECK(list["kind"] == captured["kind"]);
  CHECK(list["apiVersion"] == captured["apiVersion"]);
  REQUIRE(list["items"].size() == 1);
  CHECK(list["items"][0]["metadata"]["name"] == "rig-node");
  const std::string rv = list["metadata"]["resourceVersion"];
  CHECK(rv == std::to_string(server.resourceVersion()));

  RawClient watch(server.port());
  watch.send("GET", kSlos + "?watch=true&resourceVersion=" + rv +
                        "&fieldSelector=metadata.name%3Drig-node&timeoutSeconds=30");
  Head wh = watch.head();
  CHECK(wh.status == 200);
  CHECK(headerNames(wh) == capturedHeaderNames("nodeslo-watch-bookmarks"));
  CHECK(wh.headers["transfer-encoding"] == "chunked");
  CHECK(wh.headers["content-type"] == "application/json");
  CHECK(!wh.headers["audit-id"].empty());

  server.put("nodeslos", nodeSlo("other-node", true));  // not the watched name
  server.put("nodeslos", nodeSlo("rig-node", true));
  const json ev = watch.event();
  CHECK(ev["type"] == "MODIFIED");
  CHECK(ev["object"]["metadata"]["name"] == "rig-node");
  CHECK(ev["object"]["spec"]["resourceUsedThresholdWithBE"]["enable"] == true);
  CHECK(std::stoll(ev["object"]["metadata"]["resourceVersion"].get<std::string>()) >
        std::stoll(rv));
  CHECK(server.count("list", "nodeslos") == 1);
  CHECK(server.count("watch", "nodeslos") == 1);
}

TEST_CASE("a list of core objects has items without kind, as the captured NodeList") {
  TestApiServer server;
  server.put("nodes", json::parse(fixture("node-get.body")));
  auto [head, body] = call(server, "GET", "/api/v1/nodes?fieldSelector=metadata.name%3Drig-node");
  REQUIRE(head.status == 200);
  const json list = json::parse(body);
  const json captured = json::parse(fixture("node-list-by-name.body"));
  CHECK(list["kind"] == captured["kind"]);
  REQUIRE(list["items"].size() == 1);
  REQUIRE(captured["items"].size() == 1);
  CHECK(list["items"][0].contains("kind") == captured["items"][0].contains("kind"));
  CHECK(list["items"][0].contains("apiVersion") == captured["items"][0].contains("apiVersion"));
  CHECK(list["items"][0]["metadata"]["name"] == "rig-node");
}

TEST_CASE("a watch from a compacted resourceVersion gets the 410 ERROR event, then the end") {
  TestApiServer server;
  server.put("nodeslos", nodeSlo("rig-node", false));
  const int64_t oldest = server.resourceVersion() - 1;  // the put stays watchable
  server.compact(oldest);

  RawClient watch(server.port());
  watch.send("GET", kSlos + "?watch=1&resourceVersion=1&allowWatchBookmarks=true");
  CHECK(watch.head().status == 200);  // as the real server: the error is in the stream
  const json ev = watch.event();
  std::string raw = fixture("nodeslo-watch-too-old.raw");
  const size_t eol = raw.find("\r\n");
  const json captured =
      json::parse(raw.substr(eol + 2, std::stoul(raw.substr(0, eol), nullptr, 16)));
  CHECK(ev["type"] == captured["type"]);
  CHECK(ev["object"]["code"] == captured["object"]["code"]);
  CHECK(ev["object"]["reason"] == captured["object"]["reason"]);
  CHECK(ev["object"]["kind"] == "Status");
  CHECK(ev["object"]["message"] == "too old resource version: 1 (" + std::to_string(oldest) + ")");
  CHECK(watch.chunk() == std::string());   // the last chunk
  watch.send("GET", kSlos + "/rig-node");  // the connection stays for the next request
  CHECK(watch.reply().first.status == 200);

  // The same version not compacted away replays what followed it.
  RawClient fresh(server.port());
  fresh.send("GET",
             kSlos + "?watch=true&resourceVersion=" + std::to_string(oldest) + "&timeoutSeconds=1");
  fresh.head();
  CHECK(fresh.event()["type"] == "ADDED");
  CHECK(fresh.chunk() == std::string());  // ended by timeoutSeconds
}

TEST_CASE("a status PUT with a stale resourceVersion gets the captured 409 and changes nothing") {
  TestApiServer server;
  const json first = server.put("nodemetrics", capturedNodeMetric());
  json update = first;
  update["status"] = {{"updateTime", "2026-11-24T11:50:00Z"}};
  auto [okHead, okBody] = call(server, "PUT", kMetrics + "/rig-node/status", update.dump());
  REQUIRE(okHead.status == 200);
  CHECK(json::parse(okBody)["status"]["updateTime"] == "2026-11-24T11:50:00Z");

  update["status"]["updateTime"] = "2026-11-24T11:51:00Z";  // still first's version
  auto [head, body] = call(server, "PUT", kMetrics + "/rig-node/status", update.dump());
  CHECK(head.status == 409);
  CHECK(headerNames(head) == capturedHeaderNames("nodemetric-status-put-stale-409"));
  CHECK(json::parse(body) == json::parse(fixture("nodemetric-status-put-stale-409.body")));
  CHECK(server.get("nodemetrics", "rig-node").value()["status"]["updateTime"] ==
        "2026-11-24T11:50:00Z");
  CHECK(server.count("update", "nodemetrics/status") == 2);
  const auto log = server.requests();
  REQUIRE(log.size() == 2);
  CHECK(log[1].status == 409);
  CHECK(log[1].userAgent == "raw-client/1");
  CHECK(log[1].body == update.dump());
}

TEST_CASE("a status merge patch merges into status, and a bad updateTime gets the captured 422") {
  TestApiServer server;
  server.put("nodemetrics", capturedNodeMetric());
  RawClient watch(server.port());
  watch.send("GET",
             kMetrics + "?watch=true&resourceVersion=" + std::to_string(server.resourceVersion()));
  watch.head();

  // The status koordlet-cpp patched in the capture, in two merge patches.
  const json capturedStatus = json::parse(fixture("nodemetric-status-patch.body"))["status"];
  json first = {{"status", capturedStatus}};
  first["status"].erase("podsMetric");
  REQUIRE(call(server, "PATCH", kMetrics + "/rig-node/status", first.dump(), kMergePatch)
              .first.status == 200);
  CHECK(watch.event()["type"] == "MODIFIED");
  const json second = {{"status", {{"podsMetric", capturedStatus["podsMetric"]}}},
                       {"spec", {{"metricCollectPolicy", nullptr}}}};  // not status: ignored
  auto [head, body] =
      call(server, "PATCH", kMetrics + "/rig-node/status", second.dump(), kMergePatch);
  REQUIRE(head.status == 200);
  const json patched = json::parse(body);
  CHECK(patched["status"] == capturedStatus);
  CHECK(patched["spec"] == capturedNodeMetric()["spec"]);
  const json ev = watch.event();
  CHECK(ev["type"] == "MODIFIED");
  CHECK(ev["object"]["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]);

  auto [badHead, badBody] = call(server, "PATCH", kMetrics + "/rig-node/status",
                                 R"({"status":{"updateTime":"not-a-time"}})", kMergePatch);
  CHECK(badHead.status == 422);
  CHECK(headerNames(badHead) == capturedHeaderNames("nodemetric-status-patch-invalid-422"));
  CHECK(json::parse(badBody) == json::parse(fixture("nodemetric-status-patch-invalid-422.body")));

  auto [jsonPatchHead, _] = call(server, "PATCH", kMetrics + "/rig-node/status", "[]",
                                 "Content-Type: application/json-patch+json\r\n");
  CHECK(jsonPatchHead.status == 415);
}

TEST_CASE("a missing object and a wrong token get the captured 404 and 401 replies") {
  TestApiServer server(TestApiServer::Options{"good-token", 0ms});
  auto [missing, missingBody] =
      call(server, "GET", kSlos + "/no-such-node", "", "Authorization: Bearer good-token\r\n");
  CHECK(missing.status == 404);
  CHECK(headerNames(missing) == capturedHeaderNames("nodeslo-get-missing-404"));
  CHECK(json::parse(missingBody) == json::parse(fixture("nodeslo-get-missing-404.body")));

  auto [denied, deniedBody] =
      call(server, "GET", kSlos + "/no-such-node", "", "Authorization: Bearer bad\r\n");
  CHECK(denied.status == 401);
  CHECK(headerNames(denied) == capturedHeaderNames("unauthorized-401"));
  CHECK(deniedBody == fixture("unauthorized-401.body"));  // byte for byte, indented
  CHECK(server.requests().back().authorization == "Bearer bad");
}

TEST_CASE("an injected 429 carries Retry-After and hits only the matching requests it counts") {
  TestApiServer server;
  server.put("nodes", {{"metadata", {{"name", "rig-node"}}}});
  server.addFault({TestApiServer::Fault::kTooManyRequests, 1, "/nodes/rig-node", 7});

  auto [other, otherBody] = call(server, "GET", kSlos);
  CHECK(other.status == 200);  // does not match the path
  auto [limited, limitedBody] = call(server, "GET", "/api/v1/nodes/rig-node");
  CHECK(limited.status == 429);
  CHECK(limited.headers["retry-after"] == "7");
  CHECK(json::parse(limitedBody)["details"]["retryAfterSeconds"] == 7);
  auto [again, againBody] = call(server, "GET", "/api/v1/nodes/rig-node");
  CHECK(again.status == 200);
  CHECK(json::parse(againBody)["kind"] == "Node");

  server.addFault({TestApiServer::Fault::kForbidden, -1, "/nodes/", 1});
  auto [forbidden, forbiddenBody] = call(server, "DELETE", "/api/v1/nodes/rig-node");
  CHECK(forbidden.status == 403);
  CHECK(headerNames(forbidden) == capturedHeaderNames("node-delete-forbidden-403"));
  CHECK(json::parse(forbiddenBody) == json::parse(fixture("node-delete-forbidden-403.body")));
  CHECK(server.get("nodes", "rig-node").has_value());
}

TEST_CASE("restart drops every watch and the server answers again on the same port") {
  TestApiServer server;
  server.put("nodeslos", nodeSlo("rig-node", false));
  const uint16_t port = server.port();
  RawClient watch(port);
  watch.send("GET", kSlos + "?watch=true");
  watch.head();
  CHECK(watch.event()["type"] == "ADDED");  // no version: the current objects first
  CHECK(server.activeWatches() == 1);

  server.restart();
  CHECK(watch.closedByPeer());
  CHECK(watch.pending().find("0\r\n\r\n") == std::string::npos);  // no clean end
  CHECK(server.port() == port);
  CHECK(server.activeWatches() == 0);
  auto [head, body] = call(server, "GET", kSlos + "/rig-node");
  CHECK(head.status == 200);
  CHECK(json::parse(body)["metadata"]["name"] == "rig-node");

  server.stop();
  CHECK_THROWS(RawClient(port));  // refused
  server.start();
  CHECK(call(server, "GET", kSlos + "/rig-node").first.status == 200);
}

TEST_CASE("watch chunks are framed and shaped as the captured stream, bookmarks included") {
  TestApiServer server(TestApiServer::Options{"", 100ms});
  server.put("nodeslos", nodeSlo("rig-node", false));
  RawClient watch(server.port());
  watch.send("GET", kSlos + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=2" +
                        "&resourceVersion=" + std::to_string(server.resourceVersion()));
  watch.head();
  server.remove("nodeslos", "rig-node");

  // Whatever the order of the bookmarks, the stand-in's stream is what the real
  // stream's decoder accepts, and each kind has the captured keys.
  std::string raw = fixture("nodeslo-watch-bookmarks.raw");
  std::map<std::string, json> capturedByType;
  for (size_t i = 0;;) {
    const size_t eol = raw.find("\r\n", i);
    const size_t n = std::stoul(raw.substr(i, eol - i), nullptr, 16);
    if (n == 0) break;
    const json e = json::parse(raw.substr(eol + 2, n));
    capturedByType[e["type"]] = e;
    i = eol + 2 + n + 2;
  }
  WatchDecoder decoder("watch nodeslos");
  std::map<std::string, json> seen;
  for (;;) {
    std::optional<std::string> c = watch.chunk();
    REQUIRE(c.has_value());
    if (c->empty()) break;  // the end at timeoutSeconds
    REQUIRE(decoder.feed(*c).ok());
    const json e = json::parse(*c);
    seen[e["type"]] = e;
  }
  CHECK(decoder.finish().ok());
  REQUIRE(seen.count("DELETED") == 1);
  REQUIRE(seen.count("BOOKMARK") == 1);
  for (const char* type : {"DELETED", "BOOKMARK"}) {
    CHECK(seen[type]["object"]["apiVersion"] == capturedByType[type]["object"]["apiVersion"]);
    CHECK(seen[type]["object"]["kind"] == capturedByType[type]["object"]["kind"]);
  }
  CHECK(seen["BOOKMARK"]["object"]["metadata"].size() == 1);  // only resourceVersion
  CHECK(seen["BOOKMARK"]["object"]["metadata"]["resourceVersion"] ==
        std::to_string(server.resourceVersion()));
}

TEST_CASE("a hanging watch sends its headers and nothing; a cut one stops mid-event") {
  TestApiServer server;
  server.put("nodes", {{"metadata", {{"name", "rig-node"}}}});
  server.addFault({TestApiServer::Fault::kWatchHang, 1, "/nodes", 1});
  server.addFault({TestApiServer::Fault::kWatchCutMidEvent, 1, "/nodes", 1});
  CHECK(call(server, "GET", "/api/v1/nodes/rig-node").first.status == 200);  // not a watch

  RawClient hung(server.port());
  hung.send("GET", "/api/v1/nodes?watch=true&timeoutSeconds=1");
  CHECK(hung.head().status == 200);
  CHECK_FALSE(hung.chunk(1500ms).has_value());  // not even the end at its timeout
  CHECK(hung.pending().empty());

  RawClient cut(server.port());
  cut.send("GET", "/api/v1/nodes?watch=true");
  cut.head();
  CHECK(cut.closedByPeer());
  const std::string& partial = cut.pending();
  const size_t eol = partial.find("\r\n");
  REQUIRE(eol != std::string::npos);
  CHECK(partial.size() - eol - 2 < std::stoul(partial.substr(0, eol), nullptr, 16));
  CHECK(partial.find(R"({"type":"ADDED")") == eol + 2);
}

TEST_CASE("an eviction deletes the pod with the captured 201, and an event is created") {
  TestApiServer server;
  json pod = json::parse(fixture("pod-get.body"));
  pod["metadata"].erase("resourceVersion");
  const std::string ns = pod["metadata"]["namespace"];
  const std::string name = pod["metadata"]["name"];
  server.put("pods", pod);
  const std::string podPath = "/api/v1/namespaces/" + ns + "/pods/" + name;
  CHECK(json::parse(call(server, "GET", podPath).second)["metadata"]["uid"] ==
        pod["metadata"]["uid"]);

  const json eviction = {{"apiVersion", "policy/v1"},
                         {"kind", "Eviction"},
                         {"metadata", {{"name", name}, {"namespace", ns}}}};
  auto [head, body] = call(server, "POST", podPath + "/eviction", eviction.dump(),
                           "Content-Type: application/json\r\n");
  CHECK(head.status == 201);
  CHECK(json::parse(body) ==
        json::parse(fixture("pod-eviction-201.body")));  // byte for byte, indented
  CHECK_FALSE(server.get("pods", name, ns).has_value());
  json goneEviction = eviction;
  goneEviction["metadata"]["name"] = "gone";  // a real server checks it matches the path
  auto [gone, goneBody] = call(server, "POST", "/api/v1/namespaces/" + ns + "/pods/gone/eviction",
                               goneEviction.dump(), "Content-Type: application/json\r\n");
  CHECK(gone.status == 404);
  CHECK(json::parse(goneBody) == json::parse(fixture("pod-eviction-missing-404.body")));
  CHECK(server.count("create", "pods/eviction") == 2);

  // The captured Event as koordlet posts it: a generateName, no name or version.
  const json created = json::parse(fixture("event-create-201.body"));
  json event = created;
  for (const char* field :
       {"name", "uid", "resourceVersion", "creationTimestamp", "managedFields"}) {
    event["metadata"].erase(field);
  }
  auto [eventHead, eventBody] = call(server, "POST", "/api/v1/namespaces/colo/events", event.dump(),
                                     "Content-Type: application/json\r\n");
  CHECK(eventHead.status == 201);
  const json stored = json::parse(eventBody);
  CHECK(stored["metadata"]["name"].get<std::string>().rfind("be-1.", 0) == 0);
  CHECK(stored["metadata"]["name"].get<std::string>().size() == std::string("be-1.").size() + 5);
  CHECK(stored["metadata"]["namespace"] == "colo");
  CHECK(stored["involvedObject"] == created["involvedObject"]);
  CHECK(stored["reason"] == created["reason"]);
  CHECK(server.count("create", "events") == 1);
  CHECK(server.requests().back().body == event.dump());
}

namespace {

json evictionOf(const std::string& ns, const std::string& name, const std::string& uid = "",
                const std::string& apiVersion = "policy/v1") {
  json e = {{"apiVersion", apiVersion},
            {"kind", "Eviction"},
            {"metadata", {{"name", name}, {"namespace", ns}}}};
  if (!uid.empty()) e["deleteOptions"] = {{"preconditions", {{"uid", uid}}}};
  return e;
}

std::pair<Head, std::string> postEviction(TestApiServer& server, const json& eviction) {
  const std::string path = "/api/v1/namespaces/" +
                           eviction["metadata"]["namespace"].get<std::string>() + "/pods/" +
                           eviction["metadata"]["name"].get<std::string>() + "/eviction";
  return call(server, "POST", path, eviction.dump(), "Content-Type: application/json\r\n");
}

json runningPod(const std::string& ns, const std::string& name, const std::string& uid) {
  return {{"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
          {"status", {{"phase", "Running"}}}};
}

}  // namespace

TEST_CASE("an eviction whose UID precondition is not the pod's gets the captured 409") {
  TestApiServer server;
  const std::string uid = "e288b6ff-1e35-4254-b958-adbf400bfedd";  // the capture's pod
  server.put("pods", runningPod("colo", "be-2", uid));
  auto [head, body] =
      postEviction(server, evictionOf("colo", "be-2", "00000000-0000-0000-0000-000000000000"));
  CHECK(head.status == 409);
  // The capture's content; compact with a final newline, as the real server answers
  // any client but curl (which got the capture indented).
  CHECK(json::parse(body) == json::parse(fixture("pod-eviction-uid-mismatch-409.body")));
  CHECK(body == nlohmann::ordered_json::parse(body).dump() + "\n");
  CHECK(server.get("pods", "be-2", "colo").has_value());
  CHECK(postEviction(server, evictionOf("colo", "be-2", uid)).first.status == 201);
  CHECK_FALSE(server.get("pods", "be-2", "colo").has_value());
}

TEST_CASE("a disruption budget refuses to evict a running pod but not a pending one") {
  TestApiServer server;
  server.put("pods", runningPod("colo", "be-run", "uid-run"));
  json pending = json::parse(fixture("pod-get.body"));  // status.phase Pending
  pending["metadata"].erase("resourceVersion");
  REQUIRE(pending["status"]["phase"] == "Pending");
  const std::string pendingName = pending["metadata"]["name"];
  server.put("pods", pending);
  server.protect("colo", "be-run", "be-run");
  server.protect("colo", pendingName, "be-run");

  auto [refused, refusedBody] = postEviction(server, evictionOf("colo", "be-run", "uid-run"));
  CHECK(refused.status == 429);
  CHECK(json::parse(refusedBody) == json::parse(fixture("pod-eviction-pdb-429.body")));
  CHECK(server.get("pods", "be-run", "colo").has_value());

  auto [accepted, acceptedBody] = postEviction(server, evictionOf("colo", pendingName));
  CHECK(accepted.status == 201);
  CHECK(json::parse(acceptedBody) ==
        json::parse(fixture("pod-eviction-pending-pod-with-pdb-201.body")));
  CHECK_FALSE(server.get("pods", pendingName, "colo").has_value());

  server.unprotect("colo", "be-run");
  CHECK(postEviction(server, evictionOf("colo", "be-run", "uid-run")).first.status == 201);
  CHECK(server.count("create", "pods/eviction") == 3);
}

TEST_CASE("a budget is checked before the UID, and one not processed yet says Retry-After 10") {
  TestApiServer server;
  server.put("pods", runningPod("colo", "be-big", "uid-big"));
  server.protect("colo", "be-big", "be-big-pdb", /*processed=*/false);
  // A wrong UID on a protected running pod: the budget answers first (as the real server).
  auto [head, body] = postEviction(server, evictionOf("colo", "be-big", "wrong-uid"));
  CHECK(head.status == 429);
  CHECK(json::parse(body) == json::parse(fixture("pod-eviction-pdb-unprocessed-429.body")));
  auto [h2, b2] = postEviction(server, evictionOf("colo", "be-big", "uid-big"));
  CHECK(h2.status == 429);
  CHECK(h2.headers["retry-after"] == "10");
  server.protect("colo", "be-big", "be-big-pdb");  // processed: the usual 429, no Retry-After
  auto [h3, b3] = postEviction(server, evictionOf("colo", "be-big", "wrong-uid"));
  CHECK(h3.status == 429);
  CHECK(h3.headers.count("retry-after") == 0);
  server.unprotect("colo", "be-big");
  CHECK(postEviction(server, evictionOf("colo", "be-big", "wrong-uid")).first.status == 409);
}

TEST_CASE("an eviction body must be a policy Eviction of the pod in the path") {
  TestApiServer server;
  server.put("pods", runningPod("colo", "be-1", "uid-1"));
  json notEviction = evictionOf("colo", "be-1");
  notEviction["kind"] = "Pod";
  CHECK(postEviction(server, notEviction).first.status == 400);
  CHECK(postEviction(server, evictionOf("colo", "be-1", "", "v1")).first.status == 400);
  auto [head, body] = call(server, "POST", "/api/v1/namespaces/colo/pods/be-1/eviction",
                           evictionOf("colo", "be-9").dump(), "Content-Type: application/json\r\n");
  CHECK(head.status == 400);
  CHECK(json::parse(body)["reason"] == "BadRequest");
  CHECK(call(server, "POST", "/api/v1/namespaces/colo/pods/be-1/eviction", "not json",
             "Content-Type: application/json\r\n")
            .first.status == 400);
  CHECK(server.get("pods", "be-1", "colo").has_value());  // none of them evicted it
  // policy/v1beta1 is still served.
  CHECK(postEviction(server, evictionOf("colo", "be-1", "uid-1", "policy/v1beta1")).first.status ==
        201);
}

TEST_CASE("with tls the stand-in serves HTTPS under a certificate its own CA verifies") {
  TestApiServer::Options options;
  options.tls = true;
  TestApiServer server(options);
  server.put("nodes", {{"metadata", {{"name", "rig-node"}}}});
  CHECK(server.url() == "https://127.0.0.1:" + std::to_string(server.port()));
  REQUIRE_FALSE(server.caFile().empty());
  CHECK(tlsGet(server.port(), server.caFile(), "/api/v1/nodes/rig-node") == 200);
  CHECK(tlsGet(server.port(), server.caFile(), "/api/v1/nodes/other") == 404);
  server.restart();
  CHECK(tlsGet(server.port(), server.caFile(), "/api/v1/nodes/rig-node") == 200);
  CHECK(server.count("get", "nodes") == 3);
}

}  // namespace test_kube_test_apiserver
