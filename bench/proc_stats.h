// What the benchmarks read of a process from /proc: its CPU time and its RSS.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/read_file.h"

namespace koord::bench {

// utime + stime of a process, in seconds; 0 when it cannot be read.
inline double cpuSeconds(pid_t pid) {
  auto text = readFile("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return 0;
  const size_t close = text->rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields;
  size_t at = close + 2;
  while (at < text->size()) {
    const size_t sp = text->find(' ', at);
    fields.push_back(text->substr(at, sp - at));
    if (sp == std::string::npos) break;
    at = sp + 1;
  }
  if (fields.size() < 13) return 0;
  // fields[0] is state (field 3); utime is field 14, stime 15.
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::stod(fields[11]) + std::stod(fields[12])) / ticks;
}

// VmRSS in MiB; 0 when it cannot be read.
inline double rssMiB(pid_t pid) {
  auto text = readFile("/proc/" + std::to_string(pid) + "/status");
  if (!text) return 0;
  const size_t at = text->find("VmRSS:");
  return at == std::string::npos ? 0 : std::stod(text->substr(at + 6)) / 1024.0;
}

}  // namespace koord::bench
