#!/usr/bin/env python3
"""A DaemonSet's koordlet pod as `podman run` flags (tests/packaging/image_test.sh).

    podman_args.py DAEMONSET.json CONFIGMAP.json|- WORKDIR NODE_NAME
                   [--source=HOSTPATH=DIR...] [PRIVATE_PREFIX...]

Reads the rendered DaemonSet (this project's chart's, or Koordinator's) and the NodeSLO
ConfigMap it mounts ("-": none), decoded to JSON by kubectl, and writes, NUL-separated:
WORKDIR/podman-flags (the pod's settings as podman flags, the container's command as
--entrypoint) and WORKDIR/args (the container's args); prints "PORT LIVENESS_PATH
READINESS_PATH" ("-" for a probe the spec lacks; the port from the container's ports,
else from its --addr flag).

What a kubelet would do with the pod, as far as one host allows: host PID and network
namespaces; the container's env (downward API: spec.nodeName is NODE_NAME,
status.hostIP 127.0.0.1); every volume mounted where the spec mounts it, with its
propagation: hostPath volumes of type Directory or File from the host itself, those of
type "" (no check) from the host when the path exists there and from
WORKDIR/host/<path> when not (containerd creates a missing one; the test creates
nothing on the host), DirectoryOrCreate ones from WORKDIR/host/<path>, and any hostPath
under a PRIVATE_PREFIX from WORKDIR/host/<path> too (the state the agent writes: the
test keeps it off the host); a hostPath named by --source from that DIR instead (a
private cgroup subtree for the host's /sys/fs/cgroup); the ConfigMap as files, an
emptyDir of medium Memory as tmpfs and one on the node's disk as WORKDIR/emptydir/<name>
(where the test reads what the agent wrote there); the security
context (user, read-only root with no tmpfs added, capabilities, privileged,
no-new-privileges) and the resource limits. A field it does not know fails the test
rather than being dropped.
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
    sources = {}
    private = []
    for a in sys.argv[5:]:
        if a.startswith("--source="):
            host, _, src = a[len("--source="):].partition("=")
            sources[host.rstrip("/")] = src
        else:
            private.append(a.rstrip("/") + "/")
    with open(ds_path) as f:
        ds = json.load(f)
    cm = None
    if cm_path != "-":
        with open(cm_path) as f:
            cm = json.load(f)
    pod = ds["spec"]["template"]["spec"]
    (c,) = [c for c in pod["containers"] if c["name"] == "koordlet"]
    flags = []
    if "command" in c:
        flags.append("--entrypoint=" + json.dumps(c["command"]))
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
            mine = os.path.join(work, "host", hp["path"].lstrip("/"))
            if hp["path"].rstrip("/") in sources:
                src = sources[hp["path"].rstrip("/")]
            elif any((hp["path"].rstrip("/") + "/").startswith(p) for p in private):
                if kind == "File":
                    die(f"volume {m['name']}: a private File {hp['path']} not known here")
                src = mine
                os.makedirs(src, exist_ok=True)
            elif kind in ("Directory", "File"):
                if not os.path.exists(hp["path"]):
                    die(f"volume {m['name']}: host path {hp['path']} does not exist")
                src = hp["path"]
            elif kind == "":
                src = hp["path"] if os.path.exists(hp["path"]) else mine
                if src == mine:
                    os.makedirs(src, exist_ok=True)
            elif kind == "DirectoryOrCreate":
                src = mine
                os.makedirs(src, exist_ok=True)
            else:
                die(f"volume {m['name']}: hostPath type '{kind}' not known here")
            opts.append(PROPAGATION[m.get("mountPropagation")])
            flags.append(f"--volume={src}:{target}:{','.join(opts)}")
        elif "configMap" in v:
            if cm is None or v["configMap"]["name"] != cm["metadata"]["name"]:
                die(f"volume {m['name']}: ConfigMap {v['configMap']['name']} is not the rendered one")
            src = os.path.join(work, "configmap", m["name"])
            os.makedirs(src, exist_ok=True)
            for key, text in cm.get("data", {}).items():
                with open(os.path.join(src, key), "w") as f:
                    f.write(text)
            flags.append(f"--volume={src}:{target}:{','.join(opts)}")
        elif "emptyDir" in v:
            if v["emptyDir"].get("medium", "") not in ("", "Memory"):
                die(f"volume {m['name']}: emptyDir medium {v['emptyDir']['medium']} not known here")
            size = v["emptyDir"].get("sizeLimit")
            if v["emptyDir"].get("medium", "") == "":
                # A kubelet makes it a 0777 dir on the node's disk.
                src = os.path.join(work, "emptydir", m["name"])
                os.makedirs(src, exist_ok=True)
                os.chmod(src, 0o777)
                flags.append(f"--volume={src}:{target}:rw")
                continue
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
    if "ports" in c:
        (port,) = [p["containerPort"] for p in c["ports"] if p["name"] == "http-metrics"]
    else:  # koordlet's pod names no port: its -addr flag says it
        addrs = [a.split("=", 1)[1] for a in c.get("args", [])
                 if a.lstrip("-").startswith("addr=")]
        if not addrs or ":" not in addrs[-1]:
            die("no ports and no --addr=HOST:PORT in the args")
        port = int(addrs[-1].rsplit(":", 1)[1])

    def probe(name):
        return c[name]["httpGet"]["path"] if name in c else "-"
    print(port, probe("livenessProbe"), probe("readinessProbe"))


if __name__ == "__main__":
    main()
