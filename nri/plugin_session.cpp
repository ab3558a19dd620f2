#include "nri/plugin_session.h"

#include <utility>

#include "base/log.h"

namespace koord::nri {
namespace {

constexpr uint32_t kRegisterStream = 1;

// NRI v0.12's dedicated per-event methods, served as the StateChange they replace.
struct DedicatedMethod {
  std::string_view method;
  api::Event event;
};
constexpr DedicatedMethod kDedicatedMethods[] = {
    {"RunPodSandbox", api::RUN_POD_SANDBOX},
    {"StopPodSandbox", api::STOP_POD_SANDBOX},
    {"RemovePodSandbox", api::REMOVE_POD_SANDBOX},
    {"PostCreateContainer", api::POST_CREATE_CONTAINER},
    {"StartContainer", api::START_CONTAINER},
    {"PostStartContainer", api::POST_START_CONTAINER},
    {"PostUpdateContainer", api::POST_UPDATE_CONTAINER},
    {"RemoveContainer", api::REMOVE_CONTAINER},
};

std::string framed(uint32_t connId, uint32_t streamId, MessageType type, std::string_view data) {
  std::string out;
  appendFrames(out, connId, encodeMessage(streamId, type, data));
  return out;
}

}  // namespace

PluginSession::PluginSession(SessionConfig config, NriHandler& handler)
    : config_(std::move(config)), handler_(&handler) {}

std::string PluginSession::start() {
  api::RegisterPluginRequest req;
  req.set_plugin_name(config_.pluginName);
  req.set_plugin_idx(config_.pluginIndex);
  if (!config_.nriVersion.empty()) req.set_nri_version(config_.nriVersion);
  registerPending_ = true;
  phase_ = Phase::kRegistering;
  nextStream_ = kRegisterStream + 2;
  std::string body = encodeRequest(kRuntimeService, "RegisterPlugin", req.SerializeAsString(),
                                   config_.requestTimeout.count());
  return framed(kRuntimeServiceConn, kRegisterStream, MessageType::kRequest, body);
}

std::string PluginSession::updateContainers(const api::UpdateContainersRequest& req) {
  std::string body = encodeRequest(kRuntimeService, "UpdateContainers", req.SerializeAsString(),
                                   config_.requestTimeout.count());
  if (body.size() > kMaxTtrpcMessage) {
    KLOG_WARNING << "NRI UpdateContainers for " << req.update_size()
                 << " container(s) not sent: " << body.size() << " bytes exceed the 4 MiB limit";
    return {};
  }
  uint32_t stream = nextStream_;
  nextStream_ += 2;
  pendingUpdates_.insert(stream);
  return framed(kRuntimeServiceConn, stream, MessageType::kRequest, body);
}

void PluginSession::advance(Phase to) {
  if (phase_ != Phase::kFailed && to > phase_) phase_ = to;
}

Result<std::string> PluginSession::receive(std::string_view bytes) {
  if (phase_ == Phase::kFailed) return makeError("NRI session already failed");
  if (auto st = mux_.feed(bytes); !st) {
    phase_ = Phase::kFailed;
    ++stats_.protocolErrors;
    return st.error();
  }
  // Replies to our calls first: a refused registration ends the session before we
  // serve anything that arrived with it.
  std::string& runtimeStream = mux_.stream(kRuntimeServiceConn);
  for (;;) {
    auto next = nextMessage(runtimeStream);
    if (!next) {
      phase_ = Phase::kFailed;
      ++stats_.protocolErrors;
      return makeError("runtime service conn: " + next.error().message);
    }
    if (!next->has_value()) break;
    if (auto st = onResponse(**next); !st) {
      phase_ = Phase::kFailed;
      return st.error();
    }
  }
  std::string out;
  std::string& pluginStream = mux_.stream(kPluginServiceConn);
  for (;;) {
    auto next = nextMessage(pluginStream);
    if (!next) {
      phase_ = Phase::kFailed;
      ++stats_.protocolErrors;
      return makeError("plugin service conn: " + next.error().message);
    }
    if (!next->has_value()) break;
    const TtrpcMessage& msg = **next;
    // Go's ttrpc server skips what is not a request, for forward compatibility.
    if (msg.type != MessageType::kRequest) continue;
    std::string reply;
    // Stream ids: odd, increasing (Go ttrpc answers violations with code 3).
    if (msg.streamId % 2 != 1) {
      ++stats_.handlerErrors;
      reply = encodeErrorResponse(Code::kInvalidArgument,
                                  "StreamID must be odd for client initiated streams");
    } else if (msg.streamId <= lastPeerStream_) {
      ++stats_.handlerErrors;
      reply = encodeErrorResponse(Code::kInvalidArgument,
                                  "StreamID cannot be re-used and must increment");
    } else {
      lastPeerStream_ = msg.streamId;
      wire::Request req;
      if (!req.ParseFromString(msg.data)) {
        phase_ = Phase::kFailed;
        ++stats_.protocolErrors;
        return makeError("plugin service conn: unparsable ttrpc request on stream " +
                         std::to_string(msg.streamId));
      }
      ++stats_.requests;
      if (req.service() != kPluginService) {
        ++stats_.unimplemented;
        reply = encodeErrorResponse(Code::kUnimplemented, "service " + req.service());
      } else {
        reply = dispatch(req.method(), req.payload());
      }
    }
    if (reply.size() > kMaxTtrpcMessage) {
      // A Go peer fails the call on a message over 4 MiB; say why instead.
      reply = failed(Code::kResourceExhausted,
                     "reply of " + std::to_string(reply.size()) + " bytes exceeds the 4 MiB limit");
    }
    appendFrames(out, kPluginServiceConn,
                 encodeMessage(msg.streamId, MessageType::kResponse, reply));
    // A refused Synchronize: its reply goes out, nothing after it is served.
    if (phase_ == Phase::kFailed) break;
  }
  return out;
}

std::string PluginSession::failed(Code code, std::string_view message) {
  if (code == Code::kUnimplemented) {
    ++stats_.unimplemented;
  } else {
    ++stats_.handlerErrors;
  }
  return encodeErrorResponse(code, message);
}

std::string PluginSession::dispatch(const std::string& method, const std::string& payload) {
  auto unparsable = [&] {
    return failed(Code::kInvalidArgument, "unparsable " + method + " request");
  };

  if (method == "Configure") {
    api::ConfigureRequest req;
    if (!req.ParseFromString(payload)) return unparsable();
    auto events = handler_->configure(req);
    if (!events) return failed(Code::kUnknown, events.error().message);
    runtimeName_ = req.runtime_name();
    runtimeVersion_ = req.runtime_version();
    runtimeNriVersion_ = req.nri_version();
    requestTimeoutMs_ = req.request_timeout();
    events_ = *events;
    advance(Phase::kConfigured);
    api::ConfigureResponse resp;
    resp.set_events(events_);
    return encodeOkResponse(resp.SerializeAsString());
  }

  if (method == "Synchronize") return synchronize(payload);

  if (method == "CreateContainer") {
    api::CreateContainerRequest req;
    if (!req.ParseFromString(payload)) return unparsable();
    auto resp = handler_->createContainer(req);
    if (!resp) return failed(Code::kUnknown, resp.error().message);
    return encodeOkResponse(resp->SerializeAsString());
  }

  if (method == "UpdateContainer") {
    api::UpdateContainerRequest req;
    if (!req.ParseFromString(payload)) return unparsable();
    auto resp = handler_->updateContainer(req);
    if (!resp) return failed(Code::kUnknown, resp.error().message);
    return encodeOkResponse(resp->SerializeAsString());
  }

  if (method == "StopContainer") {
    api::StopContainerRequest req;
    if (!req.ParseFromString(payload)) return unparsable();
    auto resp = handler_->stopContainer(req);
    if (!resp) return failed(Code::kUnknown, resp.error().message);
    return encodeOkResponse(resp->SerializeAsString());
  }

  if (method == "StateChange") {
    api::StateChangeEvent event;
    if (!event.ParseFromString(payload)) return unparsable();
    ++stats_.stateChangeCalls;
    if (auto st = handler_->stateChange(event); !st) {
      return failed(Code::kUnknown, st.error().message);
    }
    return encodeOkResponse({});
  }

  if (method == "Shutdown") return encodeOkResponse({});  // never sent by any runtime

  for (const auto& d : kDedicatedMethods) {
    if (method == d.method) return stateChange(method, d.event, payload);
  }
  return failed(Code::kUnimplemented, "method " + method);
}

std::string PluginSession::synchronize(const std::string& payload) {
  const SyncLimits& limits = config_.syncLimits;
  // Sizes are checked before anything is parsed or kept. Both terms are at most
  // kMaxReceiveMessage-ish (one message, and what passed this check before): no wrap.
  const size_t bytes = pendingSyncBytes_ + payload.size();
  if (bytes > limits.maxBytes) {
    return refuseSync("Synchronize of " + std::to_string(bytes) +
                      " bytes exceeds the plugin's limit of " + std::to_string(limits.maxBytes));
  }
  api::SynchronizeRequest req;
  if (!req.ParseFromString(payload)) {
    return failed(Code::kInvalidArgument, "unparsable Synchronize request");
  }
  ++stats_.syncChunks;
  const size_t pods = bufferedSyncPods() + static_cast<size_t>(req.pods_size());
  const size_t containers = bufferedSyncContainers() + static_cast<size_t>(req.containers_size());
  if (pods > limits.maxPods || containers > limits.maxContainers) {
    return refuseSync("Synchronize of " + std::to_string(pods) + " pods and " +
                      std::to_string(containers) + " containers exceeds the plugin's limit of " +
                      std::to_string(limits.maxPods) + " pods and " +
                      std::to_string(limits.maxContainers) + " containers");
  }
  if (req.more()) {
    // A chunk of a split sync: keep it, answer more=true with no updates.
    pendingSync_.MergeFrom(req);
    pendingSyncBytes_ = bytes;
    syncBuffered_ = true;
    api::SynchronizeResponse resp;
    resp.set_more(true);
    return encodeOkResponse(resp.SerializeAsString());
  }
  if (syncBuffered_) {
    pendingSync_.MergeFrom(req);
    pendingSync_.set_more(false);
    req = std::move(pendingSync_);
    pendingSync_.Clear();
    pendingSyncBytes_ = 0;
    syncBuffered_ = false;
  }
  auto resp = handler_->synchronize(req);
  if (!resp) return failed(Code::kUnknown, resp.error().message);
  resp->set_more(false);
  std::string reply = encodeOkResponse(resp->SerializeAsString());
  // Too big to send: receive() answers code 8, and the runtime does not add us.
  if (reply.size() <= kMaxTtrpcMessage) advance(Phase::kSynchronized);
  return reply;
}

std::string PluginSession::refuseSync(const std::string& why) {
  // What was buffered is freed at once (Clear() would keep the repeated fields'
  // memory for reuse); the session ends after this reply.
  api::SynchronizeRequest().Swap(&pendingSync_);
  pendingSyncBytes_ = 0;
  syncBuffered_ = false;
  ++stats_.syncRefused;
  phase_ = Phase::kFailed;
  failure_ = why;
  return failed(Code::kResourceExhausted, why);
}

std::string PluginSession::stateChange(const std::string& method, api::Event event,
                                       const std::string& payload) {
  api::PodContainerRequest req;
  if (!req.ParseFromString(payload)) {
    return failed(Code::kInvalidArgument, "unparsable " + method + " request");
  }
  ++stats_.perEventCalls;
  api::StateChangeEvent ev;
  ev.set_event(event);
  if (req.has_pod()) ev.mutable_pod()->Swap(req.mutable_pod());
  if (req.has_container()) ev.mutable_container()->Swap(req.mutable_container());
  if (auto st = handler_->stateChange(ev); !st) return failed(Code::kUnknown, st.error().message);
  return encodeOkResponse({});
}

Status PluginSession::onResponse(const TtrpcMessage& msg) {
  // We only call; a request from the runtime on this connection has no server.
  if (msg.type != MessageType::kResponse) return Ok{};
  bool isRegister = registerPending_ && msg.streamId == kRegisterStream;
  auto update = pendingUpdates_.find(msg.streamId);
  if (!isRegister && update == pendingUpdates_.end()) return Ok{};  // unknown stream: ignored

  wire::Response resp;
  if (!resp.ParseFromString(msg.data)) {
    return makeError("runtime service conn: unparsable ttrpc response on stream " +
                     std::to_string(msg.streamId));
  }
  int32_t code = resp.has_status() ? resp.status().code() : 0;

  if (isRegister) {
    registerPending_ = false;
    if (code != 0) {
      phase_ = Phase::kFailed;
      return makeError("runtime refused the registration of " + config_.pluginIndex + "-" +
                       config_.pluginName + " (code " + std::to_string(code) +
                       "): " + resp.status().message());
    }
    advance(Phase::kRegistered);
    return Ok{};
  }

  pendingUpdates_.erase(update);
  ++stats_.updateReplies;
  if (code != 0) {
    ++stats_.updateFailures;
    KLOG_WARNING << "NRI UpdateContainers failed (code " << code
                 << "): " << resp.status().message();
    return Ok{};
  }
  api::UpdateContainersResponse result;
  if (!result.ParseFromString(resp.payload())) {
    ++stats_.updateFailures;
    KLOG_WARNING << "NRI UpdateContainers: unparsable reply";
    return Ok{};
  }
  if (result.failed_size() > 0) {
    ++stats_.updateFailures;
    KLOG_WARNING << "NRI UpdateContainers: runtime failed " << result.failed_size()
                 << " update(s), first " << result.failed(0).container_id();
  }
  return Ok{};
}

}  // namespace koord::nri
