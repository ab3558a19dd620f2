#include <fcntl.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include "metrics/self_collector.h"
#include "tests/support/temp_tree.h"

namespace test_metrics_self_collector {  // this file's own names: tests build as unity chunks

using namespace koord;

TEST_CASE("the self collector reports this process's cpu, rss and open fds", "[self]") {
  HostPaths paths;
  paths.procRoot = "/proc";
  SelfCollector self(paths, ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE), 0);
  auto before = self.collect();
  REQUIRE(before.ok());
  CHECK(before->residentBytes > 1024 * 1024);
  CHECK(before->threads >= 1);
  CHECK(before->maxFds > 0);

  int fd = ::open("/proc/self/stat", O_RDONLY);
  REQUIRE(fd >= 0);
  auto after = self.collect();
  ::close(fd);
  REQUIRE(after.ok());
  CHECK(after->openFds == before->openFds + 1);
}

TEST_CASE("self metrics come from the stat file under the injected proc root", "[self]") {
  // utime 300 + stime 100 ticks at 100 Hz = 4 s; rss 2560 pages × 4096; start 500 ticks.
  std::string stat =
      "42 (koord let) S 1 42 42 0 -1 0 0 0 0 0 300 100 0 0 20 0 7 0 500 "
      "123456789 2560 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0\n";
  test::TempTree proc({{"self/stat", stat}, {"self/fd/0", ""}, {"self/fd/1", ""}});
  HostPaths paths;
  paths.procRoot = proc.path();
  auto s = SelfCollector(paths, 100, 4096, 1'700'000'000).collect();
  REQUIRE(s.ok());
  CHECK(s->cpuSeconds == Approx(4.0));
  CHECK(s->residentBytes == Approx(2560.0 * 4096));
  CHECK(s->virtualBytes == Approx(123456789.0));
  CHECK(s->threads == 7);
  CHECK(s->startTimeSeconds == Approx(1'700'000'005.0));
  CHECK(s->openFds == 2);
}

TEST_CASE("a malformed self stat file is an error naming the file", "[self]") {
  test::TempTree proc({{"self/stat", "garbage"}});
  HostPaths paths;
  paths.procRoot = proc.path();
  auto s = SelfCollector(paths, 100, 4096, 0).collect();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.rfind(proc.path("self/stat") + ": ", 0) == 0);
}

}  // namespace test_metrics_self_collector
