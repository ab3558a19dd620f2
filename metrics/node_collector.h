// NodeCollector: the node's own usage, read under the host's /proc each
// --collect-res-used-interval: CPU in cores from /proc/stat tick deltas (as
// koordlet computes it), memory used (MemTotal - MemAvailable), load averages and
// pressure stall information. PSI is optional: kernels before 4.20 have no
// /proc/pressure, and booting with psi=0 makes its files fail with EOPNOTSUPP;
// that is detected on the first read, logged once, and never retried.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/host_paths.h"
#include "base/result.h"
#include "metrics/proc_parsers.h"

namespace koord {

// Turns a cumulative busy-tick counter into cores: delta ticks / (delta seconds ×
// ticks per second). The first sample, a counter that went backwards (CPU hot
// unplug drops that CPU's ticks from the sum) and a zero interval yield nothing.
class CpuRate {
 public:
  explicit CpuRate(long ticksPerSecond) : ticksPerSecond_(ticksPerSecond) {}
  std::optional<double> update(uint64_t busyTicks, Clock::Monotonic at);

 private:
  long ticksPerSecond_;
  std::optional<uint64_t> lastTicks_;
  Clock::Monotonic lastAt_{};
};

enum class PsiResource { kCpu = 0, kMemory = 1, kIo = 2 };
inline constexpr const char* kPsiResourceNames[] = {"cpu", "mem", "io"};
inline constexpr const char* kPsiFiles[] = {"pressure/cpu", "pressure/memory", "pressure/io"};

struct NodeSample {
  Clock::Monotonic at{};
  std::optional<double> cpuUsedCores;  // absent until two /proc/stat samples exist
  std::optional<MemInfo> memory;
  std::optional<LoadAvg> load;
  std::optional<Pressure> pressure[3];  // indexed by PsiResource
  uint64_t bootTimeSeconds = 0;
};

enum class Support { kUnknown, kSupported, kUnsupported };

class NodeCollector {
 public:
  NodeCollector(HostPaths paths, const Clock& clock, long ticksPerSecond);

  struct Outcome {
    NodeSample sample;
    std::vector<Error> errors;  // one per file that could not be read or parsed
    // Every supported source was read and the CPU rate exists: the node's usage is
    // fully known (what /readyz waits for).
    bool complete = false;
  };
  Outcome collect();

  Support psiSupport() const { return psi_; }
  // Why PSI is unsupported, for the one log line and /readyz.
  const std::string& psiReason() const { return psiReason_; }

 private:
  void collectPressure(Outcome& out);

  HostPaths paths_;
  const Clock* clock_;
  CpuRate cpuRate_;
  Support psi_ = Support::kUnknown;
  std::string psiReason_;
};

}  // namespace koord
