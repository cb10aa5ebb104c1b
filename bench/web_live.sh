#!/usr/bin/env bash
# How the run page should follow a log (docs/web.md): long-polling the line route against polling it every
# 250 ms, on a private local workspace. A writer appends a line every 40 ms (as an agent ships); each reader
# records append -> line received. Also the cost of one re-ask (a request that returns at once), which is
# what long-polling pays per batch over a stream (server-sent events). Usage: bench/web_live.sh [path/to/air]
set -euo pipefail
cd "$(dirname "$0")/.."
air=${1:-build/bin/air}
[ -x "$air" ] || { echo "web_live.sh: $air not found; build first (scripts/build)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/air-bench-web-XXXXXX)
export AIR_HOME="$tmp/home" AIR_CONFIG_FILE="$tmp/none"
unset AIR_HOST AIR_TOKEN
trap '"$air" cancel --all -y >/dev/null 2>&1 || true; sleep 1; "$air" server stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
printf 'experiment_name: bench-web\ncompute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}\ncommand: sleep 120\nmax_retries: 0\n' > "$tmp/w.yaml"
id=$("$air" -o json run -f "$tmp/w.yaml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["run_id"])')
python3 - "$AIR_HOME/server.json" "$id" <<'PY'
import http.client, json, statistics, sys, threading, time, urllib.parse
info = json.load(open(sys.argv[1])); run = sys.argv[2]
u = urllib.parse.urlparse(info["url"]); H = {"Authorization": "Bearer " + info["token"]}
node = f"/api/air/v1/runs/{run}/attempts/1/nodes/0"
def conn(): return http.client.HTTPConnection(u.hostname, u.port, timeout=60)
def get(c, path):
    c.request("GET", path, headers=H); r = c.getresponse(); return json.loads(r.read())
N, GAP = 150, 0.04
sent = {}
def writer():
    c, off = conn(), 0
    time.sleep(0.5)
    for i in range(N):
        line = f"{int(time.time()*1000)} o bench {i}\n".encode()
        sent[i] = time.monotonic()
        c.request("POST", f"{node}/logs?offset={off}", body=line, headers=H); c.getresponse().read()
        off += len(line); time.sleep(GAP)
def reader(kind, out):
    c, cur = conn(), 0
    while cur < N:
        q = f"start={cur}&count=5000" + ("&wait_ms=20000" if kind == "long-poll" else "")
        r = get(c, f"{node}/lines?{q}")
        now = time.monotonic()
        for l in r["lines"]:
            out.append((now - sent[int(l.rsplit(" ", 1)[1])]) * 1000)
        cur = r["start"] + len(r["lines"])
        if kind != "long-poll": time.sleep(0.25)
res = {"long-poll": [], "poll every 250 ms": []}
ts = [threading.Thread(target=reader, args=(k, v)) for k, v in res.items()] + [threading.Thread(target=writer)]
for t in ts: t.start()
for t in ts: t.join()
c = conn(); get(c, f"{node}/lines?start=0&count=1")
t0 = time.monotonic()
for _ in range(300): get(c, f"{node}/lines?start={N}&count=5000")
reask = (time.monotonic() - t0) / 300 * 1000
p = lambda v, q: sorted(v)[min(len(v) - 1, int(q * len(v)))]
lp, pl = res["long-poll"], res["poll every 250 ms"]
print(f"{'append -> received (ms)':<28}{'long-poll (ours)':>18}{'poll 250 ms (ref)':>19}{'ratio':>8}")
for name, q in (("median", 0.5), ("p95", 0.95)):
    print(f"{name:<28}{p(lp, q):>18.1f}{p(pl, q):>19.1f}{p(lp, q) / p(pl, q):>8.2f}")
print(f"one re-ask on a kept-alive connection: {reask:.2f} ms ({len(lp)} and {len(pl)} lines received)")
PY
