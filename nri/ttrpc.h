// ttrpc framing inside one mux connection (reference nri.md §3): a 10-byte header
// {length u32 BE, stream id u32 BE, type u8, flags u8} then a protobuf
// koord.ttrpc.Request or Response. NRI uses unary calls only (flags 0); client
// stream ids are odd and increase per logical connection.
//
// Pure: encode to bytes, decode from a reassembled stream (mux.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace koord::nri {

inline constexpr size_t kTtrpcHeaderSize = 10;
// What a Go peer accepts in one message; we never send more.
inline constexpr size_t kMaxTtrpcMessage = 4u << 20;
// Receiving is lenient up to this (a pre-1.7.26 runtime may send more than 4 MiB).
inline constexpr size_t kMaxReceiveMessage = 64u << 20;

enum class MessageType : uint8_t { kRequest = 1, kResponse = 2, kData = 3 };

// gRPC status codes NRI uses.
enum class Code : int32_t {
  kOk = 0,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kResourceExhausted = 8,
  kUnimplemented = 12,
  kInternal = 13,
};

struct TtrpcMessage {
  uint32_t streamId = 0;
  MessageType type = MessageType::kRequest;
  uint8_t flags = 0;
  std::string data;  // the serialized Request or Response
};

// Header + data.
std::string encodeMessage(uint32_t streamId, MessageType type, std::string_view data);

// Takes the next complete message off the front of `stream`. nullopt: more bytes
// needed. Error: a length above kMaxReceiveMessage or an unknown message type
// (garbage; the connection cannot recover its framing).
Result<std::optional<TtrpcMessage>> nextMessage(std::string& stream);

// Envelopes (koord.ttrpc.Request/Response), serialized.
std::string encodeRequest(std::string_view service, std::string_view method,
                          std::string_view payload, int64_t timeoutNano);
// Success with a payload (an empty payload gives a zero-length Response, as Go does).
std::string encodeOkResponse(std::string_view payload);
std::string encodeErrorResponse(Code code, std::string_view message);

}  // namespace koord::nri
