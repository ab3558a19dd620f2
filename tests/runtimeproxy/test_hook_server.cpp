// The hook server (runtimeproxy/hook_server.h) over a real unix socket with a
// real gRPC client from the same proto: every RPC answers, the socket is
// prepared safely, and the bounds hold: calls over the in-flight limit, an
// oversized message, garbage bytes and a silent client each cost that client
// only, and the server keeps serving.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "runtimeproxy/hook_api.grpc.pb.h"
#include "runtimeproxy/hook_server.h"
#include "tests/support/temp_tree.h"
#include "tests/support/unix_socket.h"

namespace test_runtimeproxy_hook_server {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::runtimeproxy;
using namespace std::chrono_literals;
using koord::test::connectUnix;

namespace {

std::unique_ptr<api::RuntimeHookService::Stub> stubFor(const std::string& socket) {
  return api::RuntimeHookService::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
}

api::ContainerResourceHookRequest beRequest() {
  api::ContainerResourceHookRequest req;
  req.mutable_pod_meta()->set_uid("u1");
  req.mutable_pod_meta()->set_name("batch");
  req.mutable_pod_meta()->set_namespace_("default");
  req.mutable_container_meta()->set_name("main");
  (*req.mutable_pod_labels())["koordinator.sh/qosClass"] = "BE";
  (*req.mutable_pod_annotations())["node.koordinator.sh/extended-resource-spec"] =
      R"({"containers":{"main":{"limits":{"kubernetes.io/batch-cpu":"500"}}}})";
  req.set_pod_cgroup_parent("/kubepods/besteffort/podu1");
  req.mutable_container_resources()->set_cpu_shares(2);
  return req;
}

// A server on a socket in a temp dir, with the default NodeSLO published.
struct Fixture {
  koord::test::TempTree tmp;
  std::string socket = tmp.path("run/koordlet.sock");
  HookStateStore store;
  ProxyHooks hooks{store, nullptr, FailurePolicy::kIgnore};
  std::unique_ptr<HookServer> server;

  explicit Fixture(HookServerConfig c = {}) {
    auto state = std::make_shared<HookState>();
    state->spec = defaultNodeSlo();
    store.publish(state);
    c.network = "unix";
    c.address = socket;
    server = std::make_unique<HookServer>(c, hooks);
    auto s = server->start();
    INFO((s.ok() ? "" : s.error().message));
    REQUIRE(s.ok());
  }

  grpc::Status create(const api::ContainerResourceHookRequest& req,
                      api::ContainerResourceHookResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    return stubFor(socket)->PreCreateContainerHook(&ctx, req, resp);
  }
};

}  // namespace

TEST_CASE("every RPC of RuntimeHookService answers over the unix socket", "[hook-server]") {
  Fixture f;
  auto stub = stubFor(f.socket);
  api::PodSandboxHookRequest sandbox;
  sandbox.mutable_pod_meta()->set_uid("u1");
  sandbox.set_cgroup_parent("/kubepods/besteffort/podu1");
  api::PodSandboxHookResponse sresp;
  {
    grpc::ClientContext ctx;
    CHECK(stub->PreRunPodSandboxHook(&ctx, sandbox, &sresp).ok());
  }
  {
    grpc::ClientContext ctx;
    CHECK(stub->PostStopPodSandboxHook(&ctx, sandbox, &sresp).ok());
  }
  api::ContainerResourceHookResponse resp;
  {
    grpc::ClientContext ctx;
    REQUIRE(stub->PreCreateContainerHook(&ctx, beRequest(), &resp).ok());
    CHECK(resp.container_resources().cpu_shares() == 2);  // no batch-cpu request: 0 -> 2
    CHECK(resp.container_resources().cpu_quota() == 50000);
  }
  using Call = grpc::Status (api::RuntimeHookService::Stub::*)(
      grpc::ClientContext*, const api::ContainerResourceHookRequest&,
      api::ContainerResourceHookResponse*);
  for (Call call :
       {static_cast<Call>(&api::RuntimeHookService::Stub::PreStartContainerHook),
        static_cast<Call>(&api::RuntimeHookService::Stub::PostStartContainerHook),
        static_cast<Call>(&api::RuntimeHookService::Stub::PostStopContainerHook),
        static_cast<Call>(&api::RuntimeHookService::Stub::PreUpdateContainerResourcesHook)}) {
    grpc::ClientContext ctx;
    CHECK(((*stub).*call)(&ctx, beRequest(), &resp).ok());
  }
  const HookServerStatus st = f.server->status();
  CHECK(st.serving);
  CHECK(st.endpoint == "unix://" + f.socket);
  CHECK(st.total() == 7);
  CHECK(st.failed() == 0);
  for (HookStage stage : kRpcStages) CHECK(st.count(stage, Outcome::kOk) == 1);
  CHECK(st.overDeadline == 0);
  struct stat sb {};
  REQUIRE(::stat(f.socket.c_str(), &sb) == 0);
  CHECK((sb.st_mode & 0777) == 0660);
  f.server->stop();
  CHECK_FALSE(std::filesystem::exists(f.socket));  // removed on stop
  CHECK_FALSE(f.server->status().serving);
}

TEST_CASE("bad input gets InvalidArgument, counted, and the server keeps serving",
          "[hook-server]") {
  Fixture f;
  auto req = beRequest();
  req.clear_pod_meta();
  api::ContainerResourceHookResponse resp;
  grpc::Status s = f.create(req, &resp);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message() == "PreCreateContainerHook: pod_meta is missing");
  CHECK(f.create(beRequest(), &resp).ok());
  const HookServerStatus st = f.server->status();
  CHECK(st.count(HookStage::kPreCreateContainer, Outcome::kInvalidArgument) == 1);
  CHECK(st.count(HookStage::kPreCreateContainer, Outcome::kOk) == 1);
}

namespace {

// Raw bytes to any method, through gRPC's generic stub: what no typed client can send.
grpc::Status rawCall(const std::string& socket, const std::string& method,
                     const std::string& bytes) {
  grpc::GenericStub stub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status st) { done.set_value(std::move(st)); });
  return done.get_future().get();
}

}  // namespace

TEST_CASE("a request that does not parse gets InvalidArgument, an unknown method Unimplemented",
          "[hook-server]") {
  Fixture f;
  const std::string create = "/runtime.v1alpha1.RuntimeHookService/PreCreateContainerHook";
  // Not protobuf: a field tag with a length running past the end.
  grpc::Status s = rawCall(f.socket, create, "\x0a\x7f\x01\x02");
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message() ==
        "PreCreateContainerHook: the request (4 bytes) is not a valid "
        "ContainerResourceHookRequest (malformed, or a string that is not UTF-8)");
  // pod_meta { uid: "\xff\xfe" }: proto3 strings must be UTF-8.
  s = rawCall(f.socket, "/runtime.v1alpha1.RuntimeHookService/PreRunPodSandboxHook",
              std::string("\x0a\x04\x12\x02\xff\xfe", 6));
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message().find("not a valid PodSandboxHookRequest") != std::string::npos);
  s = rawCall(f.socket, "/runtime.v1alpha1.RuntimeHookService/PreRemoveRunPodSandboxHook", "");
  CHECK(s.error_code() == grpc::StatusCode::UNIMPLEMENTED);
  CHECK(s.error_message() ==
        "unknown method \"/runtime.v1alpha1.RuntimeHookService/PreRemoveRunPodSandboxHook\"");
  // An empty message is a valid (empty) request: refused for what it lacks.
  s = rawCall(f.socket, create, "");
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message() == "PreCreateContainerHook: pod_meta is missing");
  const HookServerStatus st = f.server->status();
  CHECK(st.count(HookStage::kPreCreateContainer, Outcome::kInvalidArgument) == 2);
  CHECK(st.count(HookStage::kPreRunPodSandbox, Outcome::kInvalidArgument) == 1);
  api::ContainerResourceHookResponse resp;
  CHECK(f.create(beRequest(), &resp).ok());
}

TEST_CASE("method names map to their stages", "[hook-server]") {
  for (HookStage stage : kRpcStages) {
    CHECK(stageOfMethod("/runtime.v1alpha1.RuntimeHookService/" + rpcName(stage)) == stage);
  }
  CHECK_FALSE(stageOfMethod("/runtime.v1alpha1.RuntimeHookService/PreRemoveRunPodSandboxHook"));
  CHECK_FALSE(stageOfMethod("/other.Service/PreCreateContainerHook"));
  CHECK_FALSE(stageOfMethod("PreCreateContainerHook"));
}

TEST_CASE("an oversized message is refused by gRPC before it reaches the hooks", "[hook-server]") {
  HookServerConfig c;
  c.maxMessageBytes = 64 * 1024;
  Fixture f(c);
  auto req = beRequest();
  (*req.mutable_pod_annotations())["huge"] = std::string(100 * 1024, 'x');
  api::ContainerResourceHookResponse resp;
  CHECK(f.create(req, &resp).error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(f.server->status().total() == 0);
  CHECK(f.create(beRequest(), &resp).ok());
}

TEST_CASE("calls over the in-flight bound are refused at once, never queued", "[hook-server]") {
  HookServerConfig c;
  c.maxInFlight = 0;  // every call is over the bound
  Fixture f(c);
  api::ContainerResourceHookResponse resp;
  grpc::Status s = f.create(beRequest(), &resp);
  CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(s.error_message() == "PreCreateContainerHook: too many hook calls in flight");
  CHECK(f.server->status().count(HookStage::kPreCreateContainer, Outcome::kBusy) == 1);
  // The admission itself: the bound is exact, and a slot is released however its
  // call ends (an exception thrown through it included).
  HookServerConfig one;
  one.maxInFlight = 1;
  HookStateStore store;
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  HookServer server(one, hooks);
  {
    HookServer::Slot a(server);
    CHECK(a.admitted());
    HookServer::Slot b(server);
    CHECK_FALSE(b.admitted());
  }
  try {
    HookServer::Slot c(server);
    CHECK(c.admitted());
    throw std::runtime_error("a hook threw");
  } catch (const std::runtime_error&) {
  }
  HookServer::Slot d(server);
  CHECK(d.admitted());
}

TEST_CASE("garbage bytes close their connection, and a client that says nothing costs nothing else",
          "[hook-server]") {
  Fixture f;
  // Garbage: not an HTTP/2 preface. The server closes that connection.
  const int bad = connectUnix(f.socket);
  REQUIRE(bad >= 0);
  const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(4096, '\xff');
  CHECK(::write(bad, junk.data(), junk.size()) > 0);
  // Silent: connects and never sends a byte, holding its connection.
  const int silent = connectUnix(f.socket);
  REQUIRE(silent >= 0);
  api::ContainerResourceHookResponse resp;
  CHECK(f.create(beRequest(), &resp).ok());
  // Garbage is not HTTP/2: the server closes that connection (EOF or reset).
  timeval tv{5, 0};
  ::setsockopt(bad, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[256];
  ssize_t n = 0;
  do {
    n = ::read(bad, buf, sizeof buf);
  } while (n > 0);
  CHECK(n <= 0);
  CHECK((n == 0 || errno != EAGAIN));
  // The silent one holds its connection (gRPC bounds a connection's life only once it
  // has spoken HTTP/2), and costs only that: calls on other connections go on.
  for (int i = 0; i < 3; ++i) CHECK(f.create(beRequest(), &resp).ok());
  ::close(bad);
  ::close(silent);
  CHECK(f.create(beRequest(), &resp).ok());
  CHECK(f.server->status().failed() == 0);
}

TEST_CASE("a stale socket is replaced and anything else at the path is refused", "[hook-server]") {
  koord::test::TempTree tmp;
  const std::string path = tmp.path("run/hooks/koordlet.sock");
  CHECK(prepareSocketPath(path).ok());  // creates the directory
  CHECK(std::filesystem::is_directory(tmp.path("run/hooks")));
  // A socket left by a killed agent: bound, nobody listening.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  ::close(fd);
  REQUIRE(std::filesystem::is_socket(path));
  CHECK(prepareSocketPath(path).ok());
  CHECK_FALSE(std::filesystem::exists(path));
  // A regular file is not ours to delete.
  std::ofstream(path) << "data";
  auto refused = prepareSocketPath(path);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message == path + ": exists and is not a socket; not replacing it");
  CHECK(std::filesystem::exists(path));

  HookStateStore store;
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  HookServerConfig c;
  c.address = path;
  HookServer server(c, hooks);
  CHECK_FALSE(server.start().ok());
  CHECK_FALSE(server.status().serving);
  CHECK(server.status().lastError == refused.error().message);
}

TEST_CASE(
    "a socket another server still serves is not taken over, and stop removes only its "
    "own socket",
    "[hook-server]") {
  Fixture first;
  HookStateStore store;
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  HookServerConfig c;
  c.address = first.socket;
  HookServer second(c, hooks);
  auto refused = second.start();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("another process serves this socket") != std::string::npos);
  api::ContainerResourceHookResponse resp;
  CHECK(first.create(beRequest(), &resp).ok());  // the first one still serves
  first.server->stop();
  CHECK_FALSE(std::filesystem::exists(first.socket));  // gRPC removes it on shutdown
  REQUIRE(second.start().ok());                        // and now the path is free
  CHECK(second.status().serving);
}

namespace {

// HTTP/2 by hand: a client that sends calls and never reads the answers.
std::string frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  f.push_back(static_cast<char>((payload.size() >> 16) & 0xff));
  f.push_back(static_cast<char>((payload.size() >> 8) & 0xff));
  f.push_back(static_cast<char>(payload.size() & 0xff));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8)
    f.push_back(static_cast<char>((stream >> shift) & 0xff));
  return f + payload;
}

// An HPACK literal header field without indexing, new name (lengths < 127).
std::string literal(const std::string& name, const std::string& value) {
  std::string out(1, '\0');
  out.push_back(static_cast<char>(name.size()));
  out += name;
  out.push_back(static_cast<char>(value.size()));
  out += value;
  return out;
}

}  // namespace

TEST_CASE("a client that sends calls and stops reading costs nothing else", "[hook-server]") {
  Fixture f;
  const int fd = connectUnix(f.socket);
  REQUIRE(fd >= 0);
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, "");
  const std::string headers =
      literal(":method", "POST") + literal(":scheme", "http") +
      literal(":path", "/runtime.v1alpha1.RuntimeHookService/PreCreateContainerHook") +
      literal(":authority", "localhost") + literal("content-type", "application/grpc") +
      literal("te", "trailers");
  std::string message = beRequest().SerializeAsString();
  std::string grpcMessage(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) {
    grpcMessage.push_back(static_cast<char>((message.size() >> shift) & 0xff));
  }
  grpcMessage += message;
  // 2,000 calls on streams 1, 3, 5, ...: far more answers than the client's 64 KiB
  // window and the socket's buffer hold, none of them read.
  for (uint32_t stream = 1; stream < 4000; stream += 2) {
    out += frame(1, 0x4, stream, headers);      // HEADERS, END_HEADERS
    out += frame(0, 0x1, stream, grpcMessage);  // DATA, END_STREAM
  }
  size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n = ::write(fd, out.data() + sent, out.size() - sent);
    if (n <= 0) break;  // the server stopped reading us too: fine, bounded
    sent += static_cast<size_t>(n);
  }
  // Meanwhile everyone else is answered.
  api::ContainerResourceHookResponse resp;
  for (int i = 0; i < 10; ++i) REQUIRE(f.create(beRequest(), &resp).ok());
  CHECK(resp.container_resources().cpu_shares() == 2);
  ::close(fd);
  for (int i = 0; i < 3; ++i) REQUIRE(f.create(beRequest(), &resp).ok());
}

TEST_CASE("tcp is served when asked, on the port the kernel picks for :0", "[hook-server]") {
  HookStateStore store;
  auto state = std::make_shared<HookState>();
  state->spec = defaultNodeSlo();
  store.publish(state);
  ProxyHooks hooks(store, nullptr, FailurePolicy::kIgnore);
  HookServerConfig c;
  c.network = "tcp";
  c.address = "127.0.0.1:0";
  HookServer server(c, hooks);
  REQUIRE(server.start().ok());
  const std::string endpoint = server.status().endpoint;
  CHECK(endpoint.rfind("127.0.0.1:", 0) == 0);
  CHECK(endpoint != "127.0.0.1:0");
  auto stub = api::RuntimeHookService::NewStub(
      grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  api::ContainerResourceHookResponse resp;
  CHECK(stub->PreCreateContainerHook(&ctx, beRequest(), &resp).ok());
  HookServerConfig bad;
  bad.network = "udp";
  bad.address = "x";
  HookServer other(bad, hooks);
  auto s = other.start();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "network \"udp\": expected unix, tcp, tcp4 or tcp6");
}

}  // namespace test_runtimeproxy_hook_server
