#include "nri/write_queue.h"

#include <utility>

namespace koord::nri {

Status WriteQueue::push(std::string bytes) {
  if (queue_.size() >= limits_.maxMessages) {
    return makeError("NRI write queue full: " + std::to_string(queue_.size()) +
                     " messages not taken by the runtime (limit " +
                     std::to_string(limits_.maxMessages) + ")");
  }
  // Written so that it cannot wrap: bytes_ <= maxBytes holds throughout.
  if (bytes.size() > limits_.maxBytes - bytes_) {
    return makeError("NRI write queue full: " + std::to_string(bytes_) +
                     " bytes not taken by the runtime, " + std::to_string(bytes.size()) +
                     " more would exceed the limit of " + std::to_string(limits_.maxBytes));
  }
  bytes_ += bytes.size();
  queue_.push_back(std::make_shared<const std::string>(std::move(bytes)));
  return Ok{};
}

void WriteQueue::pop() {
  bytes_ -= queue_.front()->size();
  queue_.pop_front();
}

void WriteQueue::clear() {
  queue_.clear();
  bytes_ = 0;
}

}  // namespace koord::nri
