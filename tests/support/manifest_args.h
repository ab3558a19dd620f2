// manifestArgs: the container args of a Kubernetes manifest (the first `args:` list),
// so tests run the agent with exactly what Koordinator's own DaemonSet passes
// (../shared/fixtures/koordinator/repo/koordlet-daemonset.yaml). A line reader, not a
// YAML parser: it takes the `- item` lines indented under the first `args:`, quotes
// removed, and stops at the first line that is not one.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace koord::test {

inline std::vector<std::string> manifestArgs(const std::string& yaml) {
  std::vector<std::string> out;
  std::istringstream in(yaml);
  std::string line;
  size_t argsIndent = std::string::npos;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    std::string content = line.substr(first);
    if (argsIndent == std::string::npos) {
      if (content.rfind("- ", 0) == 0) content = content.substr(2);
      if (content == "args:") argsIndent = line.find("args:");
      continue;
    }
    if (first < argsIndent || content.rfind("- ", 0) != 0) break;
    std::string item = content.substr(2);
    if (item.size() >= 2 && (item.front() == '"' || item.front() == '\'') &&
        item.back() == item.front()) {
      item = item.substr(1, item.size() - 2);
    }
    out.push_back(item);
  }
  return out;
}

}  // namespace koord::test
