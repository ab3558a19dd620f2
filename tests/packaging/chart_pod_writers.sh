# The image as this project's chart runs it, on the real kernel, with every writer
# acting once: sourced by image_test.sh after its dry-run pod (it uses that script's
# PODMAN, LIMITS, NAME, CTR, REPO, TOOLS, WORK, render-free helpers).
#
# The chart rendered by helm with its defaults (unprivileged, every capability
# dropped, read-only root, its 9 mounts) plus what this host needs: host network on a
# free port, the kubelet's read-only port (the stand-in below) and a 1 s pod sync.
# Two sources differ from a node's, and nothing else: the host's /sys/fs/cgroup is a
# private subtree of this host's real cgroup v1 hierarchies (cpu, cpuacct, cpuset,
# memory under koordlet-podtest-<pid>, bind-mounted into $W/cg, removed after), and
# the host state dirs the chart creates (DirectoryOrCreate) are under $W/host. The
# kubelet stand-in lists one BE pod with Koordinator's batch resources whose pod and
# container cgroups the test makes in that subtree, as a kubelet and runc would.
# Each writer, as the chart README's Privileges table says:
#   - cgroup knobs through the mounted root: the BE container's cpu.shares, CFS quota
#     and memory limit from its batch resources, read back from the kernel's files;
#   - the audit log (the chart's emptyDir, on the node's disk): those writes in it;
#   - the hook server's socket (accepting) and koordlet.json naming its host path;
#   - the NRI socket: a listener at the host's /var/run/nri/nri.sock is connected to
#     through the read-only mount;
#   - resctrl: this host has none: said once, koordlet_feature_supported 0;
#   - the prediction checkpoints: writable (/config; written with an API server only,
#     the v2-node kubelet scene); nothing said cannot be written;
#   - GroupIdentity's switch and the resctrl record are checked only where the kernel
#     has them (this host has neither): the read-only /proc/sys of an unprivileged pod
#     is said once at start there (base/writable_path's read-only mount test).
W=$WORK/w
mkdir -p "$W/cg" "$W/host/var/run/nri"
UID_BE=5b0e0c1a-7a3d-4c1e-9f00-6d2b1c0e4a11
CID_BE=$(printf 'c0ffee%058d' 45)
PREFIX=koordlet-podtest-$$
POD_DIR=kubepods/besteffort/pod$UID_BE
cleanup_writers() {
  local c
  for c in cpu cpuacct cpuset memory; do umount "$W/cg/$c" 2>/dev/null || true; done
  for c in cpu cpuacct cpuset memory; do
    [ -d "/sys/fs/cgroup/$c/$PREFIX" ] || continue
    find "/sys/fs/cgroup/$c/$PREFIX" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  [ -n "${KUBELET_PID:-}" ] && kill "$KUBELET_PID" 2>/dev/null || true
  [ -n "${NRI_PID:-}" ] && kill "$NRI_PID" 2>/dev/null || true
  KUBELET_PID="" NRI_PID=""  # reaped: never killed twice (the EXIT trap runs this again)
}
trap 'cleanup_writers; cleanup_podman; cleanup' EXIT
for c in cpu cpuacct cpuset memory; do
  [ -f "/sys/fs/cgroup/$c/cgroup.procs" ] || fail "no cgroup v1 $c hierarchy at /sys/fs/cgroup/$c"
  d=/sys/fs/cgroup/$c/$PREFIX
  mkdir -p "$d/$POD_DIR/$CID_BE" || fail "cannot make $d/$POD_DIR/$CID_BE"
  if [ "$c" = cpuset ]; then  # no task may join a cpuset dir without cpus and mems
    p=/sys/fs/cgroup/cpuset
    for rel in "" kubepods kubepods/besteffort "$POD_DIR" "$POD_DIR/$CID_BE"; do
      cat "$p/cpuset.cpus" >"$d/$rel/cpuset.cpus"
      cat "$p/cpuset.mems" >"$d/$rel/cpuset.mems"
      p=$d/$rel
    done
  fi
  mkdir -p "$W/cg/$c"
  mount --bind "$d" "$W/cg/$c" || fail "cannot bind $d to $W/cg/$c"
done

# The kubelet's read-only port: one running BE pod with batch resources.
KPORT=$(free_port)
python3 - "$W/pods.json" "$UID_BE" "$CID_BE" <<'PY'
import json, sys
path, uid, cid = sys.argv[1:4]
spec = json.dumps({"containers": {"stress": {
    "requests": {"kubernetes.io/batch-cpu": "2k", "kubernetes.io/batch-memory": "64Mi"},
    "limits": {"kubernetes.io/batch-cpu": "2k", "kubernetes.io/batch-memory": "64Mi"}}}})
res = {"kubernetes.io/batch-cpu": "2k", "kubernetes.io/batch-memory": "64Mi"}
pod = {"metadata": {"name": "be-stress", "namespace": "default", "uid": uid,
                    "labels": {"koordinator.sh/qosClass": "BE"},
                    "annotations": {"node.koordinator.sh/extended-resource-spec": spec}},
       "spec": {"priorityClassName": "koord-batch", "priority": 5000,
                "containers": [{"name": "stress", "image": "busybox",
                                "resources": {"requests": res, "limits": res}}]},
       "status": {"phase": "Running", "qosClass": "BestEffort",
                  "containerStatuses": [{"name": "stress", "ready": True,
                                         "containerID": "containerd://" + cid,
                                         "state": {"running": {"startedAt": "2026-12-03T10:00:00Z"}}}]}}
json.dump({"kind": "PodList", "apiVersion": "v1", "items": [pod]}, open(path, "w"))
PY
python3 - "$KPORT" "$W/pods.json" >"$W/kubelet.log" 2>&1 <<'PY' &
import http.server, sys
port, path = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = open(path, "rb").read() if self.path.rstrip("/") == "/pods" else b"{}"
        self.send_response(200 if self.path.rstrip("/") == "/pods" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
KUBELET_PID=$!
# The NRI socket: a listener counting the connections made to it.
python3 - "$W/host/var/run/nri/nri.sock" "$W/nri-connections" <<'PY' &
import os, socket, sys
path, count = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
n = 0
while True:
    c, _ = s.accept()
    n += 1
    open(count, "w").write(str(n))
    c.close()
PY
NRI_PID=$!

WPORT=$(free_port)
"$TOOLS/helm" template koordlet "$REPO/packaging/charts/koordlet" --show-only templates/daemonset.yaml \
  --set koordlet.hostNetwork=true --set "koordlet.port=$WPORT" --set koordlet.kubelet.readOnlyPort=true \
  --set "koordlet.extraArgs={--kubelet-read-only-port=$KPORT,--kubelet-sync-interval=1s}" \
  >"$W/daemonset.yaml" || fail "helm template (writers) failed"
"$TOOLS/kubectl" label --local --kubeconfig=/dev/null -f "$W/daemonset.yaml" koordlet-image-test=1 \
  -o json >"$W/daemonset.json" || fail "kubectl cannot decode the rendered DaemonSet"
read -r _ _ _ < <(python3 "$REPO/tests/packaging/podman_args.py" "$W/daemonset.json" \
  "$WORK/configmap.json" "$W" "$(hostname)" "--source=/sys/fs/cgroup=$W/cg") ||
  fail "podman_args.py failed (writers)"
mapfile -d '' -t wflags <"$W/podman-flags"
mapfile -d '' -t wargs <"$W/args"
WCTR=$CTR-writers
"${PODMAN[@]}" run -d --name "$WCTR" "${LIMITS[@]}" "${wflags[@]}" "$NAME" "${wargs[@]}" \
  >"$W/run.out" 2>&1 || { cat "$W/run.out" >&2; fail "podman run (writers) failed"; }
wlogs() { "${PODMAN[@]}" logs "$WCTR" 2>&1 | tail -n 60 >&2; }

# The BE container's knobs, from its batch resources (2 cores, 64Mi: none the kernel's
# default for a new cgroup), in the kernel's files.
cg=/sys/fs/cgroup
want() { # file expected
  local got=""
  for _ in $(seq 1 300); do
    got=$(cat "$1" 2>/dev/null || true)
    [ "$got" = "$2" ] && return 0
    [ "$("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$WCTR")" = true ] ||
      { wlogs; fail "the agent exited (writers)"; }
    sleep 0.1
  done
  wlogs
  fail "$1 is '$got', not $2, 30 s after the pod's start"
}
want "$cg/cpu/$PREFIX/$POD_DIR/$CID_BE/cpu.shares" 2048
want "$cg/cpu/$PREFIX/$POD_DIR/$CID_BE/cpu.cfs_quota_us" 200000
want "$cg/memory/$PREFIX/$POD_DIR/$CID_BE/memory.limit_in_bytes" 67108864
echo "writers: the BE container's cpu.shares 2048, cfs_quota 200000, memory limit 64Mi written through /host-cgroup/"

# The audit log has them.
audit=$W/emptydir/audit-log/audit.log
for _ in $(seq 1 50); do grep -q "$CID_BE/cpu.shares" "$audit" 2>/dev/null && break; sleep 0.1; done
grep -q "$CID_BE/cpu.shares" "$audit" ||
  { wlogs; ls -la "$W/emptydir/audit-log" >&2; head -c 3000 "$audit" >&2; fail "the audit log ($audit) lacks the cpu.shares write"; }

# The hook server's socket accepts; koordlet.json names its host path.
python3 - "$W/host/var/run/koordlet/koordlet.sock" "$W/host/etc/runtime/hookserver.d/koordlet.json" <<'PY' ||
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
assert json.load(open(sys.argv[2]))["remote-endpoint"] == "/var/run/koordlet/koordlet.sock"
PY
  { wlogs; fail "the hook server's socket or koordlet.json (writers)"; }
# NRI: connected through the read-only mount.
for _ in $(seq 1 100); do [ -s "$W/nri-connections" ] && break; sleep 0.1; done
[ -s "$W/nri-connections" ] || { wlogs; fail "the agent never connected to the NRI socket"; }

WURL=http://127.0.0.1:$WPORT
curl -sf --max-time 5 "$WURL/metrics" >"$W/metrics" || { wlogs; fail "GET /metrics (writers)"; }
grep -q '^koordlet_feature_supported{.*feature="resctrl".*} 0' "$W/metrics" ||
  { wlogs; grep feature_supported "$W/metrics" >&2; fail "resctrl is not exported as unsupported on a host without it"; }
curl -sf --max-time 5 "$WURL/config" >"$W/config.json" || { wlogs; fail "GET /config (writers)"; }
python3 - "$W/config.json" <<'PY' || { wlogs; fail "writablePaths under this chart (see above)"; }
import json, sys
w = json.load(open(sys.argv[1]))["writablePaths"]
for k in ("cgroup_cpu", "cgroup_cpuset", "cgroup_memory", "hook_server_socket",
          "hook_server_config", "prediction_checkpoints", "audit_log"):
    assert w[k]["writable"], (k, w[k])
# This host has neither resctrl nor GroupIdentity's switch: nothing to check for them.
assert "resctrl_state" not in w and "proc_sys_kernel" not in w, w
PY
"${PODMAN[@]}" stop -t 10 "$WCTR" >/dev/null || fail "podman stop (writers) failed"
"${PODMAN[@]}" logs "$WCTR" >"$W/agent.log" 2>&1
if grep -q 'cannot write ' "$W/agent.log"; then
  grep 'cannot write ' "$W/agent.log" >&2
  fail "the agent says it cannot write something under this chart"
fi
n=$(grep -c 'resctrl: not supported on this host' "$W/agent.log" || true)
[ "$n" = 1 ] || { grep -i resctrl "$W/agent.log" >&2; fail "resctrl's absence said $n times, not once"; }
code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$WCTR")
[ "$code" = 0 ] || { tail -n 40 "$W/agent.log" >&2; fail "the agent exited $code (writers)"; }
"${PODMAN[@]}" rm "$WCTR" >/dev/null || fail "podman rm (writers) failed"
cleanup_writers
echo "writers: cgroup knobs, audit log, hook socket + koordlet.json, NRI connect done; resctrl's absence said once"
