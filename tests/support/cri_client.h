// CriClient: the kubelet's side of CRI, as far as the real-runtime tests need it: pods
// and containers made, started, stopped and removed over the runtime's CRI socket
// (gRPC over a unix socket, tests/support/cri.proto). Every call has a deadline; a
// failed call throws with the method and the runtime's own message. Test code.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/cri.grpc.pb.h"

namespace koord::test {

class CriClient {
 public:
  explicit CriClient(const std::string& socketPath,
                     std::chrono::milliseconds deadline = std::chrono::seconds(60));

  runtime::v1::VersionResponse version();
  // The pod's sandbox, as the kubelet asks for it: `config` as given, on the runtime's
  // `runtimeHandler` (its RuntimeClass's handler; "" the runtime's default).
  std::string runPodSandbox(const runtime::v1::PodSandboxConfig& config,
                            const std::string& runtimeHandler = "");
  std::string createContainer(const std::string& podId, const runtime::v1::ContainerConfig& config,
                              const runtime::v1::PodSandboxConfig& sandbox);
  void startContainer(const std::string& id);
  void stopContainer(const std::string& id, int64_t timeoutSeconds = 0);
  void removeContainer(const std::string& id);
  runtime::v1::ContainerStatus containerStatus(const std::string& id);
  void updateContainerResources(const std::string& id,
                                const runtime::v1::LinuxContainerResources& resources);
  void stopPodSandbox(const std::string& podId);
  void removePodSandbox(const std::string& podId);

 private:
  std::unique_ptr<grpc::ClientContext> context() const;
  std::unique_ptr<runtime::v1::RuntimeService::Stub> stub_;
  std::chrono::milliseconds deadline_;
};

// A pod sandbox as the kubelet (cgroupfs driver) describes one: host network, PID per
// container, IPC per pod, `cgroupParent` (e.g. /<tree>/kubepods/besteffort/pod<uid>),
// its log directory; the pod's own labels plus the io.kubernetes.pod.* ones, and the
// pod's annotations (the kubelet passes both through: NRI plugins read them).
runtime::v1::PodSandboxConfig kubeletSandbox(
    const std::string& name, const std::string& ns, const std::string& uid,
    const std::string& cgroupParent, const std::string& logDirectory,
    const std::map<std::string, std::string>& podLabels = {},
    const std::map<std::string, std::string>& podAnnotations = {});

// A container as the kubelet describes one: `image`, `command`, its log under the pod's
// log directory (<name>/0.log), the labels the kubelet sets, and `resources` (what
// the kubelet derives from the pod's requests and limits).
runtime::v1::ContainerConfig kubeletContainer(
    const std::string& name, const std::string& image, const std::vector<std::string>& command,
    const runtime::v1::PodSandboxConfig& sandbox,
    const runtime::v1::LinuxContainerResources& resources);

}  // namespace koord::test
