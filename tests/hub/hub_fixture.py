#!/usr/bin/env python3
"""A Hugging Face hub stand-in for tests and benchmarks (stdlib only, Python 3.8+).

Serves a folder of repos in the hub's URL layout and headers:
  <root>/models/<org>/<name>/<files...>     and     <root>/datasets/<org>/<name>/<files...>

  GET  /api/models/<org>/<name>/revision/<rev>       {"id", "sha", "siblings": [{"rfilename"}], ...}
  GET  /api/datasets/<org>/<name>/revision/<rev>
  HEAD|GET /<org>/<name>/resolve/<rev>/<path>          small files: 200, ETag = git blob sha1
  HEAD|GET /datasets/<org>/<name>/resolve/<rev>/<path> "LFS" files (*.safetensors, *.parquet, *.bin, or
                                                      >= --lfs-min bytes): 302 to a blob URL, with
                                                      X-Linked-Etag (sha256) and X-Linked-Size
  GET  /blobs/<sha256>                                the blob store: Range, no Authorization wanted
  GET  /_fixture/stats                                request counts (for tests)

Every hub answer carries X-Repo-Commit; errors carry X-Error-Code (RepoNotFound, RevisionNotFound,
EntryNotFound, GatedRepo) and X-Error-Message like the hub. Revisions: "main" or the repo's commit (a
sha1 of its file list). --token T makes every hub URL need "Authorization: Bearer T" (401 otherwise);
--gated org/name answers 403 GatedRepo for that repo's files. --blob-host NAME puts the blob store on
another host name (e.g. localhost vs 127.0.0.1), so a client that forwards the token there is caught:
the blob store answers 400 to a request with an Authorization header. --cut-once N sends only N bytes of
the first blob download and drops the connection (a resumable cut). Files are streamed, never read
whole; sha256s are computed once per file on first use. Prints "hub fixture listening on URL" when ready.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_SUFFIXES = (".safetensors", ".parquet", ".bin", ".gguf", ".pt")


class Hub:
    def __init__(self, args):
        self.root = os.path.abspath(args.root)
        self.token = args.token
        self.gated = set(args.gated or [])
        self.lfs_min = args.lfs_min
        self.blob_host = args.blob_host
        self.cut_once = args.cut_once
        self.lock = threading.Lock()
        self.sha256 = {}  # path -> (mtime, size, digest)
        self.blobs = {}  # digest -> path
        self.stats = {"api": 0, "head": 0, "resolve_get": 0, "blob_get": 0, "blob_range_get": 0,
                      "blob_bytes": 0, "cuts": 0, "blob_auth_rejected": 0, "by_blob": {}}

    def repo_dir(self, kind, repo_id):
        d = os.path.join(self.root, kind, *repo_id.split("/"))
        return d if os.path.isdir(d) else None

    def files(self, d):
        out = []
        for base, dirs, names in os.walk(d):
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            for n in sorted(names):
                if not n.startswith("."):
                    out.append(os.path.relpath(os.path.join(base, n), d).replace(os.sep, "/"))
        return sorted(out)

    def commit(self, d):
        h = hashlib.sha1()
        for f in self.files(d):
            st = os.stat(os.path.join(d, f))
            h.update(("%s %d %d\n" % (f, st.st_size, int(st.st_mtime))).encode())
        return h.hexdigest()

    def is_lfs(self, path):
        return path.endswith(LFS_SUFFIXES) or os.path.getsize(path) >= self.lfs_min

    def file_sha256(self, path):
        st = os.stat(path)
        with self.lock:
            hit = self.sha256.get(path)
            if hit and hit[0] == st.st_mtime and hit[1] == st.st_size:
                return hit[2]
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        digest = h.hexdigest()
        with self.lock:
            self.sha256[path] = (st.st_mtime, st.st_size, digest)
            self.blobs[digest] = path
        return digest

    @staticmethod
    def git_sha1(path):
        h = hashlib.sha1()
        h.update(b"blob %d\0" % os.path.getsize(path))
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    def count(self, key, n=1):
        with self.lock:
            self.stats[key] += n


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub = None  # set by main

    def log_message(self, fmt, *args):  # quiet; tests read /_fixture/stats instead
        pass

    # --- helpers -------------------------------------------------------------------------------------
    def send(self, status, body=b"", headers=None, head=False):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def error(self, status, code, message, head=False):
        body = json.dumps({"error": message}).encode()
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self.send(status, body, headers, head)

    def authorized(self):
        if not self.hub.token:
            return True
        return self.headers.get("Authorization", "") == "Bearer " + self.hub.token

    def base_url(self):
        host = self.headers.get("Host") or "127.0.0.1"
        return "http://" + host

    def repo(self, kind, repo_id, head=False):
        """The repo folder, or None after answering with the hub's error."""
        d = self.hub.repo_dir(kind, repo_id)
        if not self.authorized():
            # The hub hides private repos and refuses gated files to anonymous users with 401.
            code = "GatedRepo" if d and repo_id in self.hub.gated else "RepoNotFound"
            self.error(401, code, "Invalid credentials in Authorization header" if self.headers.get("Authorization")
                       else "Repository not found or access requires a token", head)
            return None
        if not d:
            self.error(404, "RepoNotFound", "Repository not found", head)
            return None
        return d

    # --- routes --------------------------------------------------------------------------------------
    def do_HEAD(self):
        self.route(head=True)

    def do_GET(self):
        self.route(head=False)

    def route(self, head):
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        parts = [p for p in path.split("/") if p]
        try:
            if parts[:2] == ["_fixture", "stats"]:
                return self.send(200, json.dumps(self.hub.stats).encode(), {"Content-Type": "application/json"}, head)
            if len(parts) >= 5 and parts[0] == "api" and parts[1] in ("models", "datasets") and parts[4] == "revision":
                return self.api_revision(parts[1], parts[2] + "/" + parts[3], "/".join(parts[5:]), head)
            if len(parts) == 2 and parts[0] == "blobs":
                return self.blob(parts[1], head)
            kind = "models"
            if parts and parts[0] == "datasets":
                kind, parts = "datasets", parts[1:]
            if len(parts) >= 5 and parts[2] == "resolve":
                return self.resolve(kind, parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]), head)
            self.error(404, None, "Not Found", head)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def api_revision(self, kind, repo_id, rev, head):
        self.hub.count("api")
        d = self.repo(kind, repo_id, head)
        if d is None:
            return
        commit = self.hub.commit(d)
        if rev not in ("main", commit):
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev, head)
        files = self.hub.files(d)
        info = {"id": repo_id, "sha": commit, "private": bool(self.hub.token),
                "gated": "manual" if repo_id in self.hub.gated else False,
                "siblings": [{"rfilename": f} for f in files]}
        self.send(200, json.dumps(info).encode(), {"Content-Type": "application/json", "X-Repo-Commit": commit}, head)

    def resolve(self, kind, repo_id, rev, rel, head):
        self.hub.count("head" if head else "resolve_get")
        d = self.repo(kind, repo_id, head)
        if d is None:
            return
        commit = self.hub.commit(d)
        if rev not in ("main", commit):
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev, head)
        if repo_id in self.hub.gated:
            page = self.base_url() + ("/datasets/" if kind == "datasets" else "/") + repo_id
            return self.error(403, "GatedRepo", "Access to model %s is restricted and you are not in the authorized "
                              "list. Visit %s to ask for access." % (repo_id, page), head)
        f = os.path.normpath(os.path.join(d, rel))
        if not f.startswith(d + os.sep) or not os.path.isfile(f):
            return self.error(404, "EntryNotFound", "%s does not exist on \"%s\"" % (rel, rev), head)
        size = os.path.getsize(f)
        if self.hub.is_lfs(f):
            digest = self.hub.file_sha256(f)
            host = self.hub.blob_host + ":" + str(self.server.server_address[1]) if self.hub.blob_host else self.headers.get("Host")
            headers = {"X-Repo-Commit": commit, "X-Linked-Etag": '"%s"' % digest, "X-Linked-Size": str(size),
                       "ETag": '"%s"' % digest, "Location": "http://%s/blobs/%s" % (host, digest)}
            return self.send(302, b"", headers, head)
        headers = {"X-Repo-Commit": commit, "ETag": '"%s"' % self.hub.git_sha1(f), "Content-Type": "application/octet-stream"}
        self.stream(f, 0, size, size, 200, headers, head)

    def blob(self, digest, head):
        if self.headers.get("Authorization"):
            self.hub.count("blob_auth_rejected")
            return self.error(400, None, "Authorization header is not accepted by the blob store", head)
        path = self.hub.blobs.get(digest)
        if not path:
            return self.error(404, None, "no such blob", head)
        size = os.path.getsize(path)
        start, status, headers = 0, 200, {"ETag": '"%s"' % digest, "Accept-Ranges": "bytes"}
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes="):
            first = rng[6:].split("-")[0]
            start = int(first) if first.isdigit() else 0
            if start >= size and size > 0:
                return self.send(416, b"", {"Content-Range": "bytes */%d" % size}, head)
            status = 206
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, size - 1, size)
        if not head:
            with self.hub.lock:
                self.hub.stats["blob_get"] += 1
                self.hub.stats["blob_range_get"] += status == 206
                self.hub.stats["by_blob"][digest] = self.hub.stats["by_blob"].get(digest, 0) + 1
        self.stream(path, start, size - start, size, status, headers, head)

    def stream(self, path, start, length, size, status, headers, head):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if head:
            return
        limit = length
        with self.hub.lock:
            if self.hub.cut_once is not None and path in self.hub.blobs.values() and length > self.hub.cut_once:
                limit, self.hub.cut_once = self.hub.cut_once, None
                self.hub.stats["cuts"] += 1
        self.wfile.flush()
        with open(path, "rb") as f:
            sent = self.connection.sendfile(f, offset=start, count=limit) if limit else 0
        self.hub.count("blob_bytes", sent)
        if limit < length:
            self.close_connection = True
            self.connection.shutdown(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True, help="folder with models/<org>/<name>/ and datasets/<org>/<name>/")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--token", help="require Authorization: Bearer TOKEN on every hub URL")
    ap.add_argument("--gated", action="append", help="org/name whose files answer 403 GatedRepo (repeatable)")
    ap.add_argument("--blob-host", help="host name for blob URLs (e.g. localhost), so they are another origin")
    ap.add_argument("--lfs-min", type=int, default=10 << 20, help="files this large are LFS files (302 to a blob)")
    ap.add_argument("--cut-once", type=int, help="drop the first blob download after this many bytes")
    args = ap.parse_args()
    Handler.hub = Hub(args)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)
    print("hub fixture listening on http://%s:%d" % (args.host, port), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
