// Tests for cgroupfs/cpu_weight: both shares -> cpu.weight conversions against the
// values their owners publish (reference §4.0 for koordlet's linear one;
// opencontainers/cgroups' table and Debian's runc 1.3.6 in the v2-node rig for the
// quadratic one), the way back, and telling a runtime's conversion from a weight it wrote.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>

#include "base/clock.h"
#include "base/log.h"
#include "base/read_file.h"
#include "cgroupfs/cpu_weight.h"
#include "cgroupfs/executor.h"
#include "tests/support/temp_tree.h"

namespace test_cgroupfs_cpu_weight {  // this file's own names: tests build as unity chunks

using namespace koord;

constexpr auto kLinear = CpuWeightConversion::kLinear;
constexpr auto kQuadratic = CpuWeightConversion::kQuadratic;

TEST_CASE("the linear conversion is koordlet's formula", "[cpu_weight]") {
  CHECK(cpuSharesToWeight(2, kLinear) == 1);
  CHECK(cpuSharesToWeight(1024, kLinear) == 39);  // 1 + 1022 x 9999 / 262142
  CHECK(cpuSharesToWeight(262144, kLinear) == 10000);
  CHECK(cpuSharesToWeight(1, kLinear) == 1);  // below the range: clamped to 2 first
}

TEST_CASE("the quadratic conversion meets the minimum, the default and the maximum",
          "[cpu_weight]") {
  // opencontainers/cgroups' own cases: 1 and 2 -> 1, 3 -> 2, 1024 -> 100, 262143 and
  // above -> 10000. runc 1.3.6 gave a container of 1024 shares cpu.weight 100.
  CHECK(cpuSharesToWeight(1, kQuadratic) == 1);
  CHECK(cpuSharesToWeight(2, kQuadratic) == 1);
  CHECK(cpuSharesToWeight(3, kQuadratic) == 2);
  CHECK(cpuSharesToWeight(1024, kQuadratic) == 100);
  CHECK(cpuSharesToWeight(262143, kQuadratic) == 10000);
  CHECK(cpuSharesToWeight(262144, kQuadratic) == 10000);
  CHECK(cpuSharesToWeight(300000, kQuadratic) == 10000);
  // It rises with the shares, never falls.
  int64_t last = 0;
  for (int64_t s = 2; s <= 262144; s += 97) {
    const int64_t w = cpuSharesToWeight(s, kQuadratic);
    REQUIRE(w >= last);
    last = w;
  }
}

TEST_CASE("a weight read back gives shares that convert to the same weight", "[cpu_weight]") {
  for (auto c : {kLinear, kQuadratic}) {
    for (int64_t s : {2, 3, 100, 512, 1024, 2048, 5000, 102400, 262144}) {
      const int64_t w = cpuSharesToWeight(s, c);
      const int64_t back = cpuWeightToShares(w, c);
      INFO(toString(c) << " shares " << s << " weight " << w << " back " << back);
      CHECK(cpuSharesToWeight(back, c) == w);
      CHECK(back <= s);  // the smallest shares of that weight
    }
  }
  // A weight the curve steps over (1 + 1: 2 shares give 1, 3 give 2, so every weight
  // is reached at the bottom; near the top the curve climbs 30 a share): the shares
  // just above it.
  const int64_t s = cpuWeightToShares(9990, kQuadratic);
  CHECK(cpuSharesToWeight(s, kQuadratic) >= 9990);
  CHECK(cpuSharesToWeight(s - 1, kQuadratic) < 9990);
}

TEST_CASE("a runtime's weight tells its conversion only where the two differ", "[cpu_weight]") {
  CHECK(classifyCpuWeight(1024, 100) == kQuadratic);
  CHECK(classifyCpuWeight(1024, 39) == kLinear);
  CHECK(!classifyCpuWeight(2, 1));       // both give 1
  CHECK(!classifyCpuWeight(1024, 250));  // neither: not the runtime's value
  CHECK(cpuWeightConversionFrom("quadratic") == kQuadratic);
  CHECK(cpuWeightConversionFrom("linear") == kLinear);
  CHECK(!cpuWeightConversionFrom("auto"));
}

TEST_CASE("on v2 the executor writes and compares cpu.weight by the conversion it is given",
          "[cpu_weight][executor]") {
  test::TempTree tree;
  const std::string dir = "kubepods/besteffort/pod1/c1";
  tree.write(dir + "/cpu.weight", "100\n");  // what runc 1.3 makes of 1024 shares
  ManualClock clock;
  std::ostringstream log;
  Logger::setGlobal(log, clock, 0);
  FailureLog failures{clock};
  ExecutorConfig config;
  config.cgroupRoot = tree.path();
  Executor exec(config, CgroupLayout(CgroupVersion::kV2, CgroupDriver::kCgroupfs),
                KnobSupport::all(), clock, failures);
  const CgroupWrite shares{dir, Knob::kCpuShares, KnobValue::of(1024), "test"};
  auto weight = [&] { return readFile(tree.path(dir + "/cpu.weight")).value(); };
  // Linear (koordlet's, the default): 1024 shares are 39, so the runtime's 100 changes.
  CHECK(exec.cpuWeightConversion() == kLinear);
  CHECK(exec.apply({shares}).written == 1);
  CHECK(weight() == "39\n");
  // The runtime's: 1024 shares are 100, the runtime's value back...
  exec.setCpuWeightConversion(kQuadratic);
  clock.advance(std::chrono::hours(1));  // past the verify period: the file is read again
  CHECK(exec.apply({shares}).written == 1);
  CHECK(weight() == "100\n");
  // ...and then left alone.
  clock.advance(std::chrono::hours(1));
  ExecutorStats again = exec.apply({shares});
  CHECK(again.written == 0);
  CHECK(again.unchanged == 1);
  static SystemClock system;
  Logger::setGlobal(std::cerr, system, 0);
}

}  // namespace test_cgroupfs_cpu_weight
