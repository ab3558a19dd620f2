// The API server stand-in's throw-away certificates: a CA and a server certificate
// it signs (subjectAltName IP:127.0.0.1, DNS:localhost; EC P-256, valid one day),
// made with the OpenSSL C API at start-up, no files shipped, no openssl CLI.
//
// The same generation as test_kubelet.cpp's, kept apart in this one function so the
// two can share tests/support/test_certs once that exists (then this file goes).
// Failures throw: this is test code.
#pragma once

#include <string>

namespace koord::test::apiserver {

struct ServerTls {
  std::string caPem;    // the CA a client must trust
  std::string certPem;  // the server's certificate
  std::string keyPem;   // its private key
};

ServerTls makeServerTls(const std::string& name);

}  // namespace koord::test::apiserver
