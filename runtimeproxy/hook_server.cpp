#include "runtimeproxy/hook_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include "base/quote.h"

namespace koord::runtimeproxy {

std::string rpcName(HookStage stage) { return std::string(toString(stage)) + "Hook"; }

const char* toString(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "OK";
    case Outcome::kInvalidArgument:
      return "InvalidArgument";
    case Outcome::kFailedPrecondition:
      return "FailedPrecondition";
    case Outcome::kBusy:
      return "ResourceExhausted";
  }
  return "unknown";
}

uint64_t HookServerStatus::total() const {
  uint64_t n = 0;
  for (const auto& stage : calls) {
    for (uint64_t c : stage) n += c;
  }
  return n;
}

uint64_t HookServerStatus::failed() const {
  uint64_t n = 0;
  for (const auto& stage : calls) {
    for (size_t o = 1; o < kOutcomeCount; ++o) n += stage[o];
  }
  return n;
}

namespace {

Outcome outcomeOf(CallCode code) {
  switch (code) {
    case CallCode::kOk:
      return Outcome::kOk;
    case CallCode::kInvalidArgument:
      return Outcome::kInvalidArgument;
    case CallCode::kFailedPrecondition:
      break;
  }
  return Outcome::kFailedPrecondition;
}

// Whether something accepts connections on the unix socket at `path`.
bool socketServed(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    ::close(fd);
    return false;
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const bool served = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return served;
}

}  // namespace

// The service as raw messages on gRPC's callback API. Raw, not the generated typed
// service: a request that does not parse (garbage, a string that is not UTF-8) then
// gets InvalidArgument naming the RPC and the message type, and is counted, where the
// typed service answers Unimplemented before any code of ours runs. Callbacks, not the
// sync API: an answer is handed to gRPC and sent without holding a thread (the sync
// server's threads wait until the answer is sent, so a client that stops reading held
// one per open stream, and enough of them stopped every other caller).
class HookServer::Service final : public grpc::CallbackGenericService {
 public:
  explicit Service(HookServer& server) : server_(&server) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new Call(*server_, ctx->method());
  }

 private:
  // One unary call: read the request, answer, finish; deleted by gRPC's OnDone.
  class Call final : public grpc::ServerGenericBidiReactor {
   public:
    Call(HookServer& server, const std::string& method) : server_(&server) {
      stage_ = stageOfMethod(method);
      if (!stage_) {
        Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                            "unknown method " + quoteText(method, 120)));
        return;
      }
      StartRead(&request_);
    }
    void OnReadDone(bool ok) override {
      if (!ok) {  // the client half-closed without a message, or went away
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            rpcName(*stage_) + ": no request message"));
        return;
      }
      std::string wire;
      grpc::Status status = server_->answer(*stage_, flatten(request_), &wire);
      if (!status.ok()) {
        Finish(std::move(status));
        return;
      }
      grpc::Slice slice(wire);
      response_ = grpc::ByteBuffer(&slice, 1);
      StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
    }
    void OnDone() override { delete this; }

   private:
    static std::string flatten(const grpc::ByteBuffer& buffer) {
      std::vector<grpc::Slice> slices;
      std::string out;
      if (!buffer.Dump(&slices).ok()) return out;
      out.reserve(buffer.Length());
      for (const grpc::Slice& s : slices) {
        out.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
      return out;
    }

    HookServer* server_;
    std::optional<HookStage> stage_;
    grpc::ByteBuffer request_;
    grpc::ByteBuffer response_;
  };

  HookServer* server_;
};

std::optional<HookStage> stageOfMethod(std::string_view method) {
  constexpr std::string_view kPrefix = "/runtime.v1alpha1.RuntimeHookService/";
  if (!method.starts_with(kPrefix)) return std::nullopt;
  method.remove_prefix(kPrefix.size());
  for (HookStage stage : kRpcStages) {
    if (method == rpcName(stage)) return stage;
  }
  return std::nullopt;
}

grpc::Status HookServer::answer(HookStage stage, const std::string& request, std::string* wire) {
  const auto start = std::chrono::steady_clock::now();
  Slot slot(*this);
  if (!slot.admitted()) {
    count(stage, Outcome::kBusy, std::chrono::steady_clock::now() - start);
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        rpcName(stage) + ": too many hook calls in flight");
  }
  auto fail = [&](CallError e) {
    count(stage, outcomeOf(e.code), std::chrono::steady_clock::now() - start);
    return grpc::Status(static_cast<grpc::StatusCode>(e.code), std::move(e.message));
  };
  auto unparsable = [&](const char* type) {
    return fail(CallError{CallCode::kInvalidArgument,
                          rpcName(stage) + ": the request (" + std::to_string(request.size()) +
                              " bytes) is not a valid " + type +
                              " (malformed, or a string that is not UTF-8)"});
  };
  bool serialized = false;
  if (stage == HookStage::kPreRunPodSandbox || stage == HookStage::kPostStopPodSandbox) {
    api::PodSandboxHookRequest req;
    if (!req.ParseFromString(request)) return unparsable("PodSandboxHookRequest");
    auto result = hooks_->podSandbox(stage, req);
    if (!result.ok()) return fail(std::move(*result.error));
    serialized = result.value->SerializeToString(wire);
  } else {
    api::ContainerResourceHookRequest req;
    if (!req.ParseFromString(request)) return unparsable("ContainerResourceHookRequest");
    auto result = hooks_->container(stage, req);
    if (!result.ok()) return fail(std::move(*result.error));
    serialized = result.value->SerializeToString(wire);
  }
  if (!serialized) {  // cannot happen: our answers hold only what a request held
    return fail(CallError{CallCode::kFailedPrecondition, rpcName(stage) + ": answer not encoded"});
  }
  count(stage, Outcome::kOk, std::chrono::steady_clock::now() - start);
  return grpc::Status::OK;
}

Status prepareSocketPath(const std::string& path) {
  if (path.empty()) return makeError("the socket path is empty");
  std::error_code ec;
  const std::filesystem::path p(path);
  if (p.has_parent_path()) {
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) return makeError(p.parent_path().string() + ": " + ec.message(), ec.value());
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Ok{};
    const int err = errno;
    return makeError(path + ": " + std::strerror(err), err);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return makeError(path + ": exists and is not a socket; not replacing it");
  }
  if (socketServed(path)) {
    return makeError(path +
                     ": another process serves this socket (another agent?); not taking "
                     "it over");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    const int err = errno;
    return makeError(path + ": removing the stale socket: " + std::strerror(err), err);
  }
  return Ok{};
}

HookServer::HookServer(HookServerConfig config, ProxyHooks& hooks)
    : config_(std::move(config)), hooks_(&hooks), service_(std::make_unique<Service>(*this)) {}

HookServer::~HookServer() { stop(std::chrono::milliseconds(0)); }

HookServer::Slot::Slot(HookServer& s)
    : server_(&s),
      admitted_(s.inFlight_.fetch_add(1, std::memory_order_acq_rel) < s.config_.maxInFlight) {}

HookServer::Slot::~Slot() { server_->inFlight_.fetch_sub(1, std::memory_order_acq_rel); }

void HookServer::count(HookStage stage, Outcome outcome, std::chrono::steady_clock::duration took) {
  calls_[static_cast<size_t>(stage)][static_cast<size_t>(outcome)].fetch_add(
      1, std::memory_order_relaxed);
  if (took > config_.deadline) overDeadline_.fetch_add(1, std::memory_order_relaxed);
}

Status HookServer::start() {
  if (server_) return Ok{};
  std::string uri;
  if (config_.network == "unix") {
    if (Status s = prepareSocketPath(config_.address); !s) {
      lastError_ = s.error().message;
      return s;
    }
    uri = "unix:" + config_.address;
  } else if (config_.network == "tcp" || config_.network == "tcp4" || config_.network == "tcp6") {
    uri = config_.address;
  } else {
    lastError_ = "network \"" + config_.network + "\": expected unix, tcp, tcp4 or tcp6";
    return makeError(lastError_);
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(uri, grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(service_.get());
  builder.SetMaxReceiveMessageSize(config_.maxMessageBytes);
  builder.SetMaxSendMessageSize(config_.maxMessageBytes);
  grpc::ResourceQuota quota("koordlet-runtime-hook-server");
  quota.SetMaxThreads(config_.maxThreads);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, config_.maxStreamsPerConnection);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(config_.handshakeTimeout.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(config_.idleTimeout.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                             static_cast<int>(config_.maxAge.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                             static_cast<int>(config_.maxAgeGrace.count()));
  server_ = builder.BuildAndStart();
  if (!server_ || port == 0) {
    server_.reset();
    lastError_ = "cannot listen on " + config_.network + " " + config_.address;
    return makeError(lastError_);
  }
  if (config_.network == "unix") {
    ::chmod(config_.address.c_str(), 0660);
    endpoint_ = "unix://" + config_.address;
  } else {
    endpoint_ = config_.address;
    const auto colon = endpoint_.rfind(':');
    if (colon != std::string::npos)
      endpoint_ = endpoint_.substr(0, colon + 1) + std::to_string(port);
  }
  lastError_.clear();
  return Ok{};
}

void HookServer::stop(std::chrono::milliseconds grace) {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
  server_.reset();
  lastError_ = "stopped";
}

HookServerStatus HookServer::status() const {
  HookServerStatus st;
  st.serving = server_ != nullptr;
  st.endpoint = endpoint_;
  st.lastError = lastError_;
  for (size_t r = 0; r < kStageCount; ++r) {
    for (size_t o = 0; o < kOutcomeCount; ++o) {
      st.calls[r][o] = calls_[r][o].load(std::memory_order_relaxed);
    }
  }
  st.overDeadline = overDeadline_.load(std::memory_order_relaxed);
  return st;
}

}  // namespace koord::runtimeproxy
