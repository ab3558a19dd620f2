// ApiClient implementation: the URL, credentials, rate limit and counting around the
// shared transport (kube/http_client). Every request, send() or watch(), goes
// through the same path: take a token from the RateLimiter (its time from the
// injected Clock), wait the reservation on a steady_timer (a zero wait too, so a
// callback never runs inside send()), then read the credentials (a token file
// re-read when it rotated, the TLS context rebuilt when a file changed) and hand
// the exchange to the transport. An error before any I/O (token file, TLS files, a
// bad server URL or path) is delivered like a transport error and counted by its
// class.
//
// Lifetimes: Impl is owned by shared_ptr; timers and transport callbacks hold only a
// weak_ptr to it. A request's entry in pending_ is removed before its callback
// runs, so a callback may send, watch or cancel freely; cancel() removes the entry,
// cancels its timer or its exchange, and nothing of it is called after.
#include "kube/api_client.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <charconv>
#include <exception>

#include "base/log.h"
#include "kube/http_client.h"
#include "kube/http_credentials.h"
#include "kube/rate_limiter.h"

namespace koord {

// Outside the anonymous namespace: ApiClient::Impl holds one, and a member of a type with
// internal linkage is an error (-Wsubobject-linkage) once this file is part of a unity build.
struct ApiServerUrl {
  bool tls = true;
  std::string host;  // no brackets
  uint16_t port = 0;
  std::string prefix;  // a path the server is behind ("/k8s/clusters/c-1"), no trailing /
};

namespace {

constexpr std::string_view kKubeconfigSkipVerifyHint =
    " (a kubeconfig's insecure-skip-tls-verify skips verification)";

// "https://10.96.0.1", "https://[fd00::1]:6443", "http://127.0.0.1:8080/prefix".
Result<ApiServerUrl> parseServer(std::string_view server) {
  const std::string field = "API server \"" + std::string(server) + "\": ";
  ApiServerUrl url;
  if (server.substr(0, 8) == "https://") {
    server.remove_prefix(8);
  } else if (server.substr(0, 7) == "http://") {
    url.tls = false;
    server.remove_prefix(7);
  } else {
    return makeError(field + "not an https:// or http:// URL", EINVAL);
  }
  const size_t slash = server.find('/');
  std::string_view authority = server.substr(0, slash);
  if (slash != std::string_view::npos) {
    url.prefix = std::string(server.substr(slash));
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return makeError(field + "unclosed [", EINVAL);
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return makeError(field + "junk after ]", EINVAL);
      port = rest.substr(1);
      if (port.empty()) return makeError(field + "empty port", EINVAL);
    }
  } else {
    const size_t colon = authority.find(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return makeError(field + "empty port", EINVAL);
    }
  }
  if (url.host.empty()) return makeError(field + "no host", EINVAL);
  url.port = url.tls ? 443 : 80;
  if (!port.empty()) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return makeError(field + "bad port \"" + std::string(port) + "\"", EINVAL);
    }
    url.port = static_cast<uint16_t>(value);
  }
  return url;
}

bool validVerb(const std::string& verb) {
  return !verb.empty() &&
         std::all_of(verb.begin(), verb.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

TlsSettings tlsSettings(const ApiConfig& api) {
  TlsSettings s;
  s.skipVerify = api.insecureSkipTlsVerify;
  s.caFile = api.caFile;
  s.caData = api.caData;
  s.clientCertFile = api.clientCertFile;
  s.clientCertData = api.clientCertData;
  s.clientKeyFile = api.clientKeyFile;
  s.clientKeyData = api.clientKeyData;
  return s;
}

}  // namespace

struct ApiClient::Impl : std::enable_shared_from_this<ApiClient::Impl> {
  Impl(boost::asio::io_context& ioContext, ApiClientConfig c, const Clock& clk);

  // One request of either kind, waiting for its token or in the transport.
  struct Pending {
    ApiRequest request;
    bool streamed = false;
    std::chrono::nanoseconds idleTimeout{};
    Callback callback;
    WatchHandlers handlers;
    std::unique_ptr<boost::asio::steady_timer> timer;
    std::optional<HttpClient::Id> exchange;
    bool opened = false;  // a watch's reply header arrived (and was counted)
  };

  RequestId enqueue(Pending pending);
  void launch(RequestId id);
  // The HTTP request for a pending one, with credentials; an error names the request.
  Result<std::pair<HttpTarget, HttpRequest>> prepare(const Pending& pending);
  void count(const std::string& verb, const std::string& resource, const std::string& code) {
    ++counts[{verb, resource, code}];
  }
  void cancel(RequestId id);
  void cancelAll();

  boost::asio::io_context& io;
  const ApiClientConfig config;
  const Clock& clock;
  Result<ApiServerUrl> url;
  std::string serverText;
  HttpClient http;
  TlsContextSource tls;
  std::optional<TokenFile> tokenFile;
  RateLimiter limiter;
  RequestId nextId = 1;
  std::map<RequestId, Pending> pending;
  std::map<CountKey, uint64_t> counts;
  uint64_t throttled = 0;
  std::chrono::nanoseconds throttledTime{0};
};

ApiClient::Impl::Impl(boost::asio::io_context& ioContext, ApiClientConfig c, const Clock& clk)
    : io(ioContext),
      config(std::move(c)),
      clock(clk),
      url(parseServer(config.api.server)),
      http(io, "kube-api"),
      tls(tlsSettings(config.api), "kube-api"),
      limiter(config.qps, config.burst, clk.now()) {
  if (url.ok()) {
    serverText = (url->tls ? "https://" : "http://") + hostPort(url->host, url->port) + url->prefix;
  } else {
    serverText = config.api.server;
  }
  if (!config.api.tokenFile.empty()) tokenFile.emplace(config.api.tokenFile, "kube-api");
}

ApiClient::RequestId ApiClient::Impl::enqueue(Pending p) {
  const RequestId id = nextId++;
  const std::chrono::nanoseconds wait = limiter.reserve(clock.now());
  if (wait > std::chrono::nanoseconds::zero()) {
    ++throttled;
    throttledTime += wait;
    KLOG_V(4) << "kube-api: " << p.request.verb << " " << p.request.resource << " waits "
              << std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()
              << "ms for the rate limit";
  }
  p.timer = std::make_unique<boost::asio::steady_timer>(io);
  p.timer->expires_after(wait);
  p.timer->async_wait([weak = weak_from_this(), id](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    self->launch(id);
  });
  pending.emplace(id, std::move(p));
  return id;
}

Result<std::pair<HttpTarget, HttpRequest>> ApiClient::Impl::prepare(const Pending& p) {
  const std::string method = p.streamed ? "GET" : p.request.verb;
  const std::string what = method + " " + serverText + p.request.path;
  auto failed = [&what](const Error& e) { return makeError(what + ": " + e.message, e.sysErrno); };
  if (!url.ok()) return failed(url.error());
  if (!validTarget(p.request.path)) return makeError(what + ": invalid path", EINVAL);
  if (!validVerb(method)) return makeError(what + ": invalid verb", EINVAL);
  HttpTarget target;
  target.host = url->host;
  target.port = url->port;
  if (url->tls) {
    auto ctx = tls.context();
    if (!ctx.ok()) return failed(ctx.error());
    target.tls = std::move(*ctx);
    target.verify = !config.api.insecureSkipTlsVerify;
    target.verifyHint = std::string(kKubeconfigSkipVerifyHint);
  }
  HttpRequest request;
  request.method = method;
  request.target = url->prefix + p.request.path;
  request.headers = {{"Accept", "application/json"}, {"User-Agent", config.userAgent}};
  if (tokenFile) {
    auto token = tokenFile->current();
    if (!token.ok()) return failed(token.error());
    request.headers.emplace_back("Authorization", "Bearer " + *token);
  } else if (!config.api.token.empty()) {
    request.headers.emplace_back("Authorization", "Bearer " + config.api.token);
  }
  if (!p.request.body.empty()) {
    request.headers.emplace_back(
        "Content-Type", p.request.contentType.empty() ? "application/json" : p.request.contentType);
    request.body = p.request.body;
  }
  return std::make_pair(std::move(target), std::move(request));
}

void ApiClient::Impl::launch(RequestId id) {
  auto it = pending.find(id);
  if (it == pending.end()) return;
  Pending& p = it->second;
  // The metric label: a verb that cannot go on a request line is not echoed into it.
  const std::string verb =
      p.streamed ? "WATCH" : (validVerb(p.request.verb) ? p.request.verb : "INVALID");
  const std::string resource = p.request.resource;
  auto prepared = prepare(p);
  if (!prepared.ok()) {
    Pending gone = std::move(p);
    pending.erase(it);
    count(verb, resource, transportErrorClass(prepared.error()));
    // Callbacks must not throw; one that does is logged rather than unwinding
    // through the loop (the transport does the same for its own).
    try {
      if (gone.streamed) {
        if (gone.handlers.onEnd) gone.handlers.onEnd(prepared.error());
      } else if (gone.callback) {
        gone.callback(prepared.error());
      }
    } catch (const std::exception& e) {
      KLOG_ERROR << "kube-api: callback for " << verb << " " << resource << " threw: " << e.what();
    }
    return;
  }
  auto& [target, request] = *prepared;
  std::weak_ptr<Impl> weak = weak_from_this();
  if (!p.streamed) {
    p.exchange = http.request(
        target, std::move(request), p.request.timeout.value_or(config.timeout), config.maxBodyBytes,
        [weak, id, verb, resource](Result<HttpReply> reply) {
          auto self = weak.lock();
          if (!self) return;
          auto found = self->pending.find(id);
          if (found == self->pending.end()) return;
          Callback callback = std::move(found->second.callback);
          self->pending.erase(found);
          if (!reply.ok()) {
            self->count(verb, resource, transportErrorClass(reply.error()));
            if (callback) callback(reply.error());
            return;
          }
          self->count(verb, resource, std::to_string(reply->status));
          if (callback) {
            callback(ApiReply{reply->status, std::move(reply->body), reply->retryAfter});
          }
        });
    return;
  }
  HttpStreamHandlers h;
  h.onHeader = [weak, id, verb, resource](unsigned status,
                                          std::optional<std::chrono::seconds> retryAfter) {
    auto self = weak.lock();
    if (!self) return;
    auto found = self->pending.find(id);
    if (found == self->pending.end()) return;
    found->second.opened = true;
    self->count(verb, resource, std::to_string(status));
    // A copy: the handler may cancel, which destroys the entry.
    auto onOpen = found->second.handlers.onOpen;
    if (onOpen) onOpen(status, retryAfter);
  };
  h.onData = [weak, id](std::string_view bytes) {
    auto self = weak.lock();
    if (!self) return false;
    auto found = self->pending.find(id);
    if (found == self->pending.end()) return false;
    auto onData = found->second.handlers.onData;
    const auto mine = id;  // this closure may be gone once the handler cancels
    const bool more = !onData || onData(bytes);
    // Stopped by the handler: as cancel(), no onEnd; forget the entry.
    if (!more) self->pending.erase(mine);
    return more;
  };
  h.onEnd = [weak, id, verb, resource](Status end) {
    auto self = weak.lock();
    if (!self) return;
    auto found = self->pending.find(id);
    if (found == self->pending.end()) return;
    Pending gone = std::move(found->second);
    self->pending.erase(found);
    if (!gone.opened) {
      self->count(verb, resource, end.ok() ? "other" : transportErrorClass(end.error()));
    }
    if (gone.handlers.onEnd) gone.handlers.onEnd(std::move(end));
  };
  p.exchange = http.stream(target, std::move(request), p.idleTimeout, std::move(h));
}

void ApiClient::Impl::cancel(RequestId id) {
  auto it = pending.find(id);
  if (it == pending.end()) return;
  Pending gone = std::move(it->second);
  pending.erase(it);
  if (gone.timer) gone.timer->cancel();
  if (gone.exchange) http.cancel(*gone.exchange);
}

void ApiClient::Impl::cancelAll() {
  auto all = std::move(pending);
  pending.clear();
  for (auto& [id, p] : all) {
    if (p.timer) p.timer->cancel();
    if (p.exchange) http.cancel(*p.exchange);
  }
}

// ---- ApiClient ----

ApiClient::ApiClient(boost::asio::io_context& io, ApiClientConfig config, const Clock& clock)
    : impl_(std::make_shared<Impl>(io, std::move(config), clock)) {}

ApiClient::~ApiClient() { impl_->cancelAll(); }

ApiClient::RequestId ApiClient::send(ApiRequest request, Callback callback) {
  Impl::Pending p;
  p.request = std::move(request);
  p.callback = std::move(callback);
  return impl_->enqueue(std::move(p));
}

ApiClient::RequestId ApiClient::watch(ApiRequest request, std::chrono::nanoseconds idleTimeout,
                                      WatchHandlers handlers) {
  Impl::Pending p;
  p.request = std::move(request);
  p.streamed = true;
  p.idleTimeout = idleTimeout;
  p.handlers = std::move(handlers);
  return impl_->enqueue(std::move(p));
}

void ApiClient::cancel(RequestId id) { impl_->cancel(id); }
void ApiClient::cancelAll() { impl_->cancelAll(); }
std::string ApiClient::server() const { return impl_->serverText; }
const std::map<ApiClient::CountKey, uint64_t>& ApiClient::counts() const { return impl_->counts; }
uint64_t ApiClient::throttledRequests() const { return impl_->throttled; }
std::chrono::nanoseconds ApiClient::throttledTime() const { return impl_->throttledTime; }

}  // namespace koord
