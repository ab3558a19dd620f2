// Tests for kube/watch_stream: real watch streams of a kube-apiserver 1.32 (chunked
// framing removed here, as the HTTP client does), split at every size, and the
// streams it must refuse.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/read_file.h"
#include "kube/watch_stream.h"
#include "tests/support/temp_tree.h"

namespace test_kube_watch_stream {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

// The body of a chunked HTTP/1.1 response as captured with curl --raw.
std::string dechunk(const std::string& raw) {
  std::string out;
  size_t i = 0;
  for (;;) {
    const size_t eol = raw.find("\r\n", i);
    REQUIRE(eol != std::string::npos);
    const size_t n = std::stoul(raw.substr(i, eol - i), nullptr, 16);
    i = eol + 2;
    if (n == 0) break;
    out += raw.substr(i, n);
    i += n + 2;
  }
  return out;
}

std::string body(const std::string& name) {
  auto raw = readFile(test::fixturePath("kube-api/" + name));
  REQUIRE(raw.ok());
  return dechunk(*raw);
}

struct Seen {
  std::string type, rv;
};

// Feeds `text` in pieces of `step` bytes; every event decoded, in order.
std::vector<Seen> decodeAll(const std::string& text, size_t step) {
  WatchDecoder d("watch nodeslos");
  std::vector<Seen> seen;
  for (size_t i = 0; i < text.size(); i += step) {
    auto events = d.feed(std::string_view(text).substr(i, step));
    REQUIRE(events.ok());
    for (const WatchEvent& e : *events) seen.push_back({toString(e.type), e.resourceVersion});
  }
  REQUIRE(d.finish().ok());
  return seen;
}

bool operator==(const Seen& a, const Seen& b) { return a.type == b.type && a.rv == b.rv; }

}  // namespace

TEST_CASE("a real NodeSLO watch decodes to its five events however the bytes arrive") {
  const std::string text = body("nodeslo-watch-bookmarks.raw");
  const std::vector<Seen> want = {{"MODIFIED", "236"},
                                  {"DELETED", "237"},
                                  {"BOOKMARK", "237"},
                                  {"ADDED", "238"},
                                  {"BOOKMARK", "238"}};
  for (size_t step : {text.size(), size_t{1}, size_t{7}, size_t{4096}}) {
    INFO("pieces of " << step << " bytes");
    CHECK(decodeAll(text, step) == want);
  }
}

TEST_CASE("a real Node watch gives the object and then a bookmark to resume from") {
  WatchDecoder d("watch nodes");
  auto events = d.feed(body("node-watch-timeout.raw"));
  REQUIRE(events.ok());
  REQUIRE(events->size() == 2);
  CHECK((*events)[0].type == WatchEventType::kAdded);
  CHECK((*events)[0].object["metadata"]["name"] == "rig-node");
  CHECK((*events)[1].type == WatchEventType::kBookmark);
  CHECK((*events)[1].resourceVersion == "254");
  CHECK(d.finish().ok());
  CHECK(d.events() == 2);
}

TEST_CASE("a watch from a too old resourceVersion is an ERROR event with the 410 Status") {
  WatchDecoder d("watch nodeslos");
  auto events = d.feed(body("nodeslo-watch-too-old.raw"));
  REQUIRE(events.ok());
  REQUIRE(events->size() == 1);
  const WatchEvent& e = (*events)[0];
  CHECK(e.type == WatchEventType::kError);
  CHECK(e.statusCode == 410);
  CHECK(e.message == "too old resource version: 1 (227)");
  CHECK(e.resourceVersion.empty());
}

TEST_CASE("a stream cut inside an event is an error at its end, not a lost event") {
  const std::string text = body("nodeslo-watch-bookmarks.raw");
  WatchDecoder d("watch nodeslos");
  auto events = d.feed(std::string_view(text).substr(0, text.size() - 10));
  REQUIRE(events.ok());
  CHECK(events->size() == 4);
  auto end = d.finish();
  REQUIRE_FALSE(end.ok());
  CHECK(end.error().message.find("watch nodeslos: the stream ended inside event 5 (") == 0);
}

TEST_CASE("malformed events are refused naming the source, the event and the field") {
  auto error = [](const std::string& text) {
    WatchDecoder d("watch nodeslos");
    auto events = d.feed(text);
    REQUIRE_FALSE(events.ok());
    // The stream stays failed.
    auto again = d.feed("{}\n");
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().message == events.error().message);
    return events.error().message;
  };
  const std::string ok = R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"5"}}})"
                         "\n";
  CHECK(error(ok + "{nope\n").find("watch nodeslos: event 2: not JSON: ") == 0);
  CHECK(error("[1]\n") == "watch nodeslos: event 1: expected an object, got an array");
  CHECK(error(R"({"object":{}})"
              "\n") == "watch nodeslos: event 1: type: missing");
  CHECK(error(R"({"type":"RESYNC","object":{}})"
              "\n") == "watch nodeslos: event 1: type: unknown \"RESYNC\"");
  CHECK(error(R"({"type":"ADDED","object":"x"})"
              "\n") == "watch nodeslos: event 1: object: missing or not an object");
  CHECK(error(R"({"type":"MODIFIED","object":{"metadata":{}}})"
              "\n") == "watch nodeslos: event 1: object.metadata.resourceVersion: missing");
  CHECK(error(R"({"type":"ERROR","object":{"kind":"Status"}})"
              "\n") == "watch nodeslos: event 1: object.code: missing (an ERROR carries a Status)");
}

TEST_CASE("an event over the size bound is an error, however it is split") {
  WatchDecoder d("watch nodes", 64);
  const std::string big(40, 'x');
  REQUIRE(d.feed(big).ok());
  auto over = d.feed(big);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().message == "watch nodes: event 1 is over 64 bytes");
  CHECK_FALSE(d.finish().ok());
}

}  // namespace test_kube_watch_stream
