#!/usr/bin/env bash
# packaging-image: make image's archive, built and run for real.
#   - packaging/image/build-image.sh builds the OCI archive from the binary under test,
#     twice: the same bytes both times;
#   - podman loads it under the name the chart's default image reference gives;
#     its Entrypoint, Cmd and ports are the Containerfile's; the default Cmd's flags
#     and config file, run in the image with --check, pass;
#   - podman (runc) runs it as the chart's DaemonSet runs the pod (helm template ->
#     tests/packaging/podman_args.py: args, env, mounts of the host's cgroup, sys and
#     sys/fs trees, the NodeSLO ConfigMap, host PID and network, read-only root, no
#     capabilities, limits), on a free port, plus --dry-run through the chart's
#     extraArgs (this host is no node: the agent must not write its cgroups);
#   - /healthz and /readyz answer 200 and /metrics has the node's metrics;
#   - SIGTERM (podman stop) ends it with exit 0;
#   - then the same image as Koordinator's chart v1.8.0 runs koordlet
#     (tests/packaging/koordinator_pod.sh: its rendered DaemonSet, a fixture, unchanged
#     but for the image); the container and image are removed.
# Needs root (podman's rootful runtime, host PID) and podman, runc, helm, kubectl,
# python3 (packaging/install-deps.sh). Podman keeps its state under the test's own
# directory, so nothing is left in, or taken from, the host's image store.
#
# Usage: image_test.sh path/to/koordlet
# shellcheck source-path=SCRIPTDIR source=../e2e/lib.sh
source "$(dirname "$0")/../e2e/lib.sh"
BIN=$(readlink -f "${1:?usage: image_test.sh path/to/koordlet}")
REPO=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS=${KOORDLET_TOOLS_DIR:-/opt/koordlet-cpp/tools/bin}
START=$SECONDS

[ "$(id -u)" = 0 ] || skip "needs root: podman runs the image as the chart does (host PID, host mounts)"
for tool in podman runc python3 curl; do
  command -v "$tool" >/dev/null || skip "$tool not found (packaging/install-deps.sh installs it)"
done
[ -x "$TOOLS/helm" ] && [ -x "$TOOLS/kubectl" ] ||
  skip "helm or kubectl missing in $TOOLS (packaging/install-deps.sh installs them)"
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ "$codename" = bookworm ] || skip "host is '$codename': make image builds on Debian 12 only"

# helm and kubectl read no user configuration and no cluster.
export HOME=$WORK/home KUBECONFIG=/dev/null HELM_CACHE_HOME=$WORK/helm HELM_CONFIG_HOME=$WORK/helm \
  HELM_DATA_HOME=$WORK/helm
unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
mkdir -p "$HOME"

version=$(sed -n "s/^[[:space:]]*version[[:space:]]*:[[:space:]]*'\([^']*\)'.*/\1/p" \
  "$REPO/meson.build" | head -n1)
NAME=koordlet-cpp/koordlet:$version

# --- the archive -----------------------------------------------------------------------
"$REPO/packaging/image/build-image.sh" "$BIN" "$WORK/a/koordlet-image.tar" >"$WORK/build.out" ||
  fail "build-image.sh failed"
cat "$WORK/build.out"
"$REPO/packaging/image/build-image.sh" "$BIN" "$WORK/b/koordlet-image.tar" >/dev/null ||
  fail "build-image.sh failed the second time"
cmp -s "$WORK/a/koordlet-image.tar" "$WORK/b/koordlet-image.tar" ||
  fail "two builds of the image from the same binary differ: not deterministic"
ARCHIVE=$WORK/a/koordlet-image.tar
echo "archive: $(stat -c %s "$ARCHIVE") bytes"

# --- podman, with its state in $WORK ---------------------------------------------------
# Lowered rlimits: machines of this kind lack CAP_SYS_RESOURCE, and runc would fail to
# raise the container's limits to podman's defaults. runc, not crun: crun refuses a
# hybrid cgroup v1/v2 host.
PODMAN=(podman --root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs
  --runtime runc --cgroup-manager cgroupfs --events-backend none)
CTR=koordlet-image-test-$$
# The containers' cgroups (conmon's too) under a parent of the test's own, removed after.
CGROUP_PARENT=/$CTR
LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=4096:4096 --cgroup-parent "$CGROUP_PARENT")
cleanup_podman() {
  "${PODMAN[@]}" rm -f -t 0 "$CTR" "$CTR-koordinator" "$CTR-writers" >/dev/null 2>&1 || true
  # koordinator_pod.sh's shared bind mount of its host stand-in dirs.
  umount -R "$WORK/k/host" 2>/dev/null || true
  "${PODMAN[@]}" rmi -f "$NAME" >/dev/null 2>&1 || true
  # The vfs layers and runc's state are plain directories under $WORK.
  umount -R "$WORK/storage" "$WORK/run" 2>/dev/null || true
  local d
  find /sys/fs/cgroup/ -maxdepth 2 -type d -name "$CTR" -print0 2>/dev/null |
    while IFS= read -r -d '' d; do
      find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
}
trap 'cleanup_podman; cleanup' EXIT

"${PODMAN[@]}" load -i "$ARCHIVE" >"$WORK/load.out" 2>&1 || { cat "$WORK/load.out" >&2; fail "podman load failed"; }
loaded=$(sed -n 's/^Loaded image: //p' "$WORK/load.out")
echo "podman load: $loaded"
# The chart's default image reference, as a runtime resolves it: docker.io/ for a name
# with no registry host (what packaging/README.md tells operators podman names it).
chart_image=$("$TOOLS/helm" template koordlet "$REPO/packaging/charts/koordlet" \
  --show-only templates/daemonset.yaml | sed -n 's/^ *image: "\(.*\)"$/\1/p')
[ "$chart_image" = "$NAME" ] || fail "the chart's default image is '$chart_image', the archive holds $NAME"
[ "$loaded" = "docker.io/$NAME" ] || fail "podman loaded '$loaded', not docker.io/$NAME"
"${PODMAN[@]}" image exists "$NAME" || fail "podman does not find the image as $NAME"

# The image's settings are the Containerfile's runtime stage's.
inspect() { "${PODMAN[@]}" image inspect --format "{{json .Config.$1}}" "$NAME"; }
cf_json() { sed -n "s/^$1 //p" "$REPO/packaging/Containerfile" | tail -n1; }
same_json() { python3 -c 'import json,sys; sys.exit(json.loads(sys.argv[1]) != json.loads(sys.argv[2]))' "$1" "$2"; }
same_json "$(inspect Entrypoint)" "$(cf_json ENTRYPOINT)" || fail "Entrypoint $(inspect Entrypoint) is not the Containerfile's"
same_json "$(inspect Cmd)" "$(cf_json CMD)" || fail "Cmd $(inspect Cmd) is not the Containerfile's"
port=$(sed -n 's/^EXPOSE //p' "$REPO/packaging/Containerfile")
same_json "$(inspect ExposedPorts)" "{\"$port/tcp\": {}}" || fail "ExposedPorts $(inspect ExposedPorts) is not $port/tcp"
# The env: PATH, then what the NVIDIA container toolkit reads (the Containerfile's ENV).
same_json "$(inspect Env)" "[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", \"NVIDIA_VISIBLE_DEVICES=all\", \"NVIDIA_DRIVER_CAPABILITIES=utility\"]" ||
  fail "Env $(inspect Env) is not PATH and the Containerfile's NVIDIA variables"
[ "$("${PODMAN[@]}" image inspect --format '{{index .Labels "org.opencontainers.image.version"}}' "$NAME")" = "$version" ] ||
  fail "the version label is not $version"

# The default Cmd in the image itself: its config file is there and its flags parse.
mapfile -t cmd < <(python3 -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])))' "$(inspect Cmd)")
"${PODMAN[@]}" run --rm --network none "${LIMITS[@]}" "$NAME" "${cmd[@]}" --check >"$WORK/check.out" 2>&1 ||
  { cat "$WORK/check.out" >&2; fail "the image's default command with --check failed"; }

# --- the chart's pod -------------------------------------------------------------------
PORT=$(free_port)
render() {
  "$TOOLS/helm" template koordlet "$REPO/packaging/charts/koordlet" --show-only "templates/$1.yaml" \
    --set koordlet.hostNetwork=true --set "koordlet.port=$PORT" --set 'koordlet.extraArgs={--dry-run}' \
    >"$WORK/$1.yaml" || fail "helm template $1 failed"
  "$TOOLS/kubectl" label --local --kubeconfig=/dev/null -f "$WORK/$1.yaml" koordlet-image-test=1 \
    -o json >"$WORK/$1.json" || fail "kubectl cannot decode the rendered $1"
}
render daemonset
render configmap
read -r cport liveness readiness < <(python3 "$REPO/tests/packaging/podman_args.py" \
  "$WORK/daemonset.json" "$WORK/configmap.json" "$WORK" "$(hostname)") ||
  fail "podman_args.py failed"
[ "$cport" = "$PORT" ] || fail "the chart's port is $cport, not $PORT"
mapfile -d '' -t flags <"$WORK/podman-flags"
mapfile -d '' -t args <"$WORK/args"
grep -qx -- "--addr=:$PORT" < <(printf "%s\n" "${args[@]}") || fail "the chart's args have no --addr=:$PORT"
echo "podman run ${flags[*]} $NAME ${args[*]}"

"${PODMAN[@]}" run -d --name "$CTR" "${LIMITS[@]}" "${flags[@]}" "$NAME" "${args[@]}" >"$WORK/run.out" 2>&1 ||
  { cat "$WORK/run.out" >&2; fail "podman run failed"; }
logs() { "${PODMAN[@]}" logs "$CTR" 2>&1 | tail -n 40 >&2; }
for path in "$liveness" "$readiness"; do
  got=""
  for _ in $(seq 1 300); do
    got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PORT$path" || true)
    [ "$got" = 200 ] && break
    [ "$("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$CTR")" = true ] ||
      { logs; fail "the container exited before $path answered"; }
    sleep 0.1
  done
  [ "$got" = 200 ] || { logs; fail "$path did not answer 200 within 30 s (last: $got)"; }
done
curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics" || { logs; fail "GET /metrics failed"; }
for m in koordlet_start_time koordlet_node_used_cpu_cores koordlet_node_memory_total_bytes; do
  grep -q "^$m{" "$WORK/metrics" || { logs; fail "/metrics lacks $m"; }
done
# The host's memory, read through the host's /proc in the container (hostPID).
mem=$(sed -n 's/^koordlet_node_memory_total_bytes{.*} //p' "$WORK/metrics")
host_mem=$(awk '/^MemTotal:/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo)
python3 -c 'import sys; sys.exit(float(sys.argv[1]) != float(sys.argv[2]))' "$mem" "$host_mem" ||
  fail "koordlet_node_memory_total_bytes is $mem, the host's MemTotal is $host_mem"
echo "/healthz, /readyz 200; /metrics: $(grep -c '^koordlet_' "$WORK/metrics") koordlet samples"

# SIGTERM, as a kubelet stops the pod: the agent exits 0 within the grace period.
grace=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])' "$WORK/daemonset.json")
"${PODMAN[@]}" stop -t "$grace" "$CTR" >/dev/null || fail "podman stop failed"
code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$CTR")
[ "$code" = 0 ] || { logs; fail "the agent exited $code on SIGTERM"; }
"${PODMAN[@]}" logs "$CTR" >"$WORK/agent.log" 2>&1
if grep -Eq 'error while loading shared libraries|cannot open shared object' "$WORK/agent.log"; then
  cat "$WORK/agent.log" >&2
  fail "the loader missed a library in the image"
fi
echo "agent log, last lines:"
tail -n 12 "$WORK/agent.log"
"${PODMAN[@]}" rm "$CTR" >/dev/null || fail "podman rm failed"

# --- this chart's pod, every writer acting on the real kernel ---------------------------
# shellcheck source=chart_pod_writers.sh
source "$(dirname "$0")/chart_pod_writers.sh"

# --- Koordinator's chart's pod ---------------------------------------------------------
# shellcheck source=koordinator_pod.sh
source "$(dirname "$0")/koordinator_pod.sh"

"${PODMAN[@]}" rmi "$NAME" >/dev/null || fail "podman rmi failed"
echo "image_test: $NAME ran as this chart's pod and as Koordinator's, and stopped cleanly ($((SECONDS - START)) s)"
