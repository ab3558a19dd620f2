#!/usr/bin/env bash
# The NRI CreateContainer benchmark (nri_create_latency.cpp) on the cgroup v2 node guest:
# Debian unstable's containerd 2.x with NRI on, runc's systemd cgroup driver, systemd as
# PID 1, under QEMU TCG (tests/rig/node/boot-node.sh). TCG is ~10x slower than the
# host and not evenly so: only the ratios and the paired differences mean anything.
#
# Usage: bench/nri_create_guest.sh <build dir> <go-plugin> [kernel=6.12] [rounds=10]
#   [per-episode=10]; <go-plugin> is containerd/nri's template plugin built for the host
#   (bench/RESULTS.md says how). Needs root; the node's packages go to
#   $KOORDLET_NODE_DIR (default <build>/v2node, the v2-node test's cache).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: nri_create_guest.sh <build dir> <go-plugin> [kernel] [rounds] [per-episode]" >&2; exit 2; }
build=$(realpath "$1")
go_plugin=$(realpath "$2")
kernel=${3:-6.12}
payload=$(mktemp)
trap 'rm -f "$payload"' EXIT
cat >"$payload" <<P
#!/bin/sh
# The kubelet's QoS slices (its systemd driver), then the benchmark on the node's containerd.
systemctl start kubepods.slice kubepods-besteffort.slice || exit 1
LD_LIBRARY_PATH=/koordlet/host/lib /koordlet/host/bin/nri_create_latency \
  /koordlet/host/bin/koordlet system - - /koordlet/host/bin/$(basename "$go_plugin") \
  ${4:-10} ${5:-10} >/tmp/bench.log 2>&1
rc=\$?
sed 's/^/KOORDLET-NODE bench: /' /tmp/bench.log | tail -n 40
exit \$rc
P
chmod +x "$payload"
export KOORDLET_NODE_HOST_BINARIES="$build/agent/koordlet $build/bench/nri_create_latency $go_plugin"
export KOORDLET_NODE_PAYLOAD=$payload KOORDLET_NODE_REBUILD=1
export KOORDLET_NODE_TIMEOUT=${KOORDLET_NODE_TIMEOUT:-1200}
exec "$here/../tests/rig/node/boot-node.sh" "${KOORDLET_NODE_DIR:-$build/v2node}" "$kernel"
