#!/usr/bin/env bash
# A full run of the real binary: start it, scrape /metrics, check the exposition with
# promtool, check status codes, SIGTERM, and expect exit 0 within one second.
source "$(dirname "$0")/lib.sh"
BIN=${1:?usage: agent_run.sh path/to/koordlet}
command -v promtool >/dev/null || skip "promtool not installed (Debian package prometheus; make test installs it)"

# Flags: bad input is refused with a message naming the flag; help and version work.
if "$BIN" --no-such-flag >"$WORK/bad.out" 2>&1; then fail "unknown flag accepted"; fi
grep -q 'no-such-flag' "$WORK/bad.out" || fail "unknown-flag error does not name the flag"
"$BIN" --help >"$WORK/help.out" 2>&1 || fail "--help failed"
for f in addr cgroup-root-dir collect-res-used-interval enable-nri-runtime-hook dry-run config; do
  grep -q -- "-$f" "$WORK/help.out" || fail "--help does not list -$f"
done
"$BIN" --version >"$WORK/version.out" || fail "--version failed"
# The release and the commit: "koordlet-cpp 0.1.0 (git b008e83)" (no commit outside git).
grep -Eqx 'koordlet-cpp [0-9]+\.[0-9]+\.[0-9]+( \(git [^)]+\))?' "$WORK/version.out" ||
  { cat "$WORK/version.out" >&2; fail "--version does not print the release and commit"; }

# Nothing listens on this port: the kubelet is unreachable, which must be said once.
KUBELET_PORT=$(free_port)
echo "test-token" >"$WORK/token"
# A NodeSLO config: refused at start when bad, reloaded while running.
printf 'resourceUsedThresholdWithBE:\n  cpuSuppressThresholdPercent: 150\n' >"$WORK/bad-slo.yaml"
if "$BIN" --addr=127.0.0.1:0 --config="$WORK/bad-slo.yaml" >"$WORK/badcfg.out" 2>&1; then
  fail "an out-of-range percent in --config was accepted at start"
fi
grep -q 'bad-slo.yaml: spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: 150' \
  "$WORK/badcfg.out" || { cat "$WORK/badcfg.out" >&2; fail "bad --config error lacks file/field"; }
# Several problems: one log line each, no escaped newline joining them.
printf 'resourceUsedThresholdWithBE:\n  cpuSuppressThresholdPercent: 150\n  enable: 2\n' >"$WORK/bad2-slo.yaml"
if "$BIN" --addr=127.0.0.1:0 --config="$WORK/bad2-slo.yaml" >"$WORK/bad2cfg.out" 2>&1; then
  fail "a --config with two problems was accepted at start"
fi
n=$(grep -c '^E.*cannot start: --config: .*bad2-slo.yaml: spec.resourceUsedThresholdWithBE\.' \
  "$WORK/bad2cfg.out" || true)
{ [ "$n" = 2 ] && ! grep -qF '\n' "$WORK/bad2cfg.out"; } ||
  { cat "$WORK/bad2cfg.out" >&2; fail "two --config problems are not two log lines"; }
# Host mode without a service-account token: said once at start, naming the flags to set
# (the bad config then stops the run before any kubelet request).
agent_mode=hostMode "$BIN" --addr=127.0.0.1:0 --kubelet-token-file="$WORK/no-token" \
  --config="$WORK/bad-slo.yaml" >"$WORK/hostmode.out" 2>&1 || true
n=$(grep -c "^W.*host mode: kubelet token file $WORK/no-token does not exist.*--kubelet-insecure-tls" \
  "$WORK/hostmode.out" || true)
[ "$n" = 1 ] || { cat "$WORK/hostmode.out" >&2; fail "host mode without a token: $n advice lines, want 1"; }
printf 'resourceUsedThresholdWithBE:\n  enable: true\n  cpuSuppressPolicy: cfsQuota\n' >"$WORK/slo.yaml"
# --check: the same refusal without starting anything; a good config is printed back.
if "$BIN" --check --config="$WORK/bad-slo.yaml" >"$WORK/check-bad.out" 2>&1; then
  fail "--check accepted an out-of-range percent"
fi
grep -q 'bad-slo.yaml: spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: 150' \
  "$WORK/check-bad.out" || { cat "$WORK/check-bad.out" >&2; fail "--check error lacks file/field"; }
"$BIN" --check --addr=127.0.0.1:1 --config="$WORK/slo.yaml" >"$WORK/check.out" 2>&1 ||
  { cat "$WORK/check.out" >&2; fail "--check refused a good config"; }
grep -q '"cpuSuppressPolicy": "cfsQuota"' "$WORK/check.out" ||
  { cat "$WORK/check.out" >&2; fail "--check did not print the config it read"; }
if "$BIN" --check --collect-res-used-interval=soon >"$WORK/check-flag.out" 2>&1; then
  fail "--check accepted a bad duration"
fi
grep -q 'collect-res-used-interval' "$WORK/check-flag.out" || fail "--check flag error does not name the flag"

start_agent "$BIN" "$WORK/agent.log" --v=2 --kubelet-addr=127.0.0.1 \
  --kubelet-secure-port="$KUBELET_PORT" --kubelet-token-file="$WORK/token" \
  --kubelet-sync-interval=500ms --collect-res-used-interval=200ms --config="$WORK/slo.yaml" \
  --audit-log-dir="$WORK/audit" --run-root-dir="$WORK" --feature-gates=CoreSched=true
BASE="http://127.0.0.1:$AGENT_PORT"

wait_for "$BASE/healthz" 200 10
wait_for "$BASE/readyz" 200 15
curl -sf "$BASE/readyz" | grep "^kubelet https://127.0.0.1:$KUBELET_PORT: unreachable" >/dev/null ||
  fail "/readyz body lacks kubelet state"
curl -sf "$BASE/readyz" | grep '^nri: ' >/dev/null || fail "/readyz body lacks NRI state"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/nope")" = 404 ] || fail "unknown path is not 404"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/metrics")" = 405 ] || fail "POST is not 405"

# GET /config: the effective config, defaults merged with the file.
curl -sf "$BASE/config" >"$WORK/config.json" || fail "GET /config failed"
python3 - "$WORK/config.json" <<'PY' || fail "/config does not show the effective config"
import json, sys
c = json.load(open(sys.argv[1]))
t = c["spec"]["resourceUsedThresholdWithBE"]
assert t["enable"] is True and t["cpuSuppressPolicy"] == "cfsQuota", t
assert t["cpuSuppressThresholdPercent"] == 65, t          # koordlet's default, merged
assert c["spec"]["cpuBurstStrategy"]["policy"] == "none", c["spec"]["cpuBurstStrategy"]
assert c["generation"] == 1, c
g = c["featureGates"]
assert g["BECPUSuppress"] == {"enabled": True, "implemented": True}, g["BECPUSuppress"]
assert g["GroupIdentity"] == {"enabled": True, "implemented": True}, g["GroupIdentity"]
assert g["CoreSched"] == {"enabled": True, "implemented": False}, g["CoreSched"]
assert g["BECPUEvict"] == {"enabled": False, "implemented": True}, g["BECPUEvict"]
assert g["SystemConfig"] == {"enabled": False, "implemented": False}, g["SystemConfig"]
assert g["CPUAllocatableEvict"] == {"enabled": False, "implemented": True}, g["CPUAllocatableEvict"]
# No eviction gate on (and no API server): eviction is off and says why.
e = c["strategies"]["eviction"]
assert e["running"] is False and e["summary"].startswith("off (no eviction gate on"), e
assert c["flagsWithoutEffect"] == ["run-root-dir"], c["flagsWithoutEffect"]
PY
# A bad edit keeps the last good config and is counted; a good one is taken.
cp "$WORK/bad-slo.yaml" "$WORK/slo.yaml"
for _ in $(seq 50); do
  curl -sf "$BASE/metrics" | grep '^koordlet_config_reload_errors_total{node="e2e-node"} 1' >/dev/null && break
  sleep 0.1
done
curl -sf "$BASE/metrics" | grep '^koordlet_config_last_reload_successful{node="e2e-node"} 0' >/dev/null ||
  fail "a rejected reload is not exported"
curl -sf "$BASE/config" | grep '"cpuSuppressPolicy": "cfsQuota"' >/dev/null || fail "last good config lost"
curl -sf "$BASE/readyz" | grep '^config: .*last reload rejected' >/dev/null || fail "/readyz hides the bad reload"
printf 'resourceUsedThresholdWithBE:\n  enable: true\n  cpuSuppressThresholdPercent: 40\n' >"$WORK/slo.yaml"
for _ in $(seq 50); do
  curl -sf "$BASE/config" | grep '"cpuSuppressThresholdPercent": 40' >/dev/null && break
  sleep 0.1
done
curl -sf "$BASE/config" | grep '"generation": 2' >/dev/null || fail "a fixed config was not reloaded"

curl -sf "$BASE/metrics" >"$WORK/metrics.txt" || fail "scrape failed"
for m in 'koordlet_node_used_cpu_cores{node="e2e-node"}' 'koordlet_node_used_memory_bytes{node="e2e-node"}' \
         'koordlet_start_time{node="e2e-node"}' process_cpu_seconds_total process_resident_memory_bytes \
         process_open_fds 'koordlet_collector_errors_total{collector="node",node="e2e-node"} 0' \
         'koordlet_kubelet_up{node="e2e-node"} 0' koordlet_build_info; do
  grep -qF "$m" "$WORK/metrics.txt" || fail "metric $m missing from /metrics"
done
# promtool lints names; koordlet's own names (metrics/metric_origin.h) keep koordlet's
# spelling where the naming lint disagrees (counters without _total, _milliseconds,
# _us): only those lines of those names are let through, every other problem fails.
promtool check metrics <"$WORK/metrics.txt" >"$WORK/promtool.out" 2>&1 || true
grep -o '"koordlet_[a-z_0-9]*"' "$(dirname "$0")/../../metrics/metric_origin.h" | tr -d '"' |
  sed 's/$/ /' >"$WORK/koordlet-names"
if grep -v -E 'should have "_total" suffix|use base unit' "$WORK/promtool.out" | grep -q . ||
  grep -E 'should have "_total" suffix|use base unit' "$WORK/promtool.out" |
  grep -v -F -f "$WORK/koordlet-names" | grep -q .; then
  cat "$WORK/promtool.out" >&2
  fail "promtool check metrics reported problems"
fi

# A few more sync rounds; the unreachable kubelet must still be one log line.
sleep 2
n=$(grep -c 'pods are unavailable' "$WORK/agent.log" || true)
[ "$n" = 1 ] || { cat "$WORK/agent.log" >&2; fail "kubelet unreachable logged $n times, want 1"; }

start=$(date +%s%N)
kill -TERM "$AGENT_PID"
code=0
wait "$AGENT_PID" || code=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$code" = 0 ] || { cat "$WORK/agent.log" >&2; fail "exit code $code after SIGTERM"; }
[ "$elapsed_ms" -lt 1000 ] || fail "took ${elapsed_ms} ms to stop after SIGTERM"
grep -q 'shutting down' "$WORK/agent.log" || fail "no shutdown line in the log"
# Set flags and enabled gates without effect: one warning each at start.
for w in 'flag -run-root-dir has no effect' 'feature gate CoreSched is enabled but has no effect'; do
  n=$(grep -c "^W.*$w" "$WORK/agent.log" || true)
  [ "$n" = 1 ] || { cat "$WORK/agent.log" >&2; fail "'$w' logged $n times, want 1"; }
done
grep -q 'feature gate CgroupReconcile' "$WORK/agent.log" && fail "a disabled gate was warned about"
for g in NodeTopologyReport GroupIdentity; do
  grep -q "feature gate $g is enabled but has no effect" "$WORK/agent.log" &&
    fail "$g is implemented but was warned about"
done
n=$(grep -c 'cpuSuppressThresholdPercent: 150 is out of range' "$WORK/agent.log" || true)
[ "$n" = 1 ] || { cat "$WORK/agent.log" >&2; fail "the bad reload was logged $n times, want 1"; }
echo "ok: scraped, promtool clean, SIGTERM -> exit 0 in ${elapsed_ms} ms"
