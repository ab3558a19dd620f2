// watch_stream: the events of a Kubernetes watch (GET ...?watch=true), decoded from
// the response body as it arrives. kube-apiserver writes one JSON object per event,
// {"type": "...", "object": {...}}, each followed by '\n' (JSON strings carry no raw
// newline, so the newline is the frame); the HTTP layer has already removed the
// chunked framing, and chunks need not align with events.
//
// Decisions:
//  * Types ADDED, MODIFIED, DELETED, BOOKMARK and ERROR. An ERROR's object is a
//    Status: its code (410 "Expired" means the resourceVersion is too old: re-list)
//    and message are taken out.
//  * Every non-ERROR object must carry metadata.resourceVersion (a BOOKMARK carries
//    only that): it is where the watch resumes.
//  * Bounded: an event larger than maxEventBytes (16 MiB by default; a NodeSLO is a
//    few KiB, a Node tens) is an error, not an ever-growing buffer.
//  * A malformed event is an error naming the source, the event's number and the
//    field; the stream is then unusable (the caller drops the watch and resumes from
//    the last good resourceVersion).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace koord {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
const char* toString(WatchEventType t);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;        // the object (for kError the Status)
  std::string resourceVersion;  // object.metadata.resourceVersion; "" for kError
  int64_t statusCode = 0;       // kError: the Status code (410: re-list)
  std::string message;          // kError: the Status message
};

class WatchDecoder {
 public:
  static constexpr size_t kDefaultMaxEventBytes = 16u << 20;
  // source: what errors name ("watch nodeslos").
  explicit WatchDecoder(std::string source, size_t maxEventBytes = kDefaultMaxEventBytes)
      : source_(std::move(source)), maxEventBytes_(maxEventBytes) {}

  // Body bytes in; the events they complete out. After an error every later call
  // fails the same way.
  Result<std::vector<WatchEvent>> feed(std::string_view bytes);
  // The stream ended: Ok when it ended between events (a watch's timeout), an
  // error when it was cut mid-event.
  Status finish() const;

  uint64_t events() const { return events_; }

 private:
  Result<WatchEvent> decode(std::string_view line) const;
  std::string source_;
  size_t maxEventBytes_;
  std::string partial_;  // bytes of the event not yet ended by '\n'
  uint64_t events_ = 0;  // events decoded so far (numbers errors)
  std::string failed_;   // the first error, once there was one
};

}  // namespace koord
