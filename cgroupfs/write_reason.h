// WriteReason: what decided a cgroup write, as the strategy that asked for it saw
// it (GET /explain). A list of named inputs, each with its value as text and, when
// it comes from a config, where that config came from ("NodeSLO node-1
// resourceVersion 42", "file /etc/koordlet/slo.yaml", "default"). Strategies build
// one per round (or per pod) and share it between the writes it decided, so a
// round's explanation costs one allocation, not one per file.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace koord {

struct WriteInput {
  std::string name;    // "cpuSuppressThresholdPercent", "nodeUsedCores", "policy"
  std::string value;   // as text: "65", "3.21", "cpuset"
  std::string source;  // "" for a measurement or a computed value
};

struct WriteReason {
  std::vector<WriteInput> inputs;
  // One sentence on the rule, when the inputs alone do not say it ("BE gets
  // capacity x threshold - LS usage - system usage").
  std::string rule;

  WriteReason& add(std::string name, std::string value, std::string source = "") {
    inputs.push_back({std::move(name), std::move(value), std::move(source)});
    return *this;
  }
};

using WriteReasonPtr = std::shared_ptr<const WriteReason>;

}  // namespace koord
