// TestApiServer's sockets: an acceptor and one ApiSession per connection on the
// server's own io_context and thread. A session reads requests in turn (keep-alive),
// answers each from the store under the shared mutex, and for a watch streams chunks
// until timeoutSeconds, the client leaving, or restart(). Replies are written as raw
// bytes, not Beast messages: the faults are deliberately broken HTTP, and the watch
// framing must be byte for byte what kube-apiserver sends (one event per chunk).
//
// Watches learn about changes by being pumped: every change posts a notify to the io
// thread, which asks every session to send what the store's history holds past the
// version it sent last. A watch that is streaming also keeps a read outstanding, so
// that a client closing the connection ends it at once rather than at the next write.
#include "tests/support/test_apiserver.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <ctime>
#include <deque>
#include <functional>
#include <future>
#include <list>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/temp_tree.h"
#include "tests/support/test_apiserver_store.h"
#include "tests/support/test_certs.h"
#include "tests/support/test_session.h"

namespace koord::test {
// Named, not anonymous: the Impl below holds its types, and a unity build would refuse
// a member of a type with internal linkage (-Wsubobject-linkage).
namespace apiserver_impl {

using namespace session;
using nlohmann::json;
using Fault = TestApiServer::Fault;

// What the test thread and the io thread share; every field under mu.
struct ApiShared {
  mutable std::mutex mu;
  apiserver::ObjectStore store;
  struct Rule {
    TestApiServer::FaultRule rule;
    std::string verb;  // "" any
    std::chrono::milliseconds delay{0};
  };
  std::vector<Rule> faults;
  std::vector<TestApiServer::LoggedRequest> log;
  std::string token;
  std::chrono::milliseconds bookmarkInterval{0};
  std::atomic<size_t> watches{0};
  // Bytes on the wire over every connection (TLS framing not counted): what the
  // client sent (request line, headers, body) and what the server sent (replies
  // and watch events).
  std::atomic<uint64_t> bytesReceived{0};
  std::atomic<uint64_t> bytesSent{0};
  // Set once before serving: tells the watches that the store changed (posts to the
  // io thread). Called without mu held.
  std::function<void()> changed;
};

std::string httpDate() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::string auditId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[40];
  const uint64_t a = rng(), b = rng();
  std::snprintf(
      buf, sizeof buf, "%08llx-%04llx-4%03llx-8%03llx-%012llx",
      static_cast<unsigned long long>(a >> 32), static_cast<unsigned long long>((a >> 16) & 0xffff),
      static_cast<unsigned long long>(a & 0xfff), static_cast<unsigned long long>(b >> 52),
      static_cast<unsigned long long>(b & 0xffffffffffffull));
  return buf;
}

// The status line and the headers every kube-apiserver reply carries (the fixtures'
// *.headers); a 401 is refused before priority and fairness, so it has no X-Kubernetes-Pf-*.
std::string replyHead(unsigned status, const apiserver::Reply& reply) {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " " +
                  std::string(http::obsolete_reason(http::int_to_status(status))) +
                  "\r\nAudit-Id: " + auditId() +
                  "\r\nCache-Control: no-cache, private\r\nContent-Type: application/json\r\n";
  if (status == 403) h += "X-Content-Type-Options: nosniff\r\n";
  if (status != 401) {
    h += "X-Kubernetes-Pf-Flowschema-Uid: 2797a912-4bdc-4824-9a16-f259c5560095\r\n"
         "X-Kubernetes-Pf-Prioritylevel-Uid: d6b2cdd6-0f17-44af-9cf0-587af33e8925\r\n";
  }
  for (const auto& [name, value] : reply.headers) h += name + ": " + value + "\r\n";
  return h + "Date: " + httpDate() + "\r\n";
}

std::string fullReply(const apiserver::Reply& reply) {
  return replyHead(reply.status, reply) + "Content-Length: " + std::to_string(reply.body.size()) +
         "\r\n\r\n" + reply.body;
}

std::string chunk(const std::string& data) {
  std::ostringstream size;
  size << std::hex << data.size();
  return size.str() + "\r\n" + data + "\r\n";
}

std::string eventLine(std::string_view type, const std::string& objectJson) {
  return R"({"type":")" + std::string(type) + R"(","object":)" + objectJson + "}\n";
}

int64_t toInt(const std::map<std::string, std::string>& query, const std::string& key) {
  const auto it = query.find(key);
  return it == query.end() ? 0 : std::strtoll(it->second.c_str(), nullptr, 10);
}

// What the server asks of a connection, whatever its transport.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void pump() = 0;
  virtual void close() = 0;
};

// One connection. Stream is tcp::socket or ssl::stream<tcp::socket>.
template <typename Stream>
class ApiSession : public SessionBase, public BasicSession<ApiSession<Stream>, Stream, ApiShared> {
  using Base = BasicSession<ApiSession<Stream>, Stream, ApiShared>;
  friend Base;
  using Base::buffer_;
  using Base::readRequest;
  using Base::req_;
  using Base::shared_;
  using Base::socket;
  using Base::stream_;
  using Base::timer_;  // a watch's timeoutSeconds

 public:
  using Base::Base;

  // Sends the changes past the version this watch sent last.
  void pump() override {
    if (watch_ != WatchState::kStreaming) return;
    std::vector<apiserver::Change> changes;
    {
      std::lock_guard lock(shared_->mu);
      changes = shared_->store.changesAfter(sentUpTo_, *route_.type, route_.ns, nameFilter_);
      sentUpTo_ = shared_->store.resourceVersion();
    }
    for (const apiserver::Change& c : changes) {
      sendEvent(eventLine(apiserver::toString(c.type), c.object.dump()));
      if (watch_ != WatchState::kStreaming) return;
    }
  }

  // No TLS close_notify: a dropped connection is what restart() is for.
  void close() override {
    endWatch();
    this->closeSocket(tcp::socket::shutdown_both);
  }

 private:
  enum class WatchState { kNone, kStreaming, kHanging, kEnding };
  enum class After { kNothing, kReadNext, kClose };

  void onRequest() {
    uint64_t in = req_.method_string().size() + req_.target().size() + 11 + req_.body().size();
    for (const auto& f : req_) in += f.name_string().size() + f.value().size() + 4;
    shared_->bytesReceived += in;
    TestApiServer::LoggedRequest entry;
    entry.method = std::string(req_.method_string());
    entry.target = std::string(req_.target());
    entry.authorization = std::string(req_[http::field::authorization]);
    entry.userAgent = std::string(req_[http::field::user_agent]);
    entry.contentType = std::string(req_[http::field::content_type]);
    entry.accept = std::string(req_[http::field::accept]);
    entry.body = req_.body();
    entry.at = std::chrono::steady_clock::now();
    const std::optional<apiserver::Route> route = apiserver::parseTarget(entry.target);
    if (route) {
      entry.verb = apiserver::verbOf(entry.method, *route);
      entry.resource = route->resourceName();
    }
    const bool isWatch = route && route->watch() && entry.method == "GET";
    keepAlive_ = req_.keep_alive();
    const bool mutating = entry.method != "GET";

    std::optional<Fault> watchFault;
    apiserver::Reply reply;
    bool replied = true;
    {
      std::lock_guard lock(shared_->mu);
      std::optional<TestApiServer::FaultRule> fault;
      const bool authorized =
          shared_->token.empty() || entry.authorization == "Bearer " + shared_->token;
      std::chrono::milliseconds delay{0};
      for (auto& [rule, verb, ruleDelay] : shared_->faults) {
        if (!authorized) break;
        const bool watchOnly = rule.fault == Fault::kWatchHang ||
                               rule.fault == Fault::kWatchCutMidEvent ||
                               rule.fault == Fault::kWatchGone;
        if (rule.times == 0 || (watchOnly && !isWatch)) continue;
        // A request held back by kSlow is answered as without it when its time comes.
        if (rule.fault == Fault::kSlow && delayed_) continue;
        if (entry.target.find(rule.pathContains) == std::string::npos) continue;
        if (!verb.empty() && verb != entry.verb) continue;
        if (rule.times > 0) --rule.times;
        fault = rule;
        delay = ruleDelay;
        break;
      }
      if (fault && fault->fault == Fault::kSlow) {
        // Nothing logged yet: the request is logged when it is answered.
        delayed_ = true;
        timer_.expires_after(delay);
        timer_.async_wait([self = this->shared_from_this()](error_code ec) {
          if (ec) {
            self->close();
          } else {
            self->onRequest();
          }
        });
        return;
      }
      delayed_ = false;
      if (!authorized) {
        reply = apiserver::Reply{401, apiserver::unauthorized().dump(2), {}};  // as the fixture
      } else if (fault && fault->fault == Fault::kUnauthorized) {
        reply = apiserver::Reply{401, apiserver::unauthorized().dump(2), {}};
      } else if (fault && fault->fault == Fault::kTooManyRequests) {
        reply = apiserver::jsonReply(429, apiserver::tooManyRequests(fault->retryAfterSeconds));
        reply.headers.emplace_back("Retry-After", std::to_string(fault->retryAfterSeconds));
      } else if (fault && fault->fault == Fault::kInternalError) {
        reply = apiserver::jsonReply(500, apiserver::internalError());
      } else if (!route) {
        reply = apiserver::jsonReply(
            404, apiserver::statusBody(404, "NotFound",
                                       "the server could not find the requested resource",
                                       nlohmann::ordered_json::object()));
      } else if (fault && fault->fault == Fault::kForbidden) {
        reply = apiserver::jsonReply(403, apiserver::forbidden(*route, entry.verb));
      } else if (isWatch) {
        replied = false;
        if (fault) watchFault = fault->fault;
        reply.status = 200;
      } else {
        reply = apiserver::handleRequest(entry.method, *route, entry.contentType, entry.body,
                                         shared_->store);
      }
      entry.status = reply.status;
      shared_->log.push_back(std::move(entry));
    }
    if (replied) {
      if (mutating && reply.status < 300) shared_->changed();
      send(fullReply(reply), keepAlive_ ? After::kReadNext : After::kClose);
    } else {
      startWatch(*route, watchFault);
    }
  }

  void startWatch(const apiserver::Route& route, std::optional<Fault> fault) {
    route_ = route;
    nameFilter_ = route.nameSelector();
    if (nameFilter_.empty()) nameFilter_ = route.name;
    cutNext_ = fault == Fault::kWatchCutMidEvent;
    const std::map<std::string, std::string>& q = route.query;
    const int64_t from = toInt(q, "resourceVersion");
    std::string initial;
    int64_t oldest = 0;
    std::chrono::milliseconds bookmarkEvery{0};
    {
      std::lock_guard lock(shared_->mu);
      oldest = shared_->store.oldestValid();
      bookmarkEvery = shared_->bookmarkInterval;
      if (from == 0) {
        // No version or "0": the current objects as ADDED, then what follows.
        for (const json& obj : shared_->store.list(*route.type, route.ns, nameFilter_)) {
          initial += chunk(eventLine("ADDED", obj.dump()));
        }
        sentUpTo_ = shared_->store.resourceVersion();
      } else {
        sentUpTo_ = from;
      }
    }
    apiserver::Reply head{200, "", {}};
    send(replyHead(200, head) + "Transfer-Encoding: chunked\r\n\r\n", After::kNothing);
    ++shared_->watches;
    watch_ = WatchState::kStreaming;
    watchForClose();
    if ((from != 0 && from < oldest) || fault == Fault::kWatchGone) {
      // The version is compacted (or the fault says so): one ERROR event, then the
      // end of the stream.
      sendEvent(eventLine("ERROR", apiserver::expired(from, std::max(oldest, from + 1)).dump()));
      finishStream();
      return;
    }
    if (fault == Fault::kWatchHang) {
      watch_ = WatchState::kHanging;
      return;
    }
    if (!initial.empty()) {
      if (cutNext_) {
        const size_t eol = initial.find("\r\n");
        const size_t size = std::stoul(initial.substr(0, eol), nullptr, 16);
        sendCut(initial.substr(0, eol + 2 + size / 2));
        return;
      }
      send(initial, After::kNothing);
    }
    pump();
    if (const int64_t seconds = toInt(q, "timeoutSeconds"); seconds > 0) {
      timer_.expires_after(std::chrono::seconds(seconds));
      timer_.async_wait([self = this->shared_from_this()](error_code ec) {
        if (!ec && self->watch_ == WatchState::kStreaming) self->finishStream();
      });
    }
    const auto allow = q.find("allowWatchBookmarks");
    if (allow != q.end() && allow->second == "true" && bookmarkEvery.count() > 0) {
      bookmarkEvery_ = bookmarkEvery;
      armBookmark();
    }
  }

  void armBookmark() {
    bookmark_.expires_after(bookmarkEvery_);
    bookmark_.async_wait([self = this->shared_from_this()](error_code ec) {
      if (ec || self->watch_ != WatchState::kStreaming) return;
      self->pump();
      if (self->watch_ != WatchState::kStreaming) return;
      const json object{{"apiVersion", self->route_.type->apiVersion()},
                        {"kind", self->route_.type->kind},
                        {"metadata", {{"resourceVersion", std::to_string(self->sentUpTo_)}}}};
      self->sendEvent(eventLine("BOOKMARK", object.dump()));
      self->armBookmark();
    });
  }

  void sendEvent(const std::string& line) {
    if (cutNext_) {
      const std::string whole = chunk(line);
      sendCut(whole.substr(0, whole.find("\r\n") + 2 + line.size() / 2));
      return;
    }
    send(chunk(line), After::kNothing);
  }

  // Half an event, then the connection closed without the stream's last chunk.
  void sendCut(std::string bytes) {
    watch_ = WatchState::kEnding;
    send(std::move(bytes), After::kClose);
  }

  // The last chunk; the connection stays for the next request if keep-alive.
  void finishStream() {
    watch_ = WatchState::kEnding;
    timer_.cancel();
    bookmark_.cancel();
    send("0\r\n\r\n", keepAlive_ ? After::kReadNext : After::kClose);
  }

  // A read kept outstanding while a watch streams: the client sends nothing on a
  // watch, so its completion means the client left (or, when the watch is over and
  // the read cancelled, that the next request may be read).
  void watchForClose() {
    stream_.async_read_some(
        buffer_.prepare(4096), [self = this->shared_from_this()](error_code ec, size_t n) {
          self->buffer_.commit(n);
          self->readingForClose_ = false;
          if (ec && ec != net::error::operation_aborted) {
            self->close();
          } else if (self->watch_ == WatchState::kNone && self->socket().is_open()) {
            self->readRequest();
          } else if (!ec && self->watch_ != WatchState::kNone) {
            self->watchForClose();
          }
        });
    readingForClose_ = true;
  }

  void endWatch() {
    if (watch_ == WatchState::kNone) return;
    watch_ = WatchState::kNone;
    --shared_->watches;
    timer_.cancel();
    bookmark_.cancel();
  }

  void send(std::string bytes, After after) {
    out_.emplace_back(std::move(bytes), after);
    if (!writing_) writeNext();
  }

  void writeNext() {
    writing_ = true;
    net::async_write(stream_, net::buffer(out_.front().first),
                     [self = this->shared_from_this()](error_code ec, size_t n) {
                       self->shared_->bytesSent += n;
                       const After after = self->out_.front().second;
                       self->out_.pop_front();
                       self->writing_ = false;
                       if (ec || after == After::kClose) {
                         self->close();
                         return;
                       }
                       if (after == After::kReadNext) {
                         if (self->watch_ == WatchState::kNone) {
                           self->readRequest();
                         } else {
                           // A watch that ended: its outstanding read goes on as the
                           // next request's once cancelled.
                           self->endWatch();
                           if (self->readingForClose_) {
                             self->socket().cancel();
                           } else {
                             self->readRequest();
                           }
                         }
                         return;
                       }
                       if (!self->out_.empty()) self->writeNext();
                     });
  }

  net::steady_timer bookmark_{stream_.get_executor()};
  bool keepAlive_ = true;
  bool delayed_ = false;  // this request was held back by kSlow (its time has come)
  std::deque<std::pair<std::string, After>> out_;
  bool writing_ = false;

  WatchState watch_ = WatchState::kNone;
  bool readingForClose_ = false;
  bool cutNext_ = false;
  apiserver::Route route_;
  std::string nameFilter_;
  int64_t sentUpTo_ = 0;
  std::chrono::milliseconds bookmarkEvery_{0};
};

}  // namespace apiserver_impl

using namespace apiserver_impl;

struct TestApiServer::Impl : session::ServerLoop<ApiShared> {
  // Runs f on the io thread and waits for it: the acceptor and the sessions are
  // only ever touched there.
  template <typename F>
  void onIo(F f) {
    std::promise<void> done;
    net::post(io, [&] {
      try {
        f();
        done.set_value();
      } catch (...) {
        done.set_exception(std::current_exception());
      }
    });
    done.get_future().get();
  }

  // Listens on the port it had (0 the first time: any free one), so a restart
  // keeps the URL.
  void listen() {
    port = session::listen(acceptor, "127.0.0.1", port);
    session::acceptEach(acceptor, [this](tcp::socket socket) {
      sessions.remove_if([](const std::weak_ptr<SessionBase>& s) { return s.expired(); });
      sessions.push_back(
          session::startSession<ApiSession, SessionBase>(tlsOrNull(), std::move(socket), shared));
    });
  }

  void notifyWatches() {
    net::post(io, [this] {
      for (const auto& weak : sessions) {
        if (auto s = weak.lock()) s->pump();
      }
    });
  }

  void dropAll() {
    error_code ignored;
    acceptor.close(ignored);
    for (const auto& weak : sessions) {
      if (auto s = weak.lock()) s->close();
    }
    sessions.clear();
  }

  const apiserver::ResourceType& type(const std::string& resource) const {
    const apiserver::ResourceType* t = apiserver::findResource(resource);
    if (t == nullptr) throw std::invalid_argument("test apiserver: unknown resource " + resource);
    return *t;
  }

  std::list<std::weak_ptr<SessionBase>> sessions;
  std::optional<TempTree> dir;  // the CA's PEM file
  std::string caFile;
  // io runs while the server is stopped (no acceptor, no sessions) for start().
  net::executor_work_guard<net::io_context::executor_type> work{io.get_executor()};
};

TestApiServer::TestApiServer() : TestApiServer(Options{}) {}

TestApiServer::TestApiServer(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->shared->token = std::move(options.bearerToken);
  impl_->shared->bookmarkInterval = options.bookmarkInterval;
  impl_->shared->changed = [impl = impl_.get()] { impl->notifyWatches(); };
  if (options.tls) {
    const TestCa ca("test-apiserver CA");
    const PemPair server = ca.issueServer("test-apiserver");
    impl_->dir.emplace();
    impl_->dir->write("ca.crt", ca.certPem());
    impl_->caFile = impl_->dir->path("ca.crt");
    impl_->useTls(server, "test apiserver");
  }
  impl_->listen();
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

TestApiServer::~TestApiServer() {
  impl_->onIo([this] { impl_->dropAll(); });
  impl_->stop();
}

uint16_t TestApiServer::port() const { return impl_->port; }
std::string TestApiServer::url() const {
  return (impl_->tls ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port());
}
const std::string& TestApiServer::caFile() const { return impl_->caFile; }

json TestApiServer::put(const std::string& resource, json object) {
  const apiserver::ResourceType& t = impl_->type(resource);
  json stored;
  {
    std::lock_guard lock(impl_->shared->mu);
    stored = impl_->shared->store.put(t, std::move(object));
  }
  impl_->notifyWatches();
  return stored;
}

bool TestApiServer::remove(const std::string& resource, const std::string& name,
                           const std::string& ns) {
  const apiserver::ResourceType& t = impl_->type(resource);
  bool removed = false;
  {
    std::lock_guard lock(impl_->shared->mu);
    removed = impl_->shared->store.remove(t, t.namespaced ? ns : "", name);
  }
  impl_->notifyWatches();
  return removed;
}

std::optional<json> TestApiServer::get(const std::string& resource, const std::string& name,
                                       const std::string& ns) const {
  const apiserver::ResourceType& t = impl_->type(resource);
  std::lock_guard lock(impl_->shared->mu);
  const json* obj = impl_->shared->store.find(t, t.namespaced ? ns : "", name);
  return obj ? std::optional<json>(*obj) : std::nullopt;
}

int64_t TestApiServer::resourceVersion() const {
  std::lock_guard lock(impl_->shared->mu);
  return impl_->shared->store.resourceVersion();
}

void TestApiServer::compact(int64_t oldestValid) {
  std::lock_guard lock(impl_->shared->mu);
  impl_->shared->store.compact(oldestValid);
}

void TestApiServer::protect(const std::string& ns, const std::string& name,
                            const std::string& budget, bool processed) {
  std::lock_guard lock(impl_->shared->mu);
  impl_->shared->store.protect(ns, name, budget, processed);
}

void TestApiServer::unprotect(const std::string& ns, const std::string& name) {
  std::lock_guard lock(impl_->shared->mu);
  impl_->shared->store.unprotect(ns, name);
}

void TestApiServer::setBearerToken(std::string token) {
  std::lock_guard lock(impl_->shared->mu);
  impl_->shared->token = std::move(token);
}

void TestApiServer::setBookmarkInterval(std::chrono::milliseconds interval) {
  std::lock_guard lock(impl_->shared->mu);
  impl_->shared->bookmarkInterval = interval;
}

void TestApiServer::addFault(FaultRule rule) {
  std::lock_guard lock(impl_->shared->mu);
  impl_->shared->faults.push_back({std::move(rule), "", {}});
}

void TestApiServer::addFault(FaultRule rule, std::string verb, std::chrono::milliseconds delay) {
  std::lock_guard lock(impl_->shared->mu);
  impl_->shared->faults.push_back({std::move(rule), std::move(verb), delay});
}

void TestApiServer::clearFaults() {
  std::lock_guard lock(impl_->shared->mu);
  impl_->shared->faults.clear();
}

void TestApiServer::restart() {
  impl_->onIo([this] {
    impl_->dropAll();
    impl_->listen();
  });
}

void TestApiServer::stop() {
  impl_->onIo([this] { impl_->dropAll(); });
}

void TestApiServer::start() {
  impl_->onIo([this] {
    if (!impl_->acceptor.is_open()) impl_->listen();
  });
}

std::vector<TestApiServer::LoggedRequest> TestApiServer::requests() const {
  std::lock_guard lock(impl_->shared->mu);
  return impl_->shared->log;
}

size_t TestApiServer::count(const std::string& verb, const std::string& resource) const {
  std::lock_guard lock(impl_->shared->mu);
  size_t n = 0;
  for (const LoggedRequest& r : impl_->shared->log) {
    if (r.verb == verb && r.resource == resource) ++n;
  }
  return n;
}

size_t TestApiServer::activeWatches() const { return impl_->shared->watches.load(); }
uint64_t TestApiServer::bytesReceived() const { return impl_->shared->bytesReceived.load(); }
uint64_t TestApiServer::bytesSent() const { return impl_->shared->bytesSent.load(); }

}  // namespace koord::test
