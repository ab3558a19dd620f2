// TestHttpServer: a minimal scripted HTTP/1.1 server for the API client's own tests
// (kube/api_client, kube/http_client). Not a Kubernetes API stand-in: it knows no
// resources; a test's handler decides each reply. It listens on 127.0.0.1 (kernel-
// picked port), plain or HTTPS (a throw-away CA and server certificate from
// tests/support/test_certs), optionally requiring a client certificate signed by
// the same CA, and serves from its own io_context on a background thread.
//
// One request per connection. A Reply is raw bytes in pieces, written with a pause
// before each piece after the first, so a test can stream a chunked body, go idle
// (hold the connection open after the last piece) or cut a reply off (close).
// The handler runs on the server thread; requests() is thread-safe.
//
// Set-up failures (bind, key generation) throw: this is test code.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace koord::test {

class TestHttpServer {
 public:
  struct Options {
    bool tls = false;
    bool requireClientCert = false;  // TLS only: the handshake fails without one
  };

  struct Request {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;  // names lower-cased
    std::string body;
    std::string serverName;  // TLS SNI, "" without
    // "" when absent. name lower-case.
    std::string header(const std::string& name) const;
  };

  struct Reply {
    std::vector<std::string> pieces;  // raw bytes, status line and headers included
    std::chrono::milliseconds gap{0};
    bool hold = false;  // after the last piece keep the connection open, else close
  };
  using Handler = std::function<Reply(const Request&)>;

  // A complete reply with Content-Length and Connection: close.
  static Reply reply(unsigned status, std::string body,
                     const std::vector<std::pair<std::string, std::string>>& headers = {});
  // The head of a chunked reply, and one chunk of it ("" is the last chunk).
  static std::string chunkedHead(unsigned status);
  static std::string chunk(std::string_view data);

  TestHttpServer();
  explicit TestHttpServer(Options options);
  ~TestHttpServer();  // stops the thread; connections still open are dropped
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  // Default: 200 with "{}".
  void setHandler(Handler handler);

  uint16_t port() const;
  // "https://127.0.0.1:<port>" or "http://..."
  std::string url() const;
  // The CA's PEM, an unrelated CA's PEM, and a client certificate and key the
  // server accepts (PEM); empty unless tls.
  const std::string& caPem() const;
  const std::string& otherCaPem() const;
  const std::string& clientCertPem() const;
  const std::string& clientKeyPem() const;

  std::vector<Request> requests() const;
  // Connections whose TLS handshake failed.
  size_t failedHandshakes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace koord::test
