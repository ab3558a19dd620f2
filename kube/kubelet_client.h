// KubeletClient: asynchronous GETs against the node's kubelet, on the agent's
// io_context (Boost.Beast; TLS through Asio's OpenSSL stream). Two modes, as
// koordlet (reference koordlet.md §1.3, §2.1):
//  - read-only port: plain HTTP, no credentials;
//  - secure port: HTTPS with the service-account bearer token, re-read whenever
//    the token file changes (projected tokens rotate), and the server certificate
//    verified against the CA file (re-read when it changes) and the host name or IP,
//    unless skipVerify (koordlet's behaviour) is set.
// Every request has a deadline covering connect, TLS handshake, write and read,
// and a cap on the reply size; nothing blocks the loop.
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this first.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"

namespace koord {

struct KubeletClientConfig {
  std::string host = "127.0.0.1";  // IP literal or name
  uint16_t port = 10250;
  bool useTls = true;
  std::string tokenFile;  // bearer token; empty = none (read-only port)
  std::string caFile;     // PEM bundle verifying the kubelet's serving certificate
  bool skipVerify = false;
  std::chrono::nanoseconds timeout = std::chrono::seconds(3);
  size_t maxBodyBytes = 64u << 20;  // a 500-pod PodList is a few MiB
};

struct KubeletResponse {
  unsigned status = 0;  // HTTP status; the caller decides what a non-200 means
  std::string body;
};

class KubeletClient {
 public:
  using Callback = std::function<void(Result<KubeletResponse>)>;

  KubeletClient(boost::asio::io_context& io, KubeletClientConfig config);
  ~KubeletClient();
  KubeletClient(const KubeletClient&) = delete;
  KubeletClient& operator=(const KubeletClient&) = delete;

  // One GET of `path` (e.g. "/pods/"). The callback runs exactly once, on the loop
  // thread, unless cancel() or the destructor ran first. Errors name the endpoint
  // and what failed: "connect 10.0.0.5:10250: Connection refused", "timed out after
  // 3s", "reply larger than 67108864 bytes", "reply cut off", "TLS handshake: ...",
  // "token file /var/run/...: No such file or directory".
  // One request at a time: a get() while one is in flight fails at once.
  void get(const std::string& path, Callback callback);

  // Abandons the request in flight, if any; its callback is not called.
  void cancel();

  // Points the next requests at another host and port (the Node's address became
  // known); a request in flight finishes against the old one.
  void setEndpoint(const std::string& host, uint16_t port);
  const std::string& host() const;
  uint16_t port() const;

  // "https://10.0.0.5:10250" — for log lines and metric labels.
  std::string endpoint() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace koord
