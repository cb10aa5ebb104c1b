#!/usr/bin/env bash
# Load on the embedded local workspace (issue 15): RUNS (default 200) trivial 2-node runs submitted as fast
# as the API takes them (8 client threads, keep-alive), then: runs/s end to end, p50/p95 submit latency,
# how many succeeded with complete logs; and GET /runs/{id} requests/s from 2 client processes for 10 s
# (p50/p99). The client (Python) shares the machine's cores with the workspace: on a 2-core machine the
# request rate is bounded by both. Prints the load average next to the figures.
# Usage: bench/load.sh [RUNS]   (AIR_BIN_DIR defaults to build/bin)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
AIR="${AIR_BIN_DIR:-$here/../build/bin}/air"
runs=${1:-200}
tmp="$(mktemp -d /tmp/air-bench-load-XXXXXX)"
export AIR_HOME="$tmp/home" AIR_CONFIG_FILE="$tmp/none"
unset AIR_HOST AIR_TOKEN
trap '"$AIR" cancel --all -y >/dev/null 2>&1 || true; sleep 1; "$AIR" server stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
"$AIR" list > /dev/null
url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$AIR_HOME/server.json")
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$AIR_HOME/server.json")
echo "load before: $(uptime)"
sub=$(python3 "$here/load_client.py" submit "$url" "$token" "$runs" 8)
id=$("$AIR" -o json list --all-status | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["runs"][0]["run_id"])')
get=$(python3 "$here/load_client.py" getrun "$url" "$token" "$id" 10 2)
echo "load after: $(uptime)"
python3 - "$sub" "$get" <<'PY'
import json, sys
s, g = json.loads(sys.argv[1]), json.loads(sys.argv[2])
rows = [
    ("runs submitted (2 nodes each)", "%d" % s["runs"], ""),
    ("submit rate", "%.1f runs/s" % s["submit_per_s"], "8 client threads"),
    ("submit latency p50 / p95", "%.1f / %.1f ms" % (s["p50_ms"], s["p95_ms"]), ""),
    ("all ended after", "%.1f s (%.2f runs/s end to end)" % (s["all_done_s"], s["runs_per_s"]), ""),
    ("succeeded / complete logs", "%d / %d of %d" % (s["succeeded"], s["complete_logs"], s["runs"]), "target: all"),
    ("GET /runs/{id}", "%d req/s" % g["per_s"], "target >= 2,000/s; %d client processes" % g["procs"]),
    ("GET /runs/{id} p50 / p99", "%.2f / %.2f ms" % (g["p50_ms"], g["p99_ms"]), "target p99 <= 20 ms"),
    ("GET errors", "%d of %d" % (g["errors"], g["requests"]), ""),
]
w = max(len(r[0]) for r in rows)
for r in rows:
    print("%-*s  %-34s %s" % (w, r[0], r[1], r[2]))
ok = s["succeeded"] == s["runs"] and s["complete_logs"] == s["runs"] and g["errors"] == 0
sys.exit(0 if ok else 1)
PY
