#include "nri/mux.h"

#include <algorithm>

#include "nri/big_endian.h"

namespace koord::nri {
namespace {

void appendFrame(std::string& out, uint32_t connId, std::string_view payload) {
  putU32(out, connId);
  putU32(out, static_cast<uint32_t>(payload.size()));
  out.append(payload);
}

}  // namespace

void appendFrames(std::string& out, uint32_t connId, std::string_view message) {
  // Go never sends an empty frame; neither do we.
  if (message.empty()) return;
  if (message.size() <= kSenderFirstFrame) {
    out.reserve(out.size() + kMuxHeaderSize + message.size());
    appendFrame(out, connId, message);
    return;
  }
  out.reserve(out.size() + 2 * kMuxHeaderSize + message.size());
  appendFrame(out, connId, message.substr(0, kSenderFirstFrame));
  appendFrame(out, connId, message.substr(kSenderFirstFrame));
}

std::vector<std::string> frameMessage(uint32_t connId, std::string_view message) {
  std::vector<std::string> frames;
  size_t first = std::min(message.size(), kSenderFirstFrame);
  if (first > 0) {
    frames.emplace_back();
    appendFrame(frames.back(), connId, message.substr(0, first));
  }
  if (message.size() > first) {
    frames.emplace_back();
    appendFrame(frames.back(), connId, message.substr(first));
  }
  return frames;
}

Status MuxReader::feed(std::string_view bytes) {
  if (failed_) return makeError("mux: connection already failed: " + failure_);
  while (!bytes.empty()) {
    if (payloadLeft_ == 0) {
      size_t take = std::min(bytes.size(), kMuxHeaderSize - headerHave_);
      std::copy_n(bytes.data(), take, header_.data() + headerHave_);
      headerHave_ += take;
      bytes.remove_prefix(take);
      if (headerHave_ < kMuxHeaderSize) break;
      headerHave_ = 0;
      conn_ = getU32(header_.data());
      uint32_t length = getU32(header_.data() + 4);
      if (length > maxFrame_) {
        failed_ = true;
        failure_ = "frame of " + std::to_string(length) + " bytes on conn " +
                   std::to_string(conn_) + " exceeds the limit of " + std::to_string(maxFrame_);
        return makeError("mux: " + failure_);
      }
      ++frames_;
      bool known = conn_ == kPluginServiceConn || conn_ == kRuntimeServiceConn;
      if (!known) ++dropped_;
      // A zero-length frame carries nothing; accept it (Go never sends one).
      payloadLeft_ = length;
      continue;
    }
    size_t take = std::min(bytes.size(), payloadLeft_);
    if (conn_ == kPluginServiceConn || conn_ == kRuntimeServiceConn) {
      streams_[conn_ - 1].append(bytes.data(), take);
    }
    payloadLeft_ -= take;
    bytes.remove_prefix(take);
  }
  return Ok{};
}

std::string& MuxReader::stream(uint32_t connId) {
  if (connId == kPluginServiceConn || connId == kRuntimeServiceConn) return streams_[connId - 1];
  discard_.clear();
  return discard_;
}

}  // namespace koord::nri
