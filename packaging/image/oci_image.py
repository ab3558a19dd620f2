#!/usr/bin/env python3
"""Writes the agent's image as an OCI image layout archive (the file `make image` makes).

    oci_image.py --containerfile packaging/Containerfile --rootfs DIR --binary BIN
                 --repo REPO --name NAME:TAG --arch ARCH --epoch SECONDS --out FILE.tar

The image's settings come from the runtime stage of the Containerfile, so `docker build`
and `make image` cannot disagree: its ENTRYPOINT, CMD, EXPOSE, LABELs (${VERSION} from
the tag), `COPY --from=build <built binary> DST` (BIN goes to DST) and `COPY SRC DST`
(REPO/SRC goes to DST), ENV (KEY=VALUE pairs, after PATH) and `RUN ln -s TARGET LINK`
(a symlink in the layer). Its other RUN installs the runtime packages, whose libraries
build-image.sh extracted into DIR; an instruction this script does not know is an error.

One layer: DIR plus the copied files. Deterministic: entries sorted, owned by 0:0, every
mtime and the config's `created` at --epoch, gzip without name or time, JSON with sorted
keys; the same inputs give the same bytes.
"""

import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import re
import shlex
import stat
import sys
import tarfile

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
# Docker's default PATH: what the Debian base image of the Containerfile sets.
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The Containerfile's runtime stage names its base image in this label; this image
# has none.
BASE_LABEL = "org.opencontainers.image.base.name"


def die(msg):
    print(f"oci_image: {msg}", file=sys.stderr)
    sys.exit(1)


def runtime_stage(path):
    """Instructions of the last stage: (KEYWORD, rest), continuation lines joined."""
    lines, cur = [], ""
    with open(path, encoding="utf-8") as f:
        for raw in f:
            s = raw.rstrip("\n")
            if not cur and s.lstrip().startswith("#"):
                continue
            if s.lstrip().startswith("#"):  # a comment inside a continued instruction
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            cur += s
            if cur.strip():
                lines.append(cur.strip())
            cur = ""
    froms = [i for i, line in enumerate(lines) if line.upper().startswith("FROM ")]
    if not froms:
        die(f"{path}: no FROM")
    stage = lines[froms[-1] + 1:]
    out = []
    for line in stage:
        kw, _, rest = line.partition(" ")
        out.append((kw.upper(), rest.strip()))
    return out


def settings(containerfile, version):
    """Entrypoint, Cmd, ports, labels and [(src, dst)] copies of the runtime stage."""
    conf = {"Entrypoint": None, "Cmd": None, "ports": [], "labels": {}, "copies": [],
            "binary_dst": None, "env": [], "links": []}
    args = {}
    for kw, rest in runtime_stage(containerfile):
        if kw == "ARG":
            name, _, default = rest.partition("=")
            args[name] = default
        elif kw in ("ENTRYPOINT", "CMD"):
            try:
                value = json.loads(rest)
            except json.JSONDecodeError:
                die(f"{kw} is not an exec-form JSON array: {rest}")
            conf["Entrypoint" if kw == "ENTRYPOINT" else "Cmd"] = value
        elif kw == "EXPOSE":
            for p in rest.split():
                conf["ports"].append(p if "/" in p else p + "/tcp")
        elif kw == "LABEL":
            for pair in shlex.split(rest):
                k, _, v = pair.partition("=")
                conf["labels"][k] = v
        elif kw == "COPY":
            words = rest.split()
            if words[0].startswith("--from="):
                if len(words) != 3:
                    die(f"COPY --from with other than one source: {rest}")
                conf["binary_dst"] = words[2]
            elif len(words) == 2 and not words[0].startswith("--"):
                conf["copies"].append((words[0], words[1]))
            else:
                die(f"COPY form this script does not know: {rest}")
        elif kw == "ENV":
            for pair in shlex.split(rest):
                k, eq, v = pair.partition("=")
                if not eq or not k:
                    die(f"ENV form this script does not know (KEY=VALUE only): {rest}")
                # docker build expands $VAR and replaces PATH; this script does neither.
                if "$" in v or k == "PATH":
                    die(f"ENV with $ or of PATH: teach {__file__} docker's rules first: {rest}")
                conf["env"].append(f"{k}={v}")
        elif kw == "RUN" and rest.startswith("ln "):
            words = shlex.split(rest)
            if len(words) != 4 or words[1] != "-s":
                die(f"RUN ln form this script does not know (ln -s TARGET LINK only): {rest}")
            conf["links"].append((words[3], words[2]))
        elif kw == "RUN":
            pass  # the runtime packages: build-image.sh put their libraries in --rootfs
        else:
            die(f"{containerfile}: instruction {kw} in the runtime stage: teach {__file__} it")
    # The Containerfile's version is its ARG's default; make image states its own.
    args["VERSION"] = version
    for k, v in conf["labels"].items():
        conf["labels"][k] = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), ""), v)
    conf["labels"].pop(BASE_LABEL, None)
    if not conf["Entrypoint"] or conf["binary_dst"] is None:
        die("the runtime stage has no ENTRYPOINT or no COPY --from=build")
    return conf


def tar_info(name, mode, epoch, kind=tarfile.REGTYPE, size=0, link=""):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.mtime, ti.size, ti.linkname = kind, mode, epoch, size, link
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    return ti


def layer(rootfs, extra, links, epoch):
    """The uncompressed layer: rootfs's tree plus extra {path in image: (source, mode)}
    and links [(path in image, target)]."""
    entries = {}  # image path (no leading /) -> (TarInfo, source file or None)
    for dirpath, dirnames, filenames in os.walk(rootfs):
        rel = os.path.relpath(dirpath, rootfs)
        for name in dirnames + filenames:
            src = os.path.join(dirpath, name)
            path = os.path.normpath(os.path.join(rel, name))
            st = os.lstat(src)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                entries[path] = (tar_info(path, 0o777, epoch, tarfile.SYMTYPE,
                                          link=os.readlink(src)), None)
            elif stat.S_ISDIR(st.st_mode):
                entries[path] = (tar_info(path, mode, epoch, tarfile.DIRTYPE), None)
            elif stat.S_ISREG(st.st_mode):
                entries[path] = (tar_info(path, mode, epoch, size=st.st_size), src)
            else:
                die(f"{src}: neither file, directory nor symlink")
    for dst, (src, mode) in extra.items():
        path = dst.lstrip("/")
        parent = os.path.dirname(path)
        while parent and parent not in entries:
            entries[parent] = (tar_info(parent, 0o755, epoch, tarfile.DIRTYPE), None)
            parent = os.path.dirname(parent)
        entries[path] = (tar_info(path, mode, epoch, size=os.path.getsize(src)), src)
    for dst, target in links:
        path = dst.lstrip("/")
        if path in entries:
            die(f"RUN ln -s {target} {dst}: {dst} is already in the image")
        entries[path] = (tar_info(path, 0o777, epoch, tarfile.SYMTYPE, link=target), None)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for path in sorted(entries):
            ti, src = entries[path]
            if src is None:
                t.addfile(ti)
            else:
                with open(src, "rb") as f:
                    t.addfile(ti, f)
    return buf.getvalue()


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for a in ("containerfile", "rootfs", "binary", "repo", "name", "arch", "out"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--epoch", type=int, required=True)
    ap.add_argument("--history", default="", help="created_by of the layer's history entry")
    o = ap.parse_args()

    repo_name, _, tag = o.name.rpartition(":")
    if not repo_name or not tag:
        die(f"--name {o.name} is not NAME:TAG")
    conf = settings(o.containerfile, tag)
    extra = {conf["binary_dst"]: (o.binary, 0o755)}
    for src, dst in conf["copies"]:
        extra[dst] = (os.path.join(o.repo, src), 0o644)

    created = datetime.datetime.fromtimestamp(o.epoch, datetime.timezone.utc)
    created = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    raw = layer(o.rootfs, extra, conf["links"], o.epoch)
    gz = gzip.compress(raw, compresslevel=9, mtime=0)

    config = {
        "created": created,
        "architecture": o.arch,
        "os": "linux",
        "config": {
            "Env": [DEFAULT_PATH] + conf["env"],
            "Entrypoint": conf["Entrypoint"],
            "Cmd": conf["Cmd"] or [],
            "ExposedPorts": {p: {} for p in conf["ports"]},
            "Labels": conf["labels"],
        },
        "rootfs": {"type": "layers", "diff_ids": [digest(raw)]},
        "history": [{"created": created, "created_by": o.history}],
    }
    config_blob = canonical(config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MT_MANIFEST,
        "config": {"mediaType": MT_CONFIG, "digest": digest(config_blob),
                   "size": len(config_blob)},
        "layers": [{"mediaType": MT_LAYER, "digest": digest(gz), "size": len(gz)}],
    }
    manifest_blob = canonical(manifest)
    # ref.name is the name podman and skopeo give the image; containerd's import
    # (ctr images import) reads io.containerd.image.name first, and the CRI plugin
    # looks images up by their normalised name: docker.io/ for a name with no host.
    first = repo_name.split("/")[0]
    full = o.name if ("." in first or ":" in first or first == "localhost") \
        else "docker.io/" + o.name
    index = {
        "schemaVersion": 2,
        "mediaType": MT_INDEX,
        "manifests": [{
            "mediaType": MT_MANIFEST,
            "digest": digest(manifest_blob),
            "size": len(manifest_blob),
            "platform": {"architecture": o.arch, "os": "linux"},
            "annotations": {
                "org.opencontainers.image.ref.name": o.name,
                "io.containerd.image.name": full,
            },
        }],
    }

    files = [("oci-layout", canonical({"imageLayoutVersion": "1.0.0"})),
             ("index.json", canonical(index))]
    for blob in (config_blob, manifest_blob, gz):
        files.append(("blobs/sha256/" + digest(blob)[len("sha256:"):], blob))
    tmp = o.out + ".tmp"
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as t:
        for d in ("blobs", "blobs/sha256"):
            t.addfile(tar_info(d, 0o755, o.epoch, tarfile.DIRTYPE))
        for name, data in sorted(files):
            t.addfile(tar_info(name, 0o644, o.epoch, size=len(data)), io.BytesIO(data))
    os.replace(tmp, o.out)
    print(f"{o.out}: {o.name} {digest(manifest_blob)}, layer {len(gz)} bytes "
          f"({len(raw)} uncompressed)")


if __name__ == "__main__":
    main()
