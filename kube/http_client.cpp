// HttpClient implementation: one Exchange per request() or stream(), driven by the
// caller's io_context on the loop thread. Every Asio/Beast call uses its error_code
// form, so nothing throws into the loop.
//
// Lifetimes: the client's state (Core) is owned by shared_ptr and holds the
// exchanges in flight by id. Each pending handler holds a shared_ptr to its
// Exchange, so the exchange (socket, TLS stream, parser, timer) outlives every
// handler that can still run; an exchange keeps only a weak_ptr to its Core, so
// there is no cycle and the client can be destroyed at any time. cancel() and the
// destructor mark the exchange done, close its socket and cancel its resolver and
// timer; the aborted handlers then run once, see done_ and drop their references.
// (A host-name lookup already inside getaddrinfo finishes on Asio's resolver thread
// first; that is bounded by the resolver's own timeout.)
//
// Time: one steady_timer per exchange and a deadline_ it waits for. A whole-body
// exchange sets the deadline once; a stream moves it forward on every completed
// read, and the timer, when it fires early, just waits again for the new deadline
// (cheaper than re-arming on every read, and immune to a stale expiry).
#include "kube/http_client.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <exception>
#include <limits>
#include <map>
#include <vector>

#include "base/duration.h"
#include "base/log.h"

namespace koord {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Steady = std::chrono::steady_clock;

// A reply header is a few hundred bytes; this only stops a runaway peer.
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
// How much of a streamed body one read hands over at most.
constexpr size_t kStreamChunk = 16 * 1024;

int sysErrnoOf(const error_code& ec) {
  return ec.category() == boost::system::system_category() ? ec.value() : 0;
}

bool isAddress(const std::string& host) {
  error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

template <typename F>
void guarded(const std::string& logName, const std::string& what, F call) {
  // Callbacks must not throw; one that does is logged here rather than unwinding
  // through the loop.
  try {
    call();
  } catch (const std::exception& e) {
    KLOG_ERROR << logName << ": callback for " << what << " threw: " << e.what();
  } catch (...) {
    KLOG_ERROR << logName << ": callback for " << what << " threw";
  }
}

}  // namespace

namespace http_internal {

class Exchange;

struct ClientCore {
  using Id = HttpClient::Id;
  ClientCore(net::io_context& ioContext, std::string name)
      : io(ioContext), logName(std::move(name)) {}
  Id add(std::shared_ptr<Exchange> exchange);
  void cancel(Id id);
  void cancelAll();

  net::io_context& io;
  const std::string logName;
  Id nextId = 1;
  std::map<Id, std::shared_ptr<Exchange>> live;
};

}  // namespace http_internal

using http_internal::ClientCore;
using http_internal::Exchange;

namespace http_internal {

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  enum class Step { kResolve, kConnect, kHandshake, kWrite, kRead };

  struct Params {
    std::weak_ptr<ClientCore> owner;
    std::string logName;
    HttpTarget target;
    std::string what;  // "GET https://10.0.0.5:10250/pods/", prefix of every error
    std::string hostPort;
    std::chrono::nanoseconds timeout{};  // whole: the deadline; streamed: idle
    size_t maxBodyBytes = 0;
    bool streamed = false;
    HttpClient::Callback callback;
    HttpStreamHandlers handlers;
  };

  Exchange(net::io_context& io, Params params) : p_(std::move(params)), resolver_(io), timer_(io) {
    if (p_.target.tls) {
      tls_.emplace(io.get_executor(), *p_.target.tls);
    } else {
      plain_.emplace(io.get_executor());
    }
    if (p_.streamed) {
      streamed_.emplace();
      streamed_->header_limit(kMaxHeaderBytes);
      // A watch has no end. (Boost 1.74's body_limit takes a number; no "none".)
      streamed_->body_limit(std::numeric_limits<std::uint64_t>::max());
    } else {
      whole_.emplace();
      whole_->header_limit(kMaxHeaderBytes);
      whole_->body_limit(static_cast<std::uint64_t>(p_.maxBodyBytes));
    }
  }

  void start(HttpRequest request);
  // Ends the exchange without any callback (cancel(), destructor).
  void abandon() {
    p_.callback = nullptr;
    p_.handlers = {};
    shutdown();
  }

 private:
  beast::tcp_stream& tcp() { return tls_ ? tls_->next_layer() : *plain_; }
  template <typename F>
  void withStream(F f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(*plain_);
    }
  }
  void touch() {
    if (p_.streamed) deadline_ = Steady::now() + p_.timeout;
  }

  void arm();
  void onTimer(error_code ec);
  void resolve();
  void onResolve(error_code ec, const tcp::resolver::results_type& results);
  void onConnect(error_code ec);
  void handshake();
  void onHandshake(error_code ec);
  void write();
  void onWrite(error_code ec);
  void read();
  void onHeader(error_code ec);
  void onRead(error_code ec);
  void readSome();
  void onSome(error_code ec);
  Error readError(const error_code& ec) const;
  void fail(std::string step, const error_code& ec);
  void failWith(Error error);
  void finish(Result<HttpReply> result);
  void end(Status status);
  // Forgets us in the owner and closes everything. Idempotent.
  void detach();
  void shutdown();

  Params p_;  // first, so its TLS context outlives the stream made from it
  tcp::resolver resolver_;
  net::steady_timer timer_;
  std::optional<beast::tcp_stream> plain_;
  std::optional<ssl::stream<beast::tcp_stream>> tls_;
  http::request<http::string_body> req_;
  beast::flat_buffer buffer_;
  // A whole reply's body gathers in a multi_buffer, not a string: a string doubling
  // towards maxBodyBytes copies itself, so a reply refused at the bound (a 100 MB
  // PodList) would peak at about twice it; buffers are only appended, and the one copy
  // into the reply's string is made for a reply that is kept.
  std::optional<http::response_parser<http::dynamic_body>> whole_;
  std::optional<http::response_parser<http::buffer_body>> streamed_;
  std::vector<char> chunk_;
  Step step_ = Step::kResolve;
  bool done_ = false;
  Steady::time_point started_;
  Steady::time_point deadline_;
};

// ---- Exchange ----

void Exchange::start(HttpRequest request) {
  started_ = Steady::now();
  const http::verb verb = http::string_to_verb(request.method);
  if (verb == http::verb::unknown) {
    req_.method_string(request.method);
  } else {
    req_.method(verb);
  }
  req_.target(request.target);
  req_.version(11);
  req_.set(http::field::host, p_.hostPort);
  for (auto& [name, value] : request.headers) req_.set(name, value);
  req_.body() = std::move(request.body);
  req_.prepare_payload();
  // A new connection per exchange: ask the peer not to keep an idle one for us.
  req_.keep_alive(false);
  arm();
  resolve();
}

void Exchange::arm() {
  if (p_.timeout <= std::chrono::nanoseconds::zero()) return;
  deadline_ = started_ + p_.timeout;
  timer_.expires_at(deadline_);
  timer_.async_wait([self = shared_from_this()](error_code ec) { self->onTimer(ec); });
}

void Exchange::onTimer(error_code ec) {
  if (ec || done_) return;
  if (Steady::now() < deadline_) {  // a stream that made progress since
    timer_.expires_at(deadline_);
    timer_.async_wait([self = shared_from_this()](error_code e) { self->onTimer(e); });
    return;
  }
  static constexpr const char* kDoing[] = {"resolving the host", "connecting",
                                           "in the TLS handshake", "sending the request",
                                           "reading the reply"};
  const std::string doing = kDoing[static_cast<int>(step_)];
  const std::string after = "timed out after " + formatGoDuration(p_.timeout) + " ";
  failWith(makeError(p_.what + ": " + after + (p_.streamed ? "idle, " : "") + doing, ETIMEDOUT));
}

void Exchange::resolve() {
  step_ = Step::kResolve;
  error_code ec;
  const auto address = net::ip::make_address(p_.target.host, ec);
  if (!ec) {  // an IP literal needs no resolver
    step_ = Step::kConnect;
    tcp().async_connect(tcp::endpoint(address, p_.target.port),
                        [self = shared_from_this()](error_code e) { self->onConnect(e); });
    return;
  }
  resolver_.async_resolve(
      p_.target.host, std::to_string(p_.target.port), tcp::resolver::numeric_service,
      [self = shared_from_this()](error_code e, const tcp::resolver::results_type& results) {
        self->onResolve(e, results);
      });
}

void Exchange::onResolve(error_code ec, const tcp::resolver::results_type& results) {
  if (done_) return;
  if (ec) {
    fail("resolve " + p_.target.host, ec);
    return;
  }
  step_ = Step::kConnect;
  touch();
  // Tries each address in turn, as Go's dialer does.
  tcp().async_connect(results, [self = shared_from_this()](error_code e, const tcp::endpoint&) {
    self->onConnect(e);
  });
}

void Exchange::onConnect(error_code ec) {
  if (done_) return;
  if (ec) {
    fail("connect " + p_.hostPort, ec);
    return;
  }
  touch();
  error_code ignored;
  tcp().socket().set_option(tcp::no_delay(true), ignored);
  if (tls_) {
    handshake();
  } else {
    write();
  }
}

void Exchange::handshake() {
  step_ = Step::kHandshake;
  const std::string& host = p_.target.host;
  const bool address = isAddress(host);
  error_code ec;
  // SNI carries host names only (RFC 6066 forbids literal addresses).
  if (!address && SSL_set_tlsext_host_name(tls_->native_handle(), host.c_str()) != 1) {
    failWith(makeError(p_.what + ": TLS: cannot set server name " + host));
    return;
  }
  if (p_.target.verify) {
    tls_->set_verify_mode(ssl::verify_peer, ec);
    // host_name_verification checks the leaf against the name or IP; on a mismatch we
    // record why, so the handshake error says "Hostname mismatch" rather than an
    // unspecified verification failure.
    if (!ec) {
      tls_->set_verify_callback(
          [check = ssl::host_name_verification(host), address](bool preverified,
                                                               ssl::verify_context& ctx) {
            if (check(preverified, ctx)) return true;
            if (preverified) {
              X509_STORE_CTX_set_error(ctx.native_handle(), address ? X509_V_ERR_IP_ADDRESS_MISMATCH
                                                                    : X509_V_ERR_HOSTNAME_MISMATCH);
            }
            return false;
          },
          ec);
    }
  } else {
    tls_->set_verify_mode(ssl::verify_none, ec);
  }
  if (ec) {
    fail("TLS setup", ec);
    return;
  }
  tls_->async_handshake(ssl::stream_base::client,
                        [self = shared_from_this()](error_code e) { self->onHandshake(e); });
}

void Exchange::onHandshake(error_code ec) {
  if (done_) return;
  if (!ec) {
    touch();
    write();
    return;
  }
  std::string message = p_.what + ": TLS handshake with " + p_.hostPort + ": " + ec.message();
  const long verifyResult = SSL_get_verify_result(tls_->native_handle());
  if (p_.target.verify && verifyResult != X509_V_OK) {
    message += ": ";
    message += X509_verify_cert_error_string(verifyResult);
    message += p_.target.verifyHint;
  }
  failWith(makeError(std::move(message), sysErrnoOf(ec)));
}

void Exchange::write() {
  step_ = Step::kWrite;
  withStream([this](auto& stream) {
    http::async_write(stream, req_,
                      [self = shared_from_this()](error_code ec, size_t) { self->onWrite(ec); });
  });
}

void Exchange::onWrite(error_code ec) {
  if (done_) return;
  if (ec) {
    fail("send request", ec);
    return;
  }
  touch();
  read();
}

// The header is read on its own first, and a Content-Length over the cap is refused
// here: Boost 1.74's parser, in the eager mode http::async_read uses, loses the
// body_limit error when the header and the first body bytes arrive in one read,
// and would then take the whole body. Chunked and read-to-EOF bodies are counted
// as they arrive, which works.
void Exchange::read() {
  step_ = Step::kRead;
  withStream([this](auto& stream) {
    auto onHeader = [self = shared_from_this()](error_code ec, size_t) { self->onHeader(ec); };
    if (whole_) {
      http::async_read_header(stream, buffer_, *whole_, std::move(onHeader));
    } else {
      http::async_read_header(stream, buffer_, *streamed_, std::move(onHeader));
    }
  });
}

void Exchange::onHeader(error_code ec) {
  if (done_) return;
  if (!ec && whole_ && whole_->content_length().value_or(0) > p_.maxBodyBytes) {
    ec = http::error::body_limit;
  }
  if (ec) {
    failWith(readError(ec));
    return;
  }
  if (whole_) {
    withStream([this](auto& stream) {
      http::async_read(stream, buffer_, *whole_,
                       [self = shared_from_this()](error_code e, size_t) { self->onRead(e); });
    });
    return;
  }
  touch();
  const auto& res = streamed_->get();
  if (p_.handlers.onHeader) {
    auto retryAfter = parseRetryAfter(res[http::field::retry_after]);
    // A copy: the handler may cancel this exchange, which clears p_.handlers and
    // would destroy the closure while it runs.
    auto onHeader = p_.handlers.onHeader;
    guarded(p_.logName, p_.what, [&] { onHeader(res.result_int(), retryAfter); });
    if (done_) return;  // cancelled from the handler
  }
  if (streamed_->is_done()) {
    end(Ok{});
    return;
  }
  chunk_.resize(kStreamChunk);
  readSome();
}

void Exchange::readSome() {
  auto& body = streamed_->get().body();
  body.data = chunk_.data();
  body.size = chunk_.size();
  withStream([this](auto& stream) {
    http::async_read_some(stream, buffer_, *streamed_,
                          [self = shared_from_this()](error_code ec, size_t) { self->onSome(ec); });
  });
}

void Exchange::onSome(error_code ec) {
  if (done_) return;
  if (ec == http::error::need_buffer) ec = {};  // our chunk is full: hand it over
  const size_t n = chunk_.size() - streamed_->get().body().size;
  if (n > 0 && p_.handlers.onData) {
    bool more = true;
    auto onData = p_.handlers.onData;  // a copy, as onHeader's
    guarded(p_.logName, p_.what, [&] { more = onData(std::string_view(chunk_.data(), n)); });
    if (done_) return;
    if (!more) {
      abandon();
      detach();
      return;
    }
  }
  if (ec) {
    end(readError(ec));
    return;
  }
  touch();
  if (streamed_->is_done()) {
    end(Ok{});
    return;
  }
  readSome();
}

void Exchange::onRead(error_code ec) {
  if (done_) return;
  if (ec) {
    finish(readError(ec));
    return;
  }
  auto& res = whole_->get();
  HttpReply out;
  out.status = res.result_int();
  out.retryAfter = parseRetryAfter(res[http::field::retry_after]);
  out.body = beast::buffers_to_string(res.body().data());
  res.body().clear();
  KLOG_V(4)
      << p_.logName << ": " << p_.what << " -> " << out.status << ", " << out.body.size()
      << " bytes in "
      << std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - started_).count()
      << "ms";
  finish(std::move(out));
}

Error Exchange::readError(const error_code& ec) const {
  const std::string prefix = p_.what + ": ";
  if (ec == http::error::body_limit) {
    return makeError(prefix + "reply larger than " + std::to_string(p_.maxBodyBytes) + " bytes",
                     EFBIG);
  }
  if (ec == http::error::header_limit) {
    return makeError(prefix + "reply header larger than " + std::to_string(kMaxHeaderBytes) +
                     " bytes");
  }
  if (ec == http::error::end_of_stream) {
    return makeError(prefix + "reply cut off: the connection closed before a reply");
  }
  // partial_message: a plain connection closed mid-reply; stream_truncated: a TLS one
  // closed without close_notify, anywhere in the reply.
  if (ec == http::error::partial_message || ec == ssl::error::stream_truncated) {
    return makeError(prefix + "reply cut off: the connection closed before the whole reply");
  }
  if (ec.category() == http::make_error_code(http::error::bad_version).category()) {
    return makeError(prefix + "malformed reply: " + ec.message());
  }
  return makeError(prefix + "read reply: " + ec.message(), sysErrnoOf(ec));
}

void Exchange::fail(std::string step, const error_code& ec) {
  failWith(makeError(p_.what + ": " + step + ": " + ec.message(), sysErrnoOf(ec)));
}

void Exchange::failWith(Error error) {
  if (p_.streamed) {
    end(std::move(error));
  } else {
    finish(std::move(error));
  }
}

void Exchange::finish(Result<HttpReply> result) {
  if (done_) return;
  detach();  // the owner forgets us first, so the callback may start the next request
  auto callback = std::move(p_.callback);
  p_.callback = nullptr;
  if (callback) guarded(p_.logName, p_.what, [&] { callback(std::move(result)); });
}

void Exchange::end(Status status) {
  if (done_) return;
  detach();
  auto onEnd = std::move(p_.handlers.onEnd);
  p_.handlers = {};
  if (onEnd) guarded(p_.logName, p_.what, [&] { onEnd(std::move(status)); });
}

void Exchange::detach() {
  shutdown();
  if (auto owner = p_.owner.lock()) {
    for (auto it = owner->live.begin(); it != owner->live.end(); ++it) {
      if (it->second.get() == this) {
        owner->live.erase(it);
        break;
      }
    }
  }
}

void Exchange::shutdown() {
  done_ = true;
  resolver_.cancel();
  timer_.cancel();
  // No TLS close_notify: the reply is complete or abandoned. Closing aborts whatever
  // is pending on the socket.
  error_code ignored;
  tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
  tcp().close();
}

}  // namespace http_internal

// ---- Core ----

HttpClient::Id ClientCore::add(std::shared_ptr<Exchange> exchange) {
  const Id id = nextId++;
  live.emplace(id, std::move(exchange));
  return id;
}

void ClientCore::cancel(Id id) {
  auto it = live.find(id);
  if (it == live.end()) return;
  auto exchange = std::move(it->second);
  live.erase(it);
  exchange->abandon();
}

void ClientCore::cancelAll() {
  auto all = std::move(live);
  live.clear();
  for (auto& [id, exchange] : all) exchange->abandon();
}

// ---- HttpClient ----

HttpClient::HttpClient(net::io_context& io, std::string logName)
    : core_(std::make_shared<ClientCore>(io, std::move(logName))) {}

HttpClient::~HttpClient() { core_->cancelAll(); }

namespace {

std::string describe(const HttpTarget& target, const HttpRequest& request) {
  return request.method + (target.tls ? " https://" : " http://") +
         hostPort(target.host, target.port) + request.target;
}

}  // namespace

namespace {

// What every exchange shares: its owner, names and target; then it starts.
HttpClient::Id launchExchange(const std::shared_ptr<http_internal::ClientCore>& core,
                              const HttpTarget& target, HttpRequest request,
                              Exchange::Params params) {
  params.owner = core;
  params.logName = core->logName;
  params.target = target;
  params.what = describe(target, request);
  params.hostPort = hostPort(target.host, target.port);
  auto exchange = std::make_shared<Exchange>(core->io, std::move(params));
  const HttpClient::Id id = core->add(exchange);
  exchange->start(std::move(request));
  return id;
}

}  // namespace

HttpClient::Id HttpClient::request(const HttpTarget& target, HttpRequest request,
                                   std::chrono::nanoseconds timeout, size_t maxBodyBytes,
                                   Callback callback) {
  Exchange::Params params;
  params.timeout = timeout;
  params.maxBodyBytes = maxBodyBytes;
  params.callback = std::move(callback);
  return launchExchange(core_, target, std::move(request), std::move(params));
}

HttpClient::Id HttpClient::stream(const HttpTarget& target, HttpRequest request,
                                  std::chrono::nanoseconds idleTimeout,
                                  HttpStreamHandlers handlers) {
  Exchange::Params params;
  params.timeout = idleTimeout;
  params.streamed = true;
  params.handlers = std::move(handlers);
  return launchExchange(core_, target, std::move(request), std::move(params));
}

void HttpClient::cancel(Id id) { core_->cancel(id); }
void HttpClient::cancelAll() { core_->cancelAll(); }
size_t HttpClient::inFlight() const { return core_->live.size(); }

// ---- helpers ----

std::string hostPort(const std::string& host, uint16_t port) {
  error_code ec;
  const auto address = net::ip::make_address(host, ec);
  return (!ec && address.is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool validTarget(std::string_view target) {
  return !target.empty() && target.front() == '/' &&
         std::none_of(target.begin(), target.end(),
                      [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; });
}

std::optional<std::chrono::seconds> parseRetryAfter(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty() || value.size() > 9) return std::nullopt;  // 9 digits: 31 years
  int64_t seconds = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    seconds = seconds * 10 + (c - '0');
  }
  return std::chrono::seconds(seconds);
}

std::string transportErrorClass(const Error& error) {
  std::string_view m = error.message;
  // "GET https://10.0.0.5:10250/pods/: connect 10.0.0.5:10250: Connection refused":
  // the step follows the first ": " (a URL holds ':' but never ": ").
  if (const size_t at = m.find(": "); at != std::string_view::npos) m.remove_prefix(at + 2);
  auto starts = [m](std::string_view p) { return m.substr(0, p.size()) == p; };
  if (starts("timed out")) return "timeout";
  if (starts("resolve ")) return "dns";
  if (starts("connect ")) return "connect";
  if (starts("TLS") || starts("CA file")) return "tls";
  if (starts("token file")) return "token";
  if (starts("reply larger") || starts("reply header larger")) return "too_large";
  if (starts("malformed reply")) return "malformed";
  if (starts("send request") || starts("read reply") || starts("reply cut off")) return "io";
  return "other";
}

}  // namespace koord
