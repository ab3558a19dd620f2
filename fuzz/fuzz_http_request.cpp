// Bytes a client sends to the agent's HTTP server, as one connection delivers them:
// HttpServer::serveBytes parses them with the server's limits, routes and answers
// them and serializes the replies, with no socket. The routes are the agent's paths
// with fixed answers (and /explain's query parser), one handler that throws and one
// with an invalid status.
#include <boost/asio/io_context.hpp>
#include <stdexcept>

#include "agent/explain.h"
#include "agent/http_server.h"
#include "fuzz/fuzz_support.h"

namespace {

koord::HttpServer& server() {
  static boost::asio::io_context io;
  static koord::HttpServer* s = [] {
    auto* srv = new koord::HttpServer(io, koord::HttpLimits{});
    srv->route("/metrics", [] {
      return koord::HttpResponse{200, "text/plain; version=0.0.4", "koordlet_up 1\n"};
    });
    srv->route("/healthz", [] { return koord::HttpResponse{200, "", "ok"}; });
    srv->route("/readyz", [] { return koord::HttpResponse{503, "text/plain", "not ready\n"}; });
    srv->route("/config", [] { return koord::HttpResponse{200, "application/json", "{}"}; });
    // GET /explain's query parser, on whatever the request's target holds after '?'.
    srv->routeQuery("/explain", [](std::string_view query) {
      auto q = koord::parseExplainQuery(query);
      if (q && q->pod.empty() && q->uid.empty() && q->path.empty() && !q->knob) __builtin_trap();
      return koord::HttpResponse{q ? 200u : 400u, "application/json", "{}"};
    });
    srv->route("/throws", []() -> koord::HttpResponse { throw std::runtime_error("fuzz"); });
    srv->route("/bad-status", [] { return koord::HttpResponse{1000, "", ""}; });
    return srv;
  }();
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const auto statuses = server().serveBytes(koord::fuzz::text(data, size));
  for (unsigned s : statuses) {
    if (s < 200 || s > 599) __builtin_trap();  // only codes a client can frame
  }
  return 0;
}
