#!/usr/bin/env bash
# The sandbox benchmark (sandbox_latency.cpp) on the cgroup v2 node guest: Debian
# unstable's containerd 2.x with NRI on, runc's systemd cgroup driver, systemd as PID 1,
# under QEMU TCG (tests/rig/node/boot-node.sh). TCG is ~10x slower than the host and not
# evenly so: the scenes' order of magnitude is what it shows, not the host's figures.
#
# Usage: bench/sandbox_latency_guest.sh <build dir> <koordlet-before|-> [kernel=6.12]
#   [pods=50] [gap-ms=500]; <koordlet-before> an agent built before issue 46 (its name
#   may be anything: it goes in as koordlet-before). Needs root; the node's packages go
#   to $KOORDLET_NODE_DIR (default <build>/v2node, the v2-node test's cache).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: sandbox_latency_guest.sh <build dir> <koordlet-before|-> [kernel] [pods] [gap-ms]" >&2; exit 2; }
build=$(realpath "$1")
kernel=${3:-6.12}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
binaries="$build/agent/koordlet $build/bench/sandbox_latency"
before_arg=-
if [ "$2" != - ]; then
  cp "$2" "$scratch/koordlet-before"
  binaries="$binaries $scratch/koordlet-before"
  before_arg=/koordlet/host/bin/koordlet-before
fi
cat >"$scratch/payload" <<P
#!/bin/sh
# The kubelet's QoS slices (its systemd driver), then the benchmark on the node's containerd.
systemctl start kubepods.slice kubepods-besteffort.slice kubepods-burstable.slice || exit 1
LD_LIBRARY_PATH=/koordlet/host/lib /koordlet/host/bin/sandbox_latency $before_arg \
  /koordlet/host/bin/koordlet system - - ${4:-50} ${5:-500} >/tmp/bench.log 2>&1
rc=\$?
sed 's/^/KOORDLET-NODE bench: /' /tmp/bench.log | tail -n 40
exit \$rc
P
chmod +x "$scratch/payload"
export KOORDLET_NODE_HOST_BINARIES="$binaries"
export KOORDLET_NODE_PAYLOAD=$scratch/payload KOORDLET_NODE_REBUILD=1
export KOORDLET_NODE_TIMEOUT=${KOORDLET_NODE_TIMEOUT:-1800}
"$here/../tests/rig/node/boot-node.sh" "${KOORDLET_NODE_DIR:-$build/v2node}" "$kernel"
