// NriClient against NriRuntimePeer (our containerd stand-in, written from the
// reference) over real unix sockets in a temp dir, in real time. [peer] cases check
// the peer itself with a hand-framed plugin; [client] cases drive a real NriClient
// with a recording handler. Waits poll with generous deadlines (a loaded 2-core
// machine), never sleep a fixed time.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <google/protobuf/util/message_differencer.h>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nri/mux.h"
#include "nri/nri_client.h"
#include "nri/ttrpc.h"
#include "tests/support/nri_runtime_peer.h"
#include "tests/support/poll.h"
#include "tests/support/temp_tree.h"

namespace test_nri_nri_client {  // this file's own names: tests build as unity chunks

using namespace std::chrono_literals;
namespace api = koord::nri::api;
using google::protobuf::util::MessageDifferencer;
using koord::test::CallReply;
using koord::test::Framing;
using koord::test::NriPeerConfig;
using koord::test::NriRuntimePeer;

namespace {

constexpr auto kLimit = 10s;  // any wait on the client or peer
constexpr const char* kPluginService = "nri.pkg.api.v1alpha1.Plugin";
// RunPodSandbox, RemovePodSandbox, CreateContainer, StartContainer,
// UpdateContainer, StopContainer, RemoveContainer.
constexpr int32_t kMask = 0x1 | 0x4 | 0x8 | 0x20 | 0x80 | 0x200 | 0x400;

// Records every call and answers with what the test put in its reply fields.
class RecordingHandler : public koord::nri::NriHandler {
 public:
  koord::Result<int32_t> configure(const api::ConfigureRequest& req) override {
    std::lock_guard lock(mu);
    configures.push_back(req);
    return mask;
  }
  koord::Result<api::SynchronizeResponse> synchronize(const api::SynchronizeRequest& req) override {
    std::lock_guard lock(mu);
    syncs.push_back(req);
    return syncReply;
  }
  koord::Result<api::CreateContainerResponse> createContainer(
      const api::CreateContainerRequest& req) override {
    std::lock_guard lock(mu);
    creates.push_back(req);
    return createReply;
  }
  koord::Result<api::UpdateContainerResponse> updateContainer(
      const api::UpdateContainerRequest& req) override {
    std::lock_guard lock(mu);
    updates.push_back(req);
    return updateReply;
  }
  koord::Result<api::StopContainerResponse> stopContainer(
      const api::StopContainerRequest& req) override {
    std::lock_guard lock(mu);
    stops.push_back(req);
    return stopReply;
  }
  koord::Status stateChange(const api::StateChangeEvent& event) override {
    std::lock_guard lock(mu);
    events.push_back(event);
    return koord::Ok{};
  }

  size_t syncCount() {
    std::lock_guard lock(mu);
    return syncs.size();
  }

  // The handler's own lock (its in-memory snapshot), never the agent loop's.
  std::mutex mu;
  int32_t mask = kMask;
  api::SynchronizeResponse syncReply;
  api::CreateContainerResponse createReply;
  api::UpdateContainerResponse updateReply;
  api::StopContainerResponse stopReply;
  std::vector<api::ConfigureRequest> configures;
  std::vector<api::SynchronizeRequest> syncs;
  std::vector<api::CreateContainerRequest> creates;
  std::vector<api::UpdateContainerRequest> updates;
  std::vector<api::StopContainerRequest> stops;
  std::vector<api::StateChangeEvent> events;
};

koord::nri::NriClientConfig clientConfig(const std::string& socket) {
  koord::nri::NriClientConfig c;
  c.socketPath = socket;
  c.backoff.initial = 20ms;
  c.backoff.factor = 2.0;
  c.backoff.cap = 200ms;
  return c;
}

// A temp dir with the runtime socket, the peer and a client (started on demand).
struct Rig {
  explicit Rig(NriPeerConfig config = {}) : peer(std::move(config)) {}
  ~Rig() {
    if (client) client->stop();
    peer.stop();
  }
  void startClient() {
    client = std::make_unique<koord::nri::NriClient>(clientConfig(socket), handler);
    client->start();
  }
  void start() {
    peer.listen(socket);
    startClient();
  }
  koord::nri::NriState state() const { return client->status().state; }

  koord::test::TempTree dir;
  std::string socket = dir.path("nri.sock");
  NriRuntimePeer peer;
  RecordingHandler handler;
  std::unique_ptr<koord::nri::NriClient> client;
};

bool same(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  return MessageDifferencer::Equals(a, b);
}

api::PodSandbox systemdPod() {
  koord::test::PodSpec ps;
  ps.name = "web-5d8f7b9c4-qk2lm";
  ps.qos = koord::test::PodQos::kBurstable;
  ps.driver = koord::test::CgroupDriver::kSystemd;
  ps.koordQos = "LS";
  ps.annotations["scheduling.koordinator.sh/resource-status"] = R"({"cpuset":"4-7"})";
  return koord::test::makePod(ps);
}

api::Container webContainer(const api::PodSandbox& pod) {
  koord::test::ContainerSpec cs;
  cs.name = "web";
  cs.cpuRequestMilli = 500;
  cs.cpuLimitMilli = 2000;
  cs.memoryLimitBytes = 512ll << 20;
  cs.env = {"GOMAXPROCS=2"};
  return koord::test::makeContainer(pod, cs, koord::test::CgroupDriver::kSystemd);
}

// A CreateContainer reply as koordlet's hooks fill it.
api::CreateContainerResponse adjustment(const api::Container& c, size_t annotationBytes = 0) {
  api::CreateContainerResponse r;
  auto* adj = r.mutable_adjust();
  (*adj->mutable_annotations())["node.koordinator.sh/hooked"] = "true";
  auto* env = adj->add_env();
  env->set_key("KOORD_QOS");
  env->set_value("LS");
  auto* res = adj->mutable_linux()->mutable_resources();
  res->mutable_cpu()->mutable_shares()->set_value(512);
  res->mutable_cpu()->mutable_quota()->set_value(200000);
  res->mutable_cpu()->mutable_period()->set_value(100000);
  res->mutable_cpu()->set_cpus("4-7");
  res->mutable_memory()->mutable_limit()->set_value(512ll << 20);
  res->mutable_rdt_class()->set_value("LS");
  (*res->mutable_unified())["memory.high"] = "483183820";
  if (annotationBytes > 0)
    (*adj->mutable_annotations())["koordinator.sh/blob"] = std::string(annotationBytes, 'x');
  auto* up = r.add_update();
  up->set_container_id(koord::test::hexId("other/" + c.id()));
  up->mutable_linux()->mutable_resources()->mutable_cpu()->mutable_shares()->set_value(2);
  return r;
}

// A hand-framed plugin for the [peer] cases: a connected socket and raw writes.
struct RawPlugin {
  explicit RawPlugin(const std::string& path) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawPlugin() { ::close(fd); }
  // Frames `message` on connId with the given frame sizes.
  void send(uint32_t connId, const std::string& message, const std::vector<size_t>& sizes) {
    std::string out;
    size_t off = 0;
    for (size_t n : sizes) {
      for (uint32_t v : {connId, static_cast<uint32_t>(n)})
        for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
      out.append(message, off, n);
      off += n;
    }
    REQUIRE(::write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()));
  }
  static std::string registerMessage(uint32_t stream, const std::string& name,
                                     const std::string& idx) {
    api::RegisterPluginRequest r;
    r.set_plugin_name(name);
    r.set_plugin_idx(idx);
    return NriRuntimePeer::encodeMessage(
        stream, 1,
        NriRuntimePeer::encodeRequest("nri.pkg.api.v1alpha1.Runtime", "RegisterPlugin",
                                      r.SerializeAsString(), 2'000'000'000));
  }
  int fd = -1;
  bool connected = false;
};

bool hasViolation(const NriRuntimePeer& peer, const std::string& needle) {
  for (const auto& v : peer.violations())
    if (v.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

// ---------------------------------------------------------------- the peer itself

TEST_CASE("the peer frames like Go: one frame up to 4096 bytes, else 4096 and the rest", "[peer]") {
  using V = std::vector<size_t>;
  CHECK(koord::test::frameSizes(10, Framing::go()) == V{10});
  CHECK(koord::test::frameSizes(4096, Framing::go()) == V{4096});
  CHECK(koord::test::frameSizes(13681, Framing::go()) == V{4096, 9585});
  CHECK(koord::test::frameSizes(13681, Framing::single()) == V{13681});
  CHECK(koord::test::frameSizes(10, Framing::chunks(4)) == V{4, 4, 2});
}

TEST_CASE("the peer reports a message cut into more than two frames", "[peer]") {
  koord::test::TempTree dir;
  NriRuntimePeer peer;
  peer.listen(dir.path("nri.sock"));
  RawPlugin plugin(dir.path("nri.sock"));
  REQUIRE(plugin.connected);
  std::string msg = RawPlugin::registerMessage(1, "raw", "50");
  plugin.send(2, msg, {10, 10, msg.size() - 20});
  REQUIRE(peer.waitUntil([&] { return !peer.registrations().empty(); }, kLimit));
  CHECK(hasViolation(peer, "in 3 frames"));
  CHECK(peer.registrations()[0].name == "raw");
}

TEST_CASE("the peer reports two messages in one frame and a reused stream id", "[peer]") {
  koord::test::TempTree dir;
  NriPeerConfig config;
  config.autoHandshake = false;
  NriRuntimePeer peer(config);
  peer.listen(dir.path("nri.sock"));
  RawPlugin plugin(dir.path("nri.sock"));
  REQUIRE(plugin.connected);
  std::string two = RawPlugin::registerMessage(1, "raw", "50") +
                    RawPlugin::registerMessage(1, "raw", "50") +
                    RawPlugin::registerMessage(3, "raw", "50");
  plugin.send(2, two, {two.size()});
  // The peer records a registration before it reports a second one as a violation:
  // wait for the report itself, not only the record.
  REQUIRE(peer.waitUntil(
      [&] {
        return peer.registrations().size() == 2 && hasViolation(peer, "RegisterPlugin again");
      },
      kLimit));
  CHECK(hasViolation(peer, "shares a frame with the next message"));
  CHECK(hasViolation(peer, "not above the last one"));
  CHECK(hasViolation(peer, "RegisterPlugin again"));
}

TEST_CASE("the peer closes a connection whose first frame exceeds 4096 bytes", "[peer]") {
  koord::test::TempTree dir;
  NriRuntimePeer peer;
  peer.listen(dir.path("nri.sock"));
  RawPlugin plugin(dir.path("nri.sock"));
  REQUIRE(plugin.connected);
  api::RegisterPluginRequest r;
  r.set_plugin_name(std::string(5000, 'n'));
  r.set_plugin_idx("50");
  std::string msg = NriRuntimePeer::encodeMessage(
      1, 1,
      NriRuntimePeer::encodeRequest("nri.pkg.api.v1alpha1.Runtime", "RegisterPlugin",
                                    r.SerializeAsString(), 0));
  plugin.send(2, msg, {msg.size()});
  REQUIRE(peer.waitUntil([&] { return peer.stats().closed == 1; }, kLimit));
  CHECK(hasViolation(peer, "starts a message"));
}

TEST_CASE("the peer refuses a bad index and closes a plugin that never registers", "[peer]") {
  koord::test::TempTree dir;
  NriPeerConfig config;
  config.registrationTimeout = 300ms;
  NriRuntimePeer peer(config);
  peer.listen(dir.path("nri.sock"));
  {
    RawPlugin plugin(dir.path("nri.sock"));
    plugin.send(2, RawPlugin::registerMessage(1, "raw", "5"),
                {RawPlugin::registerMessage(1, "raw", "5").size()});
    REQUIRE(peer.waitUntil([&] { return peer.stats().closed == 1; }, kLimit));
    CHECK(hasViolation(peer, "invalid plugin index"));
    CHECK_FALSE(peer.registrations().at(0).accepted);
  }
  RawPlugin silent(dir.path("nri.sock"));
  REQUIRE(peer.waitUntil([&] { return peer.stats().closed == 2; }, kLimit));
  CHECK(hasViolation(peer, "no RegisterPlugin within 300 ms"));
  CHECK(peer.lastCloseReason() == "plugin registration timed out");
}

TEST_CASE("payload helpers fill pods and containers as containerd 1.7 does for kubelet", "[peer]") {
  koord::test::PodSpec ps;
  ps.qos = koord::test::PodQos::kBestEffort;
  ps.uid = "6f1c1a0e-3b7e-4d8a-9c1e-2f4b5a6c7d8e";
  auto pod = koord::test::makePod(ps);
  CHECK(pod.id().size() == 64);
  CHECK(pod.labels().at("io.kubernetes.pod.uid") == ps.uid);
  CHECK(pod.linux().cgroup_parent() == "/kubepods/besteffort/pod" + ps.uid);
  ps.driver = koord::test::CgroupDriver::kSystemd;
  CHECK(koord::test::makePod(ps).linux().cgroup_parent() ==
        "kubepods-besteffort-pod6f1c1a0e_3b7e_4d8a_9c1e_2f4b5a6c7d8e.slice");
  auto c = koord::test::makeContainer(pod, koord::test::ContainerSpec{});
  CHECK(c.pod_sandbox_id() == pod.id());
  CHECK(c.labels().at("io.kubernetes.container.name") == "nginx");
  CHECK(c.linux().resources().cpu().shares().value() == 2);
  CHECK(c.linux().cgroups_path() == pod.linux().cgroup_parent() + "/" + c.id());
}

// ---------------------------------------------------------------- the client

TEST_CASE("the client registers with its name and index and subscribes its mask", "[client]") {
  Rig rig;
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));
  auto regs = rig.peer.registrations();
  REQUIRE(regs.size() == 1);
  CHECK(regs[0].name == "koordlet_nri");
  CHECK(regs[0].idx == "00");
  CHECK(regs[0].accepted);
  CHECK(rig.peer.events() == kMask);
  {
    std::lock_guard lock(rig.handler.mu);
    REQUIRE(rig.handler.configures.size() == 1);
    CHECK(rig.handler.configures[0].runtime_name() == "containerd");
    CHECK(rig.handler.configures[0].request_timeout() == 2000);
    CHECK(rig.handler.configures[0].registration_timeout() == 5000);
  }
  REQUIRE(
      rig.peer.waitUntil([&] { return rig.state() == koord::nri::NriState::kConnected; }, kLimit));
  auto st = rig.client->status();
  CHECK(st.runtimeName == "containerd");
  CHECK(st.events == kMask);
  CHECK(st.connects == 1);
  INFO(rig.peer.violationsText());
  CHECK(rig.peer.violations().empty());
}

TEST_CASE("synchronize hands the handler the whole snapshot, split or not", "[client]") {
  NriPeerConfig config;
  size_t pods = 0;
  SECTION("no pods") { pods = 0; }
  SECTION("one pod") { pods = 1; }
  SECTION("many pods in split chunks") {
    pods = 300;
    config.syncSplitBytes = 64 * 1024;
  }
  Rig rig(config);
  std::vector<api::PodSandbox> podList;
  std::vector<api::Container> ctrList;
  koord::test::makeNode(pods, podList, ctrList);
  rig.peer.setSyncState(podList, ctrList);
  api::ContainerUpdate up;
  if (pods > 0) {
    up.set_container_id(ctrList[0].id());
    up.mutable_linux()->mutable_resources()->mutable_cpu()->mutable_shares()->set_value(4);
    *rig.handler.syncReply.add_update() = up;
  }
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));
  INFO(rig.peer.violationsText());
  CHECK(rig.peer.violations().empty());

  auto chunks = rig.peer.syncRequests();
  if (pods == 300) {
    REQUIRE(chunks.size() > 2);
    for (size_t i = 0; i + 1 < chunks.size(); ++i) CHECK(chunks[i].more());
  } else {
    CHECK(chunks.size() == 1);
  }
  CHECK_FALSE(chunks.back().more());

  std::lock_guard lock(rig.handler.mu);
  REQUIRE(rig.handler.syncs.size() == 1);
  const auto& got = rig.handler.syncs[0];
  REQUIRE(got.pods_size() == static_cast<int>(pods));
  REQUIRE(got.containers_size() == static_cast<int>(pods));
  for (size_t i = 0; i < pods; ++i) {
    CHECK(same(got.pods(static_cast<int>(i)), podList[i]));
    CHECK(same(got.containers(static_cast<int>(i)), ctrList[i]));
  }
  auto replies = rig.peer.syncResponses();
  REQUIRE(replies.size() == 1);
  CHECK(same(replies[0], rig.handler.syncReply));
}

TEST_CASE("each event reaches the handler intact and its exact response comes back", "[client]") {
  Rig rig;
  auto pod = systemdPod();
  auto ctr = webContainer(pod);
  rig.handler.createReply = adjustment(ctr);
  auto* uu = rig.handler.updateReply.add_update();
  uu->set_container_id(ctr.id());
  uu->mutable_linux()->mutable_resources()->mutable_cpu()->mutable_quota()->set_value(150000);
  auto* ev = rig.handler.updateReply.add_evict();
  ev->set_container_id(koord::test::hexId("victim"));
  ev->set_reason("memory pressure");
  auto* su = rig.handler.stopReply.add_update();
  su->set_container_id(koord::test::hexId("neighbour"));
  su->mutable_linux()->mutable_resources()->mutable_cpu()->set_cpus("0-3");
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));

  auto run = rig.peer.stateChange(api::RUN_POD_SANDBOX, pod);
  REQUIRE(run.ok());

  auto create = rig.peer.createContainer(pod, ctr);
  INFO(create.describe());
  REQUIRE(create.ok());
  CHECK(same(create.response, rig.handler.createReply));

  auto start = rig.peer.stateChange(api::START_CONTAINER, pod, &ctr);
  REQUIRE(start.ok());

  api::LinuxResources res;
  res.mutable_cpu()->mutable_quota()->set_value(300000);
  res.mutable_cpu()->mutable_period()->set_value(100000);
  res.mutable_memory()->mutable_limit()->set_value(1ll << 30);
  auto update = rig.peer.updateContainer(pod, ctr, res);
  REQUIRE(update.ok());
  CHECK(same(update.response, rig.handler.updateReply));

  auto stop = rig.peer.stopContainer(pod, ctr);
  REQUIRE(stop.ok());
  CHECK(same(stop.response, rig.handler.stopReply));

  REQUIRE(rig.peer.stateChange(api::REMOVE_CONTAINER, pod, &ctr).ok());
  REQUIRE(rig.peer.stateChange(api::REMOVE_POD_SANDBOX, pod).ok());
  // Not in the mask: the runtime does not call it.
  CHECK(rig.peer.stateChange(api::POST_START_CONTAINER, pod, &ctr).outcome ==
        CallReply::Outcome::kNotSubscribed);

  std::lock_guard lock(rig.handler.mu);
  REQUIRE(rig.handler.creates.size() == 1);
  CHECK(same(rig.handler.creates[0].pod(), pod));
  CHECK(same(rig.handler.creates[0].container(), ctr));
  REQUIRE(rig.handler.updates.size() == 1);
  CHECK(same(rig.handler.updates[0].linux_resources(), res));
  CHECK(same(rig.handler.updates[0].container(), ctr));
  REQUIRE(rig.handler.stops.size() == 1);
  CHECK(same(rig.handler.stops[0].container(), ctr));
  REQUIRE(rig.handler.events.size() == 4);
  CHECK(rig.handler.events[0].event() == api::RUN_POD_SANDBOX);
  CHECK(same(rig.handler.events[0].pod(), pod));
  CHECK_FALSE(rig.handler.events[0].has_container());
  CHECK(rig.handler.events[1].event() == api::START_CONTAINER);
  CHECK(same(rig.handler.events[1].container(), ctr));
  CHECK(rig.handler.events[2].event() == api::REMOVE_CONTAINER);
  CHECK(rig.handler.events[3].event() == api::REMOVE_POD_SANDBOX);
  INFO(rig.peer.violationsText());
  CHECK(rig.peer.violations().empty());
}

TEST_CASE("an unknown method or service is answered with code 12 and the plugin stays",
          "[client]") {
  Rig rig;
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));
  auto r = rig.peer.call(kPluginService, "Frobnicate", "");
  INFO(r.describe());
  CHECK(r.outcome == CallReply::Outcome::kStatus);
  CHECK(r.code == 12);
  auto s = rig.peer.call("nri.pkg.api.v1alpha1.Nonsense", "Configure", "");
  CHECK(s.code == 12);
  // Shutdown is a no-op that succeeds.
  CHECK(rig.peer.call(kPluginService, "Shutdown", "").ok());
  CHECK(rig.peer.ready());
  auto pod = systemdPod();
  CHECK(rig.peer.stateChange(api::RUN_POD_SANDBOX, pod).ok());
  CHECK(rig.peer.violations().empty());
}

TEST_CASE("the client reconnects when the runtime closes mid-message", "[client]") {
  Rig rig;
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));
  REQUIRE(rig.peer.closeMidMessage(100));
  REQUIRE(rig.peer.waitSynchronized(2, kLimit));
  CHECK(rig.peer.registrations().size() == 2);
  CHECK(rig.handler.syncCount() == 2);
  // A runtime gone mid-message is a lost connection, not a protocol violation.
  CHECK(rig.client->status().protocolCloses == 0);
  auto pod = systemdPod();
  CHECK(rig.peer.stateChange(api::RUN_POD_SANDBOX, pod).ok());
  CHECK(rig.peer.violations().empty());
}

TEST_CASE("a garbage frame makes the client drop the connection and reconnect", "[client]") {
  Rig rig;
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));
  std::string garbage;
  SECTION("a mux frame of 100 MiB") {
    garbage = std::string("\x00\x00\x00\x01\x06\x40\x00\x00", 8) + std::string(64, 'g');
  }
  SECTION("a ttrpc message of an unknown type") {
    std::string msg = NriRuntimePeer::encodeMessage(1001, 7, "junk");
    garbage = std::string("\x00\x00\x00\x01\x00\x00\x00", 7) + static_cast<char>(msg.size()) + msg;
  }
  SECTION("a ttrpc message longer than 64 MiB") {
    garbage = std::string("\x00\x00\x00\x01\x00\x00\x00\x0a", 8) +
              std::string("\x05\x00\x00\x00\x00\x00\x03\xe9\x01\x00", 10);
  }
  REQUIRE(rig.peer.sendRaw(garbage));
  REQUIRE(rig.peer.waitSynchronized(2, kLimit));
  CHECK(rig.peer.registrations().size() == 2);
  CHECK(rig.client->status().disconnects >= 1);
  CHECK(rig.client->status().protocolCloses == 1);  // counted once, as a protocol close
  CHECK(rig.peer.violations().empty());
}

TEST_CASE("a restarted runtime gets a fresh registration, Configure and Synchronize", "[client]") {
  Rig rig;
  std::vector<api::PodSandbox> pods;
  std::vector<api::Container> ctrs;
  koord::test::makeNode(2, pods, ctrs);
  rig.peer.setSyncState(pods, ctrs);
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));

  rig.peer.stop();  // the socket is removed
  CHECK_FALSE(std::filesystem::exists(rig.socket));
  koord::test::makeNode(5, pods, ctrs, koord::test::CgroupDriver::kCgroupfs, "after");
  rig.peer.setSyncState(pods, ctrs);
  rig.peer.listen(rig.socket);
  REQUIRE(rig.peer.waitSynchronized(2, kLimit));
  CHECK(rig.peer.registrations().size() == 2);
  std::lock_guard lock(rig.handler.mu);
  CHECK(rig.handler.configures.size() == 2);
  REQUIRE(rig.handler.syncs.size() == 2);
  CHECK(rig.handler.syncs[0].pods_size() == 2);
  CHECK(rig.handler.syncs[1].pods_size() == 7);
  CHECK(rig.peer.violations().empty());
}

TEST_CASE("the client keeps retrying an absent socket and connects once it appears", "[client]") {
  Rig rig;
  rig.startClient();
  REQUIRE(rig.peer.waitUntil([&] { return rig.client->status().attempts >= 3; }, kLimit));
  auto st = rig.client->status();
  CHECK(st.state != koord::nri::NriState::kConnected);
  CHECK(st.connects == 0);
  CHECK_FALSE(st.lastError.empty());
  rig.peer.listen(rig.socket);
  REQUIRE(rig.peer.waitReady(kLimit));
  REQUIRE(
      rig.peer.waitUntil([&] { return rig.state() == koord::nri::NriState::kConnected; }, kLimit));
  CHECK(rig.peer.registrations().size() == 1);
}

TEST_CASE("handlers answer well inside 2 s while the agent loop's lock is held", "[client]") {
  Rig rig;
  auto pod = systemdPod();
  auto ctr = webContainer(pod);
  rig.handler.createReply = adjustment(ctr);
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));

  std::mutex agentLoop;  // what a slow reconcile would hold for seconds
  std::atomic<bool> held{false}, release{false};
  std::thread loop([&] {
    std::lock_guard lock(agentLoop);
    held = true;
    while (!release) std::this_thread::sleep_for(10ms);
  });
  while (!held) std::this_thread::yield();
  for (int i = 0; i < 20; ++i) {
    auto r = rig.peer.createContainer(pod, ctr);
    REQUIRE(r.ok());
    CHECK(r.latency < 1s);
  }
  CHECK_FALSE(agentLoop.try_lock());  // still held throughout
  release = true;
  loop.join();
  CHECK(rig.peer.violations().empty());
}

TEST_CASE("UpdateContainers sent from outside a handler arrives at the runtime", "[client]") {
  Rig rig;
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));
  REQUIRE(
      rig.peer.waitUntil([&] { return rig.state() == koord::nri::NriState::kConnected; }, kLimit));
  api::UpdateContainersRequest req;
  for (int i = 0; i < 3; ++i) {
    auto* u = req.add_update();
    u->set_container_id(koord::test::hexId(std::string("c").append(std::to_string(i))));
    u->mutable_linux()->mutable_resources()->mutable_cpu()->mutable_shares()->set_value(2 + i);
    u->set_ignore_failure(true);
  }
  rig.client->updateContainers(req);
  REQUIRE(rig.peer.waitUntil([&] { return rig.peer.updateRequests().size() == 1; }, kLimit));
  CHECK(same(rig.peer.updateRequests()[0], req));
  // A second one gets the next odd stream id.
  rig.client->updateContainers(req);
  REQUIRE(rig.peer.waitUntil([&] { return rig.peer.updateRequests().size() == 2; }, kLimit));
  INFO(rig.peer.violationsText());
  CHECK(rig.peer.violations().empty());
  // The runtime keeps the plugin: events still flow.
  CHECK(rig.peer.stateChange(api::RUN_POD_SANDBOX, systemdPod()).ok());
}

TEST_CASE("large replies go out in at most two frames, the first of 4096 bytes", "[client]") {
  Rig rig;
  auto pod = systemdPod();
  auto ctr = webContainer(pod);
  size_t bytes = 0;
  SECTION("10 KiB") { bytes = 10 * 1024; }
  SECTION("3 MiB") { bytes = 3 * 1024 * 1024; }
  rig.handler.createReply = adjustment(ctr, bytes);
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));
  auto r = rig.peer.createContainer(pod, ctr);
  INFO(r.describe());
  REQUIRE(r.ok());
  CHECK(same(r.response, rig.handler.createReply));
  bool seen = false;
  for (const auto& m : rig.peer.received()) {
    if (m.connId != 1 || m.streamId != r.streamId) continue;
    seen = true;
    CHECK(m.size > bytes);
    REQUIRE(m.frames.size() == 2);
    CHECK(m.frames[0] == 4096);
    CHECK(m.frames[1] == m.size - 4096);
  }
  CHECK(seen);
  INFO(rig.peer.violationsText());
  CHECK(rig.peer.violations().empty());
  CHECK(rig.peer.ready());
}

TEST_CASE("requests the runtime cuts into any frames are reassembled", "[client]") {
  NriPeerConfig config;
  SECTION("7-byte frames") { config.framing = Framing::chunks(7); }
  SECTION("one frame per message") { config.framing = Framing::single(); }
  std::vector<api::PodSandbox> pods;
  std::vector<api::Container> ctrs;
  koord::test::makeNode(20, pods, ctrs);
  Rig rig(config);
  rig.peer.setSyncState(pods, ctrs);
  rig.start();
  REQUIRE(rig.peer.waitReady(kLimit));
  auto pod = systemdPod();
  auto ctr = webContainer(pod);
  rig.handler.createReply = adjustment(ctr);
  auto r = rig.peer.createContainer(pod, ctr);
  REQUIRE(r.ok());
  CHECK(same(r.response, rig.handler.createReply));
  std::lock_guard lock(rig.handler.mu);
  REQUIRE(rig.handler.syncs.size() == 1);
  CHECK(rig.handler.syncs[0].pods_size() == 20);
}

TEST_CASE("a handler error goes back as a status and the connection stays", "[client]") {
  struct Failing : RecordingHandler {
    koord::Result<api::CreateContainerResponse> createContainer(
        const api::CreateContainerRequest&) override {
      return koord::makeError("no room on this node");
    }
  };
  koord::test::TempTree dir;
  NriRuntimePeer peer;
  peer.listen(dir.path("nri.sock"));
  Failing handler;
  koord::nri::NriClient client(clientConfig(dir.path("nri.sock")), handler);
  client.start();
  REQUIRE(peer.waitReady(kLimit));
  auto pod = systemdPod();
  auto r = peer.createContainer(pod, webContainer(pod));
  CHECK(r.outcome == CallReply::Outcome::kStatus);
  CHECK(r.code != 0);
  CHECK(r.message.find("no room on this node") != std::string::npos);
  CHECK(peer.ready());
  client.stop();
  peer.stop();
}

TEST_CASE(
    "a handler slower than the runtime's deadline gets the plugin dropped, then it reconnects",
    "[client]") {
  // Stands in for a handler that blocks (it must not): the first CreateContainer
  // takes longer than the runtime's request timeout.
  struct Slow : RecordingHandler {
    koord::Result<api::CreateContainerResponse> createContainer(
        const api::CreateContainerRequest& req) override {
      if (first.exchange(false)) std::this_thread::sleep_for(2500ms);
      return RecordingHandler::createContainer(req);
    }
    std::atomic<bool> first{true};
  };
  // A deadline every other call meets on a loaded 2-core machine (a CI run's other
  // tests burn both cores; 300 ms once failed the re-synchronized call below), and a
  // handler well past it.
  NriPeerConfig config;
  config.requestTimeout = 1000ms;
  koord::test::TempTree dir;
  NriRuntimePeer peer(config);
  peer.listen(dir.path("nri.sock"));
  Slow handler;
  koord::nri::NriClient client(clientConfig(dir.path("nri.sock")), handler);
  client.start();
  REQUIRE(peer.waitReady(kLimit));
  auto pod = systemdPod();
  auto ctr = webContainer(pod);
  auto r = peer.createContainer(pod, ctr);
  CHECK(r.outcome == CallReply::Outcome::kTimeout);
  CHECK(peer.lastCloseReason() == "request timed out: CreateContainer");
  REQUIRE(peer.waitSynchronized(2, kLimit));
  CHECK(peer.createContainer(pod, ctr).ok());
  client.stop();
  peer.stop();
}

// ------------------------------------------------------------------ limits

TEST_CASE("a Synchronize over the plugin's limit is refused, then the client reconnects",
          "[client]") {
  NriPeerConfig config;
  config.syncSplitBytes = 16 * 1024;  // split, as containerd 1.7.26+ does
  koord::test::TempTree dir;
  NriRuntimePeer peer(config);
  std::vector<api::PodSandbox> pods;
  std::vector<api::Container> ctrs;
  koord::test::makeNode(200, pods, ctrs);
  peer.setSyncState(pods, ctrs);
  peer.listen(dir.path("nri.sock"));
  RecordingHandler handler;
  auto cc = clientConfig(dir.path("nri.sock"));
  cc.session.syncLimits.maxContainers = 50;
  koord::nri::NriClient client(cc, handler);
  client.start();
  // Refused on every attempt: the client closes each time and tries again.
  REQUIRE(peer.waitUntil([&] { return client.status().syncRefusals >= 2; }, kLimit));
  auto st = client.status();
  CHECK(st.attempts >= 2);
  CHECK(st.connects == 0);
  CHECK_THAT(st.lastError, Catch::Contains("limit of 100000 pods and 50 containers"));
  CHECK(peer.syncResponses().empty());  // no chunk past the limit was ever answered OK
  CHECK(handler.syncCount() == 0);
  client.stop();
  peer.stop();
}

namespace {

// A runtime that does the handshake by hand, then stops reading.
struct StalledRuntime {
  explicit StalledRuntime(const std::string& path) {
    listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener, 4) == 0);
  }
  ~StalledRuntime() {
    if (fd >= 0) ::close(fd);
    ::close(listener);
  }
  // Accepts the plugin and answers RegisterPlugin, sends Configure and Synchronize;
  // the plugin's replies are left unread.
  void handshake() {
    fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);  // the client connects at once
    REQUIRE(fd >= 0);
    namespace n = koord::nri;
    std::string out;
    n::appendFrames(out, n::kRuntimeServiceConn,
                    n::encodeMessage(1, n::MessageType::kResponse, n::encodeOkResponse("")));
    api::ConfigureRequest conf;
    conf.set_runtime_name("containerd");
    n::appendFrames(out, n::kPluginServiceConn,
                    n::encodeMessage(1, n::MessageType::kRequest,
                                     n::encodeRequest(kPluginService, "Configure",
                                                      conf.SerializeAsString(), 2'000'000'000)));
    n::appendFrames(
        out, n::kPluginServiceConn,
        n::encodeMessage(3, n::MessageType::kRequest,
                         n::encodeRequest(kPluginService, "Synchronize", "", 2'000'000'000)));
    REQUIRE(::write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()));
  }
  int listener = -1;
  int fd = -1;
};

}  // namespace

TEST_CASE("a runtime that stops reading gets the connection closed, not a growing queue",
          "[client]") {
  koord::test::TempTree dir;
  StalledRuntime runtime(dir.path("nri.sock"));
  RecordingHandler handler;
  auto cc = clientConfig(dir.path("nri.sock"));
  cc.writeLimits.maxBytes = 1 << 20;
  cc.backoff.initial = 10s;  // one connection for this test
  cc.backoff.cap = 10s;
  koord::nri::NriClient client(cc, handler);
  client.start();
  runtime.handshake();
  auto waitFor = [&](const std::function<bool()>& pred) {
    return koord::test::waitFor(
               kLimit, [&] { return pred() ? "" : std::string("not yet"); }, 10ms)
        .empty();
  };
  REQUIRE(waitFor([&] { return client.status().state == koord::nri::NriState::kConnected; }));
  // 16 MiB of UpdateContainers against a peer that reads nothing: the socket
  // buffers fill, then the 1 MiB queue.
  api::UpdateContainersRequest big;
  auto* u = big.add_update();
  u->set_container_id(koord::test::hexId("c0"));
  (*u->mutable_linux()->mutable_resources()->mutable_unified())["memory.high"] =
      std::string(256 * 1024, '1');
  for (int i = 0; i < 64; ++i) client.updateContainers(big);
  // The overflow is counted just before the connection is dropped (two steps under
  // the client's lock): wait for both, not the first alone.
  REQUIRE(waitFor([&] {
    auto now = client.status();
    return now.writeQueueOverflows == 1 && now.state == koord::nri::NriState::kWaiting;
  }));
  auto st = client.status();
  CHECK(st.disconnects == 1);
  CHECK(st.state == koord::nri::NriState::kWaiting);
  CHECK_THAT(st.lastError, Catch::Contains("write queue full"));
  client.stop();
}

}  // namespace test_nri_nri_client
