// Launched-plugin mode (reference nri.md §1): the runtime execs the plugin with
// one end of a socketpair as fd 3 (NRI_PLUGIN_SOCKET=3). Here the test process
// plays both sides: the plugin end is dup2'ed to fd 3 and NriClient is given
// launchedFd = 3; NriRuntimePeer adopts the other end.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>

#include "nri/nri_client.h"
#include "tests/support/nri_runtime_peer.h"

namespace test_nri_launched_fd {  // this file's own names: tests build as unity chunks

using namespace std::chrono_literals;
namespace api = koord::nri::api;
using koord::test::NriRuntimePeer;

namespace {

constexpr auto kLimit = 10s;
constexpr int kLaunchedFd = 3;

class CountingHandler : public koord::nri::NriHandler {
 public:
  koord::Result<int32_t> configure(const api::ConfigureRequest& req) override {
    std::lock_guard lock(mu);
    config = req.config();
    return int32_t{0x1 | 0x8};  // RunPodSandbox, CreateContainer
  }
  koord::Result<api::SynchronizeResponse> synchronize(const api::SynchronizeRequest&) override {
    return api::SynchronizeResponse{};
  }
  koord::Result<api::CreateContainerResponse> createContainer(
      const api::CreateContainerRequest& req) override {
    api::CreateContainerResponse r;
    (*r.mutable_adjust()->mutable_annotations())["seen"] = req.container().id();
    return r;
  }
  koord::Result<api::UpdateContainerResponse> updateContainer(
      const api::UpdateContainerRequest&) override {
    return api::UpdateContainerResponse{};
  }
  koord::Result<api::StopContainerResponse> stopContainer(
      const api::StopContainerRequest&) override {
    return api::StopContainerResponse{};
  }
  koord::Status stateChange(const api::StateChangeEvent&) override { return koord::Ok{}; }

  std::mutex mu;
  std::string config;
};

// Puts `fd` at fd 3 for the test's lifetime, keeping whatever was there aside.
class AtFd3 {
 public:
  explicit AtFd3(int fd) {
    if (::fcntl(kLaunchedFd, F_GETFD) != -1) saved_ = ::fcntl(kLaunchedFd, F_DUPFD_CLOEXEC, 10);
    REQUIRE(::dup2(fd, kLaunchedFd) == kLaunchedFd);
    ::close(fd);
  }
  ~AtFd3() {
    // The client owns fd 3 and has closed it; put back what was there.
    if (saved_ >= 0) {
      ::dup2(saved_, kLaunchedFd);
      ::close(saved_);
    }
  }

 private:
  int saved_ = -1;
};

// A socketpair whose ends sit above fd 3: if fd 3 were free, socketpair() could
// hand it out as the runtime's end, and dup2 onto fd 3 would clobber it.
std::pair<int, int> pairAboveFd3() {
  auto [a, b] = koord::test::makeSocketPair();
  int ra = ::fcntl(a, F_DUPFD_CLOEXEC, 10);
  int rb = ::fcntl(b, F_DUPFD_CLOEXEC, 10);
  ::close(a);
  ::close(b);
  REQUIRE(ra >= 10);
  REQUIRE(rb >= 10);
  return {ra, rb};
}

}  // namespace

TEST_CASE("a launched plugin registers and serves on fd 3, and stops at EOF", "[launched]") {
  auto [runtimeEnd, pluginEnd] = pairAboveFd3();
  AtFd3 fd3(pluginEnd);

  koord::test::NriPeerConfig peerConfig;
  peerConfig.pluginConfig = "events: [CreateContainer]\n";  // conf.d/<idx>-<name>.conf text
  NriRuntimePeer peer(peerConfig);
  peer.adopt(runtimeEnd);

  CountingHandler handler;
  koord::nri::NriClientConfig config;
  config.launchedFd = kLaunchedFd;
  config.backoff.initial = 20ms;
  config.backoff.cap = 200ms;
  koord::nri::NriClient client(config, handler);
  std::atomic<int> eofs{0};
  client.onLaunchedEof([&] { ++eofs; });
  client.start();

  REQUIRE(peer.waitReady(kLimit));
  auto regs = peer.registrations();
  REQUIRE(regs.size() == 1);
  CHECK(regs[0].name == "koordlet_nri");
  CHECK(regs[0].idx == "00");
  CHECK(peer.events() == (0x1 | 0x8));
  {
    std::lock_guard lock(handler.mu);
    CHECK(handler.config == "events: [CreateContainer]\n");
  }

  auto pod = koord::test::makePod(koord::test::PodSpec{});
  auto ctr = koord::test::makeContainer(pod, koord::test::ContainerSpec{});
  auto r = peer.createContainer(pod, ctr);
  INFO(r.describe());
  REQUIRE(r.ok());
  CHECK(r.response.adjust().annotations().at("seen") == ctr.id());
  CHECK(peer.stateChange(api::RUN_POD_SANDBOX, pod).ok());

  peer.stop();  // the runtime goes away: EOF on fd 3
  REQUIRE(peer.waitUntil([&] { return eofs.load() == 1; }, kLimit));
  REQUIRE(peer.waitUntil([&] { return client.status().state == koord::nri::NriState::kClosed; },
                         kLimit));
  // Nothing to reconnect to: the client stays closed and reports EOF once.
  auto st = client.status();
  CHECK(st.attempts == 1);
  CHECK(st.connects == 1);
  CHECK_FALSE(
      peer.waitUntil([&] { return eofs.load() > 1 || client.status().attempts > 1; }, 300ms));
  client.stop();
  CHECK(eofs.load() == 1);
  INFO(peer.violationsText());
  CHECK(peer.violations().empty());
}

TEST_CASE("the runtime ignores a launched plugin's name and index", "[launched]") {
  auto [runtimeEnd, pluginEnd] = pairAboveFd3();
  AtFd3 fd3(pluginEnd);
  NriRuntimePeer peer;
  peer.adopt(runtimeEnd);
  CountingHandler handler;
  koord::nri::NriClientConfig config;
  config.launchedFd = kLaunchedFd;
  config.session.pluginIndex = "7";  // refused from an external plugin; ignored here
  koord::nri::NriClient client(config, handler);
  client.start();
  REQUIRE(peer.waitReady(kLimit));
  CHECK(peer.registrations().at(0).idx == "7");
  client.stop();
  peer.stop();
}

}  // namespace test_nri_launched_fd
