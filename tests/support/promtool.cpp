#include "tests/support/promtool.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <sstream>

#include "metrics/metric_origin.h"

namespace koord::test {

const std::vector<std::string>& koordletLintExceptions() {
  static const std::vector<std::string> kNames(std::begin(kKoordletMetricNames),
                                               std::end(kKoordletMetricNames));
  return kNames;
}

PromtoolResult promtoolCheck(const std::string& exposition) {
  PromtoolResult result;
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return result;
  char path[] = "/tmp/koordlet-promtool-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return result;
  const bool written =
      ::write(fd, exposition.data(), exposition.size()) == static_cast<ssize_t>(exposition.size());
  ::close(fd);
  if (!written) {
    ::unlink(path);
    return result;
  }
  const std::string command = std::string("promtool check metrics < '") + path + "' 2>&1";
  if (FILE* p = ::popen(command.c_str(), "r")) {
    result.ran = true;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) result.output.append(buf, n);
    ::pclose(p);
  }
  ::unlink(path);
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const std::string name = line.substr(0, line.find(' '));
    const auto& allowed = koordletLintExceptions();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      result.problems.push_back(line);
    }
  }
  return result;
}

}  // namespace koord::test
