// The running kernel's release, for kernel tests whose expectation depends on it: a
// feature the kernel is too old for (cpu.max.burst before Linux 5.14, on the rig's
// 5.10) is checked in its degraded form there, and its absence on a newer kernel is a
// failure, never a skip.
#pragma once

#include <sys/utsname.h>

#include <cstdio>

namespace koord::test {

// True when uname's release is at least major.minor ("5.10.0-46-cloud-amd64" is 5.10).
inline bool kernelAtLeast(int major, int minor) {
  utsname u{};
  if (::uname(&u) != 0) return false;
  int ma = 0, mi = 0;
  if (std::sscanf(u.release, "%d.%d", &ma, &mi) != 2) return false;
  return ma > major || (ma == major && mi >= minor);
}

inline bool kernelHasCpuBurst() { return kernelAtLeast(5, 14); }

}  // namespace koord::test
