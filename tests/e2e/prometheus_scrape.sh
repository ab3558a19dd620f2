#!/usr/bin/env bash
# A real Prometheus server scrapes the agent for a few intervals; its API must show
# the target up and the agent's node series.
source "$(dirname "$0")/lib.sh"
BIN=${1:?usage: prometheus_scrape.sh path/to/koordlet}
command -v prometheus >/dev/null || skip "prometheus not installed (Debian package prometheus; make test installs it)"

start_agent "$BIN" "$WORK/agent.log"
PROM_PORT=$(free_port)
cat >"$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: koordlet
    static_configs:
      - targets: ['127.0.0.1:$AGENT_PORT']
YAML
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
PIDS+=("$!")
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
