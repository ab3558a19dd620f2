#!/usr/bin/env bash
# Prints one closing line over both build dirs' meson test logs:
#   "tests: N passed, N failed, N skipped"
# A skipped test exits 77 (meson's SKIP). With KOORDLET_REQUIRE_ALL=1 the tests turn a
# skip into a failure themselves, and this script fails on any SKIP left.
pass=0; failed=0; skipped=0
# Each build dir's logs: testlog.json and those of runs with their own --logbase
# (testlog-soak.json: make test runs the soak apart, beside the sanitizer build).
for dir in "$@"; do
  [ -f "$dir/meson-logs/testlog.json" ] || { failed=$((failed + 1)); echo "no test log in $dir" >&2; continue; }
  while read -r result; do
    case "$result" in
      OK|EXPECTEDFAIL) pass=$((pass + 1)) ;;
      SKIP) skipped=$((skipped + 1)) ;;
      *) failed=$((failed + 1)) ;;
    esac
  done < <(sed -n 's/.*"result": "\([A-Z]*\)".*/\1/p' "$dir"/meson-logs/testlog*.json)
done
echo "tests: $pass passed, $failed failed, $skipped skipped"
# Where every feature is required (CI: KOORDLET_REQUIRE_ALL=1), a skip is a failure
# whatever the test itself did with the variable.
if [ "${KOORDLET_REQUIRE_ALL:-0}" = 1 ] && [ "$skipped" -gt 0 ]; then
  echo "KOORDLET_REQUIRE_ALL=1: $skipped skipped test(s) fail this run" >&2
  exit 1
fi
