#include <unistd.h>
#include <catch2/catch.hpp>
#include <iostream>
#include <sstream>

#include "base/log.h"
#include "metrics/node_collector.h"
#include "tests/support/temp_tree.h"

namespace test_metrics_node_collector {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

std::string procStat(uint64_t user, uint64_t system, uint64_t idle) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  std::ostringstream os;
  os << "cpu  " << user << " 10 " << system << " " << idle << " 7 3 2 0 0 0\n"
     << "cpu0 " << user << " 10 " << system << " " << idle << " 7 3 2 0 0 0\n"
     << "btime 1700000000\n";
  return os.str();
}

const char* kMeminfo =
    "MemTotal:        8000000 kB\nMemFree:         1000000 kB\nMemAvailable:    6000000 kB\n";
const char* kLoadavg = "0.50 0.25 0.10 2/345 6789\n";
const char* kPressure =
    "some avg10=1.50 avg60=0.75 avg300=0.25 total=123456\n"
    "full avg10=0.50 avg60=0.10 avg300=0.00 total=4567\n";

struct QuietLog {
  explicit QuietLog(const Clock& clock) { Logger::setGlobal(out, clock, 0); }
  ~QuietLog() {
    static SystemClock system;  // must outlive this object: the logger keeps it
    Logger::setGlobal(std::cerr, system, 0);
  }
  std::ostringstream out;
};

HostPaths pathsAt(const test::TempTree& tree) {
  HostPaths p;
  p.procRoot = tree.path();
  return p;
}

}  // namespace

TEST_CASE("cpu cores are busy tick deltas over elapsed time times ticks per second", "[node]") {
  ManualClock clock;
  CpuRate rate(100);
  CHECK_FALSE(rate.update(1000, clock.now()).has_value());  // first sample: no rate
  clock.advance(2s);
  auto cores = rate.update(1000 + 500, clock.now());  // 500 ticks in 2 s at 100 Hz
  REQUIRE(cores.has_value());
  CHECK(*cores == Approx(2.5));
}

TEST_CASE("a cpu counter that goes backwards or a zero interval gives no rate", "[node]") {
  ManualClock clock;
  CpuRate rate(100);
  rate.update(5000, clock.now());
  clock.advance(1s);
  CHECK_FALSE(rate.update(4000, clock.now()).has_value());  // hot-unplug dropped ticks
  CHECK_FALSE(rate.update(4100, clock.now()).has_value());  // same instant
  clock.advance(1s);
  REQUIRE(rate.update(4200, clock.now()).has_value());
}

TEST_CASE("the node collector becomes complete on its second round", "[node]") {
  ManualClock clock;
  QuietLog quiet(clock);
  test::TempTree proc({{"stat", procStat(1000, 500, 9000)},
                       {"meminfo", kMeminfo},
                       {"loadavg", kLoadavg},
                       {"pressure/cpu", kPressure},
                       {"pressure/memory", kPressure},
                       {"pressure/io", kPressure}});
  NodeCollector collector(pathsAt(proc), clock, 100);

  auto first = collector.collect();
  CHECK(first.errors.empty());
  CHECK_FALSE(first.complete);
  CHECK_FALSE(first.sample.cpuUsedCores.has_value());
  REQUIRE(first.sample.memory.has_value());
  CHECK(first.sample.memory->usedBytes() == 2000000ull * 1024);
  CHECK(first.sample.memory->usedWithPageCacheBytes() == 7000000ull * 1024);  // Total - Free
  CHECK(first.sample.bootTimeSeconds == 1700000000);

  clock.advance(1s);
  // busy = user+nice+system+irq+softirq grows by 60+40 = 100 ticks: one core.
  proc.write("stat", procStat(1060, 540, 9100));
  auto second = collector.collect();
  CHECK(second.errors.empty());
  CHECK(second.complete);
  REQUIRE(second.sample.cpuUsedCores.has_value());
  CHECK(*second.sample.cpuUsedCores == Approx(1.0));
  REQUIRE(second.sample.load.has_value());
  CHECK(second.sample.load->load1 == Approx(0.5));
  REQUIRE(second.sample.pressure[0].has_value());
  CHECK(second.sample.pressure[0]->some.avg10 == Approx(1.5));
  REQUIRE(second.sample.pressure[0]->full.has_value());
  CHECK(second.sample.pressure[0]->full->totalMicros == 4567);
  CHECK(collector.psiSupport() == Support::kSupported);
}

TEST_CASE("a kernel without /proc/pressure is detected once, logged once and skipped", "[node]") {
  ManualClock clock;
  QuietLog log(clock);
  test::TempTree proc({{"stat", procStat(1, 1, 1)}, {"meminfo", kMeminfo}, {"loadavg", kLoadavg}});
  NodeCollector collector(pathsAt(proc), clock, 100);

  for (int i = 0; i < 5; ++i) {
    auto out = collector.collect();
    CHECK(out.errors.empty());
    clock.advance(1s);
    proc.write("stat", procStat(2 + static_cast<uint64_t>(i), 1, 1));
  }
  CHECK(collector.psiSupport() == Support::kUnsupported);
  CHECK(collector.psiReason().find("absent") != std::string::npos);
  std::string logged = log.out.str();
  CHECK(std::count(logged.begin(), logged.end(), '\n') == 1);
  CHECK(logged.find("pressure stall information unavailable") != std::string::npos);

  // Even if the files appear later, the decision stands (no flapping, no retries).
  proc.write("pressure/cpu", kPressure);
  auto out = collector.collect();
  CHECK_FALSE(out.sample.pressure[0].has_value());
}

TEST_CASE("a malformed or vanished file is an error naming the file, the rest still counts",
          "[node]") {
  ManualClock clock;
  QuietLog quiet(clock);
  test::TempTree proc({{"stat", procStat(1, 1, 1)},
                       {"meminfo", "MemTotal: 100 kB\n"},  // MemAvailable missing
                       {"loadavg", kLoadavg},
                       {"pressure/cpu", kPressure},
                       {"pressure/memory", kPressure},
                       {"pressure/io", kPressure}});
  NodeCollector collector(pathsAt(proc), clock, 100);
  collector.collect();
  clock.advance(1s);
  proc.remove("pressure/io");  // PSI was seen: now a vanished file is an error
  auto out = collector.collect();
  CHECK_FALSE(out.complete);
  REQUIRE(out.errors.size() == 2);
  CHECK(out.errors[0].message.rfind(proc.path("meminfo") + ": ", 0) == 0);
  CHECK(out.errors[0].message.find("MemAvailable") != std::string::npos);
  CHECK(out.errors[1].message.rfind(proc.path("pressure/io"), 0) == 0);
  CHECK(out.sample.cpuUsedCores.has_value());
  CHECK(out.sample.load.has_value());
  CHECK(collector.psiSupport() == Support::kSupported);
}

TEST_CASE("the node collector reads this machine's real /proc", "[node][live]") {
  SystemClock clock;
  HostPaths paths;
  paths.procRoot = "/proc/";
  NodeCollector collector(paths, clock, ::sysconf(_SC_CLK_TCK));
  auto first = collector.collect();
  INFO((first.errors.empty() ? std::string() : first.errors[0].message));
  CHECK(first.errors.empty());
  REQUIRE(first.sample.memory.has_value());
  CHECK(first.sample.memory->memTotalBytes > 0);
}

}  // namespace test_metrics_node_collector
