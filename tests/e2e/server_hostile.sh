#!/usr/bin/env bash
# Hostile clients against the real local workspace (issue 22): a second daemon on the same home is refused;
# bodies past a route's limit get 413 before they are read (memory stays flat) and bad tokens 401 before
# the body; an unsatisfiable Range gets 416; with 300 slowloris and 300 idle keep-alive connections open,
# an authenticated GET still answers within 100 ms.
source "$(dirname "$0")/lib/common.bash"

"$AIR" list >/dev/null   # starts the local workspace
url=$(json_get "$AIR_HOME/server.json" 'd["url"]')
token=$(json_get "$AIR_HOME/server.json" 'd["token"]')
pid=$(json_get "$AIR_HOME/server.json" 'd["pid"]')

# One daemon per home: a second one on the same home refuses to start, and says which one runs.
if out=$("$AIR" server --home "$AIR_HOME" --port 0 2>&1); then fail "a second daemon started on one home"; fi
echo "$out" | grep -q "another air server is already running for $AIR_HOME (pid $pid" || fail "unexpected: $out"
"$AIR" server status | grep -q "running (pid $pid)" || fail "air server status does not name pid $pid"

python3 - "$url" "$token" "$pid" <<'PY'
import hashlib, socket, sys, time, urllib.request
url, token, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
host, port = url.split("//")[1].split(":")
port = int(port)

def rss_kb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

def raw(head, body=b"", timeout=5):
    s = socket.create_connection((host, port))
    s.settimeout(timeout)
    s.sendall(head.encode() + body)
    t0 = time.time()
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return data.decode(errors="replace"), time.time() - t0

def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)

auth = f"Authorization: Bearer {token}\r\n"
# 64 MiB declared on a JSON route: 413 from the headers, nothing read.
r, took = raw(f"POST /api/air/v1/runs HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 67108864\r\n\r\n")
check(r.startswith("HTTP/1.1 413"), "declared 64 MiB JSON body: " + r[:80])
check(took < 0.5, f"413 took {took:.2f}s")
# A bad token with a big body: 401 before the body.
r, took = raw("POST /api/air/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nContent-Length: 500000\r\n\r\n")
check(r.startswith("HTTP/1.1 401"), "bad token: " + r[:80])
# A chunked 64 MiB body is counted as it comes: 413 after ~1 MiB, memory growth <= 10 MB.
before = rss_kb()
s = socket.create_connection((host, port))
s.sendall(f"POST /api/air/v1/runs HTTP/1.1\r\nHost: x\r\n{auth}Transfer-Encoding: chunked\r\n\r\n".encode())
piece = b"%x\r\n" % 65536 + b"[" * 65536 + b"\r\n"
sent = 0
try:
    for _ in range(1024):
        s.sendall(piece); sent += 65536
except OSError:
    pass
s.settimeout(5)
resp = b""
try:
    resp = s.recv(4096)
except OSError:
    pass
s.close()
growth = rss_kb() - before
check(resp.startswith(b"HTTP/1.1 413"), "chunked 64 MiB: " + resp[:80].decode(errors="replace"))
check(growth <= 10240, f"memory grew {growth} KB")
print(f"ok: 413 after {sent >> 20} MiB sent of 64; workspace memory growth {growth} KB")
# A snapshot past the limit: 413 from its Content-Length (not a digest mismatch).
r, _ = raw(f"PUT /api/air/v1/snapshots/{'0'*64} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {5 << 30}\r\n\r\n")
check(r.startswith("HTTP/1.1 413"), "5 GiB snapshot: " + r[:80])
# Range on a 2 KB snapshot.
blob = bytes(range(256)) * 8
digest = hashlib.sha256(blob).hexdigest()
req = urllib.request.Request(f"{url}/api/air/v1/snapshots/{digest}", data=blob, method="PUT",
                             headers={"Authorization": f"Bearer {token}"})
check(urllib.request.urlopen(req).status == 201, "upload")
r, _ = raw(f"GET /api/air/v1/snapshots/{digest} HTTP/1.1\r\nHost: x\r\n{auth}Range: bytes=999999999999-\r\n\r\n")
check(r.startswith("HTTP/1.1 416") and "Content-Range: bytes */2048" in r, "range: " + r[:200])
r, _ = raw(f"GET /api/air/v1/snapshots/{digest} HTTP/1.1\r\nHost: x\r\n{auth}Range: bytes=2000-\r\n\r\n")
check(r.startswith("HTTP/1.1 206") and "Content-Length: 48" in r, "range 2000-: " + r[:200])

# 300 slowloris (one header byte at a time) and 300 idle keep-alive connections; then timed GETs.
slow = [socket.create_connection((host, port)) for _ in range(300)]
idle = [socket.create_connection((host, port)) for _ in range(300)]
for c in slow:
    c.sendall(b"GET /api/air/v1/runs HTTP/1.1\r\nX-a")
times = []
k = socket.create_connection((host, port))
for i in range(200):
    if i % 20 == 0:
        for c in slow:
            try: c.sendall(b"a")
            except OSError: pass
    t0 = time.time()
    k.sendall(f"GET /api/air/v1/runs HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode())
    data = b""
    while True:
        data += k.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        if _ and len(body) >= int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0]):
            break
    times.append(time.time() - t0)
times.sort()
p99 = times[int(len(times) * 0.99) - 1] * 1000
check(p99 <= 100, f"GET p99 {p99:.1f} ms under 300 slowloris + 300 idle")
print(f"ok: GET p99 {p99:.1f} ms with 300 slowloris and 300 idle connections open")
for c in slow + idle + [k]:
    c.close()
PY
echo "ok: one daemon per home; 413/401 before the body; 416; slow and idle clients cost no answer time"
