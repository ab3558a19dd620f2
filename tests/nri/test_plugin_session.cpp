// PluginSession driven with hand-built bytes, as a runtime would send them
// (reference nri.md §3-§4): registration, Configure, (split) Synchronize, events,
// error statuses and stream-id rules. No sockets.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "nri/api.h"
#include "nri/mux.h"
#include "nri/plugin_session.h"
#include "nri/ttrpc.h"

namespace test_nri_plugin_session {  // this file's own names: tests build as unity chunks

using namespace koord::nri;
using Phase = PluginSession::Phase;

namespace {

class FakeHandler : public NriHandler {
 public:
  std::vector<std::string> calls;
  std::vector<api::StateChangeEvent> events;
  api::SynchronizeRequest lastSync;
  int syncCalls = 0;
  int32_t mask = 0x8D;
  std::string failWith;  // non-empty: every call fails with this message

  koord::Result<int32_t> configure(const api::ConfigureRequest& req) override {
    calls.push_back("configure " + req.runtime_name());
    if (!failWith.empty()) return koord::makeError(failWith);
    return mask;
  }
  koord::Result<api::SynchronizeResponse> synchronize(const api::SynchronizeRequest& req) override {
    calls.push_back("synchronize");
    ++syncCalls;
    lastSync = req;
    if (!failWith.empty()) return koord::makeError(failWith);
    api::SynchronizeResponse resp;
    for (const auto& c : req.containers()) resp.add_update()->set_container_id(c.id());
    return resp;
  }
  koord::Result<api::CreateContainerResponse> createContainer(
      const api::CreateContainerRequest& req) override {
    calls.push_back("create " + req.container().id());
    if (!failWith.empty()) return koord::makeError(failWith);
    api::CreateContainerResponse resp;
    (*resp.mutable_adjust()->mutable_annotations())["seen"] = req.pod().name();
    return resp;
  }
  koord::Result<api::UpdateContainerResponse> updateContainer(
      const api::UpdateContainerRequest& req) override {
    calls.push_back("update " + req.container().id());
    if (!failWith.empty()) return koord::makeError(failWith);
    api::UpdateContainerResponse resp;
    resp.add_update()->set_container_id(req.container().id());
    return resp;
  }
  koord::Result<api::StopContainerResponse> stopContainer(
      const api::StopContainerRequest& req) override {
    calls.push_back("stop " + req.container().id());
    if (!failWith.empty()) return koord::makeError(failWith);
    return api::StopContainerResponse{};
  }
  koord::Status stateChange(const api::StateChangeEvent& event) override {
    calls.push_back("state " + api::Event_Name(event.event()));
    events.push_back(event);
    if (!failWith.empty()) return koord::makeError(failWith);
    return koord::Ok{};
  }
};

// One ttrpc message the session sent, decoded.
struct Sent {
  uint32_t conn = 0;
  uint32_t stream = 0;
  MessageType type = MessageType::kRequest;
  wire::Request request;    // when type is kRequest
  wire::Response response;  // when type is kResponse
  size_t size = 0;          // ttrpc body bytes
};

std::vector<Sent> decode(const std::string& bytes) {
  MuxReader mux;
  REQUIRE(mux.feed(bytes));
  std::vector<Sent> out;
  for (uint32_t conn : {kPluginServiceConn, kRuntimeServiceConn}) {
    for (;;) {
      auto next = nextMessage(mux.stream(conn));
      REQUIRE(next);
      if (!next->has_value()) break;
      Sent s;
      s.conn = conn;
      s.stream = (*next)->streamId;
      s.type = (*next)->type;
      s.size = (*next)->data.size();
      if (s.type == MessageType::kRequest) {
        REQUIRE(s.request.ParseFromString((*next)->data));
      } else {
        REQUIRE(s.response.ParseFromString((*next)->data));
      }
      out.push_back(std::move(s));
    }
    REQUIRE(mux.stream(conn).empty());
  }
  return out;
}

std::string request(uint32_t stream, const std::string& method, const std::string& payload,
                    const std::string& service = kPluginService) {
  std::string out;
  appendFrames(out, kPluginServiceConn,
               encodeMessage(stream, MessageType::kRequest,
                             encodeRequest(service, method, payload, 2'000'000'000)));
  return out;
}

std::string reply(uint32_t stream, const std::string& data) {
  std::string out;
  appendFrames(out, kRuntimeServiceConn, encodeMessage(stream, MessageType::kResponse, data));
  return out;
}

std::string configureRequest() {
  api::ConfigureRequest req;
  req.set_runtime_name("containerd");
  req.set_runtime_version("1.7.27");
  req.set_request_timeout(2000);
  req.set_registration_timeout(5000);
  return req.SerializeAsString();
}

// The reply the session sends to one request; fails unless there is exactly one.
Sent answer(PluginSession& s, const std::string& bytes) {
  auto out = s.receive(bytes);
  REQUIRE(out);
  auto sent = decode(*out);
  REQUIRE(sent.size() == 1);
  REQUIRE(sent[0].conn == kPluginServiceConn);
  REQUIRE(sent[0].type == MessageType::kResponse);
  return sent[0];
}

int32_t code(const Sent& s) { return s.response.has_status() ? s.response.status().code() : 0; }

// "p" + std::to_string(i) trips GCC 12's -Wrestrict false positive at -O3.
std::string numbered(std::string prefix, int i) {
  prefix += std::to_string(i);
  return prefix;
}

api::PodSandbox pod(const std::string& id) {
  api::PodSandbox p;
  p.set_id(id);
  p.set_name("pod-" + id);
  p.set_namespace_("default");
  return p;
}

api::Container container(const std::string& id, const std::string& podId) {
  api::Container c;
  c.set_id(id);
  c.set_pod_sandbox_id(podId);
  c.set_name("ctr-" + id);
  return c;
}

// A session registered, configured and synchronized with no pods; next runtime
// stream id is 5.
struct Synced {
  FakeHandler handler;
  PluginSession session{SessionConfig{}, handler};
  Synced() {
    static_cast<void>(session.start());
    REQUIRE(session.receive(reply(1, "")));
    answer(session, request(1, "Configure", configureRequest()));
    answer(session, request(3, "Synchronize", ""));
    REQUIRE(session.phase() == Phase::kSynchronized);
    handler.calls.clear();
  }
};

}  // namespace

TEST_CASE("start registers on ConnID 2 stream 1 with our name and index", "[session]") {
  FakeHandler h;
  SessionConfig cfg;
  cfg.requestTimeout = std::chrono::milliseconds(1500);
  PluginSession s(cfg, h);
  CHECK(s.phase() == Phase::kRegistering);
  auto sent = decode(s.start());
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].conn == kRuntimeServiceConn);
  CHECK(sent[0].stream == 1);
  CHECK(sent[0].type == MessageType::kRequest);
  CHECK(sent[0].request.service() == "nri.pkg.api.v1alpha1.Runtime");
  CHECK(sent[0].request.method() == "RegisterPlugin");
  CHECK(sent[0].request.timeout_nano() == 1'500'000'000);
  api::RegisterPluginRequest reg;
  REQUIRE(reg.ParseFromString(sent[0].request.payload()));
  CHECK(reg.plugin_name() == "koordlet_nri");
  CHECK(reg.plugin_idx() == "00");
  // The protocol level we speak, as NRI v0.12's stub sends its own (field 3; a
  // runtime before v0.12 skips it, containerd 2.3 logs it at registration).
  CHECK(reg.nri_version() == "v0.12.0");
}

TEST_CASE("the runtime's NRI version from Configure is kept, empty from a runtime before v0.12",
          "[session]") {
  FakeHandler h;
  PluginSession older(SessionConfig{}, h);
  static_cast<void>(older.start());
  answer(older, request(1, "Configure", configureRequest()));
  CHECK(older.runtimeNriVersion().empty());

  api::ConfigureRequest req;  // containerd 2.3.4's, NRI v0.12.0 vendored
  req.set_runtime_name("containerd");
  req.set_runtime_version("v2.3.4");
  req.set_nri_version("v0.12.0");
  PluginSession newer(SessionConfig{}, h);
  static_cast<void>(newer.start());
  answer(newer, request(1, "Configure", req.SerializeAsString()));
  CHECK(newer.runtimeVersion() == "v2.3.4");
  CHECK(newer.runtimeNriVersion() == "v0.12.0");
}

TEST_CASE("Configure arriving before the RegisterPlugin reply is answered at once", "[session]") {
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  // Configure and the registration reply in one read, Configure's bytes first.
  auto out = s.receive(request(1, "Configure", configureRequest()) + reply(1, ""));
  REQUIRE(out);
  auto sent = decode(*out);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].stream == 1);
  CHECK(code(sent[0]) == 0);
  api::ConfigureResponse cr;
  REQUIRE(cr.ParseFromString(sent[0].response.payload()));
  CHECK(cr.events() == 0x8D);
  CHECK(s.phase() == Phase::kConfigured);
  CHECK(s.runtimeName() == "containerd");
  CHECK(s.runtimeVersion() == "1.7.27");
  CHECK(s.requestTimeoutMs() == 2000);
  CHECK(s.subscribedEvents() == 0x8D);
  CHECK(h.calls == std::vector<std::string>{"configure containerd"});
}

TEST_CASE("Configure before the registration reply, in separate reads, keeps the phase",
          "[session]") {
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  answer(s, request(1, "Configure", configureRequest()));
  CHECK(s.phase() == Phase::kConfigured);
  auto out = s.receive(reply(1, ""));
  REQUIRE(out);
  CHECK(out->empty());
  CHECK(s.phase() == Phase::kConfigured);
}

TEST_CASE("the registration reply moves the session to registered", "[session]") {
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  auto out = s.receive(reply(1, ""));
  REQUIRE(out);
  CHECK(out->empty());
  CHECK(s.phase() == Phase::kRegistered);
}

TEST_CASE("Synchronize with no pods reaches the handler and synchronizes", "[session]") {
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  REQUIRE(s.receive(reply(1, "")));
  answer(s, request(1, "Configure", configureRequest()));
  auto r = answer(s, request(3, "Synchronize", ""));
  CHECK(r.stream == 3);
  CHECK(code(r) == 0);
  CHECK(r.size == 0);  // SynchronizeResponse{} serializes to nothing
  CHECK(h.syncCalls == 1);
  CHECK(h.lastSync.pods_size() == 0);
  CHECK(s.phase() == Phase::kSynchronized);
}

TEST_CASE("Synchronize with one pod and with many pods returns the handler's updates",
          "[session]") {
  for (int pods : {1, 3000}) {
    FakeHandler h;
    PluginSession s(SessionConfig{}, h);
    static_cast<void>(s.start());
    REQUIRE(s.receive(reply(1, "")));
    answer(s, request(1, "Configure", configureRequest()));
    api::SynchronizeRequest req;
    for (int i = 0; i < pods; ++i) {
      *req.add_pods() = pod(numbered("p", i));
      *req.add_containers() = container(numbered("c", i), numbered("p", i));
    }
    auto r = answer(s, request(3, "Synchronize", req.SerializeAsString()));
    CHECK(code(r) == 0);
    api::SynchronizeResponse resp;
    REQUIRE(resp.ParseFromString(r.response.payload()));
    CHECK(resp.update_size() == pods);
    CHECK_FALSE(resp.more());
    CHECK(h.lastSync.pods_size() == pods);
    CHECK(s.phase() == Phase::kSynchronized);
  }
}

TEST_CASE("a split sync is answered more=true per chunk and delivered once as the union",
          "[session]") {
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  REQUIRE(s.receive(reply(1, "")));
  answer(s, request(1, "Configure", configureRequest()));
  uint32_t stream = 3;
  for (int chunk = 0; chunk < 3; ++chunk) {
    api::SynchronizeRequest req;
    *req.add_pods() = pod(numbered("p", chunk));
    *req.add_containers() = container(numbered("c", chunk), numbered("p", chunk));
    req.set_more(true);
    auto r = answer(s, request(stream, "Synchronize", req.SerializeAsString()));
    stream += 2;
    CHECK(code(r) == 0);
    api::SynchronizeResponse resp;
    REQUIRE(resp.ParseFromString(r.response.payload()));
    CHECK(resp.more());
    CHECK(resp.update_size() == 0);
    CHECK(h.syncCalls == 0);
    CHECK(s.phase() == Phase::kConfigured);
  }
  api::SynchronizeRequest last;
  *last.add_containers() = container("c3", "p2");
  auto r = answer(s, request(stream, "Synchronize", last.SerializeAsString()));
  api::SynchronizeResponse resp;
  REQUIRE(resp.ParseFromString(r.response.payload()));
  CHECK_FALSE(resp.more());
  CHECK(resp.update_size() == 4);
  REQUIRE(h.syncCalls == 1);
  CHECK(h.lastSync.pods_size() == 3);
  CHECK(h.lastSync.containers_size() == 4);
  CHECK_FALSE(h.lastSync.more());
  CHECK(h.lastSync.pods(2).id() == "p2");
  CHECK(h.lastSync.containers(3).id() == "c3");
  CHECK(s.stats().syncChunks == 4);
  CHECK(s.phase() == Phase::kSynchronized);
}

TEST_CASE("CreateContainer, UpdateContainer and StopContainer reach the handler", "[session]") {
  Synced x;
  api::CreateContainerRequest create;
  *create.mutable_pod() = pod("p1");
  *create.mutable_container() = container("c1", "p1");
  auto r = answer(x.session, request(5, "CreateContainer", create.SerializeAsString()));
  CHECK(code(r) == 0);
  api::CreateContainerResponse cresp;
  REQUIRE(cresp.ParseFromString(r.response.payload()));
  CHECK(cresp.adjust().annotations().at("seen") == "pod-p1");

  api::UpdateContainerRequest update;
  *update.mutable_container() = container("c1", "p1");
  r = answer(x.session, request(7, "UpdateContainer", update.SerializeAsString()));
  api::UpdateContainerResponse uresp;
  REQUIRE(uresp.ParseFromString(r.response.payload()));
  REQUIRE(uresp.update_size() == 1);
  CHECK(uresp.update(0).container_id() == "c1");

  api::StopContainerRequest stop;
  *stop.mutable_container() = container("c1", "p1");
  r = answer(x.session, request(9, "StopContainer", stop.SerializeAsString()));
  CHECK(code(r) == 0);
  CHECK(r.size == 0);
  CHECK(x.handler.calls == std::vector<std::string>{"create c1", "update c1", "stop c1"});
  CHECK(x.session.stats().requests == 5);
}

TEST_CASE("StateChange reaches the handler and gets an empty reply", "[session]") {
  Synced x;
  api::StateChangeEvent ev;
  ev.set_event(api::RUN_POD_SANDBOX);
  *ev.mutable_pod() = pod("p1");
  auto r = answer(x.session, request(5, "StateChange", ev.SerializeAsString()));
  CHECK(code(r) == 0);
  CHECK(r.size == 0);
  REQUIRE(x.handler.events.size() == 1);
  CHECK(x.handler.events[0].pod().id() == "p1");
  CHECK(x.handler.calls == std::vector<std::string>{"state RUN_POD_SANDBOX"});
  CHECK(x.session.stats().stateChangeCalls == 1);
  CHECK(x.session.stats().perEventCalls == 0);
}

TEST_CASE("the NRI v0.12 per-event methods are served as StateChange", "[session]") {
  const std::pair<const char*, api::Event> methods[] = {
      {"RunPodSandbox", api::RUN_POD_SANDBOX},
      {"StopPodSandbox", api::STOP_POD_SANDBOX},
      {"RemovePodSandbox", api::REMOVE_POD_SANDBOX},
      {"PostCreateContainer", api::POST_CREATE_CONTAINER},
      {"StartContainer", api::START_CONTAINER},
      {"PostStartContainer", api::POST_START_CONTAINER},
      {"PostUpdateContainer", api::POST_UPDATE_CONTAINER},
      {"RemoveContainer", api::REMOVE_CONTAINER},
  };
  Synced x;
  uint32_t stream = 5;
  for (const auto& [method, event] : methods) {
    api::PodContainerRequest req;
    *req.mutable_pod() = pod("p9");
    bool podEvent = event == api::RUN_POD_SANDBOX || event == api::STOP_POD_SANDBOX ||
                    event == api::REMOVE_POD_SANDBOX;
    if (!podEvent) *req.mutable_container() = container("c9", "p9");
    auto r = answer(x.session, request(stream, method, req.SerializeAsString()));
    stream += 2;
    INFO(method);
    CHECK(code(r) == 0);
    CHECK(r.size == 0);
    REQUIRE_FALSE(x.handler.events.empty());
    const auto& got = x.handler.events.back();
    CHECK(got.event() == event);
    CHECK(got.pod().id() == "p9");
    CHECK(got.has_container() == !podEvent);
    if (!podEvent) CHECK(got.container().id() == "c9");
  }
  CHECK(x.handler.events.size() == std::size(methods));
  CHECK(x.session.stats().perEventCalls == std::size(methods));
  CHECK(x.session.stats().stateChangeCalls == 0);
}

TEST_CASE("Shutdown is a no-op with an empty reply", "[session]") {
  Synced x;
  auto r = answer(x.session, request(5, "Shutdown", ""));
  CHECK(code(r) == 0);
  CHECK(r.size == 0);
  CHECK(x.handler.calls.empty());
  CHECK(x.session.phase() == Phase::kSynchronized);
}

TEST_CASE("an unknown method is answered code 12 \"method <m>\"", "[session]") {
  Synced x;
  auto r = answer(x.session, request(5, "UpdatePodSandbox", "garbage?"));
  CHECK(code(r) == 12);
  CHECK(r.response.status().message() == "method UpdatePodSandbox");
  CHECK(r.response.payload().empty());
  CHECK(x.session.stats().unimplemented == 1);
  CHECK(x.session.phase() == Phase::kSynchronized);
}

TEST_CASE("an unknown service is answered code 12 \"service <svc>\"", "[session]") {
  Synced x;
  auto r = answer(x.session, request(5, "Configure", "", "grpc.health.v1.Health"));
  CHECK(code(r) == 12);
  CHECK(r.response.status().message() == "service grpc.health.v1.Health");
  CHECK(x.handler.calls.empty());
}

TEST_CASE("even and re-used stream ids are answered code 3, like Go ttrpc", "[session]") {
  Synced x;
  auto even = answer(x.session, request(6, "StateChange", ""));
  CHECK(even.stream == 6);
  CHECK(code(even) == 3);
  auto reused = answer(x.session, request(3, "StateChange", ""));
  CHECK(reused.stream == 3);
  CHECK(code(reused) == 3);
  CHECK(x.handler.calls.empty());
  // The rejected ids did not advance the expected sequence.
  auto ok = answer(x.session, request(5, "StateChange", ""));
  CHECK(code(ok) == 0);
  auto again = answer(x.session, request(5, "StateChange", ""));
  CHECK(code(again) == 3);
  CHECK(x.handler.calls.size() == 1);
}

TEST_CASE("an unparsable method payload is answered code 3", "[session]") {
  Synced x;
  auto r = answer(x.session, request(5, "CreateContainer", std::string("\xff\xff\xff", 3)));
  CHECK(code(r) == 3);
  CHECK(x.handler.calls.empty());
  CHECK(x.session.phase() == Phase::kSynchronized);
}

TEST_CASE("a handler error is answered code 2 with its message", "[session]") {
  Synced x;
  x.handler.failWith = "no cgroup parent for pod p1";
  api::CreateContainerRequest create;
  *create.mutable_container() = container("c1", "p1");
  auto r = answer(x.session, request(5, "CreateContainer", create.SerializeAsString()));
  CHECK(code(r) == 2);
  CHECK(r.response.status().message() == "no cgroup parent for pod p1");
  CHECK(r.response.payload().empty());
  auto st = answer(x.session, request(7, "StateChange", ""));
  CHECK(code(st) == 2);
  CHECK(x.session.stats().handlerErrors == 2);
  CHECK(x.session.phase() == Phase::kSynchronized);
}

TEST_CASE("a failing Configure or Synchronize is answered code 2 and does not advance",
          "[session]") {
  FakeHandler h;
  h.failWith = "bad config";
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  REQUIRE(s.receive(reply(1, "")));
  auto r = answer(s, request(1, "Configure", configureRequest()));
  CHECK(code(r) == 2);
  CHECK(r.response.status().message() == "bad config");
  CHECK(s.phase() == Phase::kRegistered);
  auto sync = answer(s, request(3, "Synchronize", ""));
  CHECK(code(sync) == 2);
  CHECK(s.phase() == Phase::kRegistered);
}

TEST_CASE("a refused registration fails the session with the runtime's message", "[session]") {
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  auto out = s.receive(reply(1, encodeErrorResponse(Code::kUnknown, "invalid plugin index")));
  REQUIRE_FALSE(out);
  CHECK_THAT(out.error().message, Catch::Contains("invalid plugin index"));
  CHECK(s.phase() == Phase::kFailed);
  CHECK_FALSE(s.receive(request(1, "Configure", configureRequest())));
  CHECK(h.calls.empty());
}

TEST_CASE("garbage with a huge ttrpc length fails the session", "[session]") {
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  std::string garbage;
  appendFrames(garbage, kPluginServiceConn, std::string("\x7f\xff\xff\xff\0\0\0\1\1\0", 10));
  auto out = s.receive(garbage);
  REQUIRE_FALSE(out);
  CHECK(s.phase() == Phase::kFailed);
}

TEST_CASE("a mux frame above the receive limit fails the session", "[session]") {
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  CHECK_FALSE(s.receive(std::string("\0\0\0\1\xff\xff\xff\xff", 8)));
  CHECK(s.phase() == Phase::kFailed);
}

TEST_CASE("an unknown ttrpc message type fails the session", "[session]") {
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  std::string bad;
  appendFrames(bad, kRuntimeServiceConn, std::string("\0\0\0\0\0\0\0\1\x09\0", 10));
  CHECK_FALSE(s.receive(bad));
  CHECK(s.phase() == Phase::kFailed);
}

TEST_CASE("UpdateContainers calls use stream ids 3, 5, 7 and their replies are matched",
          "[session]") {
  Synced x;
  api::UpdateContainersRequest req;
  req.add_update()->set_container_id("c1");
  std::vector<uint32_t> streams;
  for (int i = 0; i < 3; ++i) {
    auto sent = decode(x.session.updateContainers(req));
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].conn == kRuntimeServiceConn);
    CHECK(sent[0].request.method() == "UpdateContainers");
    CHECK(sent[0].request.service() == "nri.pkg.api.v1alpha1.Runtime");
    api::UpdateContainersRequest got;
    REQUIRE(got.ParseFromString(sent[0].request.payload()));
    CHECK(got.update(0).container_id() == "c1");
    streams.push_back(sent[0].stream);
  }
  CHECK(streams == std::vector<uint32_t>{3, 5, 7});

  api::UpdateContainersResponse failedOne;
  failedOne.add_failed()->set_container_id("c1");
  auto out =
      x.session.receive(reply(3, "") + reply(5, encodeOkResponse(failedOne.SerializeAsString())) +
                        reply(7, encodeErrorResponse(Code::kUnknown, "boom")) +
                        reply(41, "") /* unknown stream: ignored */);
  REQUIRE(out);
  CHECK(out->empty());
  CHECK(x.session.stats().updateReplies == 3);
  CHECK(x.session.stats().updateFailures == 2);
  // A second reply for a finished stream is ignored, too.
  REQUIRE(x.session.receive(reply(3, "")));
  CHECK(x.session.stats().updateReplies == 3);
  CHECK(x.session.phase() == Phase::kSynchronized);
}

TEST_CASE("a request split across many reads is answered once, when complete", "[session]") {
  Synced x;
  api::CreateContainerRequest create;
  *create.mutable_pod() = pod("p1");
  *create.mutable_container() = container("c1", "p1");
  create.mutable_container()->add_env(std::string(9000, 'e'));  // two frames
  std::string bytes = request(5, "CreateContainer", create.SerializeAsString());
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 1000) {
    auto r = x.session.receive(std::string_view(bytes).substr(i, 1000));
    REQUIRE(r);
    out += *r;
  }
  auto sent = decode(out);
  REQUIRE(sent.size() == 1);
  CHECK(code(sent[0]) == 0);
  CHECK(x.handler.calls == std::vector<std::string>{"create c1"});
}

TEST_CASE("replies larger than 4096 bytes leave as 4096 bytes plus the rest", "[session]") {
  api::SynchronizeRequest req;
  for (int i = 0; i < 2000; ++i) *req.add_containers() = container(numbered("c", i), "p");
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  REQUIRE(s.receive(reply(1, "")));
  answer(s, request(1, "Configure", configureRequest()));
  auto out = s.receive(request(3, "Synchronize", req.SerializeAsString()));
  REQUIRE(out);
  REQUIRE(out->size() > 4096 + 16);
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>((*out)[at + i]);
    return v;
  };
  CHECK(u32(0) == 1);
  CHECK(u32(4) == 4096);
  CHECK(u32(8 + 4096) == 1);
  CHECK(u32(12 + 4096) == out->size() - 4096 - 16);
  CHECK(decode(*out).size() == 1);
}

TEST_CASE("a reply over 4 MiB is replaced by code 8 and the session goes on", "[session]") {
  FakeHandler h;
  PluginSession s(SessionConfig{}, h);
  static_cast<void>(s.start());
  REQUIRE(s.receive(reply(1, "")));
  answer(s, request(1, "Configure", configureRequest()));
  api::SynchronizeRequest req;  // about 5 MiB: the handler echoes every id back
  for (int i = 0; i < 5000; ++i) {
    *req.add_containers() = container(numbered(std::string(1000, 'c'), i), "p");
  }
  auto r = answer(s, request(3, "Synchronize", req.SerializeAsString()));
  CHECK(code(r) == 8);
  CHECK_THAT(r.response.status().message(), Catch::Contains("4 MiB"));
  CHECK(s.phase() == Phase::kConfigured);  // not synchronized: the runtime drops us
  CHECK(code(answer(s, request(5, "Shutdown", ""))) == 0);
}

TEST_CASE("an UpdateContainers call over 4 MiB is not sent and takes no stream id", "[session]") {
  Synced x;
  api::UpdateContainersRequest big;
  for (int i = 0; i < 5000; ++i) big.add_update()->set_container_id(std::string(1000, 'c'));
  CHECK(x.session.updateContainers(big).empty());
  api::UpdateContainersRequest small;
  small.add_update()->set_container_id("c1");
  auto sent = decode(x.session.updateContainers(small));
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].stream == 3);
}

namespace {

// A session registered and configured under `limits`; the runtime's next stream id is 3.
struct Configured {
  explicit Configured(SyncLimits limits) {
    SessionConfig cfg;
    cfg.syncLimits = limits;
    session = std::make_unique<PluginSession>(cfg, handler);
    static_cast<void>(session->start());
    REQUIRE(session->receive(reply(1, "")));
    answer(*session, request(1, "Configure", configureRequest()));
  }
  FakeHandler handler;
  std::unique_ptr<PluginSession> session;
};

api::SynchronizeRequest syncChunk(int first, int count, bool more) {
  api::SynchronizeRequest req;
  for (int i = first; i < first + count; ++i) {
    *req.add_pods() = pod(numbered("p", i));
    *req.add_containers() = container(numbered("c", i), numbered("p", i));
  }
  req.set_more(more);
  return req;
}

}  // namespace

TEST_CASE("the default sync limits hold far more than any node and no more than 64 MiB",
          "[session]") {
  SyncLimits limits;
  CHECK(limits.maxPods == 100'000);
  CHECK(limits.maxContainers == 100'000);
  CHECK(limits.maxBytes == kMaxReceiveMessage);
}

TEST_CASE("a split sync past the pod limit is refused code 8, dropped, and fails the session",
          "[session]") {
  SyncLimits limits;
  limits.maxPods = 25;
  Configured x(limits);
  PluginSession& s = *x.session;
  uint32_t stream = 3;
  int first = 0;
  Sent last;
  // Chunks of 10 pods: the third would make 30.
  for (; first < 100; first += 10) {
    last =
        answer(s, request(stream, "Synchronize", syncChunk(first, 10, true).SerializeAsString()));
    stream += 2;
    // What is buffered never goes past the limit, refused chunk included.
    CHECK(s.bufferedSyncPods() <= limits.maxPods);
    if (code(last) != 0) break;
  }
  CHECK(first == 20);
  CHECK(code(last) == 8);
  CHECK_THAT(last.response.status().message(), Catch::Contains("30 pods"));
  CHECK_THAT(last.response.status().message(), Catch::Contains("limit of 25 pods"));
  CHECK(s.bufferedSyncPods() == 0);
  CHECK(s.bufferedSyncContainers() == 0);
  CHECK(s.bufferedSyncBytes() == 0);
  CHECK(s.phase() == Phase::kFailed);
  CHECK_THAT(s.failure(), Catch::Contains("exceeds the plugin's limit"));
  CHECK(s.stats().syncRefused == 1);
  CHECK(x.handler.syncCalls == 0);
  // Nothing more is served on this connection: the owner closes it.
  CHECK_FALSE(
      s.receive(request(stream, "Synchronize", syncChunk(0, 1, false).SerializeAsString())));
  CHECK(x.handler.syncCalls == 0);
}

TEST_CASE("a split sync past the byte limit is refused before the chunk is kept", "[session]") {
  SyncLimits limits;
  limits.maxBytes = 4096;
  Configured x(limits);
  PluginSession& s = *x.session;
  uint32_t stream = 3;
  Sent last;
  int chunks = 0;
  for (; chunks < 100; ++chunks) {
    last = answer(
        s, request(stream, "Synchronize", syncChunk(chunks * 5, 5, true).SerializeAsString()));
    stream += 2;
    CHECK(s.bufferedSyncBytes() <= limits.maxBytes);
    if (code(last) != 0) break;
  }
  CHECK(chunks > 0);  // some chunks fit
  CHECK(chunks < 100);
  CHECK(code(last) == 8);
  CHECK_THAT(last.response.status().message(), Catch::Contains("limit of 4096"));
  CHECK(s.bufferedSyncBytes() == 0);
  CHECK(s.phase() == Phase::kFailed);
  CHECK(x.handler.syncCalls == 0);
}

TEST_CASE("the last chunk of a split sync counts toward the limit too", "[session]") {
  SyncLimits limits;
  limits.maxContainers = 15;
  Configured x(limits);
  PluginSession& s = *x.session;
  CHECK(code(answer(s, request(3, "Synchronize", syncChunk(0, 10, true).SerializeAsString()))) ==
        0);
  auto r = answer(s, request(5, "Synchronize", syncChunk(10, 10, false).SerializeAsString()));
  CHECK(code(r) == 8);
  CHECK_THAT(r.response.status().message(), Catch::Contains("20 containers"));
  CHECK(x.handler.syncCalls == 0);
  CHECK(s.phase() == Phase::kFailed);
}

TEST_CASE("an unsplit Synchronize over the limit is refused like a split one", "[session]") {
  SyncLimits limits;
  limits.maxContainers = 5;
  Configured x(limits);
  PluginSession& s = *x.session;
  // Refused, and the request read with it in the same bytes is not served.
  auto out = s.receive(request(3, "Synchronize", syncChunk(0, 6, false).SerializeAsString()) +
                       request(5, "Shutdown", ""));
  REQUIRE(out);
  auto sent = decode(*out);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].stream == 3);
  CHECK(code(sent[0]) == 8);
  CHECK(s.phase() == Phase::kFailed);
}

TEST_CASE("a split sync at exactly the limits is delivered", "[session]") {
  SyncLimits limits;
  limits.maxPods = 20;
  limits.maxContainers = 20;
  Configured x(limits);
  PluginSession& s = *x.session;
  CHECK(code(answer(s, request(3, "Synchronize", syncChunk(0, 10, true).SerializeAsString()))) ==
        0);
  CHECK(s.bufferedSyncPods() == 10);
  CHECK(s.bufferedSyncBytes() > 0);
  auto r = answer(s, request(5, "Synchronize", syncChunk(10, 10, false).SerializeAsString()));
  CHECK(code(r) == 0);
  CHECK(x.handler.syncCalls == 1);
  CHECK(x.handler.lastSync.pods_size() == 20);
  CHECK(s.bufferedSyncBytes() == 0);
  CHECK(s.phase() == Phase::kSynchronized);
}

}  // namespace test_nri_plugin_session
