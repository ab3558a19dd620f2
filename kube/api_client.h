// ApiClient: requests to the Kubernetes API server, on the agent's io_context.
// HTTPS (or http:// for a test server) through the same TLS and HTTP code as the
// kubelet client (kube/http_client), with the credentials of an ApiConfig: a
// bearer token (a token file is re-read when it rotates, as the kubelet client
// does) or a client certificate; the server verified against the CA (file or
// data) unless insecureSkipTlsVerify. Every request carries
// `User-Agent: koordlet-cpp/<version>` and `Accept: application/json`.
//
// Client-side rate limit: one RateLimiter (--kube-api-qps / --kube-api-burst,
// koordlet's 20 / 30) shared by every request; a request without a token waits
// on a timer, in order. Watches take a token when they (re)open, like client-go.
//
// Every finished request is counted by verb, resource and code (the HTTP status,
// or the transport error's class when no reply came: "timeout", "connect",
// "tls", ..., see transportErrorClass in kube/http_client.h), for
// koordlet_kube_api_requests_total. A watch is counted once, as "WATCH", when its
// reply header arrives (or when it fails before one); a cancelled request is not
// counted.
//
// Many requests may be in flight at once (three watches and a status update);
// each has its own connection. Callbacks run on the loop thread, exactly once,
// unless the request was cancelled or the client destroyed first.
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this first.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "base/clock.h"
#include "base/result.h"
#include "kube/api_config.h"

namespace koord {

struct ApiRequest {
  std::string verb = "GET";  // GET, POST, PUT, PATCH, DELETE; "WATCH" is watch()'s
  // Target with query: "/apis/slo.koordinator.sh/v1alpha1/nodeslos/rig-node".
  std::string path;
  // For counting and messages: "nodeslos", "nodemetrics/status", "pods/eviction".
  std::string resource;
  std::string body;         // sent when non-empty
  std::string contentType;  // default application/json; a PATCH names its kind
  // This request's deadline instead of ApiClientConfig::timeout (send() only).
  std::optional<std::chrono::nanoseconds> timeout;
};

struct ApiReply {
  unsigned status = 0;
  std::string body;
  // Retry-After in seconds, when the reply had one (429, 503).
  std::optional<std::chrono::seconds> retryAfter;
};

struct ApiClientConfig {
  ApiConfig api;
  std::string userAgent = "koordlet-cpp";  // "koordlet-cpp/<version>"
  double qps = 20;
  int burst = 30;
  std::chrono::nanoseconds timeout = std::chrono::seconds(10);  // a non-watch request
  size_t maxBodyBytes = 64u << 20;
};

// Handlers of one watch (or any streamed GET).
struct WatchHandlers {
  // The reply's status line arrived. A non-200 watch delivers its (Status) body
  // through onData and ends.
  std::function<void(unsigned status, std::optional<std::chrono::seconds> retryAfter)> onOpen;
  // Body bytes as they arrive (chunked framing removed), in pieces of any size (an
  // event may span pieces). Return false to stop: the stream ends as by cancel().
  std::function<bool(std::string_view bytes)> onData;
  // The stream ended: Ok when the server ended it cleanly (a watch's timeout), an
  // error when it was cut, timed out (idle), or failed before a reply. Not called
  // after cancel() or after onData returned false.
  std::function<void(Status end)> onEnd;
};

class ApiClient {
 public:
  using Callback = std::function<void(Result<ApiReply>)>;
  using RequestId = uint64_t;

  ApiClient(boost::asio::io_context& io, ApiClientConfig config, const Clock& clock);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // One request; the whole body is read (up to maxBodyBytes) within timeout.
  RequestId send(ApiRequest request, Callback callback);
  // A streamed GET (the caller puts watch=true in the path). No overall deadline:
  // it ends when no byte arrived for idleTimeout (a watch must be replaced when it
  // goes silent past its timeoutSeconds).
  RequestId watch(ApiRequest request, std::chrono::nanoseconds idleTimeout, WatchHandlers handlers);
  // Abandons one request; its callbacks are not called. Unknown ids are ignored.
  void cancel(RequestId id);
  void cancelAll();

  // "https://10.96.0.1:443", for log lines and /readyz.
  std::string server() const;

  // Finished requests by (verb, resource, code).
  using CountKey = std::tuple<std::string, std::string, std::string>;
  const std::map<CountKey, uint64_t>& counts() const;
  // Requests that waited on the rate limiter, and the total time they waited.
  uint64_t throttledRequests() const;
  std::chrono::nanoseconds throttledTime() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace koord
