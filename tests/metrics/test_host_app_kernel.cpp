// Host application usage measured on this machine's real cgroup v1 kernel: a
// private subtree (tests/support/cgroup_v1_tree.h) holding one host application's
// cgroup with a CPU-burning child in it, read by the host application collector as
// the agent reads it (a --cgroup-root-dir of per-controller links). Needs root and
// cgroup v1; skips visibly without them (a failure under KOORDLET_REQUIRE_ALL=1).
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "metrics/host_app_collector.h"
#include "tests/support/burner.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"

using namespace koord;

TEST_CASE("a host application's cpu and memory are read from its own real v1 cgroup", "[kernel]") {
  if (auto why = test::CgroupV1Tree::unavailableReason(); !why.empty()) KOORDLET_SKIP(why);
  test::TempTree links;
  test::CgroupV1Tree tree("hostapp", links.path("root"));
  tree.mkdirs("hostapps/db");
  test::Burner burner([&](pid_t pid) { tree.attach(pid, "hostapps/db"); }, /*busy=*/true);

  HostAppCollector collector(tree.linkDir(),
                             CgroupLayout(CgroupVersion::kV1, CgroupDriver::kCgroupfs));
  const std::vector<HostAppTarget> targets{{"db", "hostapps/db"}, {"gone", "hostapps/gone"}};
  auto first = collector.collect(targets, std::chrono::steady_clock::now());
  REQUIRE(first.apps.size() == 1);
  CHECK_FALSE(first.apps[0].cpuCores);  // the first read only stores the counter
  REQUIRE(first.errors.size() == 1);    // the app whose cgroup does not exist
  CHECK(first.errors[0].message.find("hostapps/gone/cpuacct.usage") != std::string::npos);

  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto second = collector.collect(targets, std::chrono::steady_clock::now());
  REQUIRE(second.apps.size() == 1);
  const HostAppUsage& db = second.apps[0];
  CHECK(db.name == "db");
  REQUIRE(db.cpuCores);
  // One busy child on a 2-core machine others share: a wide but telling band.
  CHECK(*db.cpuCores > 0.5);
  CHECK(*db.cpuCores < 1.1);
  CHECK(db.memoryWithPageCacheBytes >= db.memoryBytes);
  CHECK(db.memoryWithPageCacheBytes > 0);
  CHECK(collector.stateEntries() == 1);

  // The app leaves the list: its counter goes.
  auto none = collector.collect({}, std::chrono::steady_clock::now());
  CHECK(none.apps.empty());
  CHECK(collector.stateEntries() == 0);
}
