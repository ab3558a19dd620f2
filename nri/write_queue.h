// WriteQueue: the bytes the NRI client has handed to the socket and the socket has
// not taken yet, bounded. The runtime answers every call we make and reads every
// reply we send while it waits for it (it gives each call 2 s), so a healthy
// connection holds one or two messages here. A queue that reaches its limit means
// the peer stopped reading: growing it would only turn a stuck runtime into our
// memory, so push() refuses and the owner closes the connection (its reconnect
// and back-off take over).
//
// Pure: no I/O. The owner writes front(), then pop()s it.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <string>

#include "base/result.h"
#include "nri/ttrpc.h"

namespace koord::nri {

// Room for four messages of the largest size a runtime accepts (4 MiB each, plus
// ttrpc and mux headers): far more than a reading peer ever leaves queued.
inline constexpr size_t kMaxQueuedWriteBytes = 4 * (kMaxTtrpcMessage + 64);
// Messages are small (a reply of tens of bytes is common): a count bounds the
// per-message overhead as well; 1024 unanswered writes is not a slow peer.
inline constexpr size_t kMaxQueuedWrites = 1024;

struct WriteLimits {
  size_t maxBytes = kMaxQueuedWriteBytes;
  size_t maxMessages = kMaxQueuedWrites;
};

class WriteQueue {
 public:
  explicit WriteQueue(WriteLimits limits = {}) : limits_(limits) {}

  // Appends one message's bytes (all its frames: they must leave together). An
  // error, and nothing queued, when either limit would be exceeded. A message
  // larger than maxBytes is refused even into an empty queue.
  Status push(std::string bytes);

  bool empty() const { return queue_.empty(); }
  // The oldest message: the one being written. Shared, so that a write still in
  // flight when the connection is dropped (clear()) keeps its buffer alive.
  const std::shared_ptr<const std::string>& front() const { return queue_.front(); }
  void pop();
  void clear();

  size_t bytes() const { return bytes_; }  // the message being written included
  size_t messages() const { return queue_.size(); }
  const WriteLimits& limits() const { return limits_; }

 private:
  WriteLimits limits_;
  std::deque<std::shared_ptr<const std::string>> queue_;
  size_t bytes_ = 0;
};

}  // namespace koord::nri
