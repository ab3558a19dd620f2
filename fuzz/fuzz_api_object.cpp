// API server response bodies: a Status (any error reply) and the objects the agent
// reads (fuzz/api_objects.h), plus the kubeconfig that points the agent at a server.
#include "fuzz/api_objects.h"
#include "fuzz/fuzz_support.h"
#include "kube/api_config.h"
#include "kube/api_status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const std::string_view in = koord::fuzz::text(data, size);
  if (auto status = koord::parseStatus(in, "fuzz"); status.ok()) {
    (void)koord::classify(static_cast<unsigned>(status->code & 0x3ff), &*status);
  }
  (void)koord::parseKubeconfig(in, "/fuzz/kubeconfig");
  const auto object = nlohmann::json::parse(in, nullptr, false);
  if (!object.is_discarded()) koord::fuzz::applyApiObject(object);
  return 0;
}
