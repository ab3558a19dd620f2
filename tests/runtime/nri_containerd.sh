#!/usr/bin/env bash
# meson test nri-containerd: fetches Debian trixie's containerd 1.7 and bookworm's runc into
# the build dir's tools (tests/runtime/fetch-runtime.sh, once per build dir), builds the
# test image (make-image.sh), then runs the e2e test binary against them.
#
# Usage: nri_containerd.sh <e2e_tests binary> <tools dir> [Catch2 args: its spec]
#   the tools dir is $KOORDLET_TEST_CACHE/runtimes when that is set (make's test targets:
#   both builds share one download)
# A missing tool or an unreachable archive is a skip (77), a failure with
# KOORDLET_REQUIRE_ALL=1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: nri_containerd.sh <test binary> <tools dir>" >&2; exit 1; }
binary=$1
tools=${KOORDLET_TEST_CACHE:+$KOORDLET_TEST_CACHE/runtimes}
tools=${tools:-$2}
shift 2
skip() {
  if [ "${KOORDLET_REQUIRE_ALL:-}" = 1 ]; then
    echo "nri-containerd: required but unavailable (KOORDLET_REQUIRE_ALL=1): $*" >&2
    exit 1
  fi
  echo "nri-containerd: SKIP: $*" >&2
  exit 77
}
# containerd from trixie (Go: glibc 2.34 is enough), runc from this host's release
# (trixie's runc is linked against glibc 2.38, which bookworm lacks).
fetch() {
  set +e
  "$here/fetch-runtime.sh" "$tools" "$@"
  local rc=$?
  set -e
  [ $rc -eq 77 ] && skip "cannot fetch $2 from Debian $1 (no apt, or the archive is out of reach)"
  [ $rc -eq 0 ] || exit 1
}
containerd_root=$(fetch trixie containerd)
runc_root=$(fetch bookworm runc)
echo "nri-containerd: $(cat "$tools/trixie/packages" "$tools/bookworm/packages" | tr '\n' ' ')" >&2
image=$tools/busybox.tar
set +e
[ -s "$image" ] || "$here/make-image.sh" "$image"
rc=$?
set -e
[ $rc -eq 77 ] && skip "no static busybox for the test image (Debian: busybox-static)"
[ $rc -eq 0 ] || exit 1
export KOORDLET_CONTAINERD_ROOT=$containerd_root KOORDLET_RUNC=$runc_root/usr/sbin/runc
export KOORDLET_TEST_IMAGE=$image
exec "$binary" "$@"
