// Skips a test whose machine lacks what it needs, visibly (a Catch2 warning with
// the reason), and counts it: the test binary then exits 77, meson's skip code,
// when nothing failed (tests/catch_main.cpp). With KOORDLET_REQUIRE_ALL=1, which CI
// sets because CI has every feature, the skip is a failure instead.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

namespace koord::test {

// Test cases that skipped in this process.
inline int& skippedCasesRef() {
  static int n = 0;
  return n;
}
inline int skippedCases() { return skippedCasesRef(); }

inline bool skipsAreFailures() {
  const char* v = std::getenv("KOORDLET_REQUIRE_ALL");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace koord::test

// Use as: if (!available) { KOORDLET_SKIP("no /proc/pressure: kernel without PSI"); }
// It returns from the test case.
#define KOORDLET_SKIP(reason)                                                \
  do {                                                                       \
    if (::koord::test::skipsAreFailures()) {                                 \
      FAIL("required but unavailable (KOORDLET_REQUIRE_ALL=1): " << reason); \
    }                                                                        \
    WARN("SKIP: " << reason);                                                \
    ++::koord::test::skippedCasesRef();                                      \
    return;                                                                  \
  } while (0)

// Use as: KOORDLET_SKIP_UNLESS_EMPTY(unavailableReason()); skips (or, under
// KOORDLET_REQUIRE_ALL=1, fails) with the reason when it is not empty.
#define KOORDLET_SKIP_UNLESS_EMPTY(reasonExpr)              \
  do {                                                      \
    const std::string koordletWhy_ = (reasonExpr);          \
    if (!koordletWhy_.empty()) KOORDLET_SKIP(koordletWhy_); \
  } while (0)
