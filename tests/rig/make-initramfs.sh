#!/usr/bin/env bash
# Builds the rig's initramfs: an uncompressed cpio (newc) holding busybox, an /init
# that mounts cgroup2 and runs one test binary, and that binary with the shared
# libraries it loads (what ldd lists, plus the dynamic loader, at the same paths),
# so the test needs no static link. Uncompressed because TCG is slow at gunzip and
# QEMU loads the file into guest memory as it is.
#
# Usage: make-initramfs.sh <test-binary> <output.cpio> [test arguments...]
# /init prints "KOORDLET-RIG-RESULT rc=<exit code of the test>" and powers off.
# Environment (both optional; unset, the image is the test rig's as before):
#   KOORDLET_RIG_EXTRA  space-separated files or dirs also copied into /koordlet/ (by
#                       base name): executables with their libraries and without debug
#                       info, other files and dirs as they are (bench/pods-v2.sh: the
#                       agent, a NodeSLO file and API fixtures beside pods_bench)
#   KOORDLET_RIG_ENV    space-separated NAME=VALUE pairs exported for the binary
#   KOORDLET_RIG_CGROUP v1: /init mounts cgroup v1 instead (tmpfs at /sys/fs/cgroup,
#                       cpu,cpuacct with cpu and cpuacct links, memory, cpuset, as on a
#                       v1 host); needs run.sh's kernel command line without
#                       cgroup_no_v1 (run.sh does that for the same variable). Default v2.
# Exit: 0 built, 1 a failure, 77 busybox or cpio missing.
set -euo pipefail

die() { echo "make-initramfs: $*" >&2; exit 1; }
[ $# -ge 2 ] || die "usage: make-initramfs.sh <test-binary> <output.cpio> [test args...]"
binary=$1
output=$2
shift 2
[ -x "$binary" ] || die "$binary: not an executable"

busybox=$(command -v busybox || true)
[ -n "$busybox" ] || { echo "make-initramfs: no busybox (Debian: busybox-static)" >&2; exit 77; }
command -v cpio >/dev/null || { echo "make-initramfs: no cpio (Debian: cpio)" >&2; exit 77; }

root=$(mktemp -d "${TMPDIR:-/tmp}/koordlet-rig-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,proc,sys,tmp,koordlet}

lib_dirs=()
# Copies a file to the same path under the image root, following symlinks (the
# loader at /lib64 is a link into /lib/x86_64-linux-gnu on Debian).
copy_at_path() {
  mkdir -p "$root$(dirname "$1")"
  cp -L "$1" "$root$1"
}
# Copies an executable's shared libraries and loader. ldd prints
# "libfoo.so => /path (0x...)" for libraries and "/lib64/ld-linux... (0x...)" for
# the loader; a static executable prints neither.
copy_libs() {
  local path
  while read -r path; do
    [ -f "$root$path" ] && continue
    copy_at_path "$path"
    lib_dirs+=("$(dirname "$path")")
  done < <(ldd "$1" 2>/dev/null | sed -n -e 's/.*=> \(\/[^ ]*\) .*/\1/p' -e 's/^\s*\(\/[^ ]*\) (0x.*/\1/p')
}

cp -L "$busybox" "$root/bin/busybox"
copy_libs "$busybox"  # nothing for busybox-static
name=$(basename "$binary")
cp -L "$binary" "$root/koordlet/$name"
# Without its debug info: the ASan build's test binary is ~140 MB with it, and a
# rootfs unpacked beside its cpio in the VM's 512 MB ran out of room ("Initramfs
# unpacking failed: write error"). Symbols stay, so reports still name functions.
strip --strip-debug "$root/koordlet/$name"
copy_libs "$binary"
for extra in ${KOORDLET_RIG_EXTRA:-}; do
  [ -e "$extra" ] || die "KOORDLET_RIG_EXTRA: $extra: no such file or dir"
  cp -rL "$extra" "$root/koordlet/$(basename "$extra")"
  if [ -f "$extra" ] && [ -x "$extra" ]; then
    strip --strip-debug "$root/koordlet/$(basename "$extra")"
    copy_libs "$extra"
  fi
done
# No ld.so.cache in the image: name the library dirs.
ld_path=$(printf '%s\n' "${lib_dirs[@]}" | sort -u | paste -sd: -)

# Arguments are quoted for the shell that reads /init.
args=""
for a in "$@"; do args+=" $(printf '%q' "$a")"; done
# Sanitizer settings of the caller (make test-asan sets them) reach the test too.
sanitizer_env=""
for var in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
  [ -n "${!var:-}" ] && sanitizer_env+="export $var=$(printf '%q' "${!var}")"$'\n'
done
for pair in ${KOORDLET_RIG_ENV:-}; do
  [[ "$pair" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "KOORDLET_RIG_ENV: $pair: not NAME=VALUE"
  sanitizer_env+="export ${pair%%=*}=$(printf '%q' "${pair#*=}")"$'\n'
done

if [ "${KOORDLET_RIG_CGROUP:-v2}" = v1 ]; then
  # A kernel built without a v1 controller (Debian 6.12: no memory or cpuset v1)
  # fails the boot at once rather than leave plain tmpfs dirs where cgroups belong.
  cgroup_setup='v1() {
  mkdir "/sys/fs/cgroup/$1" && mount -t cgroup -o "$1" cgroup "/sys/fs/cgroup/$1" && return
  echo "KOORDLET-RIG-CGROUP v1 controller $1 cannot be mounted on $(uname -r)"
  echo "KOORDLET-RIG-RESULT rc=1"
  poweroff -f
}
mount -t tmpfs cgroup_root /sys/fs/cgroup
v1 cpu,cpuacct
ln -s cpu,cpuacct /sys/fs/cgroup/cpu
ln -s cpu,cpuacct /sys/fs/cgroup/cpuacct
v1 memory
v1 cpuset
echo "KOORDLET-RIG-KERNEL $(uname -r) cpus=$(cat /sys/fs/cgroup/cpuset/cpuset.cpus)"
echo "KOORDLET-RIG-CGROUP v1 $(ls /sys/fs/cgroup | tr "\n" " ")"
'
else
  [ "${KOORDLET_RIG_CGROUP:-v2}" = v2 ] || die "KOORDLET_RIG_CGROUP=$KOORDLET_RIG_CGROUP: not v1 or v2"
  cgroup_setup='mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo "+cpu +cpuset +memory" >/sys/fs/cgroup/cgroup.subtree_control
echo "KOORDLET-RIG-KERNEL $(uname -r) cpus=$(cat /sys/fs/cgroup/cpuset.cpus.effective)"
echo "KOORDLET-RIG-CGROUP controllers=[$(cat /sys/fs/cgroup/cgroup.controllers)] subtree_control=[$(cat /sys/fs/cgroup/cgroup.subtree_control)]"
'
fi

cat >"$root/init" <<EOF
#!/bin/busybox sh
# PID 1 of the koordlet cgroup v2 rig (tests/rig/make-initramfs.sh).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# The kernel opens /dev/console for init only if the image has one: make sure.
exec </dev/console >/dev/console 2>&1
mount -t tmpfs tmpfs /tmp
# Loopback up: a test may talk to itself over 127.0.0.1 (pods_bench and the agent).
ip link set lo up
${cgroup_setup}cd /tmp
# Open files as a node's container runtime gives its pods (containerd: LimitNOFILE
# infinity, 1048576), not the kernel's 4096 for init: the agent holds ~3 files per
# cgroup, 6,000 at 500 pods.
ulimit -n 1048576
${sanitizer_env}# Inside the VM a skip would mean the rig is broken: make it a failure.
start=\$(cut -d' ' -f1 /proc/uptime)
KOORDLET_REQUIRE_ALL=1 LD_LIBRARY_PATH=$ld_path /koordlet/$name$args
rc=\$?
echo "KOORDLET-RIG-TIMES booted=\${start}s ended=\$(cut -d' ' -f1 /proc/uptime)s"
echo "KOORDLET-RIG-RESULT rc=\$rc"
sync
poweroff -f
EOF
chmod 0755 "$root/init"

mkdir -p "$(dirname "$output")"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$output.part"
mv "$output.part" "$output"
echo "make-initramfs: $output ($(du -k "$output" | cut -f1) KiB, libraries from $ld_path)" >&2
