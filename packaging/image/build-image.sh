#!/usr/bin/env bash
# Builds the agent's container image without a container engine or a registry:
#   packaging/image/build-image.sh BINARY OUT.tar   (make image)
# OUT.tar is an OCI image layout archive of koordlet-cpp/koordlet:<version> (<version>
# meson.build's project version): `podman load -i`, `ctr images import`, `skopeo copy
# oci-archive:OUT.tar ...`.
#
# The image is what packaging/Containerfile's runtime stage describes, built from
# Debian packages alone, no base image and no network: the runtime packages listed there
# (checked against the owners of the libraries `ldd BINARY` resolves) as dpkg installed
# them on this host, the versions the binary was linked against; their library files
# only (no docs, man pages, gconv modules or executables), each checked against dpkg's
# md5sums. Each package's copyright file is kept, and its dpkg status record in
# /var/lib/dpkg/status.d/ so image scanners see the versions. Then the stripped binary,
# the Containerfile's COPY files, /etc/passwd, group, nsswitch.conf and os-release;
# oci_image.py writes the archive (ENTRYPOINT, CMD, EXPOSE, labels from the
# Containerfile).
# Deterministic: every timestamp is the last commit's time (SOURCE_DATE_EPOCH when set).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BINARY OUT.tar" >&2; exit 2; }
bin=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cf=$repo/packaging/Containerfile

die() { echo "build-image: $*" >&2; exit 1; }
for tool in ldd dpkg-query md5sum strip python3; do
  command -v "$tool" >/dev/null || die "$tool not found (packaging/install-deps.sh --image)"
done
[ -x "$bin" ] || die "$bin is not an executable"
if grep -Eq 'lib(a|ub|t)san' <<<"$(ldd "$bin")"; then
  die "$bin is a sanitizer build; the image takes the plain release build"
fi
# The libraries are this host's; they are the image's only on the release the
# Containerfile's runtime stage names.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ "$codename" = bookworm ] || die "this host is '$codename': build the image on Debian 12 (bookworm)"

# shellcheck source=runtime-packages.sh
source "$here/runtime-packages.sh"
packages=$(containerfile_packages "$cf")
[ -n "$packages" ] || die "no runtime packages between the markers of $cf"
derived=$(binary_packages "$bin") || die "cannot map the libraries of $bin to packages"
if [ "$packages" != "$derived" ]; then
  die "the runtime packages of $cf ($(echo $packages)) are not the owners of the binary's" \
    "libraries ($(echo $derived)): update the runtime-packages block"
fi

version=$(sed -n "s/^[[:space:]]*version[[:space:]]*:[[:space:]]*'\([^']*\)'.*/\1/p" \
  "$repo/meson.build" | head -n1)
[ -n "$version" ] || die "no project version in $repo/meson.build"
name=koordlet-cpp/koordlet:$version
arch=$(dpkg --print-architecture)
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}

outdir=$(dirname "$out")
mkdir -p "$outdir"
stage=$(mktemp -d "${TMPDIR:-/tmp}/koordlet-image.XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/rootfs
umask 022

# Merged /usr, as Debian 12: /lib64/ld-linux-x86-64.so.2 (the binary's interpreter)
# and /lib/... resolve into /usr.
mkdir -p "$root"/{etc,run,tmp,root,var/log,var/lib/dpkg/status.d} "$root"/usr/{bin,sbin,lib}
chmod 1777 "$root/tmp"
chmod 0700 "$root/root"
for d in bin sbin lib; do ln -s "usr/$d" "$root/$d"; done
[ "$arch" != amd64 ] || { mkdir -p "$root/usr/lib64" && ln -s usr/lib64 "$root/lib64"; }

for pkg in $packages; do
  # The package's files as dpkg installed them here: the versions the binary was
  # linked against, checked against dpkg's recorded md5sums before they are copied.
  q=$pkg:$arch
  dpkg-query -W "$q" >/dev/null 2>&1 || q=$pkg
  status=$(dpkg-query -W -f='${Status}' "$q" 2>/dev/null) || die "$pkg is not installed"
  [ "$status" = "install ok installed" ] || die "$pkg is '$status', not installed"
  # The libraries (OpenSSL's provider and engine modules too), under /usr whether dpkg
  # recorded /lib or /usr/lib. Not: gconv (iconv charsets the agent never converts),
  # executables, /etc, docs.
  dpkg-query -L "$q" | grep -E '^/(usr/)?lib(64)?/' | grep -v '/gconv/' >"$stage/paths" || true
  : >"$stage/sums"
  while read -r path; do
    if [ -L "$path" ] || [ -f "$path" ]; then
      if [[ "$path" == /usr/* ]]; then dst=$root$path; else dst=$root/usr$path; fi
      mkdir -p "$(dirname "$dst")"
      cp -P --preserve=mode "$path" "$dst"
      [ -L "$path" ] || echo "${path#/}" >>"$stage/sums"
    fi
  done <"$stage/paths"
  [ -s "$stage/sums" ] || die "$pkg has no library files"
  sums=$(dpkg-query --control-path "$q" md5sums) || die "dpkg keeps no md5sums of $pkg"
  # md5sums records each path as the package has it (lib/... or usr/lib/...).
  grep -F -x -f "$stage/sums" <(awk '{ print $2 }' "$sums") | sort >"$stage/recorded"
  sort "$stage/sums" | cmp -s - "$stage/recorded" ||
    die "$pkg: dpkg has no md5sum of some files: $(sort "$stage/sums" | comm -23 - "$stage/recorded")"
  (cd / && grep -F -f "$stage/sums" "$sums" | md5sum --quiet -c -) >&2 ||
    die "$pkg: installed files differ from what dpkg installed (above); reinstall $pkg"
  # (libgcc-s1 and libstdc++6 share gcc-12-base's, through a symlinked directory.)
  if [ -f "/usr/share/doc/$pkg/copyright" ]; then
    install -D -m 0644 "/usr/share/doc/$pkg/copyright" "$root/usr/share/doc/$pkg/copyright"
  fi
  # What the image holds of the package, for scanners reading dpkg status.d records
  # (as distroless images have): its status record.
  dpkg-query -s "$q" | awk '/^[^ ]/ { skip = /^Conffiles:/ } !skip' \
    >"$root/var/lib/dpkg/status.d/$pkg"
done

# Nothing in the image runs as anyone but root; libc's user and host lookups read these.
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
install -m 0644 /usr/lib/os-release "$root/usr/lib/os-release"
ln -s ../usr/lib/os-release "$root/etc/os-release"

install -m 0755 "$bin" "$stage/koordlet"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/koordlet"

python3 "$here/oci_image.py" --containerfile "$cf" --rootfs "$root" --binary "$stage/koordlet" \
  --repo "$repo" --name "$name" --arch "$arch" --epoch "$epoch" --out "$out" \
  --history "make image (packaging/image/build-image.sh): $(echo $packages), koordlet $version"
