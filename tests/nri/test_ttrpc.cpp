// ttrpc framing and envelopes (reference nri.md §3), checked against the golden
// bytes of §4.2.
#include <catch2/catch.hpp>

#include <string>

#include "nri/api.h"
#include "nri/plugin_session.h"
#include "nri/ttrpc.h"

namespace test_nri_ttrpc {  // this file's own names: tests build as unity chunks

using namespace koord::nri;

namespace {

std::string bytes(std::initializer_list<unsigned> b) {
  std::string s;
  for (unsigned v : b) s.push_back(static_cast<char>(v));
  return s;
}

class NullHandler : public NriHandler {
 public:
  koord::Result<int32_t> configure(const api::ConfigureRequest&) override { return 9; }
  koord::Result<api::SynchronizeResponse> synchronize(const api::SynchronizeRequest&) override {
    return api::SynchronizeResponse{};
  }
  koord::Result<api::CreateContainerResponse> createContainer(
      const api::CreateContainerRequest&) override {
    return api::CreateContainerResponse{};
  }
  koord::Result<api::UpdateContainerResponse> updateContainer(
      const api::UpdateContainerRequest&) override {
    return api::UpdateContainerResponse{};
  }
  koord::Result<api::StopContainerResponse> stopContainer(
      const api::StopContainerRequest&) override {
    return api::StopContainerResponse{};
  }
  koord::Status stateChange(const api::StateChangeEvent&) override { return koord::Ok{}; }
};

}  // namespace

TEST_CASE("RegisterPlugin for ref/50 matches the reference bytes exactly", "[ttrpc]") {
  NullHandler h;
  SessionConfig cfg;
  cfg.pluginName = "ref";
  cfg.pluginIndex = "50";
  cfg.requestTimeout = std::chrono::seconds(2);
  cfg.nriVersion = "";  // the reference's bytes: a stub before NRI v0.12
  PluginSession session(cfg, h);
  std::string want = bytes({0, 0, 0, 2, 0, 0, 0, 0x49}) +        // mux: conn 2, 73 bytes
                     bytes({0, 0, 0, 0x3f, 0, 0, 0, 1, 1, 0}) +  // ttrpc: 63 bytes, stream 1, req
                     bytes({0x0a, 0x1c}) + "nri.pkg.api.v1alpha1.Runtime" + bytes({0x12, 0x0e}) +
                     "RegisterPlugin" + bytes({0x1a, 0x09, 0x0a, 0x03}) + "ref" +
                     bytes({0x12, 0x02}) + "50" +
                     // timeout_nano = 2 000 000 000 = 0x77359400 as a varint
                     bytes({0x20, 0x80, 0xa8, 0xd6, 0xb9, 0x07});
  CHECK(session.start() == want);
}

TEST_CASE("RegisterPlugin with NRI v0.12's NRI_version adds field 3 and nothing else", "[ttrpc]") {
  NullHandler h;
  SessionConfig cfg;
  cfg.pluginName = "ref";
  cfg.pluginIndex = "50";
  cfg.requestTimeout = std::chrono::seconds(2);
  PluginSession session(cfg, h);                                 // nriVersion "v0.12.0" by default
  std::string want = bytes({0, 0, 0, 2, 0, 0, 0, 0x52}) +        // mux: conn 2, 82 bytes
                     bytes({0, 0, 0, 0x48, 0, 0, 0, 1, 1, 0}) +  // ttrpc: 72 bytes
                     bytes({0x0a, 0x1c}) + "nri.pkg.api.v1alpha1.Runtime" + bytes({0x12, 0x0e}) +
                     "RegisterPlugin" + bytes({0x1a, 0x12, 0x0a, 0x03}) + "ref" +
                     bytes({0x12, 0x02}) + "50" + bytes({0x1a, 0x07}) + "v0.12.0" +
                     bytes({0x20, 0x80, 0xa8, 0xd6, 0xb9, 0x07});
  CHECK(session.start() == want);
}

TEST_CASE("a request envelope carries the timeout as field 4 and omits a zero one", "[ttrpc]") {
  std::string withTimeout = encodeRequest("s", "m", "", 1'500'000'000);
  CHECK(withTimeout == bytes({0x0a, 1, 's', 0x12, 1, 'm', 0x20, 0x80, 0xde, 0xa0, 0xcb, 0x05}));
  CHECK(encodeRequest("s", "m", "p", 0) == bytes({0x0a, 1, 's', 0x12, 1, 'm', 0x1a, 1, 'p'}));
  wire::Request parsed;
  REQUIRE(parsed.ParseFromString(withTimeout));
  CHECK(parsed.timeout_nano() == 1'500'000'000);
}

TEST_CASE("an empty success reply is a 10-byte header with no body", "[ttrpc]") {
  CHECK(encodeOkResponse("").empty());
  CHECK(encodeMessage(1, MessageType::kResponse, encodeOkResponse("")) ==
        bytes({0, 0, 0, 0, 0, 0, 0, 1, 2, 0}));
}

TEST_CASE("the Configure reply for mask 9 has the body 12 02 10 09", "[ttrpc]") {
  api::ConfigureResponse resp;
  resp.set_events(9);
  CHECK(encodeOkResponse(resp.SerializeAsString()) == bytes({0x12, 0x02, 0x10, 0x09}));
}

TEST_CASE("an error reply carries status code and message and no payload", "[ttrpc]") {
  std::string data = encodeErrorResponse(Code::kUnimplemented, "method Foo");
  CHECK(data == bytes({0x0a, 0x0e, 0x08, 0x0c, 0x12, 0x0a}) + "method Foo");
  wire::Response resp;
  REQUIRE(resp.ParseFromString(data));
  CHECK(resp.status().code() == 12);
  CHECK(resp.status().message() == "method Foo");
  CHECK(resp.payload().empty());
}

TEST_CASE("nextMessage waits for a whole message and takes it off the front", "[ttrpc]") {
  std::string wire =
      encodeMessage(7, MessageType::kRequest, "abc") + encodeMessage(9, MessageType::kResponse, "");
  std::string stream;
  for (size_t i = 0; i < 13; ++i) {
    auto r = nextMessage(stream);
    REQUIRE(r);
    REQUIRE_FALSE(r->has_value());
    stream.push_back(wire[i]);
  }
  auto first = nextMessage(stream);
  REQUIRE(first);
  REQUIRE(first->has_value());
  CHECK((*first)->streamId == 7);
  CHECK((*first)->type == MessageType::kRequest);
  CHECK((*first)->flags == 0);
  CHECK((*first)->data == "abc");
  CHECK(stream.empty());

  stream = wire.substr(13, 9);
  auto partial = nextMessage(stream);
  REQUIRE(partial);
  CHECK_FALSE(partial->has_value());
  CHECK(stream.size() == 9);
  stream += wire.substr(22);
  auto second = nextMessage(stream);
  REQUIRE(second);
  REQUIRE(second->has_value());
  CHECK((*second)->streamId == 9);
  CHECK((*second)->type == MessageType::kResponse);
  CHECK((*second)->data.empty());
  CHECK(stream.empty());
}

TEST_CASE("nextMessage rejects a length above the receive limit from the header alone", "[ttrpc]") {
  std::string stream = bytes({0x04, 0x00, 0x00, 0x01, 0, 0, 0, 1, 1, 0});  // 64 MiB + 1
  auto r = nextMessage(stream);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("67108865"));
  // Exactly the limit is accepted (and waits for its body).
  std::string atLimit = bytes({0x04, 0x00, 0x00, 0x00, 0, 0, 0, 1, 1, 0});
  auto ok = nextMessage(atLimit);
  REQUIRE(ok);
  CHECK_FALSE(ok->has_value());
}

TEST_CASE("nextMessage rejects unknown message types", "[ttrpc]") {
  for (unsigned type : {0u, 4u, 0xffu}) {
    std::string stream = bytes({0, 0, 0, 0, 0, 0, 0, 1, type, 0});
    auto r = nextMessage(stream);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("type"));
  }
  std::string data = bytes({0, 0, 0, 0, 0, 0, 0, 1, 3, 1});
  auto r = nextMessage(data);
  REQUIRE(r);
  REQUIRE(r->has_value());
  CHECK((*r)->type == MessageType::kData);
  CHECK((*r)->flags == 1);
}

}  // namespace test_nri_ttrpc
