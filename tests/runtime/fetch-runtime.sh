#!/usr/bin/env bash
# Fetches a container runtime from one of Debian's suites without installing it: a
# private apt configuration (its own sources list, lists and cache under the tools
# dir; the host's apt state is only read), `apt-get download` of the packages, and
# `dpkg-deb -x` into <tools-dir>/<suite>/root. Nothing is installed on the host.
#
#   trixie    containerd 1.7 (Debian 13; its runc needs trixie's glibc 2.38+)
#   bookworm  runc 1.1 (Debian 12, this host's release: its glibc)
#   unstable  containerd 2.x and runc 1.3 (for the cgroup v2 guest, which has its libc)
#
# Usage: fetch-runtime.sh <tools-dir> <suite> [package...]   (default: containerd runc)
# Prints the root on stdout (<tools-dir>/<suite>/root, binaries under usr/bin and
# usr/sbin); progress on stderr. A root already fetched (its `packages` file names
# what is in it) is reused without asking apt.
# Exit: 0 fetched, 1 a failure, 77 apt-get/dpkg-deb missing or the archive out of reach.
set -euo pipefail

say() { echo "fetch-runtime: $*" >&2; }
die() { say "$*"; exit 1; }
[ $# -ge 2 ] || die "usage: fetch-runtime.sh <tools-dir> <suite> [package...]"
tools=$(realpath -m "$1")
suite=$2
shift 2
packages=("$@")
[ ${#packages[@]} -gt 0 ] || packages=(containerd runc)
case "$suite" in
  bookworm | trixie | unstable | sid | forky) ;;
  *) die "unknown suite '$suite' (known: bookworm trixie unstable)" ;;
esac
for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || { say "no $tool: not a Debian host"; exit 77; }
done

dest=$tools/$suite
root=$dest/root
if [ -s "$dest/packages" ] && [ -d "$root/usr/bin" ]; then
  say "$suite: reusing $root ($(tr '\n' ' ' <"$dest/packages"))"
  echo "$root"
  exit 0
fi

apt=$dest/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "no $keyring (Debian's debian-archive-keyring)"
mirror=${KOORDLET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
echo "deb [signed-by=$keyring] $mirror $suite main" >"$apt/sources.list"
opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
      -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
say "$suite: apt-get update (private lists in $apt)"
if ! apt-get "${opts[@]}" update -qq >&2; then
  # A mirror serving a frozen copy of the suite (its Release past Valid-Until): the
  # signatures still hold, so say so and take it.
  say "$suite: apt-get update failed; again without the Release file's Valid-Until" \
    "(a frozen mirror; signatures are still checked)"
  if ! apt-get "${opts[@]}" -o Acquire::Check-Valid-Until=false update -qq >&2; then
    say "$suite: apt-get update failed: the archive ($mirror) is out of reach"
    exit 77
  fi
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/koordlet-runtime.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && apt-get "${opts[@]}" download -q "${packages[@]}" >&2) ||
  die "apt-get download ${packages[*]} from $suite failed"
rm -rf "$root.part"
mkdir -p "$root.part"
: >"$scratch/packages"
for deb in "$scratch"/*.deb; do
  dpkg-deb -x "$deb" "$root.part"
  echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" >>"$scratch/packages"
done
rm -rf "$root"
mv "$root.part" "$root"  # an interrupted fetch is never reused
mv "$scratch/packages" "$dest/packages"
say "$suite: $(tr '\n' ' ' <"$dest/packages")in $root"
echo "$root"
