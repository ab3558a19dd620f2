#include <catch2/catch.hpp>
#include <filesystem>

#include "base/read_file.h"
#include "resctrl/group_ownership.h"
#include "support/temp_tree.h"

namespace test_resctrl_group_ownership {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::resctrl;
using koord::test::TempTree;

namespace {

std::string contents(const std::string& path) {
  auto text = readFile(path);
  REQUIRE(text.ok());
  return *text;
}

}  // namespace

TEST_CASE("groups we created survive a reload of the state file") {
  TempTree dir;
  // The parent dir does not exist yet: saving creates it.
  const std::string file = dir.path("run/koordlet/resctrl-groups");
  {
    GroupOwnership own(file, false);
    CHECK(own.loadStatus().ok());  // a missing file is an empty record
    CHECK(own.mayUse("LS", false));
    REQUIRE(own.created("LS").ok());
    REQUIRE(own.created("BE").ok());
    CHECK(own.owns("LS"));
  }
  CHECK(contents(file) == "BE\nLS\n");
  CHECK_FALSE(std::filesystem::exists(file + ".tmp"));

  GroupOwnership again(file, false);
  CHECK(again.loadStatus().ok());
  CHECK(again.owns("LS"));
  CHECK(again.owns("BE"));
  CHECK_FALSE(again.owns("LSR"));
  CHECK(again.mayUse("LS", true));
  CHECK_FALSE(again.mayUse("LSR", true));
}

TEST_CASE("an existing group we did not create is refused unless adopting") {
  TempTree dir;
  const std::string file = dir.path("resctrl-groups");
  GroupOwnership own(file, false);
  CHECK_FALSE(own.wouldUse("LSR", true));
  CHECK_FALSE(own.mayUse("LSR", true));
  CHECK_FALSE(own.owns("LSR"));
  CHECK_FALSE(std::filesystem::exists(file));  // refusing records nothing

  GroupOwnership adopting(file, true);
  CHECK(adopting.wouldUse("LSR", true));
  CHECK_FALSE(adopting.owns("LSR"));  // wouldUse records nothing
  CHECK(adopting.mayUse("LSR", true));
  CHECK(adopting.owns("LSR"));
  CHECK(contents(file) == "LSR\n");
  // The adoption is on record: a later run without the flag keeps using the group.
  GroupOwnership later(file, false);
  CHECK(later.mayUse("LSR", true));
}

TEST_CASE("a memory-only record writes no file") {
  GroupOwnership own("", false);
  CHECK(own.loadStatus().ok());
  REQUIRE(own.created("BE").ok());
  CHECK(own.owns("BE"));
  CHECK(own.mayUse("BE", true));
}

TEST_CASE("a malformed state file is an error naming it and the record starts empty") {
  TempTree dir;
  const std::string file = dir.path("resctrl-groups");
  const std::string cases[] = {"LS\n../BE\n",
                               "LS\n\nBE\n",
                               "LS\nB E\n",
                               "LS\n.\n",
                               std::string("LS\n\x01\xff\xfe\x00junk\n", 11),
                               "\n"};
  for (const std::string& text : cases) {
    INFO("state file: \"" << text << "\"");
    dir.write("resctrl-groups", text);
    GroupOwnership own(file, false);
    REQUIRE_FALSE(own.loadStatus().ok());
    CHECK(own.loadStatus().error().message.find(file + ":") == 0);
    CHECK_FALSE(own.owns("LS"));
    CHECK_FALSE(own.mayUse("LS", true));  // nothing existing is touched
    CHECK(own.mayUse("LSR", false));      // creating a new group is still fine
  }
  dir.write("resctrl-groups", "");
  CHECK(GroupOwnership(file, false).loadStatus().ok());
}

TEST_CASE("an unreadable state file is an error naming it") {
  TempTree dir;
  const std::string file = dir.path("resctrl-groups");
  std::filesystem::create_directories(file);  // a dir: read() fails with EISDIR
  GroupOwnership own(file, false);
  REQUIRE_FALSE(own.loadStatus().ok());
  CHECK(own.loadStatus().error().message.find(file) == 0);
  // Saving cannot replace a dir either: the error is returned, the memory record kept.
  auto st = own.created("LS");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find(file) != std::string::npos);
  CHECK(own.owns("LS"));
  CHECK_FALSE(std::filesystem::exists(file + ".tmp"));
}

TEST_CASE("a group name that cannot be stored is refused") {
  GroupOwnership own("", false);
  CHECK_FALSE(own.created("").ok());
  CHECK_FALSE(own.created("a/b").ok());
  CHECK_FALSE(own.created("..").ok());
  CHECK_FALSE(own.owns(""));
}

}  // namespace test_resctrl_group_ownership
