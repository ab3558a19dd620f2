#include <catch2/catch.hpp>
#include <filesystem>

#include "base/audit_log.h"
#include "base/read_file.h"
#include "tests/support/temp_tree.h"

namespace test_base_audit_log {  // this file's own names: tests build as unity chunks

using namespace koord;
namespace fs = std::filesystem;

TEST_CASE("an audit log appends one line per entry and makes its directory", "[audit_log]") {
  test::TempTree tree;
  AuditLog log(tree.path("audit/dir/audit.log"), 1 << 20);
  REQUIRE(log.append(R"({"a":1})").ok());
  REQUIRE(log.append(R"({"b":2})").ok());
  auto text = readFile(log.path());
  REQUIRE(text.ok());
  CHECK(*text == "{\"a\":1}\n{\"b\":2}\n");
}

TEST_CASE("an audit log past its bound keeps one rotated file, so twice the bound in all",
          "[audit_log]") {
  test::TempTree tree;
  AuditLog log(tree.path("audit.log"), 100);
  const std::string line(39, 'x');  // 40 bytes with its newline
  for (int i = 0; i < 10; ++i) REQUIRE(log.append(line).ok());
  CHECK(fs::file_size(log.path()) == 80);
  CHECK(fs::file_size(log.path() + ".1") == 80);
  CHECK_FALSE(fs::exists(log.path() + ".2"));
}

TEST_CASE("two audit logs on one path share the bound", "[audit_log]") {
  test::TempTree tree;
  AuditLog a(tree.path("audit.log"), 100), b(tree.path("audit.log"), 100);
  const std::string line(39, 'x');
  for (int i = 0; i < 5; ++i) {
    REQUIRE(a.append(line).ok());
    REQUIRE(b.append(line).ok());
  }
  CHECK(fs::file_size(a.path()) <= 100);
  CHECK(fs::file_size(a.path() + ".1") <= 100);
}

TEST_CASE("an audit log that cannot be opened says which file and why", "[audit_log]") {
  test::TempTree tree({{"file", "not a directory"}});
  AuditLog log(tree.path("file/audit.log"), 100);
  auto written = log.append("x");
  REQUIRE_FALSE(written.ok());
  CHECK(written.error().message.find(tree.path("file/audit.log")) != std::string::npos);
  CHECK(written.error().message.find("open") != std::string::npos);
  CHECK(written.error().sysErrno == ENOTDIR);
}

}  // namespace test_base_audit_log
