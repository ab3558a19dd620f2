#include "tests/support/cri_client.h"

#include <grpcpp/grpcpp.h>

#include <stdexcept>

namespace koord::test {
namespace {

void check(const grpc::Status& status, const std::string& method) {
  if (!status.ok()) {
    throw std::runtime_error("CRI " + method + ": " + std::to_string(status.error_code()) + " " +
                             status.error_message());
  }
}

}  // namespace

CriClient::CriClient(const std::string& socketPath, std::chrono::milliseconds deadline)
    : stub_(runtime::v1::RuntimeService::NewStub(
          grpc::CreateChannel("unix://" + socketPath, grpc::InsecureChannelCredentials()))),
      deadline_(deadline) {}

std::unique_ptr<grpc::ClientContext> CriClient::context() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + deadline_);
  return ctx;
}

runtime::v1::VersionResponse CriClient::version() {
  runtime::v1::VersionRequest req;
  req.set_version("v1");
  runtime::v1::VersionResponse resp;
  check(stub_->Version(context().get(), req, &resp), "Version");
  return resp;
}

std::string CriClient::runPodSandbox(const runtime::v1::PodSandboxConfig& config,
                                     const std::string& runtimeHandler) {
  runtime::v1::RunPodSandboxRequest req;
  *req.mutable_config() = config;
  req.set_runtime_handler(runtimeHandler);
  runtime::v1::RunPodSandboxResponse resp;
  check(stub_->RunPodSandbox(context().get(), req, &resp), "RunPodSandbox");
  return resp.pod_sandbox_id();
}

std::string CriClient::createContainer(const std::string& podId,
                                       const runtime::v1::ContainerConfig& config,
                                       const runtime::v1::PodSandboxConfig& sandbox) {
  runtime::v1::CreateContainerRequest req;
  req.set_pod_sandbox_id(podId);
  *req.mutable_config() = config;
  *req.mutable_sandbox_config() = sandbox;
  runtime::v1::CreateContainerResponse resp;
  check(stub_->CreateContainer(context().get(), req, &resp), "CreateContainer");
  return resp.container_id();
}

void CriClient::startContainer(const std::string& id) {
  runtime::v1::StartContainerRequest req;
  req.set_container_id(id);
  runtime::v1::StartContainerResponse resp;
  check(stub_->StartContainer(context().get(), req, &resp), "StartContainer");
}

void CriClient::stopContainer(const std::string& id, int64_t timeoutSeconds) {
  runtime::v1::StopContainerRequest req;
  req.set_container_id(id);
  req.set_timeout(timeoutSeconds);
  runtime::v1::StopContainerResponse resp;
  check(stub_->StopContainer(context().get(), req, &resp), "StopContainer");
}

void CriClient::removeContainer(const std::string& id) {
  runtime::v1::RemoveContainerRequest req;
  req.set_container_id(id);
  runtime::v1::RemoveContainerResponse resp;
  check(stub_->RemoveContainer(context().get(), req, &resp), "RemoveContainer");
}

runtime::v1::ContainerStatus CriClient::containerStatus(const std::string& id) {
  runtime::v1::ContainerStatusRequest req;
  req.set_container_id(id);
  runtime::v1::ContainerStatusResponse resp;
  check(stub_->ContainerStatus(context().get(), req, &resp), "ContainerStatus");
  return resp.status();
}

void CriClient::updateContainerResources(const std::string& id,
                                         const runtime::v1::LinuxContainerResources& resources) {
  runtime::v1::UpdateContainerResourcesRequest req;
  req.set_container_id(id);
  *req.mutable_linux() = resources;
  runtime::v1::UpdateContainerResourcesResponse resp;
  check(stub_->UpdateContainerResources(context().get(), req, &resp), "UpdateContainerResources");
}

void CriClient::stopPodSandbox(const std::string& podId) {
  runtime::v1::StopPodSandboxRequest req;
  req.set_pod_sandbox_id(podId);
  runtime::v1::StopPodSandboxResponse resp;
  check(stub_->StopPodSandbox(context().get(), req, &resp), "StopPodSandbox");
}

void CriClient::removePodSandbox(const std::string& podId) {
  runtime::v1::RemovePodSandboxRequest req;
  req.set_pod_sandbox_id(podId);
  runtime::v1::RemovePodSandboxResponse resp;
  check(stub_->RemovePodSandbox(context().get(), req, &resp), "RemovePodSandbox");
}

runtime::v1::PodSandboxConfig kubeletSandbox(
    const std::string& name, const std::string& ns, const std::string& uid,
    const std::string& cgroupParent, const std::string& logDirectory,
    const std::map<std::string, std::string>& podLabels,
    const std::map<std::string, std::string>& podAnnotations) {
  runtime::v1::PodSandboxConfig c;
  for (const auto& [k, v] : podLabels) (*c.mutable_labels())[k] = v;
  for (const auto& [k, v] : podAnnotations) (*c.mutable_annotations())[k] = v;
  auto* m = c.mutable_metadata();
  m->set_name(name);
  m->set_namespace_(ns);
  m->set_uid(uid);
  m->set_attempt(0);
  // No hostname: the kubelet sets one only for a pod in its own network namespace (a
  // host-network pod shares the node's UTS namespace, where runc refuses to set one).
  c.set_log_directory(logDirectory);
  (*c.mutable_labels())["io.kubernetes.pod.name"] = name;
  (*c.mutable_labels())["io.kubernetes.pod.namespace"] = ns;
  (*c.mutable_labels())["io.kubernetes.pod.uid"] = uid;
  (*c.mutable_annotations())["kubernetes.io/config.source"] = "api";
  auto* linux = c.mutable_linux();
  linux->set_cgroup_parent(cgroupParent);
  // hostNetwork: no CNI on a test node. PID per container, as the kubelet asks.
  auto* nso = linux->mutable_security_context()->mutable_namespace_options();
  nso->set_network(runtime::v1::NODE);
  nso->set_pid(runtime::v1::CONTAINER);
  nso->set_ipc(runtime::v1::POD);
  return c;
}

runtime::v1::ContainerConfig kubeletContainer(
    const std::string& name, const std::string& image, const std::vector<std::string>& command,
    const runtime::v1::PodSandboxConfig& sandbox,
    const runtime::v1::LinuxContainerResources& resources) {
  runtime::v1::ContainerConfig c;
  c.mutable_metadata()->set_name(name);
  c.mutable_metadata()->set_attempt(0);
  c.mutable_image()->set_image(image);
  for (const std::string& word : command) c.add_command(word);
  c.set_log_path(name + "/0.log");
  const auto& pod = sandbox.metadata();
  (*c.mutable_labels())["io.kubernetes.container.name"] = name;
  (*c.mutable_labels())["io.kubernetes.pod.name"] = pod.name();
  (*c.mutable_labels())["io.kubernetes.pod.namespace"] = pod.namespace_();
  (*c.mutable_labels())["io.kubernetes.pod.uid"] = pod.uid();
  auto* linux = c.mutable_linux();
  *linux->mutable_resources() = resources;
  auto* nso = linux->mutable_security_context()->mutable_namespace_options();
  nso->set_network(runtime::v1::NODE);
  nso->set_pid(runtime::v1::CONTAINER);
  nso->set_ipc(runtime::v1::POD);
  return c;
}

}  // namespace koord::test
