#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>

#include "base/read_file.h"
#include "tests/support/temp_tree.h"

namespace test_base_read_file {  // this file's own names: tests build as unity chunks

using namespace koord;

TEST_CASE("a file is read whole, including procfs files that report size zero", "[read_file]") {
  test::TempTree tree({{"a", "hello\nworld\n"}});
  auto text = readFile(tree.path("a"));
  REQUIRE(text.ok());
  CHECK(*text == "hello\nworld\n");

  auto stat = readFile("/proc/self/stat");  // st_size is 0 for procfs
  REQUIRE(stat.ok());
  CHECK_FALSE(stat->empty());
}

TEST_CASE("a missing file is an error carrying ENOENT and the path", "[read_file]") {
  test::TempTree tree;
  auto text = readFile(tree.path("nope"));
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().sysErrno == ENOENT);
  CHECK(text.error().message.find(tree.path("nope")) == 0);
}

TEST_CASE("a file larger than the cap is refused, not truncated", "[read_file]") {
  test::TempTree tree({{"big", std::string(100000, 'x')}});
  auto text = readFile(tree.path("big"), 4096);
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().sysErrno == EFBIG);
  CHECK(text.error().message.find("larger than 4096 bytes") != std::string::npos);
  CHECK(readFile(tree.path("big"), 100000).ok());
}

TEST_CASE("an error can be prefixed with the file it came from", "[read_file]") {
  Error e = inFile("/proc/stat", makeError("line \"cpu\": too few fields"));
  CHECK(e.message == "/proc/stat: line \"cpu\": too few fields");
}

TEST_CASE("a replaced file holds the new content whole and no temporary is left", "[read_file]") {
  test::TempTree tree({{"state", "old\n"}});
  REQUIRE(replaceFile(tree.path("state"), "new\ncontent\n").ok());
  CHECK(*readFile(tree.path("state")) == "new\ncontent\n");
  CHECK_FALSE(std::filesystem::exists(tree.path("state") + ".tmp"));

  REQUIRE(replaceFile(tree.path("fresh"), "").ok());  // created, and empty is content too
  CHECK(*readFile(tree.path("fresh")) == "");
}

TEST_CASE("a file that cannot be replaced is an error naming it, the old one kept", "[read_file]") {
  test::TempTree tree({{"state", "old\n"}});
  // No such directory: the temporary cannot be created.
  Status st = replaceFile(tree.path("missing/state"), "x");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().sysErrno == ENOENT);
  CHECK(st.error().message.find(tree.path("missing/state") + ".tmp") == 0);
  // A directory in the way: written, then the rename fails and the temporary goes.
  std::filesystem::create_directories(tree.path("dir/sub"));
  st = replaceFile(tree.path("dir"), "x");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("rename to " + tree.path("dir")) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tree.path("dir") + ".tmp"));
  CHECK(*readFile(tree.path("state")) == "old\n");
}

TEST_CASE("a file read into a kept buffer reads whole, reuses the buffer, and refuses the cap",
          "[read_file]") {
  test::TempTree tree({{"a", "one\n"}, {"big", std::string(100000, 'x')}, {"exact", "1234"}});
  std::string buf;
  REQUIRE(readFileInto(tree.path("big"), buf, 100000).ok());
  CHECK(buf == std::string(100000, 'x'));
  const char* storage = buf.data();
  REQUIRE(readFileInto(tree.path("a"), buf).ok());
  CHECK(buf == "one\n");
  CHECK(buf.data() == storage);                          // the same storage: no allocation
  REQUIRE(readFileInto("/proc/self/status", buf).ok());  // size 0 in stat: read to the end
  CHECK(buf.find("\nVmRSS:") != std::string::npos);
  REQUIRE(readFileInto(tree.path("exact"), buf, 4).ok());  // exactly the cap: taken
  CHECK(buf == "1234");

  Status big = readFileInto(tree.path("big"), buf, 4096);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().sysErrno == EFBIG);
  CHECK(buf.empty());
  Status missing = readFileInto(tree.path("nope"), buf);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().sysErrno == ENOENT);
  CHECK(missing.error().message.find(tree.path("nope")) == 0);
}

}  // namespace test_base_read_file
