#!/usr/bin/env bash
# Pods benchmark on cgroup v2 (not a test): bench/pods.sh's measurement, with
# pods_bench's v2 mode (KOORDLET_BENCH_CGROUP=v2: systemd driver, a private
# kubepods.slice tree under the guest's cgroup2 root), inside the QEMU rig
# (tests/rig/run.sh: Debian kernels under TCG, software emulation). One boot per
# kernel and pod count; the image carries pods_bench, the agent and
# bench/nodeslo-all-on.yaml (every QoS strategy on, writing for real into the
# private tree). Both sides of the ratio (agent cycle, bare read) run in the same VM,
# so the ratio is the figure to compare with v1; absolute times are the emulator's.
#   bench/pods-v2.sh [build]
# Environment: KERNELS (default "6.12 6.1"), PODS (default "110 500"),
# SECONDS_PER_RUN (default 60), KOORDLET_BENCH_CGROUP (v2 or v2-cgroupfs; default v2;
# v1: the v1 mode in the same emulator, the VM booted with cgroup v1 mounted, to tell
# what is v2's from what is the emulator's),
# KOORDLET_RIG_MEMORY (default 1G here), KOORDLET_RIG_TIMEOUT (default 900 here),
# NODESLO (default bench/nodeslo-all-on.yaml; "none": the agent's defaults with
# --dry-run, as bench/pods.sh without NODESLO), READY_SECONDS (300), SETTLE_SECONDS (10),
# PERF=1: profile the agent in the guest with this host's perf (bench/rig-perf/; its
# PERF_DELAY, PERF_SECONDS, PERF_F pass through) and print the report; the ratio of such
# a run is disturbed by perf's own work and is not a figure.
# Uses <build>/rig like the rig test: do not run it while `meson test cgroup-v2-rig`
# runs on the same build dir (both write rig/initramfs.cpio and rig/logs/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(realpath "${1:-build}")
SECONDS_PER_RUN=${SECONDS_PER_RUN:-60}
KERNELS=${KERNELS:-6.12 6.1}
PODS=${PODS:-110 500}
mode=${KOORDLET_BENCH_CGROUP:-v2}
bench=$BUILD/bench/pods_bench
agent=$BUILD/agent/koordlet
[ -x "$bench" ] && [ -x "$agent" ] || {
  echo "bench/pods-v2.sh: build first: ninja -C $BUILD bench/pods_bench agent/koordlet" >&2
  exit 1
}
rig_dir=$(realpath -m "${KOORDLET_RIG_DIR:-$BUILD/rig}")
export KOORDLET_RIG_DIR=$rig_dir
export KOORDLET_RIG_MEMORY=${KOORDLET_RIG_MEMORY:-1G}
export KOORDLET_RIG_TIMEOUT=${KOORDLET_RIG_TIMEOUT:-900}
nodeslo=${NODESLO:-$here/nodeslo-all-on.yaml}
# The API server stand-in (with a NodeSLO) reads its objects from the fixtures.
fixtures=$here/../tests/fixtures/kube-api
if [ "$nodeslo" = none ]; then
  export KOORDLET_RIG_EXTRA="$agent"
  slo_arg=""
else
  [ -f "$nodeslo" ] || { echo "bench/pods-v2.sh: NODESLO=$nodeslo: no such file" >&2; exit 1; }
  export KOORDLET_RIG_EXTRA="$agent $nodeslo $fixtures"
  slo_arg=/koordlet/$(basename "$nodeslo")
fi
agent_arg=/koordlet/koordlet
perf_env=""
if [ "${PERF:-}" = 1 ]; then
  perf=$(command -v perf) || { echo "bench/pods-v2.sh: PERF=1: no perf (Debian: linux-perf)" >&2; exit 1; }
  KOORDLET_RIG_EXTRA+=" $perf $here/rig-perf"
  agent_arg=/koordlet/rig-perf/koordlet
  for v in PERF_DELAY PERF_SECONDS PERF_F; do
    if [ -n "${!v:-}" ]; then perf_env+=" $v=${!v}"; fi
  done
fi
# Under TCG the agent's start and first full collection of 500 pods take far longer
# than on hardware: generous waits, the measurement starts only after them.
export KOORDLET_RIG_ENV="KOORDLET_BENCH_CGROUP=$mode KOORDLET_BENCH_EMULATED=1 KOORDLET_BENCH_HTTP_SECONDS=60 KOORDLET_FIXTURES=/koordlet KOORDLET_BENCH_READY_SECONDS=${READY_SECONDS:-300} KOORDLET_BENCH_SETTLE_SECONDS=${SETTLE_SECONDS:-10}$perf_env"
if [ "$mode" = v1 ]; then export KOORDLET_RIG_CGROUP=v1; else export KOORDLET_RIG_CGROUP=v2; fi

echo "NodeSLO: ${slo_arg:-none (agent defaults, --dry-run)}; cgroup $mode in QEMU TCG (tests/rig), -m $KOORDLET_RIG_MEMORY -smp 2, interval 1s, ${SECONDS_PER_RUN}s measured after warm-up; host $(nproc) cores"
for version in $KERNELS; do
  rows=()
  kernel=?
  for n in $PODS; do
    export KOORDLET_RIG_TEST_ARGS="$agent_arg $n $SECONDS_PER_RUN $slo_arg"
    log=$rig_dir/logs/pods-v2-$version-$n.log
    rc=0
    "$here/../tests/rig/run.sh" "$bench" "$version" >"$log.rig" 2>&1 || rc=$?
    cp "$rig_dir/logs/$version.log" "$log" 2>/dev/null || true
    kernel=$(tr -d '\r' <"$log" | sed -n 's/^KOORDLET-RIG-KERNEL \([^ ]*\).*/\1/p' | tail -n 1)
    row=$(tr -d '\r' <"$log" | grep '^| ' | tail -n 1 || true)
    tr -d '\r' <"$log" | grep '^pods_bench: ' >&2 || true
    if [ "${PERF:-}" = 1 ]; then
      tr -d '\r' <"$log" | sed -n '/^PERF-BEGIN/,/^PERF-END/p' >&2 || true
    fi
    if [ -z "$row" ]; then
      echo "bench/pods-v2.sh: $version, $n pods: no result (rig exit $rc); see $log and $log.rig" >&2
      row="| $n | $((n * 3)) | FAILED | | | | | | | | | | | | | | |"
    fi
    rows+=("$row")
  done
  echo
  echo "kernel ${kernel:-$version}"
  echo
  echo "| pods | containers | synced | agent CPU s | agent CPU ms/cycle | bare read ms/pass | RSS MiB | peak RSS MiB | cycle / bare | series | cgroup writes | scraped: agent CPU ms/s | node_exporter CPU ms/s | CPU ratio | agent RSS MiB | node_exporter RSS MiB | RSS ratio |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
done
