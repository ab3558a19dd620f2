#!/usr/bin/env bash
# Boots the cgroup v2 node guest under QEMU's software emulation (TCG: no KVM here):
# Debian's kernel, systemd as PID 1 from the initramfs of make-node-image.sh, containerd
# 2.x with NRI and runc, the payload (payload.sh), "KOORDLET-RIG-RESULT rc=<n>", poweroff.
#
# Usage: boot-node.sh <dir> <kernel-version>     (6.12 | unstable | 5.10 | 6.1)
#   builds what is missing under <dir> first (fetch-rootfs.sh, fetch-node-kernel.sh,
#   make-node-image.sh; their downloads under $KOORDLET_TEST_CACHE when that is set),
#   keeps the serial console in <dir>/logs/<version>.log and prints the host's wall clock to: the first kernel line, systemd's first line, the default
#   target, containerd ready, the result; plus the guest's own (CLOCK_MONOTONIC) times.
# Environment:
#   KOORDLET_NODE_MEMORY   QEMU -m (default 1024M)
#   KOORDLET_NODE_TIMEOUT  seconds for the whole boot (default 300)
#   KOORDLET_NODE_VERBOSE  1: kernel messages and systemd's status lines on the console
#   KOORDLET_NODE_REBUILD  1: rebuild the image even if it exists
#   KOORDLET_NODE_QEMU_ARGS  more QEMU arguments, split on spaces (e.g. a NIC:
#                          "-nic user,model=virtio-net-pci"; without one QEMU adds its
#                          default e1000, for which the image has no driver)
# Exit: 0 when the payload printed rc=0, 1 otherwise, 77 when qemu or cpio is missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
say() { echo "boot-node: $*" >&2; }
die() { say "$*"; exit 1; }
[ $# -eq 2 ] || die "usage: boot-node.sh <dir> <6.12|unstable|5.10|6.1>"
dir=$(realpath -m "$1")
version=$2
command -v qemu-system-x86_64 >/dev/null || { say "no qemu-system-x86_64 (Debian: qemu-system-x86)"; exit 77; }

image=$dir/images/node-$version.cpio
if [ ! -s "$image" ] || [ "${KOORDLET_NODE_REBUILD:-}" = 1 ]; then
  "$here/make-node-image.sh" "$dir" "$version" "$image" >/dev/null
fi
kdir=$("$here/fetch-node-kernel.sh" "${KOORDLET_TEST_CACHE:-$dir}" "$version" 2>/dev/null)
mkdir -p "$dir/logs"
log=$dir/logs/$version.log

# The kernel command line the rig uses; quiet keeps the slow TCG serial console short.
# systemd.show_status=error: only failures from systemd itself on the console.
# TERM=dumb reaches PID 1's environment (the kernel passes unknown a=b to init): systemd
# 257+ otherwise sends terminal queries and OSC 3008 context escapes to the console.
append="console=ttyS0 panic=-1 systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all TERM=dumb"
if [ "${KOORDLET_NODE_VERBOSE:-}" = 1 ]; then
  append+=" systemd.show_status=1"
else
  append+=" quiet systemd.show_status=error"
fi

start=$(date +%s%N)
# Host wall clock at the first log line matching a pattern, seconds since QEMU started.
declare -A seen=()
stamp() {
  local key=$1 pattern=$2
  [ -n "${seen[$key]:-}" ] && return 0
  grep -qa -- "$pattern" "$log" 2>/dev/null || return 0
  local t=$((($(date +%s%N) - start) / 10000000))
  seen[$key]=$((t / 100)).$(printf '%02d' $((t % 100)))
}
set +e
# shellcheck disable=SC2086  # KOORDLET_NODE_QEMU_ARGS is split on purpose
# thread=single: as the rig's run.sh (multi-threaded TCG gains nothing on 2 host cores).
timeout -k 10 "${KOORDLET_NODE_TIMEOUT:-300}" qemu-system-x86_64 -accel tcg,thread=single \
  -m "${KOORDLET_NODE_MEMORY:-1024M}" -smp 2 -nographic -no-reboot \
  -kernel "$kdir/vmlinuz" -initrd "$image" -append "$append" ${KOORDLET_NODE_QEMU_ARGS:-} \
  </dev/null >"$log" 2>&1 &
qemu=$!
while kill -0 "$qemu" 2>/dev/null; do
  stamp firmware "Booting from ROM"
  stamp payload KOORDLET-NODE-PAYLOAD
  stamp result KOORDLET-RIG-RESULT
  sleep 0.05
done
wait "$qemu"
qemu_rc=$?
set -e
total=$((($(date +%s%N) - start) / 10000000))
stamp result KOORDLET-RIG-RESULT
clean=$(tr -d '\r' <"$log")
marker=$(sed -n 's/.*KOORDLET-RIG-RESULT rc=\([0-9]*\)$/\1/p' <<<"$clean" | tail -n 1)
times=$(sed -n 's/^KOORDLET-NODE-TIMES //p' <<<"$clean" | tail -n 1)
say "$version $(cut -d' ' -f1 "$kdir/package") image $(du -m "$image" | cut -f1) MiB, -m ${KOORDLET_NODE_MEMORY:-1024M}"
say "  host wall clock: firmware done ${seen[firmware]:-?}s, payload start ${seen[payload]:-?}s," \
  "result ${seen[result]:-?}s, qemu exit $((total / 100)).$(printf '%02d' $((total % 100)))s (rc $qemu_rc)"
say "  guest: ${times:-?}"
grep -a "^KOORDLET-NODE\|Startup finished" <<<"$clean" | grep -v "^KOORDLET-NODE-TIMES" | sed 's/^/  /' >&2 || true
if [ "$marker" = 0 ]; then
  say "$version: PASS (log $log)"
  exit 0
fi
say "$version: FAIL (result '${marker:-none}', qemu rc $qemu_rc); last 60 lines of $log:"
tail -n 60 <<<"$clean" >&2
exit 1
