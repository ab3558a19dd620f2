#include <catch2/catch.hpp>

#include "resctrl/group_plan.h"

namespace test_resctrl_group_plan {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::resctrl;
using Tids = std::vector<int32_t>;

TEST_CASE("tids parse one per line with blank lines allowed") {
  auto tids = parseTids("12\n\n  7\n4194304\n\n", "tasks");
  REQUIRE(tids.ok());
  CHECK(*tids == Tids{12, 7, 4194304});
  CHECK(parseTids("", "tasks")->empty());
  CHECK(*parseTids("5", "tasks") == Tids{5});  // no trailing newline
}

TEST_CASE("malformed tids are errors naming the file and line") {
  const std::string file = "/sys/fs/cgroup/cpu/kubepods/pod1/tasks";
  // 0 would mean "the writer itself" to the kernel; the others are not tids.
  for (const char* bad : {"abc", "-1", "0", "12 13", "2147483648", "1.5", "0x10"}) {
    INFO("line: " << bad);
    auto tids = parseTids(std::string("1\n\n") + bad + "\n", file);
    REQUIRE_FALSE(tids.ok());
    CHECK(tids.error().message.find(file + ":3:") == 0);
  }
}

}  // namespace test_resctrl_group_plan
