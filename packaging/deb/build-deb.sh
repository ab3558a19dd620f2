#!/usr/bin/env bash
# Builds the Debian package of koordlet-cpp from a built agent binary:
#   packaging/deb/build-deb.sh BINARY OUTDIR  ->  OUTDIR/koordlet-cpp_<version>_<arch>.deb
# <version> is meson.build's project version, <arch> `dpkg --print-architecture`.
# Depends is what dpkg-shlibdeps computes from the binary's libraries. Maintainer comes
# from DEBFULLNAME/DEBEMAIL when set. Prints the path of the package it wrote.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BINARY OUTDIR" >&2; exit 2; }
bin=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

die() { echo "build-deb: $*" >&2; exit 1; }
for tool in dpkg-deb dpkg-shlibdeps strip; do
  command -v "$tool" >/dev/null || die "$tool not found (apt-get install dpkg-dev binutils)"
done
[ -x "$bin" ] || die "$bin is not an executable"
# A sanitizer build is never shipped: its Depends would name libasan/libubsan.
if grep -Eq 'lib(a|ub|t)san' <<<"$(ldd "$bin")"; then  # not ldd | grep -q: under pipefail ldd's SIGPIPE would pass
  die "$bin is a sanitizer build; package the plain release build"
fi

version=$(sed -n "s/^[[:space:]]*version[[:space:]]*:[[:space:]]*'\([^']*\)'.*/\1/p" \
  "$repo/meson.build" | head -n1)
[ -n "$version" ] || die "no project version in $repo/meson.build"
arch=$(dpkg --print-architecture)
maintainer="${DEBFULLNAME:-koordlet-cpp maintainers} <${DEBEMAIL:-koordlet-cpp@localhost}>"

stage=$(mktemp -d "${TMPDIR:-/tmp}/koordlet-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
# dpkg-shlibdeps expects the tree at debian/<package> beside debian/control.
root=$stage/debian/koordlet-cpp
umask 022

install -D -m 0755 "$bin" "$root/usr/bin/koordlet"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/koordlet"
install -D -m 0644 "$repo/packaging/systemd/koordlet.service" \
  "$root/lib/systemd/system/koordlet.service"
install -D -m 0644 "$here/koordlet.default" "$root/etc/default/koordlet"
install -D -m 0644 "$here/nodeslo.yaml" "$root/etc/koordlet/nodeslo.yaml"
# Where koord-runtime-proxy finds hook servers (its path is hard-coded): the agent writes
# koordlet.json there, so the unit makes it writable (ProtectSystem=full keeps /etc
# read-only otherwise) and the package owns it.
install -d -m 0755 "$root/etc/runtime/hookserver.d"
install -d -m 0700 "$root/var/lib/koordlet/prediction-checkpoints"
install -D -m 0644 "$here/copyright" "$root/usr/share/doc/koordlet-cpp/copyright"
install -D -m 0644 "$repo/packaging/README.md" "$root/usr/share/doc/koordlet-cpp/README.md"

# dpkg-shlibdeps reads debian/control from its working directory (a minimal one) and
# finds the package root by its DEBIAN directory.
mkdir -p "$root/DEBIAN"
printf 'Source: koordlet-cpp\n\nPackage: koordlet-cpp\nArchitecture: any\n' \
  >"$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O debian/koordlet-cpp/usr/bin/koordlet |
  sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || die "dpkg-shlibdeps found no dependencies for $bin"

installed_size=$(du -sk --apparent-size --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: koordlet-cpp
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Section: admin
Priority: optional
Description: Koordinator node QoS agent (koordlet drop-in, C++)
 koordlet-cpp runs on a Kubernetes node and does what Koordinator's koordlet
 does: collects node, pod and container usage, serves Prometheus metrics,
 applies NodeSLO QoS (CPU suppress and burst of best-effort pods, memory QoS,
 resctrl) to cgroups and serves runtime hooks to containerd as an NRI plugin.
 .
 This package runs it on the host as a systemd service (koordlet.service);
 flags are in /etc/default/koordlet, the NodeSLO spec in
 /etc/koordlet/nodeslo.yaml.
CONTROL
printf '/etc/default/koordlet\n/etc/koordlet/nodeslo.yaml\n' >"$root/DEBIAN/conffiles"
for script in postinst prerm postrm; do
  install -m 0755 "$here/$script" "$root/DEBIAN/$script"
done

mkdir -p "$out"
deb="$out/koordlet-cpp_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
