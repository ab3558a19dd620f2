#include "kube/object_informer.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/post.hpp>
#include <cctype>
#include <exception>
#include <string_view>

#include "kube/api_status.h"
#include "kube/watch_stream.h"

namespace koord {
namespace {

// A watch's non-200 reply is a Status of a few hundred bytes; keep at most this.
constexpr size_t kMaxErrorBody = 64 * 1024;

// Why a reply failed, for lastError and the log: the Status's message when the
// body is one, else the status code.
std::string describe(unsigned status, const std::string& body, const std::string& source) {
  if (!body.empty()) {
    if (auto st = parseStatus(body, source); st.ok() && !st->message.empty()) {
      return "HTTP " + std::to_string(status) + " " + st->reason + ": " + st->message;
    }
  }
  return "HTTP " + std::to_string(status);
}

// A query value, percent-encoded (RFC 3986 unreserved characters kept): a
// resourceVersion is opaque and a name is the operator's.
std::string queryValue(std::string_view v) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : v) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// A watch shorter than this that brought no event is a failure, not a normal end.
constexpr auto kVeryShortWatch = std::chrono::seconds(1);

}  // namespace

void ObjectInformer::notify() {
  if (!change_) return;
  try {
    change_(state_.object());
  } catch (const std::exception& e) {
    failures_.failure("kube-api " + config_.resource + " handler", Severity::kError,
                      "the " + config_.resource + " change handler threw: " + e.what());
  }
}

ObjectInformer::ObjectInformer(boost::asio::io_context& io, ApiClient& client,
                               ObjectInformerConfig config, const Clock& clock,
                               FailureLog& failures, std::function<double()> random01)
    : io_(io),
      client_(client),
      config_(std::move(config)),
      clock_(&clock),
      failures_(failures),
      random_(random01),
      state_(random01),
      timer_(io) {}

ObjectInformer::~ObjectInformer() { stop(); }

void ObjectInformer::start() {
  if (running_) return;
  running_ = true;
  step();
}

void ObjectInformer::stop() {
  running_ = false;
  ++*epoch_;
  timer_.cancel();
  if (inFlight_) client_.cancel(*inFlight_);
  inFlight_.reset();
  watching_ = false;
}

std::string ObjectInformer::selector() const {
  return "fieldSelector=metadata.name%3D" + queryValue(config_.name);
}

void ObjectInformer::step() {
  if (!running_) return;
  const auto action = state_.next();
  switch (action.step) {
    case InformerState::Step::kList:
      list();
      return;
    case InformerState::Step::kWatch:
      watch(action.resourceVersion);
      return;
    case InformerState::Step::kWait:
      wait(action.wait);
      return;
  }
}

void ObjectInformer::wait(std::chrono::nanoseconds d) {
  timer_.expires_after(d);
  timer_.async_wait([this, epoch = epoch_, mine = *epoch_](const boost::system::error_code& ec) {
    if (ec || *epoch != mine) return;
    step();
  });
}

void ObjectInformer::succeeded() {
  lastHeard_ = clock_->wallNow();
  if (!lastError_.empty()) {
    lastError_.clear();
    failures_.success("kube-api " + config_.resource);
  }
}

std::string ObjectInformer::expiredKey() const {
  return "kube-api " + config_.resource + " expired";
}

void ObjectInformer::progressed() {
  if (!expiredStreak_) return;
  expiredStreak_ = false;
  failures_.success(expiredKey());
}

void ObjectInformer::fail(const std::string& what, unsigned httpStatus,
                          std::optional<std::chrono::seconds> ra, const std::string& body) {
  const std::string source = what + " " + config_.resource + "/" + config_.name;
  lastError_ = source + ": " + (httpStatus ? describe(httpStatus, body, source) : body);
  failures_.failure("kube-api " + config_.resource, Severity::kWarning, lastError_);
  state_.failed(httpStatus, ra);
}

void ObjectInformer::list() {
  ApiRequest req;
  req.verb = "GET";
  req.resource = config_.resource;
  req.path = config_.collectionPath + "?" + selector();
  inFlight_ =
      client_.send(std::move(req), [this, epoch = epoch_, mine = *epoch_](Result<ApiReply> reply) {
        if (*epoch != mine) return;
        inFlight_.reset();
        if (!reply.ok()) {
          fail("list", 0, std::nullopt, reply.error().message);
        } else if (reply->status != 200) {
          fail("list", reply->status, reply->retryAfter, reply->body);
        } else {
          auto doc = nlohmann::json::parse(reply->body, nullptr, false);
          const auto* items = doc.is_object() && doc.contains("items") ? &doc["items"] : nullptr;
          const auto* meta =
              doc.is_object() && doc.contains("metadata") ? &doc["metadata"] : nullptr;
          if (doc.is_discarded() || !items || !items->is_array() || !meta || !meta->is_object() ||
              !meta->contains("resourceVersion") || !(*meta)["resourceVersion"].is_string()) {
            fail("list", 0, std::nullopt,
                 "reply is not a List with items and metadata.resourceVersion");
          } else {
            std::optional<nlohmann::json> object;
            const auto namePtr = "/metadata/name"_json_pointer;
            for (const auto& item : *items) {
              if (item.is_object() && item.contains(namePtr) && item[namePtr].is_string() &&
                  item[namePtr].get<std::string>() == config_.name) {
                object = item;
              }
            }
            const bool changed = object != state_.object() || !state_.synced();
            state_.listed((*meta)["resourceVersion"].get<std::string>(), std::move(object));
            succeeded();
            if (changed) notify();
            if (*epoch != mine) return;  // the handler stopped us
          }
        }
        step();
      });
}

void ObjectInformer::watch(const std::string& resourceVersion) {
  // Jitter the server-side timeout to [t, 2t).
  const double r = random_ ? random_() : 0.0;
  const auto timeout = std::chrono::seconds(
      static_cast<int64_t>(static_cast<double>(config_.watchTimeout.count()) * (1.0 + r)));
  ApiRequest req;
  req.verb = "WATCH";
  req.resource = config_.resource;
  req.path = config_.collectionPath +
             "?watch=true&allowWatchBookmarks=true&resourceVersion=" + queryValue(resourceVersion) +
             "&timeoutSeconds=" + std::to_string(timeout.count()) + "&" + selector();

  // Per-watch state shared by the handlers.
  struct Watch {
    unsigned status = 0;
    std::optional<std::chrono::seconds> retryAfter;
    std::string errorBody;
    std::unique_ptr<WatchDecoder> decoder;
    bool done = false;  // handled (an ERROR event, a decode error): ignore the rest
    Clock::Monotonic started{};
    uint64_t events = 0;
  };
  auto w = std::make_shared<Watch>();
  w->decoder = std::make_unique<WatchDecoder>("watch " + config_.resource + "/" + config_.name);
  w->started = clock_->now();
  const uint64_t mine = ++*epoch_;

  WatchHandlers h;
  h.onOpen = [this, w, epoch = epoch_, mine](unsigned status,
                                             std::optional<std::chrono::seconds> ra) {
    if (*epoch != mine) return;
    w->status = status;
    w->retryAfter = ra;
    if (status == 200) {
      watching_ = true;
      succeeded();
    }
  };
  // Ends this watch from inside a handler and goes on with the next step, once.
  auto finish = [this, w, epoch = epoch_]() {
    w->done = true;
    watching_ = false;
    ++*epoch_;
    if (inFlight_) client_.cancel(*inFlight_);
    inFlight_.reset();
    boost::asio::post(io_, [this, epoch, now = *epoch_]() {
      if (*epoch == now) step();
    });
  };
  h.onData = [this, w, epoch = epoch_, mine, finish](std::string_view bytes) {
    if (*epoch != mine || w->done) return false;
    if (w->status != 200) {
      if (w->errorBody.size() < kMaxErrorBody) {
        w->errorBody.append(bytes.substr(0, kMaxErrorBody - w->errorBody.size()));
      }
      return true;
    }
    auto events = w->decoder->feed(bytes);
    if (!events.ok()) {
      ++watchFailures_;
      fail("watch", 0, std::nullopt, events.error().message);
      finish();
      return false;
    }
    for (const auto& e : *events) {
      ++events_;
      lastHeard_ = clock_->wallNow();
      if (e.type == WatchEventType::kError) {
        const std::string source = "watch " + config_.resource + "/" + config_.name;
        if (e.statusCode == 410) {
          // Expired: the normal end of a watch whose history the server compacted
          // (after its restart, or a long disconnect). Re-list; not a failure, but
          // logged once per streak: a server answering every watch 410 (a storm)
          // must not write a line a round. The watch's progress ends the streak.
          failures_.failure(expiredKey(), Severity::kInfo,
                            source + ": resourceVersion " + state_.resourceVersion() +
                                " expired (" + e.message + "), listing again");
          expiredStreak_ = true;
        } else {
          ++watchFailures_;
          lastError_ =
              source + ": ERROR event, code " + std::to_string(e.statusCode) + ": " + e.message;
          failures_.failure("kube-api " + config_.resource, Severity::kWarning, lastError_);
        }
        state_.event(e);
        finish();
        return false;
      }
      ++w->events;
      progressed();
      if (state_.event(e)) notify();
      if (*epoch != mine) return false;  // the callback stopped us
    }
    return true;
  };
  h.onEnd = [this, w, epoch = epoch_, mine](Status end) {
    if (*epoch != mine || w->done) return;
    inFlight_.reset();
    watching_ = false;
    if (w->status != 0 && w->status != 200) {
      ++watchFailures_;
      fail("watch", w->status, w->retryAfter, w->errorBody);
    } else if (!end.ok()) {
      ++watchFailures_;
      fail("watch", 0, std::nullopt, end.error().message);
    } else if (auto fin = w->decoder->finish(); !fin.ok()) {
      ++watchFailures_;
      fail("watch", 0, std::nullopt, fin.error().message);
    } else if (w->events == 0 && clock_->now() - w->started < kVeryShortWatch) {
      ++watchFailures_;
      fail("watch", 0, std::nullopt, "the watch ended at once without an event");
    } else {
      progressed();
      state_.watchEnded();
    }
    step();
  };
  inFlight_ = client_.watch(std::move(req), timeout + config_.idleGrace, std::move(h));
}

}  // namespace koord
