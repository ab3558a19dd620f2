#!/usr/bin/env python3
"""The chart's koordlet pod as `podman run` flags (tests/packaging/image_test.sh).

    podman_args.py DAEMONSET.json CONFIGMAP.json WORKDIR NODE_NAME

Reads the rendered DaemonSet and NodeSLO ConfigMap (decoded to JSON by kubectl) and
writes, NUL-separated: WORKDIR/podman-flags (the pod's settings as podman flags) and
WORKDIR/args (the container's args); prints "PORT LIVENESS_PATH READINESS_PATH".

What a kubelet would do with the pod, as far as one host allows: host PID and network
namespaces; the container's env (downward API: spec.nodeName is NODE_NAME,
status.hostIP 127.0.0.1); every volume mounted where the chart mounts it, hostPath
volumes of type Directory from the host itself with the chart's propagation,
DirectoryOrCreate ones from WORKDIR/host/<path> (the test creates nothing on the host),
the ConfigMap as files, emptyDir as tmpfs; the security context (user, read-only root
with no tmpfs added, capabilities, privileged, no-new-privileges) and the resource
limits. A field it does not know fails the test rather than being dropped.
"""

import json
import os
import sys

PROPAGATION = {None: "rprivate", "None": "rprivate", "HostToContainer": "rslave",
               "Bidirectional": "rshared"}


def die(msg):
    print(f"podman_args: {msg}", file=sys.stderr)
    sys.exit(1)


def quantity_bytes(q):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 10**3, "M": 10**6, "G": 10**9}
    for u, m in units.items():
        if q.endswith(u):
            return int(q[: -len(u)]) * m
    return int(q)


def cpus(q):
    return int(q[:-1]) / 1000 if q.endswith("m") else float(q)


def main():
    ds_path, cm_path, work, node = sys.argv[1:5]
    with open(ds_path) as f:
        ds = json.load(f)
    with open(cm_path) as f:
        cm = json.load(f)
    pod = ds["spec"]["template"]["spec"]
    (c,) = [c for c in pod["containers"] if c["name"] == "koordlet"]
    flags = []
    if pod.get("hostPID"):
        flags.append("--pid=host")
    if pod.get("hostNetwork"):
        flags.append("--network=host")
    else:
        die("the test needs hostNetwork (--set koordlet.hostNetwork=true) to reach the port")

    for e in c.get("env", []):
        if "value" in e:
            value = e["value"]
        else:
            field = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            value = {"spec.nodeName": node, "status.hostIP": "127.0.0.1"}.get(field)
            if value is None:
                die(f"env {e['name']}: no stand-in for {e.get('valueFrom')}")
        flags.append(f"--env={e['name']}={value}")

    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        v = volumes[m["name"]]
        target = m["mountPath"]
        opts = ["ro" if m.get("readOnly") else "rw"]
        if "hostPath" in v:
            hp = v["hostPath"]
            kind = hp.get("type", "")
            if kind in ("Directory", "File"):
                if not os.path.exists(hp["path"]):
                    die(f"volume {m['name']}: host path {hp['path']} does not exist")
                src = hp["path"]
            elif kind == "DirectoryOrCreate":
                src = os.path.join(work, "host", hp["path"].lstrip("/"))
                os.makedirs(src, exist_ok=True)
            else:
                die(f"volume {m['name']}: hostPath type '{kind}' not known here")
            opts.append(PROPAGATION[m.get("mountPropagation")])
            flags.append(f"--volume={src}:{target}:{','.join(opts)}")
        elif "configMap" in v:
            if v["configMap"]["name"] != cm["metadata"]["name"]:
                die(f"volume {m['name']}: ConfigMap {v['configMap']['name']} is not the rendered one")
            src = os.path.join(work, "configmap", m["name"])
            os.makedirs(src, exist_ok=True)
            for key, text in cm.get("data", {}).items():
                with open(os.path.join(src, key), "w") as f:
                    f.write(text)
            flags.append(f"--volume={src}:{target}:{','.join(opts)}")
        elif "emptyDir" in v:
            size = v["emptyDir"].get("sizeLimit")
            # A kubelet makes emptyDir 0777.
            tmpfs = f"--tmpfs={target}:rw,mode=0777"
            flags.append(tmpfs + (f",size={quantity_bytes(size)}" if size else ""))
        else:
            die(f"volume {m['name']}: kind {sorted(v)} not known here")

    sc = c.get("securityContext", {})
    if "runAsUser" in sc:
        flags.append(f"--user={sc['runAsUser']}:{sc.get('runAsGroup', sc['runAsUser'])}")
    if sc.get("readOnlyRootFilesystem"):
        # A kubelet adds no tmpfs on /run, /tmp, /var/tmp; podman does unless told.
        flags += ["--read-only", "--read-only-tmpfs=false"]
    if sc.get("privileged"):
        flags.append("--privileged")
    if sc.get("allowPrivilegeEscalation") is False:
        flags.append("--security-opt=no-new-privileges")
    caps = sc.get("capabilities", {})
    flags += [f"--cap-drop={x}" for x in caps.get("drop", [])]
    flags += [f"--cap-add={x}" for x in caps.get("add", [])]
    if pod.get("securityContext", {}).get("seccompProfile", {}).get("type", "RuntimeDefault") \
            != "RuntimeDefault":
        die("seccomp profile other than RuntimeDefault (podman's default) not known here")

    limits = c.get("resources", {}).get("limits", {})
    if "memory" in limits:
        flags.append(f"--memory={quantity_bytes(limits['memory'])}")
    if "cpu" in limits:
        flags.append(f"--cpus={cpus(limits['cpu'])}")

    for name, items in (("podman-flags", flags), ("args", c.get("args", []))):
        with open(os.path.join(work, name), "w") as f:
            f.write("".join(x + "\0" for x in items))
    (port,) = [p["containerPort"] for p in c["ports"] if p["name"] == "http-metrics"]
    print(port, c["livenessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["path"])


if __name__ == "__main__":
    main()
