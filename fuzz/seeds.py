#!/usr/bin/env python3
"""Assembles each fuzz target's seed corpus from the real captures in tests/fixtures.

    seeds.py [--replay] <source root> <out dir> [<nri seeds dir>]

Writes <out dir>/<target>/<sha1 prefix> files: the captures each target parses, cut
to what libFuzzer mutates well (a file over MAX_BYTES is left out, a kubelet PodList
is split into one-pod lists), deduplicated by content, plus the hand-written inputs
of tests/fuzz/seeds/<target>/ and, for the NRI targets, the conversations nri_seeds
wrote (NRI has no captured traffic). Nothing is copied into the source tree.
--replay (the fuzz-inputs test) keeps every capture whole as well, large ones too.
"""
import hashlib
import json
import os
import sys

MAX_BYTES = 16 * 1024

# target -> fixture paths (files or directories, read recursively) under tests/fixtures
SOURCES = {
    "fuzz_proc": ["proc", "sysfs"],
    "fuzz_cgroup": ["cgroup"],
    "fuzz_resctrl": ["resctrl"],
    "fuzz_kubelet": ["kubelet"],
    "fuzz_nodeslo": ["koordinator"],
    "fuzz_api_object": ["kube-api"],
    "fuzz_watch": ["kube-api"],
    "fuzz_http_request": [],
    "fuzz_nri_session": [],
    "fuzz_nri_ttrpc": [],
    "fuzz_proxy_hooks": [],
    "fuzz_prediction": ["prediction"],
}
# File name suffixes a target skips (the kube-api captures hold bodies, headers and
# watch streams side by side).
SKIP_SUFFIX = {
    "fuzz_api_object": (".headers", ".raw", ".md"),
    "fuzz_watch": (".headers", ".body", ".md"),
}
NRI_TARGETS = ("fuzz_nri_session", "fuzz_nri_ttrpc")


def files_under(path):
    if os.path.isfile(path):
        yield path
        return
    for root, _, names in os.walk(path):
        for name in sorted(names):
            yield os.path.join(root, name)


def split_pod_list(data):
    """A kubelet PodList: one list per pod (each a real pod, small enough to mutate)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return [data]
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        return [data]
    out = []
    for item in doc["items"]:
        one = dict(doc, items=[item])
        out.append(json.dumps(one, separators=(",", ":")).encode())
    return out


def cfs_pairs(path):
    """cgroup v1 dirs holding both cpu.cfs_quota_us and cpu.cfs_period_us: one input,
    quota NUL period, as the cgroup target splits it."""
    for root, _, names in os.walk(path):
        if "cpu.cfs_quota_us" in names and "cpu.cfs_period_us" in names:
            with open(os.path.join(root, "cpu.cfs_quota_us"), "rb") as q, \
                 open(os.path.join(root, "cpu.cfs_period_us"), "rb") as p:
                yield q.read() + b"\0" + p.read()


def main():
    args = sys.argv[1:]
    replay = bool(args) and args[0] == "--replay"
    if replay:
        args = args[1:]
    src, out = args[0], args[1]
    nri_dir = args[2] if len(args) > 2 else None
    fixtures = os.path.join(src, "tests", "fixtures")
    total = 0
    for target, paths in SOURCES.items():
        seeds = []
        for rel in paths:
            for f in files_under(os.path.join(fixtures, rel)):
                if f.endswith(SKIP_SUFFIX.get(target, ())) or f.endswith(".md"):
                    continue
                with open(f, "rb") as fh:
                    data = fh.read()
                if target == "fuzz_kubelet" and f.endswith("pods.json") or \
                   target == "fuzz_kubelet" and "payload" in f:
                    seeds.extend(split_pod_list(data))
                    if replay:
                        seeds.append(data)
                else:
                    seeds.append(data)
        if target == "fuzz_cgroup":
            seeds.extend(cfs_pairs(os.path.join(fixtures, "cgroup")))
        if target in NRI_TARGETS and nri_dir:
            seeds.extend(open(f, "rb").read() for f in files_under(nri_dir))
        hand = os.path.join(src, "tests", "fuzz", "seeds", target)
        if os.path.isdir(hand):
            seeds.extend(open(f, "rb").read() for f in files_under(hand))
        dest = os.path.join(out, target)
        os.makedirs(dest, exist_ok=True)
        kept = set()
        for data in seeds:
            if len(data) > MAX_BYTES and not replay:
                continue
            name = hashlib.sha1(data).hexdigest()[:16]
            if name in kept:
                continue
            kept.add(name)
            with open(os.path.join(dest, name), "wb") as fh:
                fh.write(data)
        if not kept:
            sys.exit("seeds.py: no seeds for " + target)
        total += len(kept)
    print("seeds.py: %d seeds for %d targets in %s" % (total, len(SOURCES), out))


if __name__ == "__main__":
    main()
