#include "kube/watch_stream.h"

#include "base/quote.h"
#include "kube/json_type.h"

namespace koord {

const char* toString(WatchEventType t) {
  switch (t) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "";
}

Result<std::vector<WatchEvent>> WatchDecoder::feed(std::string_view bytes) {
  if (!failed_.empty()) return makeError(failed_);
  std::vector<WatchEvent> out;
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, nl);
    if (partial_.size() + piece.size() > maxEventBytes_) {
      failed_ = source_ + ": event " + std::to_string(events_ + 1) + " is over " +
                std::to_string(maxEventBytes_) + " bytes";
      return makeError(failed_);
    }
    if (nl == std::string_view::npos) {
      partial_.append(piece);
      break;
    }
    bytes.remove_prefix(nl + 1);
    std::string_view line = piece;
    if (!partial_.empty()) {
      partial_.append(piece);
      line = partial_;
    }
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      auto event = decode(line);
      if (!event) {
        failed_ = event.error().message;
        return makeError(failed_);
      }
      ++events_;
      out.push_back(std::move(*event));
    }
    partial_.clear();
  }
  return out;
}

Status WatchDecoder::finish() const {
  if (!failed_.empty()) return makeError(failed_);
  if (partial_.find_first_not_of(" \t\r") != std::string::npos) {
    return makeError(source_ + ": the stream ended inside event " + std::to_string(events_ + 1) +
                     " (" + std::to_string(partial_.size()) + " bytes)");
  }
  return Ok{};
}

Result<WatchEvent> WatchDecoder::decode(std::string_view line) const {
  const std::string where = source_ + ": event " + std::to_string(events_ + 1);
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) return makeError(where + ": not JSON: " + quoteText(line, 60));
  if (!j.is_object()) return makeError(where + ": expected an object, got " + jsonTypeName(j));
  const auto type = j.find("type");
  if (type == j.end() || !type->is_string()) return makeError(where + ": type: missing");
  WatchEvent e;
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "ADDED") {
    e.type = WatchEventType::kAdded;
  } else if (t == "MODIFIED") {
    e.type = WatchEventType::kModified;
  } else if (t == "DELETED") {
    e.type = WatchEventType::kDeleted;
  } else if (t == "BOOKMARK") {
    e.type = WatchEventType::kBookmark;
  } else if (t == "ERROR") {
    e.type = WatchEventType::kError;
  } else {
    return makeError(where + ": type: unknown " + quoteText(t, 40));
  }
  auto object = j.find("object");
  if (object == j.end() || !object->is_object()) {
    return makeError(where + ": object: missing or not an object");
  }
  e.object = std::move(*object);
  if (e.type == WatchEventType::kError) {
    const auto code = e.object.find("code");
    if (code == e.object.end() || !code->is_number_integer()) {
      return makeError(where + ": object.code: missing (an ERROR carries a Status)");
    }
    e.statusCode = code->get<int64_t>();
    if (const auto m = e.object.find("message"); m != e.object.end() && m->is_string()) {
      e.message = m->get<std::string>();
    }
    return e;
  }
  const auto meta = e.object.find("metadata");
  if (meta == e.object.end() || !meta->is_object()) {
    return makeError(where + ": object.metadata: missing");
  }
  const auto rv = meta->find("resourceVersion");
  if (rv == meta->end() || !rv->is_string() || rv->get_ref<const std::string&>().empty()) {
    return makeError(where + ": object.metadata.resourceVersion: missing");
  }
  e.resourceVersion = rv->get<std::string>();
  return e;
}

}  // namespace koord
