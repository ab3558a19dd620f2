# The image as Koordinator's own chart (v1.8.0) runs koordlet: sourced by
# image_test.sh once the image is loaded and this project's chart's pod has run
# (it uses that script's PODMAN, LIMITS, NAME, CTR, REPO, TOOLS, WORK and helpers).
#
# The spec is tests/fixtures/koordinator/charts/v1.8.0-koordlet-daemonset.yaml, the
# koordlet DaemonSet `helm template` renders from koordinator-sh/charts (SOURCES.md),
# run unchanged but for its image, as a user of that chart with koordlet.image set to
# this project's gets it: command /koordlet, Koordinator's args (no --dry-run: the
# agent writes what it writes), NODE_NAME, privileged with SYS_ADMIN, host PID and
# network, its 17 mounts with their propagation and read-only flags, 200m/256Mi.
# The host's kernel trees (/sys, /sys/fs, /sys/fs/cgroup, /dev) and its /run, /var/run
# and /etc/localtime are the host's own; the state koordlet's pod keeps on the host
# (/var/run/koordlet and what is below it, /etc/runtime/hookserver.d, the vGPU dir,
# /var/lib/kubelet, /etc/kubernetes) is under $WORK/k/host instead, made a shared
# mount so the spec's Bidirectional propagation is what a node has. This host has no
# kubepods tree, no kubelet, no API server and no NRI socket: the agent says so and
# serves. Checked:
#   - it starts and serves on the spec's :9316 (host network): /healthz 200, /metrics;
#   - every path it writes is writable under those mounts (/config's writablePaths:
#     the cgroup controllers (v1) or root (v2), the hook server's socket dir and config
#     dir, the prediction checkpoints, the audit log), and it wrote what it writes at
#     start: the hook server's socket in the host's /var/run/koordlet and koordlet.json
#     naming it in /etc/runtime/hookserver.d;
#   - the flags and gates of the spec all act (none "has no effect");
#   - koord-device-daemon's file (its DaemonSet, the second fixture, mounts the same
#     host dir) written into the host's /var/run/koordlet/xpu-device-infos is read
#     through the pod's mount: /config's Device lists its devices;
#   - SIGTERM ends it with 0 within the spec's grace period; figures: start to
#     /healthz, RSS.
KSPEC=$REPO/tests/fixtures/koordinator/charts/v1.8.0-koordlet-daemonset.yaml
DSPEC=$REPO/tests/fixtures/koordinator/charts/v1.8.0-koord-device-daemon.yaml
KCTR=$CTR-koordinator
K=$WORK/k
mkdir -p "$K/host"
mount --bind "$K/host" "$K/host" && mount --make-rshared "$K/host" ||
  fail "cannot make $K/host a shared mount (Bidirectional propagation needs one)"

"$TOOLS/kubectl" label --local --kubeconfig=/dev/null -f "$KSPEC" koordlet-image-test=1 -o json \
  >"$K/daemonset.json" || fail "kubectl cannot decode $KSPEC"
"$TOOLS/kubectl" label --local --kubeconfig=/dev/null -f "$DSPEC" koordlet-image-test=1 -o json \
  >"$K/device-daemon.json" || fail "kubectl cannot decode $DSPEC"
read -r kport _ _ < <(python3 "$REPO/tests/packaging/podman_args.py" "$K/daemonset.json" - "$K" \
  "$(hostname)" /var/run/koordlet /etc/runtime /usr/local/vgpu /var/lib/kubelet /etc/kubernetes) ||
  fail "podman_args.py failed on Koordinator's DaemonSet"
mapfile -d '' -t kflags <"$K/podman-flags"
mapfile -d '' -t kargs <"$K/args"
[ "$kport" = 9316 ] || fail "Koordinator's spec listens on $kport, not 9316"
# Both DaemonSets mount the host's device-info dir where koordlet reads it by default.
infos=$(python3 - "$K/daemonset.json" "$K/device-daemon.json" <<'PY'
import json, sys
def mounts(path, name):
    pod = json.load(open(path))["spec"]["template"]["spec"]
    (c,) = [c for c in pod["containers"] if c["name"] == name]
    vols = {v["name"]: v for v in pod["volumes"]}
    return {m["mountPath"].rstrip("/"): vols[m["name"]].get("hostPath", {}).get("path", "").rstrip("/")
            for m in c["volumeMounts"]}
k = mounts(sys.argv[1], "koordlet")
d = mounts(sys.argv[2], "koord-device-daemon")
p = "/var/run/koordlet/xpu-device-infos"
assert k.get(p) == d.get(p) == p, (k.get(p), d.get(p))
print(p)
PY
) || fail "koordlet and koord-device-daemon do not share the host's device-info dir"
# The port is the host's (hostNetwork): it must be free.
if (exec 3<>/dev/tcp/127.0.0.1/9316) 2>/dev/null; then
  fail "port 9316 is taken on this host: Koordinator's spec listens there (host network)"
fi
echo "podman run ${kflags[*]} $NAME ${kargs[*]}"

kstart=$(date +%s%N)
"${PODMAN[@]}" run -d --name "$KCTR" "${LIMITS[@]}" "${kflags[@]}" "$NAME" "${kargs[@]}" \
  >"$K/run.out" 2>&1 || { cat "$K/run.out" >&2; fail "podman run (Koordinator's spec) failed"; }
klogs() { "${PODMAN[@]}" logs "$KCTR" 2>&1 | tail -n 60 >&2; }
got=""
for _ in $(seq 1 300); do
  got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:9316/healthz" || true)
  [ "$got" = 200 ] && break
  [ "$("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$KCTR")" = true ] ||
    { klogs; fail "the agent exited under Koordinator's spec"; }
  sleep 0.1
done
[ "$got" = 200 ] || { klogs; fail "/healthz did not answer 200 within 30 s under Koordinator's spec"; }
kready_ms=$((($(date +%s%N) - kstart) / 1000000))
curl -sf --max-time 5 "http://127.0.0.1:9316/metrics" >"$K/metrics" || { klogs; fail "GET /metrics failed"; }
grep -q '^koordlet_start_time{' "$K/metrics" || { klogs; fail "/metrics lacks koordlet_start_time"; }

# What it writes at start, on the host's side of the mounts.
for _ in $(seq 1 100); do
  [ -S "$K/host/var/run/koordlet/koordlet.sock" ] && [ -s "$K/host/etc/runtime/hookserver.d/koordlet.json" ] && break
  sleep 0.1
done
[ -S "$K/host/var/run/koordlet/koordlet.sock" ] ||
  { klogs; fail "no hook server socket in the host's /var/run/koordlet (the spec's /host-var-run-koordlet/)"; }
python3 - "$K/host/etc/runtime/hookserver.d/koordlet.json" <<'PY' || { klogs; fail "koordlet.json in the host's /etc/runtime/hookserver.d is not the runtime proxy's config naming the socket"; }
import json, sys
c = json.load(open(sys.argv[1]))
assert c["remote-endpoint"] == "/var/run/koordlet/koordlet.sock", c
PY

# Every writer's path writable; the spec's flags and gates all act.
curl -sf --max-time 5 "http://127.0.0.1:9316/config" >"$K/config.json" || { klogs; fail "GET /config failed"; }
python3 - "$K/config.json" <<'PY' || { klogs; fail "under Koordinator's spec: see above"; }
import json, sys
c = json.load(open(sys.argv[1]))
w = c["writablePaths"]
want = {"hook_server_socket", "hook_server_config", "prediction_checkpoints", "audit_log"}
missing = want - set(w)
assert "cgroup_root" in w or "cgroup_cpu" in w, f"no cgroup check in writablePaths: {w}"
assert not missing, f"writablePaths lacks {sorted(missing)}: {w}"
bad = {k: v["why"] for k, v in w.items() if not v["writable"]}
assert not bad, f"not writable under Koordinator's spec: {bad}"
assert not c["flagsWithoutEffect"], f"flags with no effect: {c['flagsWithoutEffect']}"
gates = c["featureGates"]
for g in ("BECPUEvict", "BEMemoryEvict", "CgroupReconcile", "Accelerators"):
    assert gates[g]["enabled"] and gates[g]["implemented"], (g, gates[g])
assert c["gpu"]["deviceInfosDir"].rstrip("/") == "/var/run/koordlet/xpu-device-infos", c["gpu"]
print("writable: " + ", ".join(sorted(w)))
PY

# koord-device-daemon's file, written on the host's side as the daemon writes it
# (its own mount of the same dir): the agent's Device lists it.
cp "$REPO/tests/fixtures/device-infos/ascend-910b3-ic-device" "$K/host$infos/.ic-device-new"
mv "$K/host$infos/.ic-device-new" "$K/host$infos/ic-device"
devices=""
for _ in $(seq 1 100); do
  devices=$(curl -sf --max-time 2 "http://127.0.0.1:9316/config" |
    python3 -c 'import json,sys; g=json.load(sys.stdin)["gpu"]; print(g["deviceSource"], len(g["device"]["spec"]["devices"]))' || true)
  [ "$devices" = "device-infos 2" ] && break
  sleep 0.1
done
[ "$devices" = "device-infos 2" ] ||
  { klogs; fail "the device-info file in the shared dir did not reach the Device (got '$devices')"; }

pid=$("${PODMAN[@]}" inspect --format '{{.State.Pid}}' "$KCTR")
krss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
grace=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])' "$K/daemonset.json")
"${PODMAN[@]}" stop -t "$grace" "$KCTR" >/dev/null || fail "podman stop (Koordinator's spec) failed"
code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$KCTR")
[ "$code" = 0 ] || { klogs; fail "the agent exited $code on SIGTERM under Koordinator's spec"; }
"${PODMAN[@]}" logs "$KCTR" >"$K/agent.log" 2>&1
if grep -Eq 'error while loading shared libraries|has no effect|cannot write ' "$K/agent.log"; then
  grep -E 'error while loading shared libraries|has no effect|cannot write ' "$K/agent.log" >&2
  fail "the agent's log under Koordinator's spec says the above"
fi
"${PODMAN[@]}" rm "$KCTR" >/dev/null || fail "podman rm (Koordinator's spec) failed"
umount -R "$K/host" || fail "cannot unmount $K/host"
echo "figure: Koordinator's spec: start to /healthz 200 ${kready_ms} ms, RSS $((krss / 1024)) MiB"
echo "Koordinator's chart v1.8.0 pod: served, wrote its socket and koordlet.json, read the device-info file"
