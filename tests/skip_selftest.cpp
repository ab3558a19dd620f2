// What tests/skip_test.sh runs: one case that passes and one that skips with
// KOORDLET_SKIP, through the project's Catch2 runner (tests/catch_main.cpp).
#include <catch2/catch.hpp>

#include "tests/support/skip.h"

TEST_CASE("a case that passes") { CHECK(1 + 1 == 2); }

TEST_CASE("a case whose machine lacks what it needs") {
  KOORDLET_SKIP("this machine has no such feature (the skip's own test)");
}
