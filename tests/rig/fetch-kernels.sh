#!/usr/bin/env bash
# Fetches the Debian kernels the cgroup v2 rig boots, without installing them:
# apt-get download the image package, dpkg-deb -x it into a scratch dir, keep only
# the vmlinuz. Package names are resolved at run time from Debian's meta packages,
# so a kernel security update needs no edit here:
#   6.1   linux-image-cloud-amd64 (bookworm)          -> linux-image-6.1.0-NN-cloud-amd64
#   6.12  linux-image-6.12-amd64 (bookworm-security)  -> linux-image-6.12.NNN+debNN-amd64
# The cloud flavour of 6.1 boots faster under TCG (fewer drivers to probe); 6.12
# has no cloud flavour in bookworm.
#
# Usage: fetch-kernels.sh <rig-dir> [version...]     (versions: 6.1 6.12; default both)
# Prints "<version> <path to vmlinuz>" per version on stdout; progress on stderr.
# A kernel already under <rig-dir>/kernels/<version>/ is reused without asking apt.
# Exit: 0 all fetched, 1 a failure, 77 apt-get/dpkg-deb missing (not a Debian host).
set -euo pipefail

die() { echo "fetch-kernels: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: fetch-kernels.sh <rig-dir> [6.1|6.12...]"
rig_dir=$1
shift
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(6.1 6.12)

for tool in apt-cache apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "fetch-kernels: no $tool: not a Debian host" >&2; exit 77; }
done

meta_package() {
  case "$1" in
    6.1) echo linux-image-cloud-amd64 ;;
    6.12) echo linux-image-6.12-amd64 ;;
    *) die "unknown kernel version '$1' (known: 6.1 6.12)" ;;
  esac
}

# The image package a meta package depends on, e.g. linux-image-6.1.0-37-cloud-amd64.
resolve() {
  apt-cache depends "$1" 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n 1
}

apt_updated=0
for version in "${versions[@]}"; do
  dest="$rig_dir/kernels/$version"
  if [ -s "$dest/vmlinuz" ]; then
    echo "fetch-kernels: $version: reusing $dest/vmlinuz ($(cat "$dest/package" 2>/dev/null || echo '?'))" >&2
    echo "$version $dest/vmlinuz"
    continue
  fi
  meta=$(meta_package "$version")
  pkg=$(resolve "$meta")
  if [ -z "$pkg" ] && [ $apt_updated -eq 0 ]; then
    echo "fetch-kernels: $meta unknown to apt: apt-get update" >&2
    apt-get update -qq >&2 || die "apt-get update failed"
    apt_updated=1
    pkg=$(resolve "$meta")
  fi
  [ -n "$pkg" ] || die "cannot resolve $meta to a kernel image package"
  echo "fetch-kernels: $version: $meta -> $pkg" >&2

  scratch=$(mktemp -d "${TMPDIR:-/tmp}/koordlet-rig-kernel.XXXXXX")
  # apt drops privileges to _apt for the download; let it write here.
  chmod 0777 "$scratch"
  trap 'rm -rf "$scratch"' EXIT
  (cd "$scratch" && apt-get download -q "$pkg" >&2) || die "apt-get download $pkg failed"
  deb=$(ls "$scratch"/*.deb)
  dpkg-deb -x "$deb" "$scratch/root"
  image=$(find "$scratch/root/boot" -name "vmlinuz-*" 2>/dev/null | head -n 1)
  [ -n "$image" ] || die "$pkg holds no /boot/vmlinuz-*"
  mkdir -p "$dest"
  # Written under a temporary name first, so an interrupted fetch is never reused.
  cp "$image" "$dest/vmlinuz.part"
  echo "$pkg $(dpkg-deb -f "$deb" Version)" >"$dest/package"
  mv "$dest/vmlinuz.part" "$dest/vmlinuz"
  rm -rf "$scratch"
  trap - EXIT
  echo "fetch-kernels: $version: $dest/vmlinuz ($(du -k "$dest/vmlinuz" | cut -f1) KiB)" >&2
  echo "$version $dest/vmlinuz"
done
