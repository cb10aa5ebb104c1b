#!/usr/bin/env bash
# What the permission rule (server/workspace/access.h) costs `get run`, on a workspace the size of a busy
# team's: USERS users in 20 groups (created through SCIM), RUNS runs in the database (owners spread over the
# users, 0-3 `permissions:` grants each, most of them finished), timed with closed-loop GETs (bench/agent_sim
# --get, 8 connections) as four callers of the same run: an admin, the owner, a user whose group was granted
# CAN_VIEW (the rule's longest path: the grants are matched against each of the caller's 10 groups) and a
# user with no grant (refused, 403). With AIR_BASELINE=/path/to/older/air, that binary's server (before the
# rule existed) is seeded with the same runs and timed too.
#   bench/server_load.sh team [USERS] [RUNS] [SECONDS]     (defaults: 1000 100000 2)
# Each caller is timed in 7 rounds of SECONDS, the callers taking turns round by round, and its median round is
# shown: a workspace's rate drifts as its own state changes (its runs waiting on an external backend are
# declared lost and retried), and turns spread that drift over every caller alike.
# The runs beyond the first are copies written into the workspace's SQLite file while it is stopped (through
# the API, 100,000 submits would take most of an hour on 2 cores); the workspace then loads them as it loads
# any database on start, and the start time is a row of the table.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
BIN="${AIR_BIN_DIR:-$here/../build/bin}"
AIR="$BIN/air"
SIM="${AIR_AGENT_SIM:-$BIN/agent_sim}"
USERS=${1:-1000}
RUNS=${2:-100000}
SECS=${3:-2}
ROUNDS=7
for f in "$AIR" "$SIM"; do [ -x "$f" ] || { echo "team_load.sh: $f not built" >&2; exit 1; }; done
command -v sqlite3 >/dev/null || python3 -c 'import sqlite3' || { echo "team_load.sh: python3's sqlite3 is missing" >&2; exit 1; }
tmp="$(mktemp -d /tmp/air-bench-team-XXXXXX)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.5; rm -rf "$tmp"' EXIT

# start_server AIR HOME: a foreground `air server` on a free port, external backend (nothing is started for the
# run); prints its pid once server.json is written.
start_server() {
  local air=$1 home=$2
  rm -f "$home/server.json"
  AIR_HOME="$home" "$air" server --home "$home" --port 0 --backend external >> "$home/out.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 1200); do [ -s "$home/server.json" ] && break; sleep 0.05; done
  [ -s "$home/server.json" ] || { echo "team_load.sh: the workspace did not start:" >&2; tail -5 "$home/out.log" >&2; exit 1; }
  echo "$pid"
}
stop_server() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d=d.get("data", d) if d.get("v") == 1 else d; print(d[sys.argv[2]])' "$1" "$2"; }
as() { local tok=$1; shift; AIR_HOST=$url AIR_TOKEN=$tok AIR_CONFIG_FILE=$tmp/none "$AIR_USED" "$@"; }

# seed HOME WITH_USERS: copies the one run in HOME's database until it holds RUNS runs (new ids and sequence
# numbers; owners, grants and states spread), attempts and nodes with them. The first run is left as it is.
seed() {
  python3 - "$1/workspace.db" "$RUNS" "$USERS" "$2" <<'PY'
import json, random, sqlite3, sys
db, runs, users, with_users = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
rnd = random.Random(29)
c = sqlite3.connect(db)
(rid, seq, info, spec, state), = c.execute("SELECT run_id, seq, info_json, spec_json, state FROM runs")
att = c.execute("SELECT * FROM attempts WHERE run_id=?", (rid,)).fetchall()
nod = c.execute("SELECT * FROM nodes WHERE run_id=?", (rid,)).fetchall()
base = json.loads(info)
ids, taken = [], {rid}
while len(ids) < runs - 1:
    i = "%08x" % rnd.getrandbits(32)
    if i not in taken: taken.add(i); ids.append(i)
levels = ["CAN_VIEW", "CAN_MANAGE_RUN", "CAN_MANAGE"]
rows, arows, nrows = [], [], []
t0 = base["submitted_at_ms"] - runs * 60_000
for k, i in enumerate(ids):
    st = "PENDING" if k >= runs - 20 else rnd.choice(["SUCCEEDED"] * 8 + ["FAILED", "CANCELED"])
    d = dict(base, run_id=i, state=st, submitted_at_ms=t0 + k * 60_000)
    if st != "PENDING": d.update(started_at_ms=d["submitted_at_ms"] + 1000, ended_at_ms=d["submitted_at_ms"] + 900_000)
    if with_users:
        d["user"] = "alice" if k % 1000 == 999 else "u%04d" % rnd.randrange(users)  # alice: 1 run in 1,000
        d["permissions"] = []
        for _ in range(rnd.randrange(4)):
            g = dict(user_name="", group_name="", service_principal_name="", permission_level=rnd.choice(levels))
            if rnd.random() < .5: g["group_name"] = "g%02d" % rnd.randrange(20)
            else: g["user_name"] = "u%04d" % rnd.randrange(users)
            d["permissions"].append(g)
    rows.append((i, seq + 1 + k, json.dumps(d), spec, st))
    arows += [(i,) + tuple(a[1:2]) + (st,) + tuple(a[3:]) for a in att]
    nrows += [(i,) + tuple(n[1:3]) + (st,) + tuple(n[4:]) for n in nod]
# The run the callers read ends too (SUCCEEDED, as most runs they read have): it stops changing under them.
with c:
    c.execute("UPDATE runs SET state='SUCCEEDED', info_json=json_set(info_json, '$.state', 'SUCCEEDED') WHERE run_id=?", (rid,))
    c.execute("UPDATE attempts SET state='SUCCEEDED' WHERE run_id=?", (rid,))
    c.execute("UPDATE nodes SET state='SUCCEEDED' WHERE run_id=?", (rid,))
    c.executemany("INSERT INTO runs(run_id, seq, info_json, spec_json, state) VALUES (?,?,?,?,?)", rows)
    if att: c.executemany("INSERT INTO attempts VALUES (%s)" % ",".join("?" * len(att[0])), arows)
    if nod: c.executemany("INSERT INTO nodes VALUES (%s)" % ",".join("?" * len(nod[0])), nrows)
print(c.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
PY
}

cat > "$tmp/run.yaml" <<'YAML'
experiment_name: bench-team
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: "true"
YAML

# --- ours: users, groups, the target run, the copies --------------------------------------------------------
AIR_USED=$AIR
home="$tmp/ours"; mkdir -p "$home"
pid=$(start_server "$AIR" "$home"); pids+=("$pid")
url=$(field "$home/server.json" url); admin=$(field "$home/server.json" token)
python3 - "$url" "$admin" "$USERS" <<'PY'
import http.client, json, sys, urllib.parse
url, token, users = sys.argv[1], sys.argv[2], int(sys.argv[3])
u = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(u.hostname, u.port)
def post(path, body):
    conn.request("POST", "/api/2.0/preview/scim/v2" + path, json.dumps(body),
                 {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = conn.getresponse(); data = r.read()
    if r.status not in (200, 201): sys.exit(f"SCIM {path}: {r.status} {data[:200]!r}")
    return json.loads(data)
ids = [post("/Users", {"userName": "u%04d" % i})["id"] for i in range(users)]
for g in range(20):  # each user in one group of twenty
    post("/Groups", {"displayName": "g%02d" % g, "members": [{"value": ids[i]} for i in range(g, users, 20)]})
PY
for who in alice bob carol; do as "$admin" -o json users add "$who" --token > "$tmp/$who.json"; done
alice=$(field "$tmp/alice.json" token_value); bob=$(field "$tmp/bob.json" token_value); carol=$(field "$tmp/carol.json" token_value)
for g in 00 01 02 03 04 05 06 07 08 09; do as "$admin" groups add-member "g$g" bob > /dev/null; done
cat "$tmp/run.yaml" - > "$tmp/alice.yaml" <<'YAML'
permissions:
  - user_name: u0007
    level: CAN_MANAGE_RUN
  - group_name: g15
    level: CAN_MANAGE
  - group_name: g09
    level: CAN_VIEW
YAML
run=$(as "$alice" -o json run -f "$tmp/alice.yaml" | field /dev/stdin run_id)
stop_server "$pid"
n=$(seed "$home" 1)
t=$(date +%s%N); pid=$(start_server "$AIR" "$home"); pids+=("$pid"); start_ms=$(( ($(date +%s%N) - t) / 1000000 ))
# Each start makes the bootstrap admin a new token (the last one's is revoked): read it again.
url=$(field "$home/server.json" url); admin=$(field "$home/server.json" token)

code() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" "$url/api/air/v1/runs/$run"; }
# carol may not view the run: answered as a run that does not exist (404), as docs/security.md says.
[ "$(code "$admin") $(code "$alice") $(code "$bob") $(code "$carol")" = "200 200 200 404" ] ||
  { echo "team_load.sh: unexpected statuses (admin alice bob carol): $(code "$admin") $(code "$alice") $(code "$bob") $(code "$carol")" >&2; exit 1; }

: > "$tmp/rows"
for round in $(seq 1 $ROUNDS); do
  for who in admin alice bob carol; do
    echo "$who $("$SIM" --get "$url" "${!who}" "$SECS" 8 "/api/air/v1/runs/$run")" >> "$tmp/rows"
  done
done
# `air list` (the CLI's whole wall time, the fastest of 3): alice's own runs in every state (the newest 20 of
# her ~100), and bob's --all-users, which applies the rule to every run in the database.
fastest() { for _ in 1 2 3; do t=$(date +%s%N); as "$@" > /dev/null; echo $(( ($(date +%s%N) - t) / 1000000 )); done | sort -n | head -1; }
list_ms=$(fastest "$alice" list --all-status)
all_ms=$(fastest "$bob" list --all-status --all-users)
stop_server "$pid"

# --- the baseline binary (no users, no rule): the same number of runs, the admin's token ---------------------
if [ -n "${AIR_BASELINE:-}" ]; then
  AIR_USED=$AIR_BASELINE
  home="$tmp/base"; mkdir -p "$home"
  pid=$(start_server "$AIR_BASELINE" "$home"); pids+=("$pid")
  url=$(field "$home/server.json" url); base=$(field "$home/server.json" token)
  run=$(as "$base" -o json run -f "$tmp/run.yaml" | field /dev/stdin run_id)
  stop_server "$pid"
  seed "$home" 0 > /dev/null
  pid=$(start_server "$AIR_BASELINE" "$home"); pids+=("$pid")
  url=$(field "$home/server.json" url); base=$(field "$home/server.json" token)
  for round in $(seq 1 $ROUNDS); do echo "base $("$SIM" --get "$url" "$base" "$SECS" 8 "/api/air/v1/runs/$run")" >> "$tmp/rows"; done
  stop_server "$pid"
fi

python3 - "$tmp/rows" "$USERS" "$n" "$start_ms" "$list_ms" "$all_ms" <<'PY'
import re, sys
rows, users, n, start_ms, list_ms, all_ms = sys.argv[1:]
seen = {}
for line in open(rows):
    who, rest = line.split(" ", 1)
    m = re.search(r"\(([\d.]+)/s\).*p99_ms ([\d.]+)", rest)
    seen.setdefault(who, []).append((float(m.group(1)), float(m.group(2))))
best = {who: sorted(v)[len(v) // 2] for who, v in seen.items()}  # the median round (by rate)
ref = best["admin"][0]
print(f"workspace: {users} users in 20 groups, {n} runs in the database (get run: the median of {len(seen['admin'])} rounds, 8 connections)")
print(f"{'caller of GET /runs/<id>':52} {'requests/s':>11} {'p99 ms':>7} {'vs admin':>9}")
names = {"admin": "admin (the rule's first test)", "alice": "alice, the owner",
         "bob": "bob: CAN_VIEW through one of his 10 groups", "carol": "carol: no grant (404, as an unknown run)",
         "base": "baseline binary (before the rule), admin"}
for k in ("admin", "alice", "bob", "carol", "base"):
    if k in best: print(f"{names[k]:52} {best[k][0]:>11.0f} {best[k][1]:>7.2f} {best[k][0] / ref:>8.3f}x")
worst = min(best[k][0] for k in ("alice", "bob"))
# The rule's cost: the slowest allowed non-admin caller against the admin, whose check is its first test, in the
# same binary on the same data. (The baseline binary differs in more than the rule, e.g. its scheduler pass.)
cost = 1 - worst / ref
print(f"{'permission rule cost, slowest allowed caller vs admin':52} {cost * 100:>10.1f}% {'':>7} {'<= 5%':>9}")
print(f"{'workspace start with these runs (ms)':52} {start_ms:>11}")
print(f"{'air list --all-status as alice (ms)':52} {list_ms:>11}")
print(f"{'air list --all-status --all-users as bob (ms)':52} {all_ms:>11}")
PY
echo "(machine load: $(uptime | sed 's/.*load average: //'); $(nproc) cores)"
