// The Catch2 runner of every C++ test binary. A test case that skips (KOORDLET_SKIP,
// tests/support/skip.h) is counted; a binary whose cases all passed but some skipped
// exits 77, meson's skip code, so `meson test` and `make test` show it as skipped on
// any machine. Failures keep Catch2's exit code. (Under KOORDLET_REQUIRE_ALL=1, as in
// CI, a skip is a failure already.)
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>

#include "tests/support/skip.h"

int main(int argc, char** argv) {
  const int failed = Catch::Session().run(argc, argv);
  // Catch2 returns the failed assertions' count: 77 of them must not read as a skip.
  if (failed != 0) return failed == 77 ? 1 : failed;
  const int skipped = koord::test::skippedCases();
  if (skipped == 0) return 0;
  std::cerr << skipped << " test case(s) skipped (reasons above): exit 77, meson's skip\n";
  return 77;
}
