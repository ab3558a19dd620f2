#!/usr/bin/env bash
# Builds the cgroup v2 node guest's image: an uncompressed cpio (newc) that the kernel
# unpacks into its tmpfs root and whose /init is systemd itself, as the real init (no
# /etc/initrd-release, so not initrd mode, and no switch_root: the initramfs IS the
# root). Uncompressed because TCG is slow at decompressing, and an initramfs because it
# needs no block driver (virtio_blk and, on 6.12, ext4 are modules in Debian's kernels).
#
# What is in it:
#   - the Debian userland of fetch-rootfs.sh (systemd, containerd 2.x, runc, dash,
#     coreutils, grep, sed, kmod and their Depends), docs/man/locales dropped, with the
#     /bin /sbin /lib /lib64 links to /usr that Debian's installers make (usrmerge);
#   - by hand, what maintainer scripts or the installer would have done: machine-id,
#     os-release, passwd/group (systemd-sysusers --root, from the guest's own systemd),
#     containerd's config (version 3, SystemdCgroup, native snapshotter, NRI on);
#   - units: containerd.service enabled, koordlet-payload.service after
#     multi-user.target, and masks for what a bare VM without udev, dbus or a getty
#     cannot or need not run (each one listed below with why);
#   - the kernel's overlay module (decompressed, depmod'ed with the guest's own kmod), so
#     containerd.service's `modprobe overlay` works and overlayfs could be used;
#   - /koordlet: the payload script, the OCI test image of tests/runtime/make-image.sh,
#     and host (bookworm) binaries with their non-glibc libraries in /koordlet/host/lib.
#
# Usage: make-node-image.sh <dir> <kernel-version> [out.cpio]
#   <dir> is fetch-rootfs.sh's and fetch-node-kernel.sh's cache (both run from here), or
#   $KOORDLET_TEST_CACHE when that is set (make's test targets: one download for every
#   test); out defaults to <dir>/images/node-<kernel-version>.cpio.
# Environment:
#   KOORDLET_NODE_HOST_BINARIES  host executables copied with their libraries and run in
#                                the guest (default: /usr/bin/curl)
#   KOORDLET_NODE_PAYLOAD        a script payload.sh also runs, after its ctr container (optional)
#   KOORDLET_NODE_PACKAGES       more Debian packages in the userland (e.g. iproute2)
#   KOORDLET_NODE_MODULES        more kernel modules by name (e.g. "virtio_net net_failover
#                                failover" for a guest on QEMU's user network)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
say() { echo "make-node-image: $*" >&2; }
die() { say "$*"; exit 1; }
[ $# -ge 2 ] || die "usage: make-node-image.sh <dir> <kernel-version> [out.cpio]"
dir=$(realpath -m "$1")
version=$2
out=${3:-$dir/images/node-$version.cpio}
command -v cpio >/dev/null || { say "no cpio (Debian: cpio)"; exit 77; }
command -v xz >/dev/null || { say "no xz (Debian: xz-utils)"; exit 77; }

cache=${KOORDLET_TEST_CACHE:-$dir}
# shellcheck disable=SC2086  # a list of package names, split on purpose
src=$("$here/fetch-rootfs.sh" "$cache" unstable ${KOORDLET_NODE_PACKAGES:-})
kdir=$("$here/fetch-node-kernel.sh" "$cache" "$version")
release=$(cat "$kdir/release")

root=$(mktemp -d "${TMPDIR:-/tmp}/koordlet-node-root.XXXXXX")
trap 'rm -rf "$root"' EXIT
cp -a "$src/." "$root/"
# Dropped: nothing in the guest reads them, and each MiB is unpacked by TCG at boot.
rm -rf "$root"/usr/share/{doc,man,info,locale,lintian,bash-completion,zsh,fish,bug} \
  "$root"/usr/lib/x86_64-linux-gnu/gconv
# Test helpers the packages ship beside the runtime (48 MiB: containerd's failpoint shim,
# runc-fp and CNI plugins; runc's contrib tools). Without them the image is 147 MiB, not
# 195, which is what lets a 512 MiB guest unpack it.
rm -rf "$root"/usr/lib/containerd "$root"/usr/lib/cni \
  "$root"/usr/sbin/{fs-idmap,pidfd-kill,recvtty,remap-rootfs,sd-helper,seccompagent}
# usrmerge: the packages ship /usr only; the loader is /lib64/ld-linux-x86-64.so.2.
for d in bin sbin lib lib64; do
  [ -e "$root/$d" ] || ln -s "usr/$d" "$root/$d"
done
mkdir -p "$root"/{dev,proc,sys,run,tmp,var/lib,var/log,var/tmp,root,etc/systemd/system}
chmod 1777 "$root/tmp" "$root/var/tmp"
ln -sfn ../run "$root/var/run"     # base-files' link: NRI's socket is /var/run/nri/nri.sock
ln -sfn ../run/lock "$root/var/lock"
# The kernel runs /init from the initramfs. Not systemd directly: the initramfs root is
# the kernel's "rootfs", which pivot_root(2) refuses to move (EINVAL), and runc
# pivot_roots into every container ("error jailing process inside rootfs: pivot_root .:
# invalid argument"). So /init bind-mounts / onto /newroot (no copy: the same files),
# moves that mount over /, chroots into it and execs systemd as PID 1: the root is then
# an ordinary mount with a parent, as on a disk-booted node. (runc's --no-pivot would
# work too, but would make every container differ from a real node's.)
mkdir -p "$root/newroot"
cat >"$root/init" <<'EOF'
#!/bin/sh
# PID 1 until systemd: make / a pivotable mount (make-node-image.sh says why). And a
# larger one: the kernel sizes the initramfs tmpfs at half the RAM, of which the image
# takes 147 MiB; containerd's native snapshots are full copies on the same tmpfs
# (unstable's kernel at -m 512M: "copy_file_range: no space left on device").
mount -t proc proc /proc && mount -o remount,size=90% / && umount /proc
mount --bind / /newroot || exec /usr/lib/systemd/systemd "$@"
cd /newroot && mount --move . / && exec chroot . /usr/lib/systemd/systemd "$@"
echo "KOORDLET-NODE-FAIL /init could not move the root; systemd on rootfs" >/dev/console
exec /usr/lib/systemd/systemd "$@"
EOF
chmod 0755 "$root/init"
ln -sfn /usr/lib/systemd/systemd "$root/sbin/init"

# A fixed machine-id: no "first boot" (systemd-firstboot, presets), and the same
# journal/cgroup names every boot (determinism).
echo 6b6f6f72646c65742d7269672d6e6f64 >"$root/etc/machine-id"
cat >"$root/etc/os-release" <<'EOF'
PRETTY_NAME="Debian GNU/Linux unstable (koordlet node rig)"
NAME="Debian GNU/Linux"
ID=debian
VERSION_CODENAME=sid
EOF
echo koordlet-node >"$root/etc/hostname"
# base-files/netbase files: `ctr run --net-host` (and CRI's host-network pods)
# bind-mount the host's /etc/hosts and /etc/resolv.conf into the container
# ("failed to fulfil mount request: open /etc/hosts: no such file or directory").
printf '127.0.0.1\tlocalhost koordlet-node\n::1\tlocalhost ip6-localhost\n' >"$root/etc/hosts"
: >"$root/etc/resolv.conf"
# update-alternatives' link, made by mawk's postinst.
ln -sfn mawk "$root/usr/bin/awk"
: >"$root/etc/fstab"
# systemd's own tools, run on the host through the guest's loader and libraries (the
# guest's glibc is newer than the host's, so they cannot run directly).
# guest_run <argv0> <path in the guest> [args]: argv0 picks kmod's personality.
guest_run() {
  local argv0=$1 bin=$2
  shift 2
  "$root/usr/lib64/ld-linux-x86-64.so.2" \
    --library-path "$root/usr/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu/systemd" \
    --argv0 "$argv0" "$root$bin" "$@"
}
# passwd/group/shadow from sysusers.d (root, nobody, systemd-journal, tty, ...), as
# the systemd package's postinst would; then systemd-sysusers.service is masked.
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
guest_run systemd-sysusers /usr/bin/systemd-sysusers --root="$root" >"$dir/sysusers.log" 2>&1 ||
  { cat "$dir/sysusers.log" >&2; die "systemd-sysusers failed"; }

# journald: volatile (no /var/log/journal writes) and on the serial console, so a
# failing unit's messages reach the log boot-node.sh keeps.
mkdir -p "$root/etc/systemd/journald.conf.d"
cat >"$root/etc/systemd/journald.conf.d/koordlet.conf" <<'EOF'
[Journal]
Storage=volatile
ForwardToConsole=yes
TTYPath=/dev/console
MaxLevelConsole=notice
EOF

# Masked, each for a reason:
masks=(
  getty.target serial-getty@.service getty-static.service  # no agetty (util-linux); udev-less ttyS0 device would time out
  systemd-logind.service systemd-logind-varlink.socket systemd-user-sessions.service  # logind needs dbus; no logins
  systemd-ask-password-wall.path systemd-ask-password-console.path  # nothing asks
  systemd-firstboot.service systemd-machine-id-commit.service  # machine-id is fixed
  ldconfig.service  # ConditionNeedsUpdate would run ldconfig every boot; the loader searches the multiarch dirs
  systemd-journal-catalog-update.service systemd-update-done.service  # ConditionNeedsUpdate, every boot
  systemd-sysusers.service  # done at build time
  systemd-random-seed.service systemd-hibernate-clear.service systemd-binfmt.service
  proc-sys-fs-binfmt_misc.automount  # autofs4 is a module
  sys-fs-fuse-connections.mount sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount
  tmp.mount  # / is already a tmpfs
  systemd-factory-reset-request.service systemd-factory-reset.socket systemd-sysinstall.socket
  systemd-hostnamed.socket systemd-sysext.socket systemd-tmpfiles-clean.timer
)
for unit in "${masks[@]}"; do ln -sfn /dev/null "$root/etc/systemd/system/$unit"; done

# containerd: Debian's unit as it is (Type=notify, Delegate=yes), enabled.
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sfn /usr/lib/systemd/system/containerd.service \
  "$root/etc/systemd/system/multi-user.target.wants/containerd.service"
ln -sfn /usr/lib/systemd/system/multi-user.target "$root/etc/systemd/system/default.target"
# containerd 2.x's config (version 3; `containerd config default` shows every key).
cp "$here/containerd-config.toml" "$root/etc/containerd/config.toml"
mkdir -p "$root/etc/nri/conf.d" "$root/opt/nri/plugins"

# The payload: wanted by multi-user.target but ordered after it, so the target (and
# "Startup finished") is reached first and the payload measures it.
mkdir -p "$root/koordlet/host/bin" "$root/koordlet/host/lib"
cp "$here/payload.sh" "$root/koordlet/payload.sh"
[ -z "${KOORDLET_NODE_PAYLOAD:-}" ] || cp "$KOORDLET_NODE_PAYLOAD" "$root/koordlet/custom-payload.sh"
chmod 0755 "$root/koordlet/"*.sh
cat >"$root/etc/systemd/system/koordlet-payload.service" <<'EOF'
[Unit]
Description=koordlet rig payload
After=multi-user.target containerd.service
Wants=containerd.service

[Service]
Type=simple
ExecStart=/koordlet/payload.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
# systemd 257+ queries a unit's terminal for its TERM (an escape sequence on the serial
# log) unless the unit names one.
Environment=TERM=dumb
EOF
ln -sfn ../koordlet-payload.service "$root/etc/systemd/system/multi-user.target.wants/koordlet-payload.service"

# Host binaries: their libraries except glibc's own (the guest's newer glibc runs them;
# mixing two glibcs' pieces would not work), found through the host's dpkg database.
glibc_files=$(dpkg -L libc6 2>/dev/null | grep '\.so' || true)
for binary in ${KOORDLET_NODE_HOST_BINARIES-/usr/bin/curl}; do
  [ -x "$binary" ] || die "KOORDLET_NODE_HOST_BINARIES: $binary: not an executable"
  cp -L "$binary" "$root/koordlet/host/bin/"
  strip --strip-debug "$root/koordlet/host/bin/$(basename "$binary")" 2>/dev/null || true
  # (ldd exits 1 on a static binary, e.g. a Go one: no library to copy)
  { ldd "$binary" 2>/dev/null || true; } | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p' | while read -r lib; do
    real=$(realpath "$lib")
    if grep -qxF -e "$lib" -e "$real" -e "/usr$lib" -e "${lib#/usr}" <<<"$glibc_files"; then
      continue
    fi
    cp -L "$lib" "$root/koordlet/host/lib/"
  done
done

# The OCI busybox image of the real-runtime tests, for `ctr run` in the guest.
if [ ! -s "$cache/busybox-oci.tar" ]; then
  "$repo/tests/runtime/make-image.sh" "$cache/busybox-oci.tar" >&2 || die "make-image.sh failed"
fi
cp "$cache/busybox-oci.tar" "$root/koordlet/busybox-oci.tar"

# Kernel modules: overlay and those KOORDLET_NODE_MODULES names (each one by name: list
# what it depends on too), decompressed here because the guest's kmod has no liblzma and
# 5.10 cannot decompress modules itself.
mods=$root/usr/lib/modules/$release
mkdir -p "$mods"
# shellcheck disable=SC2086  # a list of names, split on purpose
for name in overlay ${KOORDLET_NODE_MODULES:-}; do
  f=$(find "$kdir/lib/modules/$release/kernel" -name "$name.ko*" | head -n 1)
  [ -n "$f" ] || { say "$version: no $name module (built in?)"; continue; }
  rel=${f#"$kdir/lib/modules/$release/"}
  mkdir -p "$mods/$(dirname "$rel")"
  case "$f" in
    *.xz) xz -dc "$f" >"$mods/${rel%.xz}" ;;
    *) cp "$f" "$mods/$rel" ;;
  esac
done
cp "$kdir/lib/modules/$release/modules.order" "$kdir/lib/modules/$release/modules.builtin"* "$mods/" 2>/dev/null || true
guest_run depmod /usr/bin/kmod -b "$root" "$release" || die "depmod failed"

mkdir -p "$(dirname "$out")"
# Deterministic: sorted names, owner 0:0, every mtime set to one epoch, and cpio's
# --reproducible (inode numbers from a counter, not the build filesystem's).
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet) >"$out.part"
mv "$out.part" "$out"
say "$version: $out ($(du -m "$out" | cut -f1) MiB, kernel $release)"
echo "$out"
