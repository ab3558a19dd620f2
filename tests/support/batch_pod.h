// The BE pod with Koordinator's batch resources that the real-runtime scenes and the NRI
// benchmark run (koordlet.md §2.3): one container, "stress", with batch-cpu 1k and
// batch-memory 64Mi as requests and limits. Koordinator's webhook writes them into the
// extended-resource-spec annotation; the kubelet passes the pod's labels and annotations
// to the runtime, so an NRI plugin sees them in the sandbox before the agent's next
// kubelet poll knows the pod. Test code.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace koord::test {

inline const std::string kBatchResourceSpec =
    R"({"containers":{"stress":{"requests":{"kubernetes.io/batch-cpu":"1k",)"
    R"("kubernetes.io/batch-memory":"64Mi"},"limits":{"kubernetes.io/batch-cpu":"1k",)"
    R"("kubernetes.io/batch-memory":"64Mi"}}}})";
inline const std::map<std::string, std::string> kBeLabels = {{"koordinator.sh/qosClass", "BE"}};
inline const std::map<std::string, std::string> kBeBatchAnnotations = {
    {"node.koordinator.sh/extended-resource-spec", kBatchResourceSpec}};
// The container's resources as the pod spec (and the kubelet's /pods/) carries them.
inline const nlohmann::json kBatchResources = {{"kubernetes.io/batch-cpu", "1k"},
                                               {"kubernetes.io/batch-memory", "64Mi"}};

}  // namespace koord::test
