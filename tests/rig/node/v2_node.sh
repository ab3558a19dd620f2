#!/usr/bin/env bash
# meson test v2-node: the node scene (test_v2_node.cpp) on the cgroup v2 node guest
# (systemd as PID 1, Debian unstable's containerd 2.x with NRI, runc with the systemd
# cgroup driver), booted once per kernel under QEMU TCG by boot-node.sh. The test and
# the agent go in as host binaries with their libraries (make-node-image.sh), so every
# boot builds its image again.
#
# Usage: v2_node.sh <v2_node_test> <koordlet> [kernel version...]
#   (default 5.10 6.12 unstable: the oldest kernel Debian serves, bookworm's, the newest)
# Environment: KOORDLET_NODE_DIR (default <build>/v2node: packages, kernels, images, the
# serial logs), KOORDLET_REQUIRE_ALL=1 (a missing tool fails, not skips),
# KOORDLET_NODE_KUBELET (a kubelet binary: the real-kubelet scene runs too),
# KOORDLET_NODE_FILES (below), and
# boot-node.sh's own (KOORDLET_NODE_MEMORY, KOORDLET_NODE_TIMEOUT).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "v2-node: $*" >&2; }
skip() {
  if [ "${KOORDLET_REQUIRE_ALL:-}" = 1 ]; then
    say "required but unavailable (KOORDLET_REQUIRE_ALL=1): $*"
    exit 1
  fi
  say "SKIP: $*"
  exit 77
}
[ $# -ge 2 ] || { say "usage: v2_node.sh <v2_node_test> <koordlet> [versions]"; exit 1; }
test_bin=$(realpath "$1")
agent_bin=$(realpath "$2")
shift 2
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(5.10 6.12 unstable)
for tool in qemu-system-x86_64 cpio xz apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || skip "no $tool"
done
[ "$(id -u)" = 0 ] || skip "needs root (apt-get with a private config, dpkg-deb -x of /dev nodes)"
build=$(dirname "$test_bin")
while [ "$build" != / ] && [ ! -f "$build/build.ninja" ]; do build=$(dirname "$build"); done
dir=${KOORDLET_NODE_DIR:-$build/v2node}
mkdir -p "$dir"

export KOORDLET_NODE_HOST_BINARIES="$agent_bin $test_bin"
# An operator's check: a kubelet (1.35+) for test_v2_node_kubelet.cpp's hidden scene.
if [ -n "${KOORDLET_NODE_KUBELET:-}" ]; then
  KOORDLET_NODE_HOST_BINARIES+=" $(realpath "$KOORDLET_NODE_KUBELET")"
  export KOORDLET_NODE_MEMORY=${KOORDLET_NODE_MEMORY:-2048M}
  say "with the kubelet $KOORDLET_NODE_KUBELET ($("$KOORDLET_NODE_KUBELET" --version 2>&1))"
fi
# More files for the guest's /koordlet/host/bin (executable): an operator's check's CA, or
# its node-check.env, which the payload sources (KOORDLET_NODE_APISERVER and the tokens of
# test_v2_node_kubelet.cpp's real-API-server mode).
for f in ${KOORDLET_NODE_FILES:-}; do KOORDLET_NODE_HOST_BINARIES+=" $(realpath "$f")"; done
export KOORDLET_NODE_PAYLOAD=$here/v2-node-payload.sh
export KOORDLET_NODE_REBUILD=1
failed=()
for v in "${versions[@]}"; do
  start=$(date +%s)
  set +e
  "$here/boot-node.sh" "$dir" "$v"
  rc=$?
  set -e
  [ $rc -eq 77 ] && skip "boot-node.sh cannot run here (qemu or cpio missing)"
  say "$v: rc $rc in $(($(date +%s) - start)) s (image, boot, scene)"
  [ $rc -eq 0 ] || failed+=("$v")
done
if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED on: ${failed[*]}"
  exit 1
fi
say "passed on: ${versions[*]}"
