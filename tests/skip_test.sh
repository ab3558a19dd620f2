#!/usr/bin/env bash
# Skips are skips: a C++ test binary whose cases pass but one skips exits 77 (meson's
# SKIP), one that only runs passing cases exits 0, and under KOORDLET_REQUIRE_ALL=1 the
# skip fails it; tests/summary.sh fails a run that holds a SKIP when
# KOORDLET_REQUIRE_ALL=1 and only counts it otherwise.
#   skip_test.sh SKIP_SELFTEST_BINARY SUMMARY_SCRIPT
set -uo pipefail
bin=$1 summary=$2
status=0
expect() {  # expect WANT WHAT CMD...
  local want=$1 what=$2; shift 2
  "$@" >/dev/null 2>&1
  local rc=$?
  if [ "$rc" != "$want" ]; then echo "FAIL: $what: exit $rc, want $want" >&2; status=1; fi
}
expect 77 "a skipped case, nothing failed" env -u KOORDLET_REQUIRE_ALL "$bin"
expect 0 "only the passing case" env -u KOORDLET_REQUIRE_ALL "$bin" "a case that passes"
env KOORDLET_REQUIRE_ALL=1 "$bin" >/dev/null 2>&1
rc=$?
if [ "$rc" = 0 ] || [ "$rc" = 77 ]; then
  echo "FAIL: under KOORDLET_REQUIRE_ALL=1 a skip must fail (exit $rc)" >&2
  status=1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/b/meson-logs"
printf '%s\n' '{"name": "a", "result": "OK"}' '{"name": "b", "result": "SKIP"}' \
  >"$work/b/meson-logs/testlog.json"
out=$(env -u KOORDLET_REQUIRE_ALL "$summary" "$work/b" 2>&1)
rc=$?
[ "$rc" = 0 ] || { echo "FAIL: summary without KOORDLET_REQUIRE_ALL exits $rc" >&2; status=1; }
[ "$out" = "tests: 1 passed, 0 failed, 1 skipped" ] || { echo "FAIL: summary says: $out" >&2; status=1; }
env KOORDLET_REQUIRE_ALL=1 "$summary" "$work/b" >/dev/null 2>&1 &&
  { echo "FAIL: summary under KOORDLET_REQUIRE_ALL=1 passed a run with a SKIP" >&2; status=1; }
[ "$status" = 0 ] && echo "skips exit 77; KOORDLET_REQUIRE_ALL=1 fails them"
exit "$status"
