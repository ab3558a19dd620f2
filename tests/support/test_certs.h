// TestCa: a throw-away certificate authority for TLS tests, made at run time with
// the OpenSSL C API (no files shipped, no openssl CLI): EC P-256 keys, valid from an
// hour ago (clock skew) for one day. It issues server certificates for 127.0.0.1 and
// localhost, and client certificates (extendedKeyUsage clientAuth). A second TestCa
// is an unrelated CA, which must fail verification.
//
// Failures throw: this is test code.
#pragma once

#include <memory>
#include <string>

namespace koord::test {

struct PemPair {
  std::string cert;
  std::string key;
};

class TestCa {
 public:
  explicit TestCa(const std::string& commonName);
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  // The CA certificate, PEM.
  const std::string& certPem() const;
  // subjectAltName IP:127.0.0.1, DNS:localhost; extendedKeyUsage serverAuth.
  PemPair issueServer(const std::string& commonName) const;
  // No subjectAltName; extendedKeyUsage clientAuth.
  PemPair issueClient(const std::string& commonName) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace koord::test
