#!/usr/bin/env bash
# Fetches a minimal Debian userland for the cgroup v2 node guest (systemd as PID 1,
# containerd 2.x with NRI, runc) without installing anything on the host:
#
#   - a private apt configuration under <dir>/apt/<suite> (apt-private.sh: our own
#     apt.conf, sources list, lists, cache, and an EMPTY dpkg status file);
#   - apt's own resolver: `apt-get install --download-only` against that empty status
#     pulls the packages and every Depends/Pre-Depends, recursively, as on a fresh
#     machine (no Recommends). Nothing Essential is added behind our back (apt only adds
#     what the named packages need), so the list below names the shell tools used;
#   - dpkg-deb -x of every .deb of that resolution into <dir>/rootfs/<suite>/root (no
#     maintainer scripts run: make-node-image.sh does by hand the few things needed).
#
# Usage: fetch-rootfs.sh <dir> [suite] [extra package...]    (suite default: unstable)
# Prints the root on stdout; progress on stderr. A root already fetched for the same
# package list is reused without asking apt (delete <dir>/rootfs/<suite> to refresh).
# Exit: 0 fetched, 1 a failure, 77 apt-get/dpkg-deb missing or the archive out of reach.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=apt-private.sh
. "$here/apt-private.sh"
say() { echo "fetch-rootfs: $*" >&2; }
die() { say "$*"; exit 1; }
[ $# -ge 1 ] || die "usage: fetch-rootfs.sh <dir> [suite] [extra package...]"
dir=$(realpath -m "$1")
suite=${2:-unstable}
shift $(($# >= 2 ? 2 : 1))
for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || { say "no $tool: not a Debian host"; exit 77; }
done

# What the guest runs. Everything else comes from their Depends:
#   systemd     PID 1 (its Depends bring libsystemd-shared, libc6, libmount1 ...)
#   containerd  2.x in unstable: containerd, containerd-shim-runc-v2 and ctr
#   runc        the OCI runtime containerd's runc shim calls
#   dash        /bin/sh for the payload and for everything that runs sh -c
#   coreutils, grep, sed, mawk   for the payload script
#   kmod        modprobe, for what a kernel has as a module (containerd.service's
#               `modprobe overlay`); depmod at image build time
#   mount       /usr/bin/mount: systemd runs it for .mount units (dev-hugepages,
#               dev-mqueue fail without it: "Failed at step EXEC spawning /usr/bin/mount")
# Left out on purpose: util-linux (no getty, no fsck), iproute2 (host-network pods; systemd brings the loopback up itself), dbus (systemctl
# talks to PID 1 over /run/systemd/private as root; nothing here needs the bus).
packages=(systemd containerd runc dash coreutils grep sed mawk kmod mount "$@")

dest=$dir/rootfs/$suite
root=$dest/root
want=$(printf '%s\n' "${packages[@]}" | LC_ALL=C sort -u | paste -sd' ' -)
if [ -s "$dest/packages" ] && [ -d "$root/usr/bin" ] && [ "$(cat "$dest/wanted" 2>/dev/null)" = "$want" ]; then
  say "$suite: reusing $root ($(wc -l <"$dest/packages") packages)"
  echo "$root"
  exit 0
fi

apt=$dir/apt/$suite
rc=0
private_apt "$apt" "$suite main" || rc=$?
[ $rc -eq 0 ] || exit $rc

say "$suite: resolving and downloading: $want"
apt-get install --download-only -y -q "${packages[@]}" >"$apt/install.log" 2>&1 ||
  { cat "$apt/install.log" >&2; die "apt-get install --download-only failed"; }
resolved_debs "$apt" "${packages[@]}" >"$apt/debs" || die "cannot list the resolved .debs"

rm -rf "$root.part"
mkdir -p "$root.part"
: >"$apt/packages"
while read -r deb; do
  dpkg-deb -x "$deb" "$root.part"
  echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" >>"$apt/packages"
done <"$apt/debs"
rm -rf "$root"
mv "$root.part" "$root"  # an interrupted fetch is never reused
mv "$apt/packages" "$dest/packages"
echo "$want" >"$dest/wanted"
# shellcheck disable=SC2046  # one path a line, no spaces in Debian file names
size_kib=$(du -ck $(cat "$apt/debs") | tail -n 1 | cut -f1)
echo "$size_kib" >"$dest/download-kib"
say "$suite: $(wc -l <"$dest/packages") packages, $((size_kib / 1024)) MiB of .debs," \
  "root $(du -sm "$root" | cut -f1) MiB in $root"
echo "$root"
