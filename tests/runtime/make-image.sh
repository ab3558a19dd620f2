#!/usr/bin/env bash
# Builds the real-runtime tests' image, koordlet-test/busybox:1, as an OCI archive that
# `ctr images import` takes: Debian's static busybox (package busybox-static) with a
# /bin/sh link, through the project's own image writer (packaging/image/oci_image.py).
#
# Usage: make-image.sh <out.tar>
# Exit: 0 written, 1 a failure, 77 no static busybox on this machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -eq 1 ] || { echo "usage: make-image.sh <out.tar>" >&2; exit 1; }
out=$1
busybox=/bin/busybox
linkage=$(ldd "$busybox" 2>&1 || true)  # ldd exits 1 on a static binary
if [ ! -x "$busybox" ] || ! grep -q "not a dynamic executable" <<<"$linkage"; then
  echo "make-image: no static $busybox (Debian: busybox-static)" >&2
  exit 77
fi
rootfs=$(mktemp -d "${TMPDIR:-/tmp}/koordlet-test-image.XXXXXX")
trap 'rm -rf "$rootfs"' EXIT
mkdir -p "$rootfs/bin" "$rootfs/proc" "$rootfs/sys" "$rootfs/dev" "$rootfs/tmp"
ln -s busybox "$rootfs/bin/sh"
ln -s busybox "$rootfs/bin/cat"
python3 "$repo/packaging/image/oci_image.py" --containerfile "$here/busybox.Containerfile" \
  --rootfs "$rootfs" --binary "$busybox" --repo "$here" --name koordlet-test/busybox:1 \
  --arch amd64 --epoch 0 --history "tests/runtime/make-image.sh" --out "$out.part"
mv "$out.part" "$out"
