#!/usr/bin/env python3
"""A stand-in for a Kubernetes API server's discovery endpoints, and nothing else.

`kubectl create --dry-run=client` maps each object's kind to a resource through the
server's discovery before it prints anything, so it cannot run without a server. This
serves the legacy (non-aggregated) discovery documents a real server answered with,
from capture directories laid out as the capture was taken: `<root>/<url path>/index.json`
is the body, and `<root>/<url path>/headers.txt` (the captured response headers, when
present) gives the Content-Type. Any other request, and any method but GET, gets 404 and
is logged, so a test can assert that kubectl asked for discovery only.

/apis is the first root's captured APIGroupList, cut down to the group versions some
root has a resource list for (kubectl fetches every listed group version and warns on
each one missing), plus the groups only a later root has (hand-written lists of
custom resources, which no capture holds).

Usage: discovery_server.py LOGFILE ROOT [ROOT...]
Binds 127.0.0.1 on a free port, prints that port on stdout, serves until killed. Each
request is a line of LOGFILE: `METHOD PATH STATUS ACCEPT`.
"""
import http.server
import json
import os
import sys
import urllib.parse

# Aggregated discovery (apidiscovery.k8s.io) is asked for through Accept; a server that
# answers with plain application/json is a legacy server, as the captured one (1.21) is.
DEFAULT_CONTENT_TYPE = "application/json"


def captured_content_type(directory):
    try:
        with open(os.path.join(directory, "headers.txt"), encoding="utf-8") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-type":
                    return value.strip()
    except FileNotFoundError:
        pass
    return DEFAULT_CONTENT_TYPE


def load_documents(roots):
    """url path -> (body bytes, content type); the first root holding a path wins."""
    docs = {}
    for root in roots:
        for directory, _, files in os.walk(root):
            if "index.json" not in files:
                continue
            rel = os.path.relpath(directory, root)
            path = "/" + ("" if rel == "." else rel.replace(os.sep, "/"))
            if path in docs:
                continue
            with open(os.path.join(directory, "index.json"), "rb") as f:
                body = f.read()
            docs[path] = (body, captured_content_type(directory))
    return docs


def group_list(docs):
    """The /apis APIGroupList: the captured one, cut to the group versions served, plus
    groups that only a hand-written resource list provides."""
    body, content_type = docs["/apis"]
    groups = json.loads(body)
    served = {p[len("/apis/"):] for p in docs if p.startswith("/apis/") and p.count("/") == 3}
    kept = []
    for g in groups["groups"]:
        versions = [v for v in g["versions"] if v["groupVersion"] in served]
        if not versions:
            continue
        g["versions"] = versions
        if g["preferredVersion"] not in versions:
            g["preferredVersion"] = versions[0]
        kept.append(g)
    listed = {v["groupVersion"] for g in kept for v in g["versions"]}
    for gv in sorted(served - listed):
        group, version = gv.split("/")
        entry = {"groupVersion": gv, "version": version}
        existing = [g for g in kept if g["name"] == group]
        if existing:
            existing[0]["versions"].append(entry)
        else:
            kept.append({"name": group, "versions": [entry], "preferredVersion": entry})
    groups["groups"] = kept
    return json.dumps(groups, indent=2).encode(), content_type


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: discovery_server.py LOGFILE ROOT [ROOT...]")
    log_path, roots = sys.argv[1], sys.argv[2:]
    docs = load_documents(roots)
    for needed in ("/api", "/apis"):
        if needed not in docs:
            sys.exit(f"{roots[0]}: no {needed.lstrip('/')}/index.json")
    docs["/apis"] = group_list(docs)
    log = open(log_path, "a", buffering=1, encoding="utf-8")

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self):
            # A request body (a write, which dry-run=client must never send) is read
            # and dropped, so the connection stays in step.
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = urllib.parse.urlsplit(self.path).path.rstrip("/") or "/"
            doc = docs.get(path) if self.command == "GET" else None
            status = 200 if doc else 404
            body, content_type = doc or (b"404 page not found\n", "text/plain; charset=utf-8")
            log.write(f"{self.command} {self.path} {status} {self.headers.get('Accept', '-')}\n")
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = answer

        def log_message(self, *args):
            pass  # the request log above is the one record

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
