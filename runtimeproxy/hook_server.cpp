#include "runtimeproxy/hook_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include "runtimeproxy/hook_api.grpc.pb.h"

namespace koord::runtimeproxy {

const char* rpcName(Rpc rpc) {
  switch (rpc) {
    case Rpc::kPreRunPodSandbox:
      return "PreRunPodSandboxHook";
    case Rpc::kPostStopPodSandbox:
      return "PostStopPodSandboxHook";
    case Rpc::kPreCreateContainer:
      return "PreCreateContainerHook";
    case Rpc::kPreStartContainer:
      return "PreStartContainerHook";
    case Rpc::kPostStartContainer:
      return "PostStartContainerHook";
    case Rpc::kPostStopContainer:
      return "PostStopContainerHook";
    case Rpc::kPreUpdateContainerResources:
      return "PreUpdateContainerResourcesHook";
  }
  return "unknown";
}

HookStage stageOf(Rpc rpc) {
  switch (rpc) {
    case Rpc::kPreRunPodSandbox:
      return HookStage::kPreRunPodSandbox;
    case Rpc::kPostStopPodSandbox:
      return HookStage::kPostStopPodSandbox;
    case Rpc::kPreCreateContainer:
      return HookStage::kPreCreateContainer;
    case Rpc::kPreStartContainer:
      return HookStage::kPreStartContainer;
    case Rpc::kPostStartContainer:
      return HookStage::kPostStartContainer;
    case Rpc::kPostStopContainer:
      return HookStage::kPostStopContainer;
    case Rpc::kPreUpdateContainerResources:
      return HookStage::kPreUpdateContainerResources;
  }
  return HookStage::kPreCreateContainer;
}

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
  for (const auto& rpc : calls) {
    for (uint64_t c : rpc) n += c;
  }
  return n;
}

uint64_t HookServerStatus::failed() const {
  uint64_t n = 0;
  for (const auto& rpc : calls) {
    for (int o = 1; o < kOutcomeCount; ++o) n += rpc[static_cast<size_t>(o)];
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
      return Outcome::kFailedPrecondition;
    case CallCode::kResourceExhausted:
      return Outcome::kBusy;
  }
  return Outcome::kFailedPrecondition;
}

}  // namespace

// The generated service, each RPC one admission, one ProxyHooks call, one count.
class HookServer::Service final : public api::RuntimeHookService::Service {
 public:
  explicit Service(HookServer& server) : server_(&server) {}

  grpc::Status PreRunPodSandboxHook(grpc::ServerContext*, const api::PodSandboxHookRequest* req,
                                    api::PodSandboxHookResponse* resp) override {
    return sandbox(Rpc::kPreRunPodSandbox, *req, resp);
  }
  grpc::Status PostStopPodSandboxHook(grpc::ServerContext*, const api::PodSandboxHookRequest* req,
                                      api::PodSandboxHookResponse* resp) override {
    return sandbox(Rpc::kPostStopPodSandbox, *req, resp);
  }
  grpc::Status PreCreateContainerHook(grpc::ServerContext*,
                                      const api::ContainerResourceHookRequest* req,
                                      api::ContainerResourceHookResponse* resp) override {
    return container(Rpc::kPreCreateContainer, *req, resp);
  }
  grpc::Status PreStartContainerHook(grpc::ServerContext*,
                                     const api::ContainerResourceHookRequest* req,
                                     api::ContainerResourceHookResponse* resp) override {
    return container(Rpc::kPreStartContainer, *req, resp);
  }
  grpc::Status PostStartContainerHook(grpc::ServerContext*,
                                      const api::ContainerResourceHookRequest* req,
                                      api::ContainerResourceHookResponse* resp) override {
    return container(Rpc::kPostStartContainer, *req, resp);
  }
  grpc::Status PostStopContainerHook(grpc::ServerContext*,
                                     const api::ContainerResourceHookRequest* req,
                                     api::ContainerResourceHookResponse* resp) override {
    return container(Rpc::kPostStopContainer, *req, resp);
  }
  grpc::Status PreUpdateContainerResourcesHook(grpc::ServerContext*,
                                               const api::ContainerResourceHookRequest* req,
                                               api::ContainerResourceHookResponse* resp) override {
    return container(Rpc::kPreUpdateContainerResources, *req, resp);
  }

 private:
  template <typename Resp>
  grpc::Status finish(Rpc rpc, CallResult<Resp>& result, Resp* resp) {
    if (result.ok()) {
      *resp = std::move(*result.value);
      server_->finish(rpc, Outcome::kOk);
      return grpc::Status::OK;
    }
    server_->finish(rpc, outcomeOf(result.error->code));
    return grpc::Status(static_cast<grpc::StatusCode>(result.error->code),
                        std::move(result.error->message));
  }

  grpc::Status busy(Rpc rpc) {
    server_->finish(rpc, Outcome::kBusy);
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        std::string(rpcName(rpc)) + ": too many hook calls in flight");
  }

  grpc::Status sandbox(Rpc rpc, const api::PodSandboxHookRequest& req,
                       api::PodSandboxHookResponse* resp) {
    if (!server_->admit()) return busy(rpc);
    auto result = server_->hooks().podSandbox(stageOf(rpc), req);
    return finish(rpc, result, resp);
  }

  grpc::Status container(Rpc rpc, const api::ContainerResourceHookRequest& req,
                         api::ContainerResourceHookResponse* resp) {
    if (!server_->admit()) return busy(rpc);
    auto result = server_->hooks().container(stageOf(rpc), req);
    return finish(rpc, result, resp);
  }

  HookServer* server_;
};

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
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    const int err = errno;
    return makeError(path + ": removing the stale socket: " + std::strerror(err), err);
  }
  return Ok{};
}

HookServer::HookServer(HookServerConfig config, ProxyHooks& hooks)
    : config_(std::move(config)), hooks_(&hooks), service_(std::make_unique<Service>(*this)) {}

HookServer::~HookServer() { stop(std::chrono::milliseconds(0)); }

bool HookServer::admit() {
  if (inFlight_.fetch_add(1, std::memory_order_acq_rel) >= config_.maxInFlight) {
    inFlight_.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }
  return true;
}

void HookServer::finish(Rpc rpc, Outcome outcome) {
  if (outcome != Outcome::kBusy) inFlight_.fetch_sub(1, std::memory_order_acq_rel);
  calls_[static_cast<size_t>(rpc)][static_cast<size_t>(outcome)].fetch_add(
      1, std::memory_order_relaxed);
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
  builder.RegisterService(service_.get());
  builder.SetMaxReceiveMessageSize(config_.maxMessageBytes);
  builder.SetMaxSendMessageSize(config_.maxMessageBytes);
  grpc::ResourceQuota quota("koordlet-runtime-hook-server");
  quota.SetMaxThreads(config_.maxThreads);
  builder.SetResourceQuota(quota);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
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
  if (config_.network == "unix") ::unlink(config_.address.c_str());
  lastError_ = "stopped";
}

HookServerStatus HookServer::status() const {
  HookServerStatus st;
  st.serving = server_ != nullptr;
  st.endpoint = endpoint_;
  st.lastError = lastError_;
  for (size_t r = 0; r < kRpcCount; ++r) {
    for (size_t o = 0; o < kOutcomeCount; ++o) {
      st.calls[r][o] = calls_[r][o].load(std::memory_order_relaxed);
    }
  }
  return st;
}

}  // namespace koord::runtimeproxy
