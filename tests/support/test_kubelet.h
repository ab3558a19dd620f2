// TestKubelet: a stand-in for the node's kubelet, which cannot run here. It serves
// `GET /pods/` (and, once set, `GET /configz`) on 127.0.0.1 (kernel-picked port), over plain HTTP
// or HTTPS, from its own io_context on a background thread, so the code under test can run its loop
// in the test thread. Each reply follows the current Behaviour: a normal reply, or one of the
// failures a kubelet or the network can produce (slow, cut off, too large, not HTTP). Every setter
// is thread-safe and applies to the next request, so a benchmark can swap the body (a synthetic
// 500-pod PodList) while it runs.
//
// For HTTPS it generates, at construction, a throw-away CA and a server certificate
// signed by it (tests/support/test_certs: subjectAltName IP:127.0.0.1, localhost).
// caFile() is that CA's PEM; otherCaFile() is an unrelated CA, which must fail
// verification.
//
// Set-up failures (bind, key generation) throw: this is test code.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace koord::test {

class TestKubelet {
 public:
  enum class Behaviour {
    kServe,       // status() and body() with Content-Length
    kSlow,        // as kServe after slowDelay(), on a timer: other connections go on
    kCutOff,      // Content-Length of the whole body, then half of it, then close
    kHuge,        // a chunked 200 of hugeBytes() bytes, streamed until the peer leaves
    kNotJson,     // a 200 with an HTML page, as a proxy or a wrong port might send
    kMalformed,   // bytes that are not an HTTP reply, then close
    kHugeHeader,  // a reply header of more than 64 KiB
    kReset,       // Content-Length of the whole body, half of it, then a TCP reset (RST)
  };

  struct Options {
    bool tls = false;
    // Any loopback address works on Linux (127.0.0.0/8); the certificate names only
    // 127.0.0.1, so another one tests the client's IP check.
    std::string address = "127.0.0.1";
  };

  // Binds, generates the certificates if tls, and starts serving. (Two constructors:
  // a nested struct's default member initializers cannot feed a default argument.)
  TestKubelet();
  explicit TestKubelet(Options options);
  // Stops the thread; connections still open are dropped.
  ~TestKubelet();
  TestKubelet(const TestKubelet&) = delete;
  TestKubelet& operator=(const TestKubelet&) = delete;

  // stop(): the listener closed, so connects are refused (a kubelet that is down);
  // connections already open finish. start(): listening again on the same port.
  // Both wait until done; again is harmless.
  void stop();
  void start();

  uint16_t port() const;
  const std::string& address() const;
  // PEM files in a temp dir removed with the server; empty unless tls.
  const std::string& caFile() const;
  const std::string& otherCaFile() const;

  // What the next requests get. Defaults: kServe, 200, an empty PodList, 10 s, 256 MiB.
  void setBehaviour(Behaviour behaviour);
  void setStatus(unsigned status);
  void setBody(std::string body);
  void setSlowDelay(std::chrono::milliseconds delay);
  // Serve GET /configz with this body (the kubelet's configuration); until set, 404.
  void setConfigz(std::string body);
  void setHugeBytes(size_t bytes);
  // Requests without `Authorization: Bearer <token>` get 401; "" (the default) checks
  // nothing.
  void setExpectedToken(std::string token);

  // The bearer token of the last request ("" if it had none; the whole header value
  // if it was not a bearer token), and how many requests were read so far.
  std::string lastToken() const;
  size_t requestCount() const;
  // The most body bytes one kHuge reply got into its socket so far: what a client
  // that stops at its cap read, plus what the kernel's buffers held.
  size_t hugeMostBytesSent() const;
  // The last request line and headers as parsed ("GET /pods/ HTTP/1.1\r\nHost: ...").
  std::string lastRequestHead() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace koord::test
