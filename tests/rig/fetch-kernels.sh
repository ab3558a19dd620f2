#!/usr/bin/env bash
# Fetches the Debian kernels the cgroup v2 rig boots, without installing them:
# apt-get download the image package, dpkg-deb -x it into a scratch dir, keep only
# the vmlinuz. Package names are resolved at run time from Debian's meta packages,
# so a kernel security update needs no edit here:
#   6.1   linux-image-cloud-amd64 (bookworm)          -> linux-image-6.1.0-NN-cloud-amd64
#   6.12  linux-image-6.12-amd64 (bookworm-security)  -> linux-image-6.12.NNN+debNN-amd64
#   5.10  linux-image-cloud-amd64 (bullseye, bullseye-security) -> linux-image-5.10.0-NN-cloud-amd64:
#         the oldest kernel Debian still serves (no cpu.max.burst: that came in 5.14)
#   unstable  linux-image-cloud-amd64 (unstable)      -> the newest kernel Debian ships
# The cloud flavour boots faster under TCG (fewer drivers to probe); 6.12 has no cloud
# flavour in bookworm. 6.1 and 6.12 come from this host's own apt sources (bookworm);
# 5.10 and unstable from a private apt configuration under <rig-dir>/apt/<suite> (its own
# sources list and lists; the host's apt state is only read, nothing is installed).
#
# Usage: fetch-kernels.sh <rig-dir> [version...]     (versions: 5.10 6.1 6.12 unstable;
#                                                     default 6.1 6.12)
# Prints "<version> <path to vmlinuz>" per version on stdout; progress on stderr.
# A kernel already under <rig-dir>/kernels/<version>/ is reused without asking apt.
# Exit: 0 all fetched, 1 a failure, 77 apt-get/dpkg-deb missing (not a Debian host).
set -euo pipefail

die() { echo "fetch-kernels: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: fetch-kernels.sh <rig-dir> [5.10|6.1|6.12|unstable...]"
rig_dir=$1
shift
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(6.1 6.12)

for tool in apt-cache apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "fetch-kernels: no $tool: not a Debian host" >&2; exit 77; }
done

meta_package() {
  case "$1" in
    6.1 | 5.10 | unstable) echo linux-image-cloud-amd64 ;;
    6.12) echo linux-image-6.12-amd64 ;;
    *) die "unknown kernel version '$1' (known: 5.10 6.1 6.12 unstable)" ;;
  esac
}

# The apt options for a version: none (the host's apt, bookworm) or a private config.
apt_opts=()
private_apt() {
  local suites
  case "$1" in
    5.10) suites=("bullseye main" "bullseye-security main") ;;
    unstable) suites=("unstable main") ;;
    *) apt_opts=(); return 0 ;;
  esac
  local apt=$rig_dir/apt/$1
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  local mirror=${KOORDLET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  [ -r "$keyring" ] || die "no $keyring (Debian's debian-archive-keyring)"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  : >"$apt/sources.list"
  local entry
  for entry in "${suites[@]}"; do
    case "$entry" in
      *-security*) echo "deb [signed-by=$keyring] ${mirror}-security $entry" >>"$apt/sources.list" ;;
      *) echo "deb [signed-by=$keyring] $mirror $entry" >>"$apt/sources.list" ;;
    esac
  done
  apt_opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
            -o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  if ! ls "$apt/lists/"*Packages* >/dev/null 2>&1; then
    echo "fetch-kernels: $1: apt-get update (private lists in $apt)" >&2
    # A mirror that serves a frozen copy of a suite (unstable's Release past its
    # Valid-Until) fails the update; the signatures still hold, so say so and take it.
    if ! apt-get "${apt_opts[@]}" update -qq >&2; then
      echo "fetch-kernels: $1: apt-get update failed; again without the Release file's" \
        "Valid-Until (a frozen mirror; signatures are still checked)" >&2
      apt-get "${apt_opts[@]}" -o Acquire::Check-Valid-Until=false update -qq >&2 ||
        die "apt-get update for $1 failed"
    fi
  fi
}

# The image package a meta package depends on, e.g. linux-image-6.1.0-37-cloud-amd64:
# the newest candidate's first kernel dependency (bullseye and its security suite
# both list one; apt's candidate is the newer).
resolve() {
  apt-cache "${apt_opts[@]}" depends "$1" 2>/dev/null |
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
  private_apt "$version"
  pkg=$(resolve "$meta")
  if [ -z "$pkg" ] && [ $apt_updated -eq 0 ] && [ ${#apt_opts[@]} -eq 0 ]; then
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
  (cd "$scratch" && apt-get "${apt_opts[@]}" download -q "$pkg" >&2) || die "apt-get download $pkg failed"
  deb=$(ls "$scratch"/*.deb)
  dpkg-deb -x "$deb" "$scratch/root"
  image=$(find "$scratch/root/boot" -name "vmlinuz-*" 2>/dev/null | head -n 1 || true)
  if [ -z "$image" ]; then
    # From Linux 7.x Debian's image package is a small one depending on
    # linux-binary-<version>, which holds /usr/lib/modules/<version>/vmlinuz.
    binary=$(apt-cache "${apt_opts[@]}" depends "$pkg" 2>/dev/null |
      sed -n 's/^ *Depends: \(linux-binary-[0-9][^ ]*\)$/\1/p' | head -n 1)
    [ -n "$binary" ] || die "$pkg holds no /boot/vmlinuz-* and depends on no linux-binary-*"
    echo "fetch-kernels: $version: $pkg -> $binary (the image itself)" >&2
    (cd "$scratch" && apt-get "${apt_opts[@]}" download -q "$binary" >&2) ||
      die "apt-get download $binary failed"
    dpkg-deb -x "$(ls "$scratch"/"$binary"_*.deb)" "$scratch/root"
    image=$(find "$scratch/root/boot" "$scratch/root/usr/lib/modules" -name "vmlinuz*" 2>/dev/null |
      head -n 1 || true)
    [ -n "$image" ] || die "$binary holds no /boot/vmlinuz-* nor /usr/lib/modules/*/vmlinuz"
  fi
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
