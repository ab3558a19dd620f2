#include "metrics/node_collector.h"

#include <cerrno>

#include "base/log.h"
#include "base/read_file.h"

namespace koord {

std::optional<double> CpuRate::update(uint64_t busyTicks, Clock::Monotonic at) {
  std::optional<double> rate;
  if (lastTicks_ && busyTicks >= *lastTicks_ && at > lastAt_ && ticksPerSecond_ > 0) {
    double seconds = std::chrono::duration<double>(at - lastAt_).count();
    rate = static_cast<double>(busyTicks - *lastTicks_) /
           (seconds * static_cast<double>(ticksPerSecond_));
  }
  lastTicks_ = busyTicks;
  lastAt_ = at;
  return rate;
}

NodeCollector::NodeCollector(HostPaths paths, const Clock& clock, long ticksPerSecond)
    : paths_(std::move(paths)), clock_(&clock), cpuRate_(ticksPerSecond) {}

namespace {

// Reads and parses one file; on failure appends an error naming the file.
template <typename T, typename Parser>
std::optional<T> readParsed(const std::string& path, Parser parse, std::vector<Error>& errors) {
  auto text = readFile(path);
  if (!text) {
    errors.push_back(text.error());
    return std::nullopt;
  }
  auto parsed = parse(*text);
  if (!parsed) {
    errors.push_back(inFile(path, parsed.error()));
    return std::nullopt;
  }
  return std::move(parsed).value();
}

}  // namespace

NodeCollector::Outcome NodeCollector::collect() {
  Outcome out;
  out.sample.at = clock_->now();

  if (auto stat = readParsed<ProcStat>(paths_.proc("stat"), parseProcStat, out.errors)) {
    out.sample.cpuUsedCores = cpuRate_.update(stat->total.busy(), out.sample.at);
    out.sample.bootTimeSeconds = stat->bootTimeSeconds;
  }
  out.sample.memory = readParsed<MemInfo>(paths_.proc("meminfo"), parseMeminfo, out.errors);
  out.sample.load = readParsed<LoadAvg>(paths_.proc("loadavg"), parseLoadavg, out.errors);
  collectPressure(out);

  out.complete =
      out.errors.empty() && out.sample.cpuUsedCores && out.sample.memory && out.sample.load;
  return out;
}

void NodeCollector::collectPressure(Outcome& out) {
  if (psi_ == Support::kUnsupported) return;
  for (int r = 0; r < 3; ++r) {
    std::string path = paths_.proc(kPsiFiles[r]);
    auto text = readFile(path);
    if (!text) {
      int err = text.error().sysErrno;
      // Decided on the first read only: afterwards a vanished file is an error.
      if (psi_ == Support::kUnknown && (err == ENOENT || err == EOPNOTSUPP)) {
        psi_ = Support::kUnsupported;
        psiReason_ = err == ENOENT ? path + " absent (kernel before 4.20 or CONFIG_PSI=n)"
                                   : path + " not supported (kernel booted with psi=0)";
        KLOG_WARNING << "pressure stall information unavailable: " << psiReason_
                     << "; node PSI metrics are skipped";
        return;
      }
      out.errors.push_back(text.error());
      continue;
    }
    auto parsed = parsePressure(*text);
    if (!parsed) {
      out.errors.push_back(inFile(path, parsed.error()));
      continue;
    }
    out.sample.pressure[r] = std::move(parsed).value();
  }
  if (psi_ == Support::kUnknown) psi_ = Support::kSupported;
}

}  // namespace koord
