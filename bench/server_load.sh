#!/usr/bin/env bash
# The workspace under load (issue 22's targets), printed as one table: simulated node agents speaking the
# real protocol (bench/agent_sim), idle keep-alive and slowloris connections against an authenticated GET,
# a body past its limit, and `get run` throughput. With AIR_BASELINE=/path/to/older/air the connection and
# throughput rows are measured against that binary's server too (the cpp-httplib server before issue 22).
#   bench/server_load.sh [AGENTS] [SECONDS] [IDLE] [SLOWLORIS]     (defaults: 1000 300 10000 1000)
# `team` mode (issue 29's figure): what the permission rule costs `get run` on a workspace with USERS users in
# 20 groups and RUNS runs (owners spread over the users, 0-3 `permissions:` grants each), one table:
#   bench/server_load.sh team [USERS] [RUNS] [SECONDS]              (defaults: 1000 100000 10)
set -euo pipefail
if [ "${1:-}" = team ]; then shift; exec bash "$(dirname "$0")/team_load.sh" "$@"; fi
here="$(cd "$(dirname "$0")" && pwd)"
BIN="${AIR_BIN_DIR:-$here/../build/bin}"
AIR="$BIN/air"
SIM="${AIR_AGENT_SIM:-$BIN/agent_sim}"
AGENTS=${1:-1000}
SECS=${2:-300}
IDLE=${3:-10000}
SLOW=${4:-1000}
PER_RUN=$(( AGENTS < 100 ? AGENTS : 100 ))
for f in "$AIR" "$SIM"; do [ -x "$f" ] || { echo "server_load.sh: $f not built" >&2; exit 1; }; done
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tmp="$(mktemp -d /tmp/air-bench-server-XXXXXX)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.5; rm -rf "$tmp"' EXIT

# start_server AIR HOME [flags...]: a foreground `air server` on a free port; prints its pid.
start_server() {
  local air=$1 home=$2; shift 2
  mkdir -p "$home"
  AIR_HOME="$home" "$air" server --home "$home" --port 0 "$@" > "$home/out.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 200); do [ -s "$home/server.json" ] && break; sleep 0.05; done
  echo "$pid"
}
# A field of a JSON file; an `air -o json` envelope ({"v":1,...,"data":{...}}) is unwrapped.
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d=d.get("data", d) if d.get("v") == 1 else d; print(d[sys.argv[2]])' "$1" "$2"; }

# Idle keep-alives and slowloris connections held while GET /runs/<id> is timed: "p99_ms answered/total".
hostile_get() {
  python3 - "$1" "$2" "$3" "$4" "$5" <<'PY'
import resource, socket, sys, time
url, token, run, idle_n, slow_n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
host, port = url.split("//")[1].split(":"); port = int(port)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
def connect():
    s = socket.socket(); s.settimeout(5); s.connect((host, port)); return s
slow, t_end = [], time.time() + 30
try:
    for _ in range(idle_n):
        if time.time() > t_end: break
        held.append(connect())
    for _ in range(slow_n):
        if time.time() > t_end: break
        s = connect(); s.sendall(b"GET /api/air/v1/runs HTTP/1.1\r\nX-a"); slow.append(s)
except OSError as e:
    print(f"connect failed after {len(held)} idle, {len(slow)} slow: {e}", file=sys.stderr)
req = f"GET /api/air/v1/runs/{run} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
times, answered, total = [], 0, 200
k, failures = None, 0
for i in range(total):
    if failures >= 5:  # a server that does not answer: the rest would time out too
        times.append(2000.0); continue
    if i % 20 == 0:
        for s in slow:
            try: s.sendall(b"a")
            except OSError: pass
    t0 = time.time()
    try:
        if k is None: k = connect()
        k.settimeout(2)
        k.sendall(req)
        data = b""
        while True:
            chunk = k.recv(65536)
            if not chunk: raise OSError("closed")
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep and len(body) >= int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0]): break
        answered += 1
        times.append((time.time() - t0) * 1000)
        failures = 0
    except (OSError, socket.timeout, IndexError):
        times.append(2000.0); k = None; failures += 1
times.sort()
print(f"{times[int(len(times) * 0.99) - 1]:.1f} {answered}/{total}")
PY
}

# 64 MiB chunked JSON body on a 1 MiB route: "status rss_growth_kb".
big_body() {
  python3 - "$1" "$2" "$3" <<'PY'
import socket, sys
url, token, pid = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = url.split("//")[1].split(":")
rss = lambda: int([l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:")][0].split()[1])
before = rss()
s = socket.create_connection((host, int(port)))
s.sendall(f"POST /api/air/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
try:
    for _ in range(1024): s.sendall(b"10000\r\n" + b"[" * 65536 + b"\r\n")
except OSError: pass
s.settimeout(5)
try: r = s.recv(200).split(b" ")[1].decode()
except Exception: r = "none"
print(r, rss() - before)
PY
}

cat > "$tmp/one.yaml" <<'YAML'
experiment_name: bench-server
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: "true"
YAML

# measure AIR LABEL: the connection rows (and throughput) against one server binary, local backend.
measure() {
  local air=$1 label=$2 home="$tmp/$2"
  local pid; pid=$(start_server "$air" "$home"); pids+=("$pid")
  local url token run
  url=$(field "$home/server.json" url); token=$(field "$home/server.json" token)
  run=$(AIR_HOST=$url AIR_TOKEN=$token AIR_CONFIG_FILE=$tmp/none "$air" -o json run -f "$tmp/one.yaml" | field /dev/stdin run_id)
  sleep 2
  echo "$label idle $(hostile_get "$url" "$token" "$run" "$IDLE" 0)" >> "$tmp/rows"
  echo "$label slow $(hostile_get "$url" "$token" "$run" 0 "$SLOW")" >> "$tmp/rows"
  echo "$label get $("$SIM" --get "$url" "$token" 10 8 "/api/air/v1/runs/$run")" >> "$tmp/rows"
  echo "$label big $(big_body "$url" "$token" "$pid")" >> "$tmp/rows"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

: > "$tmp/rows"
measure "$AIR" ours
if [ -n "${AIR_BASELINE:-}" ]; then measure "$AIR_BASELINE" baseline; fi

# Simulated agents: runs of up to 100 nodes on an external backend (nothing started; agent_sim is the nodes).
home="$tmp/agents"
pid=$(start_server "$AIR" "$home" --backend external); pids+=("$pid")
url=$(field "$home/server.json" url); token=$(field "$home/server.json" token)
sed "s/num_accelerators: 1/num_accelerators: $PER_RUN/; s/command: .*/command: 'true'\nmax_retries: 0/" "$tmp/one.yaml" > "$tmp/many.yaml"
runs=()
for _ in $(seq 1 $(( AGENTS / PER_RUN ))); do
  runs+=("$(AIR_HOST=$url AIR_TOKEN=$token AIR_CONFIG_FILE=$tmp/none "$AIR" -o json run -f "$tmp/many.yaml" | field /dev/stdin run_id)")
done
sim=$("$SIM" "$url" "$token" "$SECS" 100 "$PER_RUN" "${runs[@]}")
ok=0; lost=0
for r in "${runs[@]}"; do
  st=$(AIR_HOST=$url AIR_TOKEN=$token AIR_CONFIG_FILE=$tmp/none "$AIR" -o json get run "$r")
  [ "$(echo "$st" | field /dev/stdin state)" = SUCCEEDED ] && ok=$((ok + 1))
  lost=$((lost + $( (echo "$st" | grep -o 'lost node' || true) | wc -l)))
done

python3 - "$tmp/rows" "$sim" "$AGENTS" "$SECS" "$ok" "${#runs[@]}" "$lost" "$IDLE" "$SLOW" <<'PY'
import sys
rows, sim, agents, secs, ok, nruns, lost, idle, slow = sys.argv[1:]
r = {}
for line in open(rows):
    p = line.split(); r[(p[0], p[1])] = p[2:]
import re
s = dict(re.findall(r"(\w+) (\S+)", re.sub(r"\(([\d.]+)/s\)", r"per_s \1", sim)))
def cell(label, key, fmt):
    v = r.get((label, key)); return fmt(v) if v else "-"
print(f"{'measure':58} {'ours':>16} {'baseline':>16} {'target':>12}")
print(f"{f'{agents} agents x {secs}s: request p99 ms':58} {s['p99_ms']:>16} {'-':>16} {'<= 100':>12}")
print(f"{'  nodes declared lost / runs SUCCEEDED':58} {f'{lost} / {ok} of {nruns}':>16} {'-':>16} {'0 / all':>12}")
print(f"{'  log bytes not stored (lost lines)':58} {s['unshipped_bytes']:>16} {'-':>16} {'0':>12}")
print(f"{'  requests (per second), errors':58} {s['requests']+' ('+s['per_s']+') '+s['errors']:>16} {'-':>16} {'':>12}")
for key, name in (("idle", f"GET p99 ms with {idle} idle keep-alives (answered)"),
                  ("slow", f"GET p99 ms with {slow} slowloris (answered)")):
    print(f"{name:58} {cell('ours', key, lambda v: v[0]+' ('+v[1]+')'):>16} {cell('baseline', key, lambda v: v[0]+' ('+v[1]+')'):>16} {'<= 100':>12}")
g = lambda lab: cell(lab, "get", lambda v: v[2].strip('(/s)') + " p99 " + v[6])
print(f"{'get run: requests/s, p99 ms (8 connections)':58} {g('ours'):>16} {g('baseline'):>16} {'>=2000, <=20':>12}")
b = lambda lab: cell(lab, "big", lambda v: v[0] + ", +" + v[1] + " KB")
print(f"{'64 MiB chunked JSON body: status, memory growth':58} {b('ours'):>16} {b('baseline'):>16} {'413, <=10 MB':>12}")
PY
echo "(machine load: $(uptime | sed 's/.*load average: //'); $(nproc) cores)"
