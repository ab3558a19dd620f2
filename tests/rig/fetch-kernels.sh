#!/usr/bin/env bash
# The kernels the cgroup v2 rig boots: Debian's own, fetched by node/fetch-node-kernel.sh
# (one resolution, one private apt configuration, one cache for the rig and the node
# guest; never installed), of which the rig only boots the vmlinuz:
#   5.10      linux-image-cloud-amd64 (bullseye, bullseye-security): the oldest Debian serves
#   6.1       linux-image-cloud-amd64 (bookworm)
#   6.12      linux-image-6.12-amd64 (bookworm-security; no cloud flavour)
#   unstable  linux-image-cloud-amd64 (unstable): the newest kernel Debian ships
#
# Usage: fetch-kernels.sh <rig-dir> [version...]     (default 6.1 6.12)
# The kernels go under $KOORDLET_TEST_CACHE/kernels when that is set (make's test targets
# set it: both builds and the node guest share one download), else <rig-dir>/kernels.
# Prints "<version> <path to vmlinuz>" per version on stdout; progress on stderr.
# Exit: 0 all fetched, 1 a failure, 77 apt-get/dpkg-deb missing or the archive out of reach.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "fetch-kernels: usage: fetch-kernels.sh <rig-dir> [5.10|6.1|6.12|unstable...]" >&2; exit 1; }
cache=${KOORDLET_TEST_CACHE:-$1}
shift
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(6.1 6.12)
for version in "${versions[@]}"; do
  rc=0
  kdir=$("$here/node/fetch-node-kernel.sh" "$cache" "$version") || rc=$?
  [ $rc -eq 0 ] || exit $rc
  echo "$version $kdir/vmlinuz"
done
