#!/usr/bin/env bash
# The GPU check of issue 35, for a machine with an NVIDIA GPU and its driver (run it
# there: the project's device machine, or any GPU node). It runs the agent as built
# (AGENT, default build/agent/koordlet) on the host in --dry-run with Accelerators on
# and no API server, and compares what it reads with nvidia-smi:
#   1. the Device object the agent would write (GET /config .gpu.device) against
#      `nvidia-smi --query-gpu` (uuid, minor, name, memory.total, pci.bus_id, driver);
#   2. the node's GPU use (/metrics koordlet_node_gpu_*) idle, then while a load runs
#      (a small CUDA driver-API program that holds 1 GiB and keeps memset kernels
#      running, built here with cc when libcuda.so.1 and a compiler are present),
#      against nvidia-smi's utilization.gpu and memory.used read at the same time;
#   3. how long a round's GPU read takes (koordlet_collector_duration_seconds
#      {collector="gpu"}) and the RSS the NVML library adds (the agent with the gate
#      on against off).
# Output: a report on stdout (and $OUT/gpu_check.txt when OUT is set) to paste into
# bench/RESULTS.md. Exit 0 when every comparison holds, 1 when one does not, 2 when
# this is not a GPU machine.
set -uo pipefail
AGENT=${AGENT:-build/agent/koordlet}
PORT=${PORT:-19316}
REPORT=${OUT:-/tmp}/gpu_check.txt
: >"$REPORT"
say() { echo "$*" | tee -a "$REPORT"; }
fails=0
check() { # check NAME WANT GOT
  if [ "$2" = "$3" ]; then say "ok   $1: $3"; else say "FAIL $1: want '$2', got '$3'"; fails=$((fails + 1)); fi
}
command -v nvidia-smi >/dev/null || { say "no nvidia-smi: not a GPU machine"; exit 2; }
[ -x "$AGENT" ] || { say "no agent binary at $AGENT (make build-agent)"; exit 2; }
ldd "$AGENT" | grep -q "not found" && { say "the agent's libraries are missing here:"; ldd "$AGENT" | grep "not found" | tee -a "$REPORT"; exit 2; }
say "== $(date -u +%FT%TZ) $(uname -r); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
nvidia-smi -q >"${OUT:-/tmp}/nvidia-smi-q.txt" 2>&1

WORK=$(mktemp -d)
trap 'kill $AGENT_PID $LOAD_PID 2>/dev/null; rm -rf "$WORK"' EXIT
start_agent() { # start_agent GATES LOG
  agent_mode=hostMode "$AGENT" --addr=127.0.0.1:$PORT --dry-run --feature-gates="$1" \
    --sys-root-dir=/sys/ --proc-root-dir=/proc/ --cgroup-root-dir=/sys/fs/cgroup/ \
    --collect-res-used-interval=1s --node-topology-sync-interval=3s >"$2" 2>&1 &
  AGENT_PID=$!
  for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && return 0; sleep 0.2; done
  say "the agent did not start:"; tail -20 "$2" | tee -a "$REPORT"; exit 1
}
metric() { curl -sf "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" -v l="$2" 'index($0, m "{") == 1 && index($0, l) { print $NF; exit }'; }

# 3b. RSS without the gate (NVML never loaded), after 20 s.
start_agent "Accelerators=false" "$WORK/off.log"; sleep 20
RSS_OFF=$(awk '/VmRSS/ {print $2}' /proc/$AGENT_PID/status); kill $AGENT_PID; wait $AGENT_PID 2>/dev/null
start_agent "Accelerators=true" "$WORK/on.log"; sleep 20
RSS_ON=$(awk '/VmRSS/ {print $2}' /proc/$AGENT_PID/status)
say "agent log (GPU lines):"; grep -E "GPU|Accelerators|NVML" "$WORK/on.log" | tee -a "$REPORT"

# 1. The Device against nvidia-smi.
curl -sf "http://127.0.0.1:$PORT/config" >"$WORK/config.json"
python3 - "$WORK/config.json" <<'PY' >"$WORK/device.tsv"
import json, sys
g = json.load(open(sys.argv[1]))["gpu"]
print("driver", g.get("driverVersion", ""), sep="\t")
dev = g.get("device", {})
print("labels", json.dumps(dev.get("metadata", {}).get("labels", {}), sort_keys=True), sep="\t")
for d in dev.get("spec", {}).get("devices", []):
    t = d.get("topology", {})
    print(d["minor"], d["id"], d["resources"]["koordinator.sh/gpu-memory"], t.get("busID", ""),
          t.get("nodeID", ""), t.get("socketID", ""), t.get("pcieID", ""), d["health"], sep="\t")
PY
say "device as the agent would write it:"; tee -a "$REPORT" <"$WORK/device.tsv"
check "driver version" "$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)" \
  "$(awk -F'\t' '$1=="driver" {print $2}' "$WORK/device.tsv")"
while IFS=, read -r uuid minor name mem bus; do
  uuid=$(echo $uuid); minor=$(echo $minor); bus=$(echo $bus | tr 'A-Z' 'a-z'); bus=${bus#0000}
  row=$(awk -F'\t' -v m="$minor" '$1==m' "$WORK/device.tsv")
  check "GPU $minor uuid" "$uuid" "$(echo "$row" | cut -f2)"
  check "GPU $minor bus id" "$bus" "$(echo "$row" | cut -f4)"
  mib=$(echo $mem | awk '{print $1}')
  say "     GPU $minor memory: nvidia-smi $mem, Device $(echo "$row" | cut -f3) (nvidia-smi rounds to MiB)"
  say "     GPU $minor model: nvidia-smi '$(echo $name)'"
done < <(nvidia-smi --query-gpu=uuid,index,name,memory.total,pci.bus_id --format=csv,noheader,nounits |
  while IFS=, read -r u i n m b; do
    minor=$(nvidia-smi -i "$i" -q | awk -F: '/Minor Number/ {gsub(/ /,"",$2); print $2; exit}')
    echo "$u,$minor,$n,$m MiB,$b"
  done)
# Health: the driver takes the agent's Xid registration for every GPU, and the
# Device calls each healthy (a GPU in trouble would show in nvidia-smi -q too).
check "critical-error events watched" "1" \
  "$(metric koordlet_feature_supported 'feature="gpu_health_events"')"
check "GPUs unhealthy in the Device" "0" "$(awk -F'\t' '$1 ~ /^[0-9]+$/ && $8 != "True" && $8 != "true"' "$WORK/device.tsv" | wc -l)"

# 2. Use, idle and under load.
sample() { # sample LABEL
  sleep 5
  while IFS=, read -r i util used; do
    minor=$(nvidia-smi -i "$i" -q | awk -F: '/Minor Number/ {gsub(/ /,"",$2); print $2; exit}')
    say "     $1 GPU $minor: nvidia-smi util$util %, used$used MiB | agent core $(metric koordlet_node_gpu_core_usage "gpu_minor=\"$minor\"") %, used $(( $(metric koordlet_node_gpu_memory_usage_bytes "gpu_minor=\"$minor\"" | cut -d. -f1) / 1048576 )) MiB"
  done < <(nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits)
}
sample idle
LOAD_PID=
if [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ] || ldconfig -p | grep -q libcuda.so.1; then
  if command -v cc >/dev/null; then
    cat >"$WORK/load.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
typedef int (*f0)(unsigned); typedef int (*f1)(void**, unsigned, int); typedef int (*f2)(void*, int);
typedef int (*f3)(unsigned long long*, size_t); typedef int (*f4)(unsigned long long, unsigned char, size_t);
typedef int (*f5)(void);
int main(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  if (!h) { puts("no libcuda"); return 1; }
  f0 init = (f0)dlsym(h, "cuInit"); f2 dev = (f2)dlsym(h, "cuDeviceGet");
  f1 ctx = (f1)dlsym(h, "cuCtxCreate_v2"); f3 alloc = (f3)dlsym(h, "cuMemAlloc_v2");
  f4 set = (f4)dlsym(h, "cuMemsetD8_v2"); f5 sync = (f5)dlsym(h, "cuCtxSynchronize");
  int d = 0; void* c = 0; unsigned long long p = 0; size_t n = 1UL << 30;
  if (init(0) || dev(&d, 0) || ctx(&c, 0, d) || alloc(&p, n)) { puts("cuda setup failed"); return 1; }
  for (;;) { for (int i = 0; i < 50; ++i) set(p, (unsigned char)i, n); sync(); }
}
C
    cc -O1 -o "$WORK/load" "$WORK/load.c" -ldl && { "$WORK/load" & LOAD_PID=$!; }
  fi
fi
if [ -n "$LOAD_PID" ]; then
  sample "load (1 GiB, memset kernels on GPU 0)"
  say "     per-process: $(curl -sf http://127.0.0.1:$PORT/metrics | grep -c '^koordlet_pod_gpu\|^koordlet_container_gpu') pod/container series (the load runs outside any pod: expected 0)"
  kill $LOAD_PID; wait $LOAD_PID 2>/dev/null; LOAD_PID=
else
  say "     no load: libcuda.so.1 or a C compiler is missing here"
fi

# 3. Figures.
say "GPU read per round: $(metric koordlet_collector_duration_seconds 'collector="gpu"') s (last round)"
say "RSS: $RSS_OFF KiB with Accelerators off, $RSS_ON KiB on (NVML loaded): +$((RSS_ON - RSS_OFF)) KiB"
say "$fails comparison(s) failed"
[ "$fails" -eq 0 ]
