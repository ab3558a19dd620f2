#!/usr/bin/env bash
# A real Prometheus server scrapes the agent for a few intervals; its API must show
# the target up and the agent's node series.
source "$(dirname "$0")/lib.sh"
BIN=${1:?usage: prometheus_scrape.sh path/to/koordlet}
command -v prometheus >/dev/null || skip "prometheus not installed (Debian package prometheus; make test installs it)"

start_agent "$BIN" "$WORK/agent.log"
cat >"$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: koordlet
    static_configs:
      - targets: ['127.0.0.1:$AGENT_PORT']
YAML
# Another test's process may take the free port before Prometheus binds it: a
# Prometheus that exits saying so is started again on another port.
for attempt in 1 2 3 4 5; do
  PROM_PORT=$(free_port)
  prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
  PROM_PID=$!
  PIDS+=("$PROM_PID")
  started=""
  # Listening (any HTTP answer) or gone; a slow start past 30 s counts as started.
  for _ in $(seq 1 300); do
    if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PROM_PORT/-/healthy"; then started=1; break; fi
    kill -0 "$PROM_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$PROM_PID" 2>/dev/null && started=1
  [ -n "$started" ] && break
  kill -9 "$PROM_PID" 2>/dev/null || true
  grep -q "address already in use" "$WORK/prometheus.log" ||
    { cat "$WORK/prometheus.log" >&2; fail "Prometheus did not start"; }
  echo "port $PROM_PORT was taken before Prometheus bound it (attempt $attempt); another port" >&2
done
[ -n "$started" ] || fail "Prometheus found no free port in 5 attempts"
API="http://127.0.0.1:$PROM_PORT/api/v1/query"

query() { curl -s --max-time 2 --get --data-urlencode "query=$1" "$API"; }

ok=""
for _ in $(seq 1 60); do
  up=$(query 'up{job="koordlet"}' || true)
  cpu=$(query 'count_over_time(koordlet_node_used_cpu_cores{node="e2e-node"}[1m])' || true)
  if echo "$up" | grep -q '"value":\[[0-9.]*,"1"\]' &&
     echo "$cpu" | grep -qE '"value":\[[0-9.]*,"([3-9]|[1-9][0-9]+)"\]'; then
    ok=1
    break
  fi
  sleep 0.5
done
if [ -z "$ok" ]; then
  echo "up: $up" >&2; echo "cpu: $cpu" >&2; cat "$WORK/prometheus.log" >&2
  fail "Prometheus did not see the agent up with at least 3 node samples within 30 s"
fi
# No --config here: koordlet's defaults are the config in force, generation 1.
gen=$(query 'koordlet_config_generation{node="e2e-node"}' || true)
echo "$gen" | grep -q '"value":\[[0-9.]*,"1"\]' ||
  { echo "generation: $gen" >&2; fail "koordlet_config_generation is not 1 without --config"; }
echo "ok: Prometheus scraped the agent: up == 1 and koordlet_node_used_cpu_cores has samples"
