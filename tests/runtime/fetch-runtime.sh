#!/usr/bin/env bash
# Fetches a container runtime from one of Debian's suites without installing it: a
# private apt configuration (../rig/node/apt-private.sh: its own sources list, lists
# and cache under <tools-dir>/<suite>/apt; the host's apt state is not used),
# `apt-get download` of the packages, and `dpkg-deb -x` into <tools-dir>/<suite>/root.
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

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../rig/node/apt-private.sh
. "$here/../rig/node/apt-private.sh"
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

rc=0
private_apt "$dest/apt" "$suite main" || rc=$?
[ $rc -eq 0 ] || exit $rc

scratch=$(mktemp -d "${TMPDIR:-/tmp}/koordlet-runtime.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && apt-get download -q "${packages[@]}" >&2) ||
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
