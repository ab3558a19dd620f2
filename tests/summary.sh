#!/usr/bin/env bash
# Prints one closing line over both build dirs' meson test logs:
#   "tests: N passed, N failed, N skipped"
# Skips were already turned into failures by the tests when KOORDLET_REQUIRE_ALL=1.
pass=0; failed=0; skipped=0
for dir in "$@"; do
  log="$dir/meson-logs/testlog.json"
  [ -f "$log" ] || { failed=$((failed + 1)); echo "no test log in $dir" >&2; continue; }
  while read -r result; do
    case "$result" in
      OK|EXPECTEDFAIL) pass=$((pass + 1)) ;;
      SKIP) skipped=$((skipped + 1)) ;;
      *) failed=$((failed + 1)) ;;
    esac
  done < <(sed -n 's/.*"result": "\([A-Z]*\)".*/\1/p' "$log")
done
echo "tests: $pass passed, $failed failed, $skipped skipped"
