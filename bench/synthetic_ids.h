// Ids of the benchmarks' synthetic pods and containers: a pod uid and a 64-hex
// container id, each a function of its index, so every benchmark names the same
// synthetic node the same way.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace koord::bench {

inline std::string uidOf(size_t i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "bench000-0000-4000-8000-%012zu", i);
  return buf;
}

inline std::string cidOf(size_t pod, size_t c) {
  char buf[65];
  std::snprintf(buf, sizeof buf, "%016zx%016zx%016zx%016zx", pod, c, pod * 31 + c, size_t{0xbe});
  return buf;
}

}  // namespace koord::bench
