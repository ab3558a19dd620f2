// HttpClient: the HTTP/1.1 transport under the kubelet client and the API client,
// on the caller's io_context (Boost.Beast; TLS through Asio's OpenSSL stream). One
// exchange per connection: resolve -> connect -> [TLS handshake: SNI for a host
// name, the peer verified against the context's trust and the host name or IP] ->
// write the request -> read the reply, either
//  - whole (request()): the body up to a cap, under one deadline for the whole
//    exchange (progress does not extend it, so a peer trickling bytes cannot hold
//    the caller), or
//  - streamed (stream()): body bytes handed over as they arrive, chunked framing
//    removed, ended when nothing arrived for the idle timeout (each step before the
//    reply, connect, handshake, write, is held to it too).
// Many exchanges may be in flight, each with an id, each cancellable. Callbacks run
// on the loop thread, exactly once, unless cancelled or the client destroyed first.
//
// Errors are values whose text names the request and the step, and whose step
// prefix transportErrorClass() turns into a metric label: "GET https://h:443/p:
// connect h:443: Connection refused", "...: timed out after 3s connecting" (a
// stream: "timed out after 30s idle, reading the reply"), "...: TLS handshake with
// h:443: ...", "...: reply larger than N bytes", "...: reply cut off: ...".
// Credentials are the callers' (kube/http_credentials).
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this first.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord {

namespace http_internal {
struct ClientCore;
}

// Where an exchange goes.
struct HttpTarget {
  std::string host;  // IP literal (no brackets) or name
  uint16_t port = 0;
  std::shared_ptr<boost::asio::ssl::context> tls;  // null: plain HTTP
  bool verify = true;                              // TLS only
  // Appended to a verification failure: how to turn it off, in the user's terms.
  std::string verifyHint;
};

struct HttpRequest {
  std::string method = "GET";
  std::string target;  // "/api/v1/pods?watch=true"; the caller checks it (validTarget)
  std::vector<std::pair<std::string, std::string>> headers;  // besides Host
  std::string body;                                          // sent when non-empty
};

struct HttpReply {
  unsigned status = 0;
  std::string body;
  std::optional<std::chrono::seconds> retryAfter;  // the Retry-After header, seconds form
};

struct HttpStreamHandlers {
  std::function<void(unsigned status, std::optional<std::chrono::seconds> retryAfter)> onHeader;
  // Returning false ends the exchange as cancel() does: onEnd is not called.
  std::function<bool(std::string_view bytes)> onData;
  // Ok: the body ended as framed. An error: failed before the reply, cut off, or idle.
  std::function<void(Status end)> onEnd;
};

class HttpClient {
 public:
  using Id = uint64_t;
  using Callback = std::function<void(Result<HttpReply>)>;

  // logName prefixes log lines ("kubelet", "kube-api").
  HttpClient(boost::asio::io_context& io, std::string logName);
  // Abandons every exchange in flight, without callbacks.
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // timeout <= 0: no deadline (as Go's http.Client.Timeout == 0).
  Id request(const HttpTarget& target, HttpRequest request, std::chrono::nanoseconds timeout,
             size_t maxBodyBytes, Callback callback);
  Id stream(const HttpTarget& target, HttpRequest request, std::chrono::nanoseconds idleTimeout,
            HttpStreamHandlers handlers);
  // Unknown or finished ids are ignored.
  void cancel(Id id);
  void cancelAll();
  size_t inFlight() const;

 private:
  std::shared_ptr<http_internal::ClientCore> core_;
};

// "10.0.0.5:10250", "[::1]:443": IPv6 literals bracketed, as URLs and Host want.
std::string hostPort(const std::string& host, uint16_t port);

// Whether a request target can go on the request line as is: it starts with '/'
// and holds no space or control character.
bool validTarget(std::string_view target);

// Retry-After in its delay-seconds form ("120"); an HTTP date or junk is nullopt.
std::optional<std::chrono::seconds> parseRetryAfter(std::string_view value);

// The class of a transport error (an HttpClient error, or a credential error with
// the request prefixed), for metric labels: "timeout", "dns", "connect", "tls",
// "token", "too_large", "malformed", "io", else "other".
std::string transportErrorClass(const Error& error);

}  // namespace koord
