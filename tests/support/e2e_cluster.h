// What the end-to-end tests against the API server stand-in share: a fixture's text, the
// agent's /config as JSON, and a kubeconfig for the stand-in. Header-only, for Catch2
// tests (a missing fixture fails the test).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/read_file.h"
#include "tests/support/http_get.h"
#include "tests/support/temp_tree.h"

namespace koord::test {

inline std::string readFixture(const std::string& rel) {
  auto text = readFile(fixturePath(rel));
  if (!text) FAIL("fixture: " << text.error().message);
  return std::move(text).value();
}

// GET /config parsed; null when it does not answer 200 or is not JSON.
inline nlohmann::json configJson(uint16_t port) {
  auto r = httpGet(port, "/config");
  if (!r || r->status != 200) return nlohmann::json();
  return nlohmann::json::parse(r->body, nullptr, false);
}

// A kubeconfig naming `server` (plain HTTP, no credentials), as the API server
// stand-in serves by default.
inline std::string kubeconfigPlain(const std::string& server) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: e2e\n"
         "clusters:\n- name: c\n  cluster:\n    server: " +
         server +
         "\ncontexts:\n- name: e2e\n  context: {cluster: c, user: u}\n"
         "users:\n- name: u\n  user: {}\n";
}

// A kubeconfig naming `server` (HTTPS, its CA file) with a bearer token.
inline std::string kubeconfigFor(const std::string& server, const std::string& caFile,
                                 const std::string& token) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: e2e\n"
         "clusters:\n- name: c\n  cluster:\n    server: " +
         server + "\n    certificate-authority: " + caFile +
         "\ncontexts:\n- name: e2e\n  context: {cluster: c, user: u}\n"
         "users:\n- name: u\n  user:\n    token: " +
         token + "\n";
}

}  // namespace koord::test
