// The e2e helper httpGet (tests/support/http_get.h) against scripted replies: a
// chunked body is joined (the real kubelet sends /pods/ so once it passes 2 KiB),
// and a chunked reply cut short is no reply.
#include <catch2/catch.hpp>

#include "tests/support/http_get.h"
#include "tests/support/test_http_server.h"

namespace test_kube_http_get {

using koord::test::httpGet;
using koord::test::TestHttpServer;

TEST_CASE("the test helper httpGet joins a chunked body as the kubelet sends it", "[http_get]") {
  TestHttpServer server;
  server.setHandler([](const TestHttpServer::Request&) {
    return TestHttpServer::Reply{{TestHttpServer::chunkedHead(200) + TestHttpServer::chunk("{\"it"),
                                  TestHttpServer::chunk("ems\": []}"), TestHttpServer::chunk("")}};
  });
  auto r = httpGet(server.port(), "/pods/");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "{\"items\": []}");
}

TEST_CASE("the test helper httpGet takes a chunked reply without its last chunk for no reply",
          "[http_get]") {
  TestHttpServer server;
  server.setHandler([](const TestHttpServer::Request&) {
    return TestHttpServer::Reply{
        {TestHttpServer::chunkedHead(200) + TestHttpServer::chunk("{\"it")}};
  });
  CHECK_FALSE(httpGet(server.port(), "/pods/"));
}

}  // namespace test_kube_http_get
