// DeviceReporter against the API server stand-in: the Device is created once, then
// written only when what the agent manages changed, keeping another writer's parts.
#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "kube/api_client.h"
#include "kube/device_reporter.h"
#include "tests/support/run_until.h"
#include "tests/support/test_apiserver.h"

namespace test_kube_device_reporter {  // this file's own names: tests build as unity chunks

using namespace koord;
using koord::test::runUntil;
using koord::test::TestApiServer;

TEST_CASE("the Device is created once, then updated only when a GPU changes", "[device]") {
  TestApiServer server;
  boost::asio::io_context io;
  SystemClock clock;
  FailureLog failures{clock};
  ApiClientConfig cc;
  cc.api.server = server.url();
  cc.qps = 0;
  ApiClient client(io, cc, clock);
  DeviceReporter reporter(client, "gpu-node", clock, failures);
  auto syncOnce = [&](const DeviceContent& c) {
    REQUIRE(reporter.sync(server.get("devices", "gpu-node"), c, "node-uid"));
    REQUIRE(runUntil(io, [&] { return !reporter.inFlight(); }));
  };
  auto writes = [&] {
    return server.count("create", "devices") + server.count("update", "devices");
  };

  DeviceContent c;
  c.labels = gpuLabels({"NVIDIA A10"}, "535.104.05");
  c.gpus = {gpuFromNvml("GPU-a", 0, true, "23028Mi", 0, 0, "pci0000:00", "0000:01:00.0")};
  syncOnce(c);
  CHECK(server.count("create", "devices") == 1);
  auto stored = server.get("devices", "gpu-node");
  REQUIRE(stored);
  CHECK((*stored)["spec"]["devices"][0]["id"] == "GPU-a");
  CHECK((*stored)["metadata"]["ownerReferences"][0]["uid"] == "node-uid");

  syncOnce(c);
  syncOnce(c);
  CHECK(writes() == 1);

  // Another writer adds its label; the GPU goes unhealthy: one update, the label kept.
  (*stored)["metadata"]["labels"]["team"] = "ml";
  server.put("devices", *stored);
  c.gpus[0].health = false;
  syncOnce(c);
  CHECK(server.count("update", "devices") == 1);
  stored = server.get("devices", "gpu-node");
  CHECK((*stored)["spec"]["devices"][0]["health"] == false);
  CHECK((*stored)["metadata"]["labels"]["team"] == "ml");
  CHECK(reporter.lastChange() == "gpu 0 health");
  CHECK(reporter.failed() == 0);
}

}  // namespace test_kube_device_reporter
