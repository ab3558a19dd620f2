#!/usr/bin/env bash
# packaging-helm: the chart in packaging/charts/koordlet lints and renders with its
# defaults and with every value set (values-all.yaml); the rendered manifests
# decode as Kubernetes objects (`kubectl create --dry-run=client -o yaml
# --validate=false`, its discovery answered by a stand-in serving a real API
# server's captured discovery documents); the rendered objects carry
# what the values say (args, mounts, env, probes, image, resources, RBAC, security
# context); and every arg the DaemonSet passes, with the rendered NodeSLO file, is
# accepted by our own flag and config parser (koordlet --check). Negative controls
# show the check fails on a bad value.
#
# Usage: helm_test.sh path/to/koordlet
# Tools: helm and kubectl from /opt/koordlet-cpp/tools/bin (packaging/install-deps.sh);
# python3 for the discovery stand-in and the one deep JSON comparison.
set -euo pipefail

BIN=$(realpath "${1:?usage: helm_test.sh path/to/koordlet}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../e2e/lib.sh
. "$ROOT/tests/e2e/lib.sh"
CHART=$ROOT/packaging/charts/koordlet
VALUES_ALL=$ROOT/tests/packaging/values-all.yaml
VALUES_RO=$ROOT/tests/packaging/values-readonly-port.yaml
TOOLS=${KOORDLET_TOOLS_DIR:-/opt/koordlet-cpp/tools/bin}
HELM=$TOOLS/helm
KUBECTL=$TOOLS/kubectl

[ -x "$BIN" ] || fail "$BIN is not an executable"
if [ ! -x "$HELM" ] || [ ! -x "$KUBECTL" ]; then
  skip "helm or kubectl missing in $TOOLS (packaging/install-deps.sh installs them)"
fi
command -v python3 >/dev/null || skip "python3 missing (packaging/install-deps.sh installs it)"

# No cluster and no user configuration: nothing below may read ~/.kube, a
# KUBECONFIG or in-cluster settings, or open a connection but to the discovery
# stand-in (kcreate).
export HOME=$WORK/home KUBECONFIG=/dev/null
export HELM_CACHE_HOME=$WORK/helm/cache HELM_CONFIG_HOME=$WORK/helm/config \
  HELM_DATA_HOME=$WORK/helm/data
unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
mkdir -p "$HOME"

CHECKS=0
ok() { CHECKS=$((CHECKS + 1)); }
# expect WHAT GOT WANT
expect() {
  [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
  ok
}

# kdecode FILE [kubectl output flags]: decodes every object of FILE on the client
# alone, for reading fields: `label --local` builds the objects from the file
# without any mapping or server; the label it adds exists only in its output.
kdecode() {
  local f=$1
  shift
  "$KUBECTL" label --local --kubeconfig=/dev/null -f "$f" koordlet-helm-test=decoded "$@"
}
# jp FILE JSONPATH: one field of the (single) object in FILE.
jp() { kdecode "$1" -o jsonpath="$2"; }

# render NAME [helm flags...]: lints (--strict: warnings fail) and renders the chart
# into $WORK/NAME/all.yaml and one file per template.
render() {
  local name=$1 t
  shift
  local dir=$WORK/$name
  mkdir -p "$dir"
  "$HELM" lint --strict "$CHART" "$@" >"$dir/lint.log" 2>&1 ||
    { cat "$dir/lint.log" >&2; fail "$name: helm lint --strict failed"; }
  "$HELM" template koordlet "$CHART" "$@" >"$dir/all.yaml" 2>"$dir/template.err" ||
    { cat "$dir/template.err" >&2; fail "$name: helm template failed"; }
  for t in daemonset configmap service serviceaccount clusterrole clusterrolebinding namespace \
    servicemonitor prometheusrule grafana-dashboard; do
    # A template that renders nothing with these values leaves an empty file.
    "$HELM" template koordlet "$CHART" "$@" --show-only "templates/$t.yaml" \
      >"$dir/$t.yaml" 2>/dev/null || : >"$dir/$t.yaml"
  done
  ok
}

# --- discovery stand-in ----------------------------------------------------------
# `kubectl create --dry-run=client` writes nothing, but first maps each object's
# kind to a resource through the API server's discovery (GET /api, /apis and each
# group version's resource list), and no API server can run here. The stand-in
# serves only those documents, as a real k0s v1.21 kube-apiserver answered them,
# plus a hand-written resource list for the Prometheus Operator's ServiceMonitor
# (a CRD: no capture has it); anything else gets 404 and is logged
# (tests/support/kube_discovery/discovery_server.py).
DISCOVERY=$ROOT/tests/fixtures/kube-discovery
start_discovery() {
  python3 "$ROOT/tests/support/kube_discovery/discovery_server.py" "$WORK/discovery.log" \
    "$DISCOVERY/k0s-v1.21.0-k0s.0" "$DISCOVERY/crd-monitoring.coreos.com" \
    >"$WORK/discovery.port" 2>"$WORK/discovery.err" &
  PIDS+=("$!")
  disown # the trap kills it: no job report for that
  local port=""
  for _ in $(seq 1 100); do
    port=$(head -n1 "$WORK/discovery.port")
    [ -n "$port" ] && break
    kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$WORK/discovery.err" >&2; fail "the discovery stand-in exited at start"; }
    sleep 0.1
  done
  [ -n "$port" ] || fail "the discovery stand-in did not print its port within 10 s"
  cat >"$WORK/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: discovery-stand-in
  cluster: {server: "http://127.0.0.1:$port"}
contexts:
- name: discovery-stand-in
  context: {cluster: discovery-stand-in}
current-context: discovery-stand-in
EOF
}
# kcreate FILE: `kubectl create --dry-run=client` through the stand-in. Each run
# gets an empty discovery cache in $WORK, so each one reads the stand-in.
kcreate() {
  "$KUBECTL" --kubeconfig="$WORK/kubeconfig" --cache-dir="$(mktemp -d "$WORK/kube-cache.XXXXXX")" \
    create --dry-run=client -o yaml --validate=false -f "$1"
}
# kinds_of FILE: "apiVersion kind" of each top-level document of a multi-document
# YAML file, sorted.
kinds_of() {
  awk '/^---/ { if (k != "") print a " " k; a = k = "" }
    /^apiVersion: / { a = $2 } /^kind: / { k = $2 }
    END { if (k != "") print a " " k }' "$1" | sort
}

# decode_all NAME: `kubectl create --dry-run=client` takes every rendered object,
# and prints (one YAML document each) as many objects, of the same apiVersions and
# kinds, as helm rendered.
decode_all() {
  local dir=$WORK/$1
  kcreate "$dir/all.yaml" >"$dir/created.yaml" 2>"$dir/create.err" ||
    { cat "$dir/create.err" >&2; fail "$1: kubectl create --dry-run=client failed on the rendered manifests"; }
  [ ! -s "$dir/create.err" ] || { cat "$dir/create.err" >&2; fail "$1: kubectl create warned"; }
  kinds_of "$dir/all.yaml" >"$dir/rendered.kinds"
  kinds_of "$dir/created.yaml" >"$dir/created.kinds"
  [ -s "$dir/rendered.kinds" ] || fail "$1: helm rendered no object"
  expect "$1: objects created (dry run)" "$(tr '\n' ';' <"$dir/created.kinds")" \
    "$(tr '\n' ';' <"$dir/rendered.kinds")"
}
# created_kinds NAME: the kinds kubectl create printed, sorted, on one line.
created_kinds() { cut -d' ' -f2 "$WORK/$1/created.kinds" | sort | tr '\n' ' '; }

# typed_roundtrip NAME: decodes the DaemonSet into kubectl's typed apps/v1 structs
# and back (`set env --local` adding one variable, removed again below), then checks
# that every field of the rendered object survived. A misspelled or misplaced field
# is dropped by typed decoding, so this is the offline stand-in for the API server's
# strict field validation.
typed_roundtrip() {
  local dir=$WORK/$1
  "$KUBECTL" set env --local --kubeconfig=/dev/null -f "$dir/daemonset.yaml" \
    KOORDLET_HELM_TEST=1 -o json >"$dir/ds-typed.json" 2>"$dir/typed.err" ||
    { cat "$dir/typed.err" >&2; fail "$1: the DaemonSet does not decode into typed apps/v1 objects"; }
  kdecode "$dir/daemonset.yaml" -o json | python3 -c '
import json, sys
rendered = json.load(sys.stdin)
typed = json.load(open(sys.argv[1]))
rendered["metadata"]["labels"].pop("koordlet-helm-test")
env = typed["spec"]["template"]["spec"]["containers"][0]["env"]
assert env.pop() == {"name": "KOORDLET_HELM_TEST", "value": "1"}, env
def walk(a, b, path):
    if isinstance(a, dict):
        if not isinstance(b, dict):
            sys.exit(f"{path}: rendered an object, typed decoding gives {b!r}")
        for k, v in a.items():
            # A zero value (false, 0, "", empty) is omitted by typed encoding:
            # nothing is lost.
            if k not in b and v not in (False, 0, "", [], {}):
                sys.exit(f"{path}.{k}: dropped by typed decoding (unknown field?)")
            if k in b:
                walk(v, b[k], f"{path}.{k}")
    elif isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            sys.exit(f"{path}: list differs after typed decoding")
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{path}[{i}]")
    elif a != b:
        sys.exit(f"{path}: rendered {a!r}, typed decoding gives {b!r}")
walk(rendered, typed, "DaemonSet")
spec = rendered["spec"]["template"]["spec"]
volumes = {v["name"] for v in spec["volumes"]}
mounts = {m["name"] for m in spec["containers"][0]["volumeMounts"]}
if volumes != mounts:
    sys.exit(f"volumes {sorted(volumes)} and mounts {sorted(mounts)} differ")
' "$dir/ds-typed.json" || fail "$1: the DaemonSet does not survive typed decoding"
  ok
}

# args_of NAME: the DaemonSet's args, one a line.
args_of() {
  jp "$WORK/$1/daemonset.yaml" '{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}'
}
has_arg() { grep -qxF -- "$2" "$WORK/$1/args" || fail "$1: arg $2 missing from: $(tr '\n' ' ' <"$WORK/$1/args")"; ok; }
# gates_are NAME WANT: the rendered --feature-gates args, all of them: exactly one, WANT.
gates_are() { expect "$1: --feature-gates" "$(grep -- '^--feature-gates' "$WORK/$1/args" | tr '\n' ' ')" "--feature-gates=$2 "; }
# With no gate value the chart passes what Koordinator's chart passes with its
# koordlet.features empty (its koordlet DaemonSet template, koordinator-sh/charts).
KOORDINATOR_DEFAULT_GATES=BECPUEvict=true,BEMemoryEvict=true,CgroupReconcile=true,Accelerators=true
lacks_arg() { ! grep -q -- "^$2" "$WORK/$1/args" || fail "$1: arg $2 should not be rendered"; ok; }

# check_args NAME WANT_RC: runs koordlet --check with the rendered args, the
# rendered nodeslo.yaml standing in for the in-pod /etc/koordlet/nodeslo.yaml.
check_args() {
  local name=$1 want=$2 dir=$WORK/$1 rc=0 a
  jp "$dir/configmap.yaml" '{.data.nodeslo\.yaml}' >"$dir/nodeslo.yaml"
  local args=()
  while IFS= read -r a; do
    case $a in
      --config=/etc/koordlet/nodeslo.yaml) args+=("--config=$dir/nodeslo.yaml") ;;
      --config=*) fail "$name: unexpected config path $a" ;;
      *) args+=("$a") ;;
    esac
  done <"$dir/args"
  "$BIN" --check "${args[@]}" >"$dir/check.out" 2>"$dir/check.err" || rc=$?
  if [ "$rc" != "$want" ]; then
    cat "$dir/check.out" "$dir/check.err" >&2
    fail "$name: koordlet --check exited $rc, want $want"
  fi
  ok
}

echo "helm $("$HELM" version --template '{{.Version}}'), kubectl" \
  "$("$KUBECTL" version --client -o yaml | sed -n 's/^ *gitVersion: //p')"

# --- kubectl: the discovery stand-in, offline decoding ---------------------------
start_discovery
render default
# Negative control: a kind the server does not serve is refused, so the mapping
# really goes through the stand-in's documents.
sed 's/^kind: DaemonSet$/kind: DaemonSett/' "$WORK/default/all.yaml" >"$WORK/unknown-kind.yaml"
grep -q '^kind: DaemonSett$' "$WORK/unknown-kind.yaml" || fail "no DaemonSet to misspell"
if kcreate "$WORK/unknown-kind.yaml" >/dev/null 2>"$WORK/unknown-kind.err"; then
  fail "kubectl create --dry-run=client accepted kind DaemonSett"
fi
grep -q 'no matches for kind "DaemonSett" in version "apps/v1"' "$WORK/unknown-kind.err" ||
  { cat "$WORK/unknown-kind.err" >&2; fail "kubectl create failed on DaemonSett for another reason"; }
ok
# label --local makes no request at all (kubectl logs each request at -v=6).
kdecode "$WORK/default/all.yaml" -o name -v=6 >/dev/null 2>"$WORK/local.err"
if grep -Eq 'round_trippers|GET |POST ' "$WORK/local.err"; then
  cat "$WORK/local.err" >&2
  fail "kubectl label --local contacted a server"
fi
ok

# --- defaults ------------------------------------------------------------------
D=$WORK/default
decode_all default
typed_roundtrip default
args_of default >"$D/args"
# Koordinator-style namespace, no Namespace object, every object namespaced there.
[ ! -s "$D/namespace.yaml" ] || fail "default: a Namespace is rendered with createNamespace false"
expect "default: namespaces" \
  "$(kdecode "$D/all.yaml" -o jsonpath='{.metadata.namespace}{"\n"}' | grep . | sort -u)" \
  koordinator-system
expect "default: kinds" "$(created_kinds default)" \
  "ClusterRole ClusterRoleBinding ConfigMap DaemonSet Service ServiceAccount "

DS=$D/daemonset.yaml
P='.spec.template.spec'
C="$P.containers[0]"
# No registry host by default: the name make image's archive carries.
expect "default: image" "$(jp "$DS" "{$C.image}")" "koordlet-cpp/koordlet:0.1.0"
expect "default: hostPID" "$(jp "$DS" "{$P.hostPID}")" true
expect "default: hostNetwork" "$(jp "$DS" "{$P.hostNetwork}")" false
expect "default: no runtime class" "$(jp "$DS" "{$P.runtimeClassName}")" ""
expect "default: priority class" "$(jp "$DS" "{$P.priorityClassName}")" system-node-critical
expect "default: tolerations" "$(jp "$DS" "{$P.tolerations}")" '[{"operator":"Exists"}]'
expect "default: update strategy" "$(jp "$DS" '{.spec.updateStrategy}')" \
  '{"rollingUpdate":{"maxUnavailable":"20%"},"type":"RollingUpdate"}'
expect "default: service account" "$(jp "$DS" "{$P.serviceAccountName}")" koordlet
expect "default: token mounted" "$(jp "$DS" "{$P.automountServiceAccountToken}")" true
expect "default: skip-hookserver label" \
  "$(jp "$DS" '{.spec.template.metadata.labels.runtimeproxy\.koordinator\.sh/skip-hookserver}')" true
expect "default: NODE_NAME" "$(jp "$DS" "{$C.env[?(@.name==\"NODE_NAME\")].valueFrom.fieldRef.fieldPath}")" spec.nodeName
expect "default: NODE_IP" "$(jp "$DS" "{$C.env[?(@.name==\"NODE_IP\")].valueFrom.fieldRef.fieldPath}")" status.hostIP
expect "default: container port" "$(jp "$DS" "{$C.ports[0].name}:{$C.ports[0].containerPort}")" http-metrics:9316
expect "default: liveness" "$(jp "$DS" "{$C.livenessProbe.httpGet.path} {$C.livenessProbe.httpGet.port}")" "/healthz http-metrics"
expect "default: readiness" "$(jp "$DS" "{$C.readinessProbe.httpGet.path} {$C.readinessProbe.httpGet.port}")" "/readyz http-metrics"
expect "default: resources" "$(jp "$DS" "{$C.resources}")" \
  '{"limits":{"cpu":"500m","memory":"160Mi"},"requests":{"cpu":"150m","memory":"96Mi"}}'
# Least privilege: uid 0, no capability, nothing privileged.
S="$C.securityContext"
expect "default: security context" \
  "$(jp "$DS" "{$S.runAsUser} {$S.privileged} {$S.allowPrivilegeEscalation} {$S.readOnlyRootFilesystem} {$S.capabilities.drop} [{$S.capabilities.add}]")" \
  '0 false false true ["ALL"] []'
expect "default: seccomp" "$(jp "$DS" "{$P.securityContext.seccompProfile.type}")" RuntimeDefault

# mount NAME VOLUME HOSTPATH TYPE MOUNTPATH READONLY
mount_is() {
  local f=$WORK/$1/daemonset.yaml v=$2
  expect "$1: volume $v" \
    "$(jp "$f" "{$P.volumes[?(@.name==\"$v\")].hostPath.path} {$P.volumes[?(@.name==\"$v\")].hostPath.type} {$C.volumeMounts[?(@.name==\"$v\")].mountPath} [{$C.volumeMounts[?(@.name==\"$v\")].readOnly}]")" \
    "$3 $4 $5 [$6]"
}
mount_is default host-cgroup /sys/fs/cgroup Directory /host-cgroup/ ""
mount_is default host-sys /sys Directory /host-sys/ true
mount_is default host-sys-fs /sys/fs Directory /host-sys-fs/ ""
mount_is default host-nri /var/run/nri DirectoryOrCreate /host-var-run/nri true
mount_is default host-koordlet-state /var/run/koordlet DirectoryOrCreate /host-var-run/koordlet ""
mount_is default host-etc-hookserver /etc/runtime/hookserver.d DirectoryOrCreate /host-etc-hookserver/ ""
mount_is default host-koordlet-checkpoint-dir /var/run/koordlet/prediction-checkpoints DirectoryOrCreate /prediction-checkpoints ""
expect "default: /sys/fs propagation" \
  "$(jp "$DS" "{$C.volumeMounts[?(@.name==\"host-sys-fs\")].mountPropagation}")" HostToContainer
expect "default: nodeslo volume" \
  "$(jp "$DS" "{$P.volumes[?(@.name==\"nodeslo\")].configMap.name} {$C.volumeMounts[?(@.name==\"nodeslo\")].mountPath} {$C.volumeMounts[?(@.name==\"nodeslo\")].readOnly}")" \
  "$(jp "$D/configmap.yaml" '{.metadata.name}') /etc/koordlet/ true"
expect "default: no kubelet CA mount" "$(jp "$DS" "{$P.volumes[?(@.name==\"kubelet-ca\")].name}")" ""
# Args: every host path names its mount, NRI on, kubelet over HTTPS with the token,
# no verification (koordlet parity), Koordinator's chart's default gates, no resctrl mount.
for a in --addr=:9316 --v=2 --cgroup-root-dir=/host-cgroup/ --sys-root-dir=/host-sys/ \
  --sys-fs-root-dir=/host-sys-fs/ --proc-root-dir=/proc/ --var-run-root-dir=/host-var-run/ \
  --resctrl-state-file=/host-var-run/koordlet/resctrl-groups --audit-log-dir=/var/log/koordlet \
  --prediction-checkpoint-filepath=/prediction-checkpoints \
  --xpu-device-infos-dir=/host-var-run/koordlet/xpu-device-infos/ \
  --config=/etc/koordlet/nodeslo.yaml --enable-nri-runtime-hook=true \
  --runtime-hooks-nri-socket-path=nri/nri.sock --kubelet-secure-port=10250 \
  --kubelet-token-file=/var/run/secrets/kubernetes.io/serviceaccount/token \
  --kubelet-skip-tls-verify=true; do
  has_arg default "$a"
done
gates_are default "$KOORDINATOR_DEFAULT_GATES"
for a in --resctrl-mount --kubelet-ca-file --kubelet-insecure-tls; do
  lacks_arg default "$a"
done
expect "default: audit log volume" "$(jp "$DS" "{$P.volumes[?(@.name==\"audit-log\")].emptyDir.sizeLimit} {$C.volumeMounts[?(@.name==\"audit-log\")].mountPath}")" "32Mi /var/log/koordlet"
# Service and RBAC.
expect "default: service" \
  "$(jp "$D/service.yaml" '{.spec.type} {.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.selector}')" \
  "ClusterIP http-metrics 9316 http-metrics $(jp "$DS" '{.spec.selector.matchLabels}')"
for l in app.kubernetes.io/name app.kubernetes.io/instance; do
  k=${l//./\\.}
  expect "default: pod has selector label $l" "$(jp "$DS" "{.spec.template.metadata.labels.$k}")" \
    "$(jp "$DS" "{.spec.selector.matchLabels.$k}")"
done
# The API rules (Node, NodeSLO, NodeMetric and its status, NRT, Device, Evictions, Events), then the
# kubelet's.
API_RULES='{"apiGroups":[""],"resources":["nodes"],"verbs":["get","list","watch"]},{"apiGroups":["slo.koordinator.sh"],"resources":["nodeslos","nodemetrics"],"verbs":["get","list","watch"]},{"apiGroups":["slo.koordinator.sh"],"resources":["nodemetrics/status"],"verbs":["update"]},{"apiGroups":["topology.node.k8s.io"],"resources":["noderesourcetopologies"],"verbs":["get","list","watch","create","update"]},{"apiGroups":["scheduling.koordinator.sh"],"resources":["devices"],"verbs":["get","list","watch","create","update"]},{"apiGroups":[""],"resources":["pods/eviction"],"verbs":["create"]},{"apiGroups":[""],"resources":["events"],"verbs":["create"]}'
expect "default: cluster role" "$(jp "$D/clusterrole.yaml" '{.rules}')" \
  "[$API_RULES,"'{"apiGroups":[""],"resources":["nodes/proxy"],"verbs":["get"]}]'
expect "default: binding" \
  "$(jp "$D/clusterrolebinding.yaml" '{.roleRef.kind}{.roleRef.name}{.subjects[0].kind}/{.subjects[0].namespace}/{.subjects[0].name}')" \
  "ClusterRolekoordletServiceAccount/koordinator-system/koordlet"
[ ! -s "$D/servicemonitor.yaml" ] || fail "default: a ServiceMonitor is rendered"
[ ! -s "$D/prometheusrule.yaml" ] || fail "default: a PrometheusRule is rendered"
[ ! -s "$D/grafana-dashboard.yaml" ] || fail "default: the dashboard ConfigMap is rendered"
# The rendered args and NodeSLO pass our own parser, and the config is what the
# values say.
check_args default 0
grep -qx 'flags: ok' "$D/check.out" || fail "default: no 'flags: ok'"
grep -q "config: $D/nodeslo.yaml: ok" "$D/check.out" || fail "default: the config was not read"
grep -q '"cpuSuppressThresholdPercent": 65' "$D/check.out" || fail "default: threshold 65 not in the parsed config"
grep -q '"cpuSuppressPolicy": "cpuset"' "$D/check.out" || fail "default: policy not in the parsed config"
# Koordinator's default gates all act, Accelerators included: --check, which names
# every enabled gate without effect, names none of them.
if grep -Eq 'feature gate (Accelerators|BECPUEvict|BEMemoryEvict|CgroupReconcile) is enabled but has no effect' \
  "$D/check.out" "$D/check.err"; then
  fail "default: a default gate is said to have no effect"
fi
ok
echo "ok: defaults"

# --- every value set -------------------------------------------------------------
A=$WORK/all
render all -f "$VALUES_ALL"
decode_all all
typed_roundtrip all
args_of all >"$A/args"
DS=$A/daemonset.yaml
expect "all: kinds" "$(created_kinds all)" \
  "ClusterRole ClusterRoleBinding ConfigMap ConfigMap DaemonSet Namespace PrometheusRule Service ServiceAccount ServiceMonitor "
expect "all: namespace object" "$(jp "$A/namespace.yaml" '{.kind}/{.metadata.name}')" Namespace/koordlet-test
expect "all: namespaces" \
  "$(kdecode "$A/all.yaml" -o jsonpath='{.metadata.namespace}{"\n"}' | grep . | sort -u)" koordlet-test
expect "all: image" "$(jp "$DS" "{$C.image} {$C.imagePullPolicy}")" \
  "registry.example.com:5000/team/koordlet-cpp:9.9.9-test Always"
expect "all: pull secrets" "$(jp "$DS" "{$P.imagePullSecrets}")" '[{"name":"regcred"}]'
expect "all: resources" "$(jp "$DS" "{$C.resources}")" \
  '{"limits":{"cpu":"1","memory":"256Mi"},"requests":{"cpu":"150m","memory":"80Mi"}}'
expect "all: host network" "$(jp "$DS" "{$P.hostNetwork} {$P.dnsPolicy}")" "true ClusterFirstWithHostNet"
expect "all: port" "$(jp "$DS" "{$C.ports[0].containerPort}")" 19316
expect "all: GPU runtime class" "$(jp "$DS" "{$P.runtimeClassName}")" nvidia
expect "all: service port" "$(jp "$A/service.yaml" '{.spec.ports[0].port}')" 19316
expect "all: priority class" "$(jp "$DS" "{$P.priorityClassName}")" koordlet-critical
expect "all: update strategy" "$(jp "$DS" '{.spec.updateStrategy}')" '{"type":"OnDelete"}'
expect "all: node selector" "$(jp "$DS" "{$P.nodeSelector}")" '{"koordinator.sh/colocation":"true"}'
expect "all: node affinity" \
  "$(jp "$DS" "{$P.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key}")" \
  kubernetes.io/os
expect "all: tolerations" "$(jp "$DS" "{$P.tolerations}")" \
  '[{"effect":"NoSchedule","key":"dedicated","operator":"Equal","value":"colocation"}]'
# resctrl.mount: privileged with SYS_ADMIN, /sys/fs propagated both ways.
expect "all: security context" \
  "$(jp "$DS" "{$S.privileged} {$S.allowPrivilegeEscalation} {$S.readOnlyRootFilesystem} {$S.capabilities.drop} {$S.capabilities.add}")" \
  'true true true ["ALL"] ["SYS_ADMIN"]'
expect "all: /sys/fs propagation" \
  "$(jp "$DS" "{$C.volumeMounts[?(@.name==\"host-sys-fs\")].mountPropagation}")" Bidirectional
# NRI off: no socket mount. Kubelet verified against the host CA file.
expect "all: no NRI mount" "$(jp "$DS" "{$P.volumes[?(@.name==\"host-nri\")].name}")" ""
mount_is all kubelet-ca /etc/kubernetes/pki/kubelet-ca.crt File /etc/kubelet-ca/ca.crt true
mount_is all host-cgroup /sys/fs/cgroup Directory /host-cgroup/ ""
for a in --addr=:19316 --v=5 --enable-nri-runtime-hook=false --kubelet-secure-port=10251 \
  --kubelet-skip-tls-verify=false --kubelet-ca-file=/etc/kubelet-ca/ca.crt --resctrl-mount=true \
  --cpu-suppress-interval-seconds=2 --memory-qos-v1-soft-limit \
  --config=/etc/koordlet/nodeslo.yaml; do
  has_arg all "$a"
done
# Both gate values set: joined, featureGates first, and the default set is not added
# (Koordinator's chart passes a set value alone).
gates_are all CgroupReconcile=true,PSICollector=true,BECPUEvict=false
lacks_arg all --runtime-hooks-nri-socket-path
expect "all: extraArgs come last" "$(tail -n 2 "$A/args" | tr '\n' ' ')" \
  "--cpu-suppress-interval-seconds=2 --memory-qos-v1-soft-limit "
# The dashboard ConfigMap carries the Grafana sidecar's label and exactly the
# packaged dashboard; the PrometheusRule exactly the packaged rule groups.
python3 - "$A/grafana-dashboard.yaml" "$A/prometheusrule.yaml" "$ROOT/packaging/dashboards/koordlet-dashboard.json" \
  "$ROOT/packaging/alerts/koordlet-alerts.yaml" <<'PY' || fail "all: dashboard or alert rules not shipped as packaged"
import json, sys, yaml
cm, rule, dash, alerts = sys.argv[1:]
cm = yaml.safe_load(open(cm))
assert cm["metadata"]["labels"]["grafana_dashboard"] == "1", cm["metadata"]["labels"]
assert cm["metadata"]["namespace"] == "koordlet-test"
assert json.loads(cm["data"]["koordlet-dashboard.json"]) == json.load(open(dash))
rule = yaml.safe_load(open(rule))
assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
assert rule["spec"] == yaml.safe_load(open(alerts)), "PrometheusRule spec differs from the rule file"
PY
# The ServiceMonitor: kubectl's built-in scheme has no monitoring.coreos.com kinds,
# so it decodes only as an unstructured object (shown), and its fields are checked.
SM=$A/servicemonitor.yaml
if "$KUBECTL" set image --local --kubeconfig=/dev/null -f "$SM" x=y -o json >/dev/null 2>"$A/sm.err"; then
  fail "all: kubectl decoded the ServiceMonitor into a typed object: extend typed_roundtrip to it"
fi
grep -q 'no kind "ServiceMonitor" is registered' "$A/sm.err" || { cat "$A/sm.err" >&2; fail "all: ServiceMonitor typed decode failed unexpectedly"; }
expect "all: service monitor" \
  "$(jp "$SM" '{.apiVersion} {.metadata.namespace} {.spec.namespaceSelector.matchNames[0]} {.spec.endpoints[0].port} {.spec.endpoints[0].path} {.spec.selector.matchLabels}')" \
  "monitoring.coreos.com/v1 koordlet-test koordlet-test http-metrics /metrics $(jp "$A/service.yaml" '{.spec.selector}')"
for l in app.kubernetes.io/name app.kubernetes.io/instance; do
  k=${l//./\\.}
  expect "all: service has monitor's label $l" "$(jp "$A/service.yaml" "{.metadata.labels.$k}")" \
    "$(jp "$SM" "{.spec.selector.matchLabels.$k}")"
done
expect "all: cluster role (fine-grained kubelet authz)" "$(jp "$A/clusterrole.yaml" '{.rules}')" \
  "[$API_RULES,"'{"apiGroups":[""],"resources":["nodes/pods","nodes/configz"],"verbs":["get"]}]'
check_args all 0
grep -q '"cpuSuppressThresholdPercent": 55' "$A/check.out" || fail "all: threshold 55 not in the parsed config"
grep -q '"cpuSuppressPolicy": "cfsQuota"' "$A/check.out" || fail "all: policy cfsQuota not in the parsed config"
grep -q '"mbaPercent": 50' "$A/check.out" || fail "all: BE mbaPercent not in the parsed config"
echo "ok: every value set"

# --- kubelet read-only port: no kubelet token, no kubelet rule ---------------------
R=$WORK/readonly
render readonly -f "$VALUES_RO"
decode_all readonly
args_of readonly >"$R/args"
has_arg readonly --kubelet-insecure-tls=true
for a in --kubelet-token-file --kubelet-skip-tls-verify --kubelet-ca-file --kubelet-secure-port; do
  lacks_arg readonly "$a"
done
expect "readonly: cluster role has the API rules only" "$(jp "$R/clusterrole.yaml" '{.rules}')" \
  "[$API_RULES]"
[ -s "$R/clusterrolebinding.yaml" ] || fail "readonly: no binding for the API rules"
check_args readonly 0
echo "ok: kubelet read-only port"

# --- the stand-in saw discovery reads only ---------------------------------------------
# dry-run=client must never write: every request was a GET of a discovery document
# the stand-in holds (the request log is METHOD PATH STATUS ACCEPT).
[ -s "$WORK/discovery.log" ] || fail "kubectl made no request to the discovery stand-in"
if grep -Ev '^GET /apis?(/[^ ?]+)?(\?timeout=[0-9]+s)? 200 ' "$WORK/discovery.log"; then
  fail "kubectl create --dry-run=client made other requests than discovery reads (above)"
fi
for p in /api /apis /api/v1 /apis/apps/v1 /apis/rbac.authorization.k8s.io/v1 \
  /apis/monitoring.coreos.com/v1; do
  grep -q "^GET ${p}[? ]" "$WORK/discovery.log" || fail "kubectl never asked the stand-in for $p"
done
ok
echo "ok: kubectl create --dry-run=client read discovery only" \
  "($(wc -l <"$WORK/discovery.log") requests)"

# --- privileged alone: no SYS_ADMIN, no Bidirectional ---------------------------------
render privileged --set koordlet.privileged=true
expect "privileged: security context" \
  "$(jp "$WORK/privileged/daemonset.yaml" "{$S.privileged} {$S.allowPrivilegeEscalation} [{$S.capabilities.add}] {$C.volumeMounts[?(@.name==\"host-sys-fs\")].mountPropagation}")" \
  "true true [] HostToContainer"
# OOMScoreAdj on (named, or by AllAlpha): CAP_SYS_RESOURCE, which a negative
# oom_score_adj needs; named off under AllAlpha: not.
render oom --set featureGates=OOMScoreAdj=true
expect "oom: capabilities" "$(jp "$WORK/oom/daemonset.yaml" "{$S.capabilities.drop} {$S.capabilities.add}")" \
  '["ALL"] ["SYS_RESOURCE"]'
render oomoff --set 'featureGates=AllAlpha=true\,OOMScoreAdj=false'
expect "oomoff: capabilities" "$(jp "$WORK/oomoff/daemonset.yaml" "[{$S.capabilities.add}]")" "[]"
# Verification on without a host CA: the service account's cluster CA.
render verify --set koordlet.kubelet.insecureSkipTLSVerify=false
args_of verify >"$WORK/verify/args"
has_arg verify --kubelet-ca-file=/var/run/secrets/kubernetes.io/serviceaccount/ca.crt
has_arg verify --kubelet-skip-tls-verify=false
expect "verify: no host CA mount" "$(jp "$WORK/verify/daemonset.yaml" "{$P.volumes[?(@.name==\"kubelet-ca\")].name}")" ""
# koordlet.features alone is koordlet's gates under Koordinator's chart's name; a
# value, under either name, replaces the default set whole.
render features --set koordlet.features=CPUBurst=false
args_of features >"$WORK/features/args"
gates_are features CPUBurst=false
render gates --set featureGates=PSICollector=true
args_of gates >"$WORK/gates/args"
gates_are gates PSICollector=true
check_args gates 0
! grep -q 'Accelerators' "$WORK/gates/check.out" "$WORK/gates/check.err" ||
  fail "gates: Accelerators named though the user's gates replace the default set"
ok
echo "ok: privileged, verification with the cluster CA, feature gates set by the user"

# --- negative controls: the check can fail ------------------------------------------------
render badlevel --set koordlet.log.level=abc
args_of badlevel >"$WORK/badlevel/args"
check_args badlevel 2
grep -q -- '--v' "$WORK/badlevel/check.err" || fail "badlevel: the error does not name --v"
render badslo --set koordlet.nodeSLO.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent=150
args_of badslo >"$WORK/badslo/args"
check_args badslo 2
grep -q 'cpuSuppressThresholdPercent: 150 is out of range' "$WORK/badslo/check.err" ||
  fail "badslo: the error does not name the field"
render badarg --set 'koordlet.extraArgs[0]=--no-such-flag=1'
args_of badarg >"$WORK/badarg/args"
check_args badarg 2
grep -q 'no-such-flag' "$WORK/badarg/check.err" || fail "badarg: the error does not name the flag"
echo "ok: bad log level, bad NodeSLO and unknown flag fail koordlet --check"

# --- the chart README documents every value, and only values that exist ----------------
# Keys of values.yaml by indentation (block YAML, as the file is written); a documented
# key stands for everything under it (resources, nodeSLO, ...).
if ! python3 - "$CHART/values.yaml" "$CHART/README.md" >"$WORK/values-doc.out" 2>&1 <<'PY'
import re, sys
paths, stack = set(), []
for line in open(sys.argv[1]):
    m = re.match(r"^( *)([A-Za-z][A-Za-z0-9]*):", line)
    if not m:
        continue
    depth = len(m.group(1)) // 2
    stack = stack[:depth] + [m.group(2)]
    paths.add(".".join(stack))
doc = set(re.findall(r"^\| `([A-Za-z][A-Za-z0-9.]*)` \|", open(sys.argv[2]).read(), re.M))
problems = [f"README documents `{d}`, which values.yaml does not have" for d in sorted(doc - paths)]
leaves = {p for p in paths if not any(q.startswith(p + ".") for q in paths)}
for leaf in sorted(leaves):
    parts = leaf.split(".")
    if not any(".".join(parts[:i]) in doc for i in range(1, len(parts) + 1)):
        problems.append(f"values.yaml has `{leaf}`, which README does not document")
print("\n".join(problems) if problems else f"{len(doc)} documented values cover {len(leaves)} leaves")
sys.exit(1 if problems else 0)
PY
then
  cat "$WORK/values-doc.out" >&2
  fail "chart README's values table and values.yaml differ"
fi
ok
echo "ok: README values table: $(cat "$WORK/values-doc.out")"

echo "PASS: helm chart ($CHECKS checks)"
