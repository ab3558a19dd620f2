// What the kubelet serves and keeps: the PodList of GET /pods (each pod's annotation
// values through the parsers the QoS layer applies to pod annotations), /configz,
// and the CPU manager checkpoint.
#include "fuzz/fuzz_support.h"
#include "kube/kubelet_config.h"
#include "kube/pod.h"
#include "qos/runtime_hooks.h"
#include "qos/slo_config.h"
#include "qos/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const std::string_view in = koord::fuzz::text(data, size);
  if (auto pods = koord::parsePodList(in); pods.ok()) {
    static const koord::CpuBurstConfig node = koord::defaultNodeSlo().cpuBurst;
    for (const auto& pod : *pods) {
      for (const auto& [key, value] : pod.annotations) {
        (void)koord::parseExtendedResourceSpec(value);
        (void)koord::mergeCpuBurstAnnotation(node, value);
        (void)koord::parseResourceStatusCpuset(value);
      }
    }
  }
  (void)koord::parseKubeletConfigz(in);
  (void)koord::parseCpuManagerCheckpoint(in, "fuzz");
  (void)koord::parseQuantity(in);
  (void)koord::parseQuantityMilli(in);
  return 0;
}
