// A NodeSLO config file as --config reads it: YAML or JSON, a bare spec, a NodeSLO
// object or koord-manager's slo-controller-config ConfigMap (whose data values are
// JSON inside YAML). The same text also as the pod annotation koordinator.sh/cpuBurst.
#include "fuzz/fuzz_support.h"
#include "qos/slo_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const std::string_view in = koord::fuzz::text(data, size);
  auto spec = koord::parseNodeSlo(in, "fuzz.yaml");
  const koord::NodeSloSpec base = spec.ok() ? *spec : koord::defaultNodeSlo();
  (void)koord::mergeCpuBurstAnnotation(base.cpuBurst, in);
  return 0;
}
