#include "nri/ttrpc.h"

#include "nri/api.h"
#include "nri/big_endian.h"

namespace koord::nri {

std::string encodeMessage(uint32_t streamId, MessageType type, std::string_view data) {
  std::string out;
  out.reserve(kTtrpcHeaderSize + data.size());
  putU32(out, static_cast<uint32_t>(data.size()));
  putU32(out, streamId);
  out.push_back(static_cast<char>(type));
  out.push_back(0);  // flags: NRI calls are unary
  out.append(data);
  return out;
}

Result<std::optional<TtrpcMessage>> nextMessage(std::string& stream) {
  if (stream.size() < kTtrpcHeaderSize) return std::optional<TtrpcMessage>{};
  uint32_t length = getU32(stream.data());
  if (length > kMaxReceiveMessage) {
    return makeError("ttrpc: message of " + std::to_string(length) + " bytes exceeds " +
                     std::to_string(kMaxReceiveMessage));
  }
  auto type = static_cast<uint8_t>(stream[8]);
  if (type < static_cast<uint8_t>(MessageType::kRequest) ||
      type > static_cast<uint8_t>(MessageType::kData)) {
    return makeError("ttrpc: unknown message type " + std::to_string(type));
  }
  if (stream.size() < kTtrpcHeaderSize + length) return std::optional<TtrpcMessage>{};
  TtrpcMessage msg;
  msg.streamId = getU32(stream.data() + 4);
  msg.type = static_cast<MessageType>(type);
  msg.flags = static_cast<uint8_t>(stream[9]);
  msg.data.assign(stream, kTtrpcHeaderSize, length);
  stream.erase(0, kTtrpcHeaderSize + length);
  return std::optional<TtrpcMessage>{std::move(msg)};
}

std::string encodeRequest(std::string_view service, std::string_view method,
                          std::string_view payload, int64_t timeoutNano) {
  wire::Request req;
  req.set_service(std::string(service));
  req.set_method(std::string(method));
  req.set_payload(std::string(payload));
  if (timeoutNano > 0) req.set_timeout_nano(timeoutNano);
  return req.SerializeAsString();
}

std::string encodeOkResponse(std::string_view payload) {
  // No status (Go sends nil on success); an empty payload leaves 0 bytes.
  wire::Response resp;
  resp.set_payload(std::string(payload));
  return resp.SerializeAsString();
}

std::string encodeErrorResponse(Code code, std::string_view message) {
  wire::Response resp;
  resp.mutable_status()->set_code(static_cast<int32_t>(code));
  resp.mutable_status()->set_message(std::string(message));
  return resp.SerializeAsString();
}

}  // namespace koord::nri
