// Writes the NRI targets' seed inputs into a directory: what a runtime sends a plugin,
// encoded with our mux and ttrpc framing (the same bytes containerd's Go side puts on
// the wire, reference nri.md §2-§3), one file per conversation. NRI has no captured
// traffic in tests/fixtures (no containerd runs here), so the seeds are built from
// the protocol: registration answered, Configure, Synchronize (whole and split), then
// one event each, and one message over 4096 bytes (two frames).
//   nri_seeds <dir>
#include <cstdio>
#include <fstream>
#include <string>

#include "nri/api.h"
#include "nri/mux.h"
#include "nri/ttrpc.h"

namespace kn = koord::nri;
namespace api = kn::api;

namespace {

std::string request(uint32_t stream, std::string_view method, const google::protobuf::Message& m) {
  std::string out;
  kn::appendFrames(out, kn::kPluginServiceConn,
                   kn::encodeMessage(stream, kn::MessageType::kRequest,
                                     kn::encodeRequest(kn::kPluginService, method,
                                                       m.SerializeAsString(), 2'000'000'000)));
  return out;
}

// The runtime's reply to RegisterPlugin (our stream 1 on ConnID 2).
std::string registered() {
  std::string out;
  kn::appendFrames(out, kn::kRuntimeServiceConn,
                   kn::encodeMessage(1, kn::MessageType::kResponse,
                                     kn::encodeOkResponse(api::Empty().SerializeAsString())));
  return out;
}

api::PodSandbox pod(const std::string& uid, const std::string& qos, const std::string& parent) {
  api::PodSandbox p;
  p.set_id("sandbox-" + uid);
  p.set_uid(uid);
  p.set_name("pod-" + uid);
  p.set_namespace_("default");
  (*p.mutable_labels())["koordinator.sh/qosClass"] = qos;
  if (qos == "BE") {
    (*p.mutable_annotations())["node.koordinator.sh/extended-resource-spec"] =
        R"({"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"500","kubernetes.io/batch-memory":"1Gi"},"limits":{"kubernetes.io/batch-cpu":"1000","kubernetes.io/batch-memory":"1Gi"}}}})";
  }
  (*p.mutable_annotations())["koordinator.sh/cpuBurst"] = R"({"policy":"auto"})";
  p.mutable_linux()->set_cgroup_parent(parent);
  return p;
}

api::Container container(const std::string& id, const api::PodSandbox& p) {
  api::Container c;
  c.set_id(id);
  c.set_pod_sandbox_id(p.id());
  c.set_name("main");
  auto* r = c.mutable_linux()->mutable_resources();
  r->mutable_cpu()->mutable_shares()->set_value(512);
  r->mutable_cpu()->mutable_quota()->set_value(100000);
  r->mutable_cpu()->mutable_period()->set_value(100000);
  r->mutable_memory()->mutable_limit()->set_value(int64_t{1} << 30);
  return c;
}

bool write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream f(dir + "/" + name, std::ios::binary | std::ios::trunc);
  f << bytes;
  return f.good();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: nri_seeds <dir>\n");
    return 2;
  }
  const std::string dir = argv[1];
  const api::PodSandbox be = pod("b3e0", "BE", "/kubepods/besteffort/podb3e0");
  const api::PodSandbox ls = pod("15a1", "LS", "/kubepods/burstable/pod15a1");
  const api::Container beMain = container("c-be", be), lsMain = container("c-ls", ls);

  api::ConfigureRequest configure;
  configure.set_runtime_name("containerd");
  configure.set_runtime_version("v1.7.27");
  configure.set_registration_timeout(5000);
  configure.set_request_timeout(2000);
  api::SynchronizeRequest sync;
  *sync.add_pods() = be;
  *sync.add_pods() = ls;
  *sync.add_containers() = beMain;
  *sync.add_containers() = lsMain;
  const std::string start = registered() + request(1, "Configure", configure);
  const std::string synced = start + request(3, "Synchronize", sync);

  api::SynchronizeRequest first, last;
  *first.add_pods() = be;
  *first.add_containers() = beMain;
  first.set_more(true);
  *last.add_pods() = ls;
  *last.add_containers() = lsMain;

  api::CreateContainerRequest create;
  *create.mutable_pod() = be;
  *create.mutable_container() = beMain;
  api::UpdateContainerRequest update;
  *update.mutable_pod() = ls;
  *update.mutable_container() = lsMain;
  *update.mutable_linux_resources() = lsMain.linux().resources();
  api::StopContainerRequest stop;
  *stop.mutable_pod() = ls;
  *stop.mutable_container() = lsMain;
  api::StateChangeEvent run;
  run.set_event(api::RUN_POD_SANDBOX);
  *run.mutable_pod() = be;
  api::StateChangeEvent removed = run;
  removed.set_event(api::REMOVE_POD_SANDBOX);
  // Over 4096 bytes: the sender's two frames.
  api::CreateContainerRequest big = create;
  (*big.mutable_pod()->mutable_annotations())["fuzz/padding"] = std::string(6000, 'x');

  bool ok = write(dir, "configure", start);
  ok &= write(dir, "synchronize", synced);
  ok &= write(dir, "synchronize-split",
              start + request(3, "Synchronize", first) + request(5, "Synchronize", last));
  ok &= write(dir, "create-container", synced + request(5, "CreateContainer", create));
  ok &= write(dir, "update-container", synced + request(5, "UpdateContainer", update));
  ok &= write(dir, "stop-container", synced + request(5, "StopContainer", stop));
  ok &= write(dir, "state-change",
              synced + request(5, "StateChange", run) + request(7, "RemovePodSandbox", removed));
  ok &= write(dir, "shutdown-unknown",
              synced + request(5, "Shutdown", api::Empty()) + request(7, "Bogus", api::Empty()));
  ok &= write(dir, "create-two-frames", synced + request(5, "CreateContainer", big));
  if (!ok) {
    std::fprintf(stderr, "nri_seeds: cannot write to %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
