#!/usr/bin/env bash
# Pods benchmark (not a test): synthetic nodes of 110 and 500 pods × 3 containers
# as real cgroup v1 directories, served by the test kubelet, collected every second
# by the real agent for SECONDS (default 30). Needs root. Prints a markdown table.
#   bench/pods.sh build                  defaults (suppress and burst configured off)
#   NODESLO=bench/nodeslo-all-on.yaml bench/pods.sh build
#                                        every QoS strategy on, writing for real, with
#                                        the API server stand-in (what `make bench` runs)
#   MAX_RATIO=1.5 ...                    fails (exit 3) when a cycle costs more than
#                                        1.5x the bare read of its files
# Each size runs two windows of SECONDS: unscraped (cycle / bare), then scraped once a
# second beside node_exporter (NODE_EXPORTER=path; empty: none).
set -euo pipefail
BUILD=${1:-build}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-30}
[ "$(id -u)" = 0 ] || { echo "bench/pods.sh: needs root (creates cgroups under /sys/fs/cgroup)" >&2; exit 1; }
echo "interval 1s, ${SECONDS_PER_RUN}s measured after warm-up, $(nproc) cores, kernel $(uname -r)"
echo
echo "| pods | containers | synced | agent CPU s | agent CPU ms/cycle | bare read ms/pass | RSS MiB | peak RSS MiB | cycle / bare | series | cgroup writes | scraped: agent CPU ms/s | node_exporter CPU ms/s | CPU ratio | agent RSS MiB | node_exporter RSS MiB | RSS ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
status=0
for n in 110 500; do
  "$BUILD/bench/pods_bench" "$BUILD/agent/koordlet" "$n" "$SECONDS_PER_RUN" ${NODESLO:+"$NODESLO"} || status=$?
done
exit $status
