// The host application collector on cgroup v2 files (a tree built by the test; the v1
// path runs on the real kernel in test_host_app_kernel.cpp), on the injected clock.
#include <catch2/catch.hpp>

#include <chrono>

#include "metrics/host_app_collector.h"
#include "tests/support/temp_tree.h"

namespace test_metrics_host_app_collector {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono;

TEST_CASE("a host application's cpu and memory are read from cgroup v2 files") {
  test::TempTree tree;
  auto write = [&](uint64_t usageUsec) {
    tree.write(
        "system.slice/db.service/cpu.stat",
        "usage_usec " + std::to_string(usageUsec) +
            "\nuser_usec 1\nsystem_usec 1\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n");
  };
  write(1'000'000);
  tree.write("system.slice/db.service/memory.stat",
             "anon 999\nfile 5000\ninactive_anon 100\nactive_anon 200\nunevictable 50\n");
  tree.write("system.slice/db.service/memory.current", "10000\n");
  HostAppCollector c(tree.path(), CgroupLayout(CgroupVersion::kV2, CgroupDriver::kSystemd));
  const std::vector<HostAppTarget> targets{{"db", "system.slice/db.service"}};
  const Clock::Monotonic t0{seconds(100)};
  auto first = c.collect(targets, t0);
  REQUIRE(first.apps.size() == 1);
  CHECK_FALSE(first.apps[0].cpuCores);
  CHECK(first.apps[0].memoryBytes == 350);  // inactive_anon + active_anon + unevictable
  CHECK(first.apps[0].memoryWithPageCacheBytes == 10000);
  write(2'500'000);  // 1.5 s of CPU in 2 s
  auto second = c.collect(targets, t0 + seconds(2));
  REQUIRE(second.apps[0].cpuCores);
  CHECK(*second.apps[0].cpuCores == Approx(0.75));
  // A counter that went backwards (the cgroup was re-created) gives no rate this round.
  write(10);
  auto third = c.collect(targets, t0 + seconds(3));
  CHECK_FALSE(third.apps[0].cpuCores);
  // A malformed file skips the app, naming the file.
  tree.write("system.slice/db.service/memory.current", "lots\n");
  auto bad = c.collect(targets, t0 + seconds(4));
  CHECK(bad.apps.empty());
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors[0].message.find("db.service/memory.current") != std::string::npos);
}

}  // namespace test_metrics_host_app_collector
