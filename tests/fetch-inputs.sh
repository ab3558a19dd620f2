#!/usr/bin/env bash
# Fetches, ahead of the tests, what the real-runtime and kernel tests download from
# Debian's archive, into the one cache they all read when $KOORDLET_TEST_CACHE is set:
#   kernels/<v>     5.10 6.1 6.12 unstable (cgroup-v2-rig boots all four, v2-node three)
#   rootfs/unstable the node guest's userland (systemd, containerd 2.x, runc)
#   runtimes/       trixie's containerd 1.7, bookworm's runc (nri-containerd, both builds)
#   busybox-oci.tar, runtimes/busybox.tar   the test image
# Each part is a script the test itself runs again (and finds done): this only moves the
# waiting on the network off the tests' path. `make test` runs it beside the plain build
# (network and unpacking, little CPU) and waits for it before the first test.
#
# Usage: KOORDLET_TEST_CACHE=<dir> tests/fetch-inputs.sh
# Prints each part's result and seconds; exit 0 when every part is there, else 1 (the
# tests then fetch again and fail or skip with their own message).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${KOORDLET_TEST_CACHE:?set KOORDLET_TEST_CACHE to the cache dir}
mkdir -p "$cache/logs" "$cache/runtimes"
start=$(date +%s)
part() {
  local name=$1 t0 rc
  shift
  t0=$(date +%s)
  "$@" >"$cache/logs/$name.out" 2>&1
  rc=$?
  echo "fetch-inputs: $name: rc $rc in $(($(date +%s) - t0)) s" >&2
  [ $rc -eq 0 ] || tail -n 5 "$cache/logs/$name.out" | sed "s/^/  $name: /" >&2
  return $rc
}
pids=()
for v in 5.10 6.1 6.12 unstable; do
  part "kernel-$v" "$here/rig/node/fetch-node-kernel.sh" "$cache" "$v" &
  pids+=($!)
done
part rootfs "$here/rig/node/fetch-rootfs.sh" "$cache" unstable &
pids+=($!)
part containerd "$here/runtime/fetch-runtime.sh" "$cache/runtimes" trixie containerd &
pids+=($!)
part runc "$here/runtime/fetch-runtime.sh" "$cache/runtimes" bookworm runc &
pids+=($!)
{
  part image "$here/runtime/make-image.sh" "$cache/busybox-oci.tar" &&
    cp "$cache/busybox-oci.tar" "$cache/runtimes/busybox.tar.part" &&
    mv "$cache/runtimes/busybox.tar.part" "$cache/runtimes/busybox.tar"
} &
pids+=($!)
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
echo "fetch-inputs: $((${#pids[@]} - failed)) of ${#pids[@]} parts in $(($(date +%s) - start)) s ($(du -sm "$cache" | cut -f1) MiB in $cache)" >&2
[ $failed -eq 0 ]
