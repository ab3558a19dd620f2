#!/usr/bin/env bash
# Fetches one Debian kernel for the node guest WITH its config and modules (the rig's
# fetch-kernels.sh keeps only vmlinuz: its busybox init needs no module, but the node
# guest may need some, e.g. overlay on a kernel that has it as =m). Same resolution as
# fetch-kernels.sh, through a private apt configuration per version (apt-private.sh):
#   6.12      linux-image-6.12-amd64 (bookworm + bookworm-security) -> linux-image-6.12.N+deb12-amd64
#   unstable  linux-image-cloud-amd64 (unstable) -> linux-image-<7.x>-cloud-amd64, an empty
#             package depending on linux-binary-, linux-modules- and linux-base-<release>
#   5.10      linux-image-cloud-amd64 (bullseye + bullseye-security) -> linux-image-5.10.0-N-cloud-amd64
#   6.1       linux-image-cloud-amd64 (bookworm)
# Keeps <dir>/kernels/<version>/{vmlinuz,config,package,release} and lib/modules/<release>/
# (the whole modules tree: make-node-image.sh picks the modules it needs with modprobe
# --show-depends against it).
#
# Usage: fetch-node-kernel.sh <dir> <version>
# Prints the kernel dir on stdout. Exit: 0, 1 a failure, 77 apt missing or archive out of reach.
# shellcheck disable=SC2012  # ls of .deb globs: Debian file names have no odd characters
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=apt-private.sh
. "$here/apt-private.sh"
say() { echo "fetch-node-kernel: $*" >&2; }
die() { say "$*"; exit 1; }
[ $# -eq 2 ] || die "usage: fetch-node-kernel.sh <dir> <6.12|unstable|5.10|6.1>"
dir=$(realpath -m "$1")
version=$2
case "$version" in
  6.12) meta=linux-image-6.12-amd64; suites=("bookworm main" "bookworm-security main") ;;
  6.1) meta=linux-image-cloud-amd64; suites=("bookworm main" "bookworm-security main") ;;
  5.10) meta=linux-image-cloud-amd64; suites=("bullseye main" "bullseye-security main") ;;
  unstable) meta=linux-image-cloud-amd64; suites=("unstable main") ;;
  *) die "unknown kernel version '$version' (known: 6.12 unstable 5.10 6.1)" ;;
esac
dest=$dir/kernels/$version
if [ -s "$dest/vmlinuz" ] && [ -s "$dest/release" ]; then
  say "$version: reusing $dest ($(cat "$dest/package"))"
  echo "$dest"
  exit 0
fi

apt=$dir/apt/kernel-$version
rc=0
private_apt "$apt" "${suites[@]}" || rc=$?
[ $rc -eq 0 ] || exit $rc

# The newest candidate's first linux-image-<digit> dependency (bullseye and its
# security suite both list one; apt's candidate is the newer).
dep() { apt-cache depends "$1" 2>/dev/null | sed -n "s/^ *Depends: \\($2[0-9][^ ]*\\)\$/\\1/p" | head -n 1; }
pkg=$(dep "$meta" linux-image-)
[ -n "$pkg" ] || die "cannot resolve $meta to a kernel image package"
# From Linux 7.x Debian splits the image package: linux-binary-<release> holds vmlinuz,
# linux-modules-<release> the modules, linux-base-<release> the config and System.map.
mapfile -t parts < <(apt-cache depends "$pkg" 2>/dev/null |
  sed -n 's/^ *Depends: \(linux-\(binary\|modules\|base\)-[0-9][^ ]*\)$/\1/p' | sort -u)
pkgs=("$pkg" "${parts[@]}")
say "$version: $meta -> ${pkgs[*]}"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/koordlet-node-kernel.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
(cd "$apt/cache/archives" && apt-get download -q "${pkgs[@]}" >&2) || die "apt-get download ${pkgs[*]} failed"
kib=0
for p in "${pkgs[@]}"; do
  deb=$(ls "$apt/cache/archives/${p}_"*.deb | tail -n 1)
  kib=$((kib + $(du -k "$deb" | cut -f1)))
  dpkg-deb -x "$deb" "$scratch/root"
done
image=$(find "$scratch/root/boot" "$scratch/root/usr/lib/modules" "$scratch/root/lib/modules" \
  -name 'vmlinuz*' 2>/dev/null | head -n 1 || true)
config=$(find "$scratch/root/boot" "$scratch/root/usr/lib/modules" "$scratch/root/lib/modules" \
  -name 'config*' 2>/dev/null | head -n 1 || true)
moddir=$(find "$scratch/root/lib/modules" "$scratch/root/usr/lib/modules" -mindepth 1 -maxdepth 1 \
  -type d 2>/dev/null | head -n 1 || true)
{ [ -n "$image" ] && [ -n "$config" ] && [ -n "$moddir" ]; } || die "${pkgs[*]}: no vmlinuz, config or modules dir"
release=$(basename "$moddir")

rm -rf "$dest.part"
mkdir -p "$dest.part/lib/modules"
cp "$image" "$dest.part/vmlinuz"
cp "$config" "$dest.part/config"
mv "$moddir" "$dest.part/lib/modules/$release"
rm -f "$dest.part/lib/modules/$release/vmlinuz"
# The package ships no modules.dep (its postinst runs depmod). make-node-image.sh runs
# depmod from the guest's own kmod over the modules it keeps (the host may have none).
echo "$release" >"$dest.part/release"
echo "${pkgs[*]} $(dpkg-deb -f "$(ls "$apt/cache/archives/${pkg}_"*.deb | tail -n 1)" Version)" >"$dest.part/package"
echo "$kib" >"$dest.part/download-kib"
rm -rf "$dest"
mv "$dest.part" "$dest"
say "$version: $release ($(cat "$dest/package"), $((kib / 1024)) MiB downloaded) in $dest"
echo "$dest"
