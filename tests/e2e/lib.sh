# Shared helpers for the end-to-end tests: start the real koordlet binary, find its
# port, scrape it, stop it. Sourced by the test scripts.
set -euo pipefail

# A test that cannot run here skips with its reason (meson's exit code 77);
# CI sets KOORDLET_REQUIRE_ALL=1, where a skip is a failure: CI has everything.
skip() {
  if [ "${KOORDLET_REQUIRE_ALL:-0}" = 1 ]; then
    echo "FAIL: would skip, but KOORDLET_REQUIRE_ALL=1: $*" >&2
    exit 1
  fi
  echo "SKIP: $*" >&2
  exit 77
}

fail() { echo "FAIL: $*" >&2; exit 1; }

WORK=$(mktemp -d /tmp/koordlet-e2e.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# A TCP port nothing listens on now (bash's /dev/tcp connect fails on a free port),
# chosen below the kernel's ephemeral range (net.ipv4.ip_local_port_range): a port
# in that range can be handed to some process's outgoing connection between this
# check and the listener's bind ("address already in use").
free_port() {
  local p low=32768 span
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  ((low > 12000)) || fail "ip_local_port_range starts at $low: no room below it for test ports"
  span=$((low - 10000))
  for _ in $(seq 1 200); do
    p=$((10000 + (RANDOM * 32768 + RANDOM) % span))
    if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "$p"; return 0; fi
  done
  fail "no free port found"
}

# start_agent BINARY LOGFILE [flags...]: starts koordlet on 127.0.0.1:0 in host
# mode and sets AGENT_PID and AGENT_PORT (read from its start line).
start_agent() {
  local bin=$1 log=$2; shift 2
  # The log exists before the agent starts: the background job opens it, and a read
  # below could otherwise come first (sed exits 2 on a missing file, set -e stops).
  : >"$log"
  # The runtime proxy hook server binds its socket even in a dry run: here, not in /var/run.
  agent_mode=hostMode NODE_NAME=e2e-node "$bin" --addr=127.0.0.1:0 --dry-run \
    --runtime-hooks-addr="$WORK/koordlet-hooks.sock" --runtime-hooks-config-path="$WORK/hookserver.d" \
    "$@" >"$log" 2>&1 &
  AGENT_PID=$!
  PIDS+=("$AGENT_PID")
  AGENT_PORT=""
  for _ in $(seq 1 100); do
    AGENT_PORT=$(sed -n 's/.*serving on .*(port \([0-9]*\)).*/\1/p' "$log" | head -n1)
    [ -n "$AGENT_PORT" ] && return 0
    kill -0 "$AGENT_PID" 2>/dev/null || { cat "$log" >&2; fail "agent exited at start"; }
    sleep 0.1
  done
  cat "$log" >&2
  fail "agent did not report its port within 10 s"
}

# wait_for URL CODE SECONDS: polls until the URL answers with CODE.
wait_for() {
  local url=$1 code=$2 secs=$3 got
  for _ in $(seq 1 $((secs * 10))); do
    got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" || true)
    [ "$got" = "$code" ] && return 0
    sleep 0.1
  done
  fail "$url did not answer $code within ${secs}s (last: $got)"
}
