// The NRI multiplexer (reference nri.md §2): every byte on the plugin socket is
// part of a frame {ConnID u32 BE, length u32 BE, payload}. ConnID 1 carries the
// Plugin service (the runtime calls us), ConnID 2 the Runtime service (we call
// it). Frames carry slices of each connection's byte stream; they do not align
// with ttrpc messages.
//
// Sending copies Go's framing exactly, because the Go receiver depends on it: one
// ttrpc message of T bytes goes out as one frame when T <= 4096, else as exactly
// two frames (the first 4096 bytes, then the rest). Finer chopping overflows the
// runtime's 256-frame queue; a larger first frame makes its reader fail with
// ENOMEM; both close the plugin's connection.
//
// Pure: no I/O. The caller writes what appendFrames produces and feeds what it
// reads to a MuxReader.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord::nri {

inline constexpr uint32_t kPluginServiceConn = 1;   // runtime is the ttrpc client
inline constexpr uint32_t kRuntimeServiceConn = 2;  // plugin is the ttrpc client
inline constexpr size_t kMuxHeaderSize = 8;
inline constexpr size_t kSenderFirstFrame = 4096;  // Go's bufio.Writer size
// Receiving: frames up to this size are accepted (pre-1.7.26 runtimes do not
// bound what they send); a larger length is garbage and fails the connection.
inline constexpr size_t kMaxReceiveFrame = 64u << 20;

// Appends the frames of one whole ttrpc message (header + body) for connId.
void appendFrames(std::string& out, uint32_t connId, std::string_view message);

// The same, one string per frame (tests).
std::vector<std::string> frameMessage(uint32_t connId, std::string_view message);

// Reassembles the byte streams of ConnIDs 1 and 2 from frames split anywhere.
class MuxReader {
 public:
  explicit MuxReader(size_t maxFrame = kMaxReceiveFrame) : maxFrame_(maxFrame) {}

  // Consumes raw socket bytes (any split). Payloads of ConnID 1 and 2 are appended
  // to their stream; frames of any other ConnID are dropped and counted (the Go
  // mux does the same). An error (a frame longer than maxFrame) is final: the
  // connection is garbage from here on.
  Status feed(std::string_view bytes);

  // The reassembled stream of connId 1 or 2; the caller consumes from the front.
  std::string& stream(uint32_t connId);

  uint64_t framesRead() const { return frames_; }
  uint64_t framesDropped() const { return dropped_; }
  // True while a frame header or payload is partly read.
  bool midFrame() const { return headerHave_ != 0 || payloadLeft_ != 0; }

 private:
  size_t maxFrame_;
  std::array<char, kMuxHeaderSize> header_{};
  size_t headerHave_ = 0;
  uint32_t conn_ = 0;
  size_t payloadLeft_ = 0;
  std::string streams_[2];
  std::string discard_;
  uint64_t frames_ = 0;
  uint64_t dropped_ = 0;
  bool failed_ = false;
  std::string failure_;
};

}  // namespace koord::nri
