#!/usr/bin/env bash
# Footprint benchmark (not a test): runs koordlet for DURATION seconds at a 1 s
# collection interval, scraping /metrics once a second as Prometheus would, then
# does the same with Debian's prometheus-node-exporter on the same machine, and
# prints CPU time, peak RSS and scrape latency of each as a markdown table.
#   bench/run.sh build/agent/koordlet            (DURATION=60 by default)
set -euo pipefail
BIN=${1:?usage: bench/run.sh path/to/koordlet}
DURATION=${DURATION:-60}
NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}
command -v "$NODE_EXPORTER" >/dev/null || { echo "install prometheus-node-exporter first (make deps)" >&2; exit 1; }
TICKS=$(getconf CLK_TCK)
OUT=$(mktemp -d /tmp/koordlet-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$OUT"' EXIT

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 20000))
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo "$p"; return; }
  done
}

# measure NAME PORT -- CMD...: starts CMD, waits for /metrics, scrapes it once a
# second for DURATION seconds, then reads the process's CPU ticks and VmHWM.
measure() {
  local name=$1 port=$2; shift 3
  "$@" >"$OUT/$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && break
    sleep 0.1
  done
  # CPU counted from here, after start-up, for both processes alike.
  local t0; t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  : >"$OUT/$name.lat"
  local end=$((SECONDS + DURATION)) bytes=0
  while [ $SECONDS -lt $end ]; do
    curl -s -o "$OUT/$name.body" -w '%{time_total}\n' "http://127.0.0.1:$port/metrics" >>"$OUT/$name.lat"
    sleep 1
  done
  bytes=$(wc -c <"$OUT/$name.body")
  local t1; t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  local hwm; hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  local series; series=$(grep -vc '^#' "$OUT/$name.body")
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  sort -n "$OUT/$name.lat" | awk -v name="$name" -v cpu=$((t1 - t0)) -v ticks="$TICKS" \
      -v hwm="$hwm" -v bytes="$bytes" -v series="$series" '
    { v[NR] = $1 * 1000 }
    END {
      p50 = v[int(NR * 0.5) > 0 ? int(NR * 0.5) : 1]; p99 = v[int(NR * 0.99) > 0 ? int(NR * 0.99) : 1]
      printf "| %s | %.2f | %.1f | %.2f | %.2f | %.2f | %d | %d | %d |\n",
        name, cpu / ticks, hwm / 1024, p50, p99, v[NR], NR, series, bytes
    }'
}

AGENT_PORT=$(free_port)
NE_PORT=$(free_port)
echo "duration ${DURATION}s, scrape every 1s, $(nproc) cores, kernel $(uname -r)"
echo
echo "| process | CPU s | peak RSS MiB | scrape p50 ms | scrape p99 ms | scrape max ms | scrapes | series | bytes |"
echo "|---|---|---|---|---|---|---|---|---|"
measure koordlet "$AGENT_PORT" -- env agent_mode=hostMode NODE_NAME=bench "$BIN" \
  --addr="127.0.0.1:$AGENT_PORT" --dry-run --collect-res-used-interval=1s
measure node_exporter "$NE_PORT" -- "$NODE_EXPORTER" --web.listen-address="127.0.0.1:$NE_PORT"
