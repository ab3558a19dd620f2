#!/bin/sh
# The node guest's payload (koordlet-payload.service, started after multi-user.target):
# versions, containerd's socket and NRI's, a container through ctr with runc's systemd
# cgroup driver (where does it land?), the test's own payload (KOORDLET_NODE_PAYLOAD of
# make-node-image.sh), the host (bookworm) binaries on the guest's glibc, then the
# timings, "KOORDLET-RIG-RESULT rc=<n>" and a forced poweroff.
# Output goes to the serial console (the unit's TTYPath); boot-node.sh reads it.
set -u
rc=0
fail() { echo "KOORDLET-NODE-FAIL $*"; rc=1; }
secs() { awk -v us="$1" 'BEGIN { printf "%.2f", us / 1000000 }'; }
up() { cut -d' ' -f1 /proc/uptime; }
echo "KOORDLET-NODE-PAYLOAD start uptime=$(up)s kernel=$(uname -r)"
# systemd is PID 1 as the real init: not in initrd mode, on a / that is a mount of its own.
initrd=no
[ -e /etc/initrd-release ] && initrd=yes
echo "KOORDLET-NODE pid1=$(readlink /proc/1/exe) $(systemctl --version | head -n 1)" \
  "initrd=$initrd root=$(stat -fc %T /) state=$(systemctl is-system-running)" \
  "root-free=$(df -m / | sed -n '2{s/  */ /g;p}' | cut -d' ' -f2,4 | sed 's| |MiB size, |')MiB free"
if [ "$initrd" != no ] || [ "$(readlink /proc/1/exe)" != /usr/lib/systemd/systemd ]; then
  fail "PID 1 is not systemd as init"
fi

containerd --version || fail "containerd --version"
runc --version || fail "runc --version"
# Type=notify: containerd.service is active once containerd said READY, socket served.
i=0
until [ -S /run/containerd/containerd.sock ] && ctr version >/tmp/ctr-version 2>&1; do
  i=$((i + 1))
  [ $i -lt 300 ] || { fail "no containerd socket answering after 30s"; cat /tmp/ctr-version; break; }
  sleep 0.1
done
cat /tmp/ctr-version
if [ -S /var/run/nri/nri.sock ]; then
  echo "KOORDLET-NODE nri socket /var/run/nri/nri.sock present"
else
  fail "no NRI socket at /var/run/nri/nri.sock"
fi
echo "KOORDLET-NODE cgroup: $(stat -fc %T /sys/fs/cgroup) controllers=[$(cat /sys/fs/cgroup/cgroup.controllers)]" \
  "subtree_control=[$(cat /sys/fs/cgroup/cgroup.subtree_control)] psi=$(test -r /proc/pressure/cpu && echo yes || echo no)"
# containerd.service's ExecStartPre=-/sbin/modprobe overlay, with the module from the image.
echo "KOORDLET-NODE overlay: $(grep -qw overlay /proc/filesystems && echo available || echo missing)" \
  "modules=[$(cut -d' ' -f1 /proc/modules | tr '\n' ' ')]"
echo "KOORDLET-NODE containerd cgroup: $(cat "/proc/$(systemctl show -P MainPID containerd.service)/cgroup")"
# A container with runc's systemd cgroup driver, named as the kubelet's systemd driver
# names a BE pod's container: slice kubepods-besteffort-pod<uid>.slice, prefix
# cri-containerd. runc asks PID 1 (over /run/systemd/private, no dbus) for the scope.
t0=$(up)
if ctr -n k8s.io images import --snapshotter native /koordlet/busybox-oci.tar >/tmp/import 2>&1; then
  echo "KOORDLET-NODE image imported in $(awk -v a="$t0" -v b="$(up)" 'BEGIN{printf "%.2f", b-a}')s: $(ctr -n k8s.io images ls -q | tr '\n' ' ')"
  t0=$(up)
  cg=$(ctr -n k8s.io run --rm --snapshotter native --net-host --runc-systemd-cgroup \
        --cgroup kubepods-besteffort-podkoordlet0001.slice:cri-containerd:koordlet-node-test \
        docker.io/koordlet-test/busybox:1 koordlet-node-test /bin/busybox cat /proc/self/cgroup 2>&1)
  echo "KOORDLET-NODE container ran in $(awk -v a="$t0" -v b="$(up)" 'BEGIN{printf "%.2f", b-a}')s, its /proc/self/cgroup: $cg"
  case "$cg" in
    "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podkoordlet0001.slice/cri-containerd-koordlet-node-test.scope"*) ;;
    *) fail "container not under kubepods.slice/.../cri-containerd-<id>.scope" ;;
  esac
else
  cat /tmp/import
  fail "ctr images import"
fi

# The test's own payload, with containerd serving and the image in k8s.io (CRI's
# namespace) for its pods.
if [ -x /koordlet/custom-payload.sh ]; then
  /koordlet/custom-payload.sh || fail "custom payload rc=$?"
fi

# Host binaries, built against the host's (older) glibc, on the guest's glibc with
# their other libraries from /koordlet/host/lib.
for b in /koordlet/host/bin/*; do
  [ -x "$b" ] || continue
  # Those with a --version; the rest (a test, a benchmark, a Go plugin) are the
  # custom payload's, which has run them already.
  case "$(basename "$b")" in koordlet | curl) ;; *) continue ;; esac
  out=$(LD_LIBRARY_PATH=/koordlet/host/lib "$b" --version 2>&1)
  r=$?
  echo "KOORDLET-NODE host binary $(basename "$b") rc=$r: $(echo "$out" | head -n 1)"
  [ $r -eq 0 ] || fail "host binary $b"
done

# Timings: CLOCK_MONOTONIC microseconds since the kernel started.
# UserspaceTimestamp: PID 1 started; the target's ActiveEnter: default target reached;
# containerd's ActiveEnter: READY=1 (socket served).
user=$(systemctl show -P UserspaceTimestampMonotonic)
target=$(systemctl show -P ActiveEnterTimestampMonotonic multi-user.target)
ctrd=$(systemctl show -P ActiveEnterTimestampMonotonic containerd.service)
echo "KOORDLET-NODE-TIMES init=$(secs "$user")s default-target=$(secs "$target")s containerd-ready=$(secs "$ctrd")s payload-end=$(up)s"
systemd-analyze time 2>/dev/null | head -n 1
echo "KOORDLET-NODE slowest units: $(systemd-analyze blame --no-pager 2>/dev/null | head -n 6 | tr -s ' ' | tr '\n' ',')"
failed=$(systemctl --failed --no-legend --plain 2>/dev/null | awk '{print $1}' | tr '\n' ' ')
echo "KOORDLET-NODE failed units: [${failed}]"
echo "KOORDLET-NODE memory: $(awk '/MemTotal|MemAvailable/ {printf "%s %d MiB  ", $1, $2/1024}' /proc/meminfo)"
echo "KOORDLET-RIG-RESULT rc=$rc"
# What a failed test left running (a container's sleep ignores SIGTERM: systemd-shutdown
# would wait 90 s for it): every process but PID 1 and this shell.
kill -KILL -1 2>/dev/null
# -f: straight to systemd-shutdown (kill, unmount, power off), no ordered stop.
systemctl poweroff -f
