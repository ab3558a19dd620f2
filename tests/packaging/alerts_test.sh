#!/usr/bin/env bash
# The alert rules (packaging/alerts/koordlet-alerts.yaml): promtool checks the file,
# then runs unit tests generated here, one scenario per alert: input series that
# must fire it (with its labels and its annotations rendered from them) and series
# that must not. A rule whose expression names a wrong metric, label or threshold
# fails here.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RULES="$ROOT/packaging/alerts/koordlet-alerts.yaml"
command -v promtool >/dev/null || { echo "promtool not installed (Debian package prometheus; make test installs it)" >&2; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

promtool check rules "$RULES"

python3 - "$RULES" "$WORK/tests.yaml" <<'PY'
import re, sys, yaml
rules_path, out = sys.argv[1], sys.argv[2]
rules = {r["alert"]: r for g in yaml.safe_load(open(rules_path))["groups"] for r in g["rules"]}

# alert -> (input series, eval time, labels of the alert that must fire, series
# that must not fire it)
N = 'node="n1"'
scenarios = {
  "KoordletDown": (
    [('up{job="koordlet",instance="10.0.0.1:9316"}', "1 1 0x10"),
     ('up{job="koordlet",instance="10.0.0.2:9316"}', "1x12")],
    "9m", [{"job": "koordlet", "instance": "10.0.0.1:9316"}]),
  "KoordletCollectionStalled": (
    [(f'koordlet_collect_rounds_total{{{N},collector="node"}}', "0+60x5 300x15"),
     ('koordlet_collect_rounds_total{node="n2",collector="node"}', "0+60x20")],
    "18m", [{"node": "n1", "collector": "node"}]),
  "KoordletNodeMetricNotReported": (
    # last report at t=0 on n1; n2 reports every minute (value = the eval time).
    [(f'koordlet_node_metric_last_report_timestamp_seconds{{{N}}}', "0x20"),
     ('koordlet_node_metric_last_report_timestamp_seconds{node="n2"}', "0+60x20")],
    "16m", [{"node": "n1"}]),
  "KoordletCgroupWritesRefused": (
    [(f'koordlet_resource_update_refused_total{{{N},reason="out_of_range"}}', "0 0 0 1 1 1"),
     (f'koordlet_resource_update_refused_total{{{N},reason="second_owner"}}', "0x5")],
    "5m", [{"node": "n1", "reason": "out_of_range"}]),
  "KoordletCgroupWritesFailing": (
    # The histogram has no node label (koordlet's): the node comes from koordlet_build_info.
    [('koordlet_resource_update_duration_milliseconds_count{instance="i1",status="busy",type="cgroup"}', "0+1x30"),
     ('koordlet_resource_update_duration_milliseconds_count{instance="i1",status="succeeded",type="cgroup"}', "0+10x30"),
     (f'koordlet_build_info{{instance="i1",{N},version="v",compiler="g"}}', "1x30")],
    "25m", [{"node": "n1", "status": "busy"}]),
  "KoordletPaused": (
    [(f'koordlet_agent_paused{{{N}}}', "1x40"),
     ('koordlet_agent_paused{node="n2"}', "0x40")],
    "35m", [{"node": "n1"}]),
}
missing = set(rules) - set(scenarios)
assert not missing, f"alerts without a scenario: {missing}"

def render(text, labels):
    return re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), text)

def series_labels(s):
    return dict(re.findall(r'(\w+)="([^"]*)"', s))

tests = []
for alert, (series, at, firing) in scenarios.items():
    rule = rules[alert]
    exp = []
    for want in firing:
        # The alert keeps the series' labels the expression keeps, plus the rule's.
        labels = dict(want)
        labels.update(rule.get("labels", {}))
        ann = {k: render(v, labels) for k, v in rule.get("annotations", {}).items()}
        exp.append({"exp_labels": labels, "exp_annotations": ann})
    tests.append({"interval": "1m",
                  "input_series": [{"series": s, "values": v} for s, v in series],
                  "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": exp},
                                      # and nothing before its `for` (or its window) has passed
                                      {"eval_time": "1m", "alertname": alert, "exp_alerts": []}]})
yaml.safe_dump({"rule_files": [rules_path], "evaluation_interval": "1m", "tests": tests},
               open(out, "w"), sort_keys=False, width=1000)
PY
promtool test rules "$WORK/tests.yaml"
echo "ok: promtool checked every alert rule and ran its firing and quiet cases"
